"""The edge runtime: the C runtime (native/runtime: in-process through minitorch_edge.runtime,
and as the mte-run program) against onnxruntime and our Python graph executor, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/runtime.py [--threads 1 2]
        [--models mobilenet_v2,resnet18] [--size 224] [--repeats 30] [--warmup 5] [--out FILE]

Needs `make -C native runtime mte-run` (or an installed package) and onnx + onnxruntime
(`pip install ".[bench]"`). Models: our zoo's mobilenet_v2 and resnet18 (1000 classes, random
weights with non-trivial BatchNorm statistics, as bench/models.py builds them), batch 1,
3 x size x size.

1. latency, float32 and int8, each thread count: medians of interleaved rounds
   (bench/models.py's timing; with 2 threads one engine after the other, see time_blocks) of
     C runtime     runtime.load(file, threads=n)(x) on the exported .mte file
     executor      graph.compile(engine="python") of the same Graph: the Python executor, one
                   Python call per node (backend threads n); compile()'s default engine on
                   the native backend is this C runtime itself
     onnxruntime   float: the PyTorch twin exported by torch.onnx.export; int8: onnxruntime's
                   own static QDQ model of that file (U8 activations, S8 per-channel weights,
                   MinMax on the same calibration images), ORT_ENABLE_ALL, intra_op n
   Ours is int8 through quant.quantize on 4 calibration images (min/max, per channel).
2. files: the .mte files against the float .onnx and the QDQ .onnx.
3. memory: peak resident set (ru_maxrss from wait4) of `mte-run --bench 5` on the int8
   MobileNetV2 against its plan's arena and prepared weights, and of a Python process running
   the QDQ model 5 times in onnxruntime (and of `python -c "import numpy"` as that process's
   floor).
4. size of the runtime: mte-run and libmte_runtime.so, stripped copies, for each build found
   (native/build: this machine; native/build/aarch64: `make -C native aarch64`).
5. startup: wall time from process start to the first result written, median of 5: mte-run
   on an .npy input, against a Python process that imports onnxruntime, builds its session and
   runs once, and one that does the same with minitorch_edge.runtime.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import models as bench_models

if __name__ == "__main__":
    bench_models._reexec_if_needed(sys.argv[1:], __file__)

import numpy as np

import minitorch_edge as mte
from minitorch_edge import graph, quant, runtime

ROOT = os.path.dirname(_HERE)
MTE_RUN = os.path.join(ROOT, "native", "build", "mte-run")
ort = bench_models.ort


def _quant_module():
    import quant as bench_quant  # bench/quant.py: onnxruntime's QDQ quantization
    return bench_quant


def _mte_run():
    path = shutil.which("mte-run") if not os.path.exists(MTE_RUN) else MTE_RUN
    return path


# ---- building the files -----------------------------------------------------------------------
def build_files(name, size, tmpdir):
    """{kind: path}: our float and int8 .mte, the float .onnx and onnxruntime's QDQ .onnx."""
    ours, state = bench_models.build_ours(name, 0)
    rng = np.random.default_rng(3)
    calib = [rng.standard_normal((1, 3, size, size)).astype(np.float32) for _ in range(4)]
    x = calib[0]
    f32 = graph.trace(ours, x).optimize()
    i8 = quant.quantize(ours, calib)
    files = {"x": x, "graph float32": f32, "graph int8": i8}
    files["mte float32"] = f32.save(os.path.join(tmpdir, f"{name}.mte"))
    files["mte int8"] = i8.save(os.path.join(tmpdir, f"{name}.int8.mte"))
    if ort is not None and bench_models.torch is not None:
        twin = bench_models.build_twin(name, state)
        fp = os.path.join(tmpdir, f"{name}.onnx")
        bench_models.export_onnx(twin, x, fp)
        files["onnx float32"] = fp
        files["onnx int8"] = _quant_module().ort_qdq_model(
            fp, calib, os.path.join(tmpdir, f"{name}.qdq.onnx"))
    return files


# ---- 1. latency -------------------------------------------------------------------------------
def latency(files, threads, repeats, warmup):
    x = files["x"]
    rows = {}
    for precision in ("float32", "int8"):
        bench_models._set_native_threads(threads)
        c_model = runtime.load(files[f"mte {precision}"], threads=threads)
        run = files[f"graph {precision}"].compile(engine="python")
        runners = {"C runtime": lambda m=c_model: m(x), "executor": lambda r=run: r(x)}
        if f"onnx {precision}" in files:
            runners["onnxruntime"] = bench_models.ort_runner(files[f"onnx {precision}"], x,
                                                             threads)
        want = np.asarray(run(x))
        got = np.asarray(c_model(x))
        err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        times = (bench_models.time_interleaved(runners, repeats, warmup) if threads == 1
                 else time_blocks(runners, repeats, warmup))
        rows[precision] = ({k: statistics.median(v) for k, v in times.items()}, err)
        c_model.close()
    return rows


def time_blocks(runners, repeats, warmup):
    """{name: [ms, ...]}, one runner at a time (warmup calls, then `repeats` timed ones). With
    several threads the engines' idle worker pools (two OpenMP runtimes and onnxruntime's)
    spin for a while after each call and would take the cores from the next engine if the
    calls were interleaved; run back to back, each pool goes to sleep before the next one
    starts."""
    times = {}
    for name, run in runners.items():
        for _ in range(warmup):
            run()
        times[name] = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - t0) * 1e3)
        time.sleep(0.2)
    return times


# ---- 3. memory and 5. startup: child processes --------------------------------------------------
GNU_TIME = "/usr/bin/time"


def peak_rss_and_wall(argv, env=None):
    """(peak resident set in bytes, wall seconds) of one child process, measured by GNU time
    (`time -f %M`: a small launcher, so the child's high-water mark is its own and not that of
    this large Python process it would otherwise be forked from)."""
    if not os.path.exists(GNU_TIME):
        raise RuntimeError("bench/runtime.py measures memory with GNU time: apt-get install time")
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        t0 = time.perf_counter()
        done = subprocess.run([GNU_TIME, "-f", "%M", "-o", out.name] + argv,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): "
                               f"{done.stderr.decode(errors='replace').strip()[:300]}")
        return int(out.read().split()[-1]) * 1024, wall


ORT_ONCE = """import sys, numpy as np, onnxruntime as ort
so = ort.SessionOptions(); so.intra_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
x = np.load(sys.argv[2])
for _ in range(int(sys.argv[3])):
    y = s.run(None, {s.get_inputs()[0].name: x})[0]
np.save(sys.argv[4], y)
"""

MTE_ONCE = """import sys, numpy as np
import minitorch_edge.runtime as rt
m = rt.load(sys.argv[1], threads=1)
x = np.load(sys.argv[2])
for _ in range(int(sys.argv[3])):
    y = m(x)
np.save(sys.argv[4], y)
"""


def processes(files, tmpdir):
    """Memory and startup rows: {label: (peak rss bytes, median wall s)}."""
    xp, yp = os.path.join(tmpdir, "x.npy"), os.path.join(tmpdir, "y.npy")
    np.save(xp, files["x"])
    scripts = {}
    for name, text in (("ort_once.py", ORT_ONCE), ("mte_once.py", MTE_ONCE)):
        scripts[name] = os.path.join(tmpdir, name)
        with open(scripts[name], "w") as f:
            f.write(text)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows = {}
    exe = _mte_run()

    def measure(label, argv, n=5):
        runs = [peak_rss_and_wall(argv, env) for _ in range(n)]
        rows[label] = (max(r[0] for r in runs), statistics.median(r[1] for r in runs))

    for precision in ("int8", "float32"):
        mte_file = files[f"mte {precision}"]
        if exe:
            measure(f"mte-run, {precision}, 1 run", [exe, mte_file, "--input", xp, "--output", yp,
                                                    "--threads", "1"])
            measure(f"mte-run, {precision}, 5 runs (--bench 5)",
                    [exe, mte_file, "--input", xp, "--output", yp, "--threads", "1",
                     "--bench", "5", "--warmup", "0"], n=3)
        measure(f"python + minitorch_edge.runtime, {precision}, 1 run",
                [sys.executable, scripts["mte_once.py"], mte_file, xp, "1", yp])
        if f"onnx {precision}" in files:
            measure(f"python + onnxruntime, {precision}, 1 run",
                    [sys.executable, scripts["ort_once.py"], files[f"onnx {precision}"], xp,
                     "1", yp])
            measure(f"python + onnxruntime, {precision}, 5 runs",
                    [sys.executable, scripts["ort_once.py"], files[f"onnx {precision}"], xp,
                     "5", yp], n=3)
    measure("python -c 'import numpy' (the floor of the Python rows)",
            [sys.executable, "-c", "import numpy"])
    return rows


# ---- 4. size of the runtime -----------------------------------------------------------------------
def runtime_sizes():
    rows = []
    for build, strip in (("build", "strip"), ("build/aarch64", "aarch64-linux-gnu-strip")):
        for name in ("mte-run", "libmte_runtime.so"):
            path = os.path.join(ROOT, "native", build, name)
            if not os.path.exists(path) or shutil.which(strip) is None:
                continue
            with tempfile.TemporaryDirectory() as d:
                copy = os.path.join(d, name)
                shutil.copy(path, copy)
                subprocess.run([strip, copy], check=True)
                rows.append((build, name, os.path.getsize(path), os.path.getsize(copy)))
    return rows


# ---- the report ---------------------------------------------------------------------------------
def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "?"


def _isa():
    try:
        from minitorch_edge import _C
        return _C.active_isa()
    except (ImportError, AttributeError):
        return "?"


def _mb(n):
    return f"{n / 1e6:.2f} MB"


def report(args, results, sizes_rows, proc_rows, arena):
    lines = [f"# The C runtime against onnxruntime and the Python executor ({time.strftime('%Y-%m-%d')})",
             "", f"`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/runtime.py "
             f"{' '.join(args.argv)}`", "",
             f"CPU: {_cpu_name()}; libmte ISA: {_isa()}",
             f"size {args.size}, batch 1, medians of {args.repeats} calls (interleaved rounds at "
             "1 thread, one engine after the other at 2: idle thread pools spin); ratios of "
             "medians in this run (C / X < 1: the C runtime is faster).", "",
             "## 1. Latency (ms)", "",
             "| model | precision | threads | C runtime | executor | onnxruntime | C / ORT | "
             "C / executor | C vs executor (max rel. diff) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (name, threads), rows in results.items():
        for precision, (t, err) in rows.items():
            c, e, o = t["C runtime"], t["executor"], t.get("onnxruntime")
            lines.append(f"| {bench_models.LABELS.get(name, name)} | {precision} | {threads} | "
                         f"{c:.2f} | {e:.2f} | {'n/a' if o is None else f'{o:.2f}'} | "
                         f"{'n/a' if o is None else f'{c / o:.2f}'} | {c / e:.2f} | {err:.1e} |")
    lines += ["", "## 2. Files", "", "| model | .mte float32 | .onnx float32 | .mte int8 | "
              "QDQ .onnx int8 |", "|---|---:|---:|---:|---:|"]
    for name, f in sizes_rows.items():
        cells = [_mb(os.path.getsize(f[k])) if k in f else "n/a" for k in
                 ("mte float32", "onnx float32", "mte int8", "onnx int8")]
        lines.append(f"| {bench_models.LABELS.get(name, name)} | " + " | ".join(cells) + " |")
    lines += ["", "## 3 and 5. Processes: peak resident memory and wall time to the first "
              "result (MobileNetV2)", "",
              f"The int8 MobileNetV2 plan: arena {arena['arena']:,} bytes, prepared weights "
              f"{arena['prepared']:,} bytes, file {arena['file']:,} bytes.", "",
              "| process | peak RSS | wall time (median) |", "|---|---:|---:|"]
    for label, (rss, wall) in proc_rows.items():
        lines.append(f"| {label} | {_mb(rss)} | {wall * 1e3:.0f} ms |")
    lines += ["", "## 4. Size of the runtime (stripped)", "",
              "| build | file | size | stripped |", "|---|---|---:|---:|"]
    for build, name, full, stripped in runtime_sizes():
        lines.append(f"| {build} | {name} | {full / 1e3:.0f} kB | {stripped / 1e3:.0f} kB |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--models", default="mobilenet_v2,resnet18")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--out", default=None)
    p.add_argument("--no-reexec", action="store_true")
    args = p.parse_args(argv)
    args.argv = [a for a in argv if a != "--no-reexec"]
    results, files_of, proc_rows, arena = {}, {}, {}, {}
    with tempfile.TemporaryDirectory() as tmpdir:
        for name in args.models.split(","):
            files = files_of[name] = build_files(name, args.size, tmpdir)
            for threads in args.threads:
                results[(name, threads)] = latency(files, threads, args.repeats, args.warmup)
                print(f"{name}, {threads} thread(s): done", file=sys.stderr)
        if "mobilenet_v2" in files_of:
            f = files_of["mobilenet_v2"]
            with runtime.load(f["mte int8"]) as m:
                arena = {"arena": m.arena_bytes, "prepared": m.prepared_bytes,
                         "file": os.path.getsize(f["mte int8"])}
            proc_rows = processes(f, tmpdir)
        text = report(args, results, files_of, proc_rows, arena or
                      {"arena": 0, "prepared": 0, "file": 0})
    print(text)
    if args.out:
        bench_models.write_atomic(args.out, text)


if __name__ == "__main__":
    main()
