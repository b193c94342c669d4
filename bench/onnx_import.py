"""ONNX import: what importing a torch-exported file costs, and whether the imported model runs
as fast as the same model traced from our zoo; and the ONNX node-test conformance report.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/onnx_import.py [--models
        mobilenet_v2,resnet18] [--size 224] [--repeats 30] [--warmup 5] [--out FILE]
    python bench/onnx_import.py --conformance [--out bench/results/onnx_conformance.md]

Models (bench/models.py builds them): our zoo's mobilenet_v2 and resnet18 (1000 classes,
random weights with non-trivial BatchNorm statistics), the same weights in the PyTorch twins
of tests/model_twins.py, exported by torch.onnx.export (opset 17, dynamo=False); batch 1,
3 x size x size, 1 thread everywhere (our kernels, OpenBLAS, onnxruntime's intra-op pool).

1. import time, medians of --warmup + 5 calls: `onnx.load(file)` (parse, checks, convert,
   fold: a Graph), then `.optimize()` (the passes) and `.compile()` (the executor: the C
   runtime, weights prepared);
2. latency, medians of --repeats interleaved rounds (bench/models.py's time_interleaved, the
   order rotating) of
     imported     onnx.import_model(file): the imported graph, optimized, compiled
     traced       graph.trace(model, x).optimize().compile(): the same model from our zoo
     onnxruntime  InferenceSession on the same file, ORT_ENABLE_ALL, 1 intra-op thread
   with ratios of the medians in the same run (imported / traced: 1 means the import costs
   nothing at run time), and the check that imported and traced give the same fused ops (view
   ops aside) and outputs (max |a - b| / max |b|).

--conformance runs the ONNX package's backend node tests (tests/onnx_node_cases.py) and writes
the pass / unsupported / fail counts per operator, the overall rates and the list of what is
not supported.
"""
import argparse
import collections
import datetime
import os
import statistics
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "tests"))
sys.path.insert(0, os.path.join(_HERE, ".."))
sys.path.insert(0, _HERE)
import models as bench_models  # bench/models.py: the builders and the timing

if __name__ == "__main__" and "--conformance" not in sys.argv:
    bench_models._reexec_if_needed(sys.argv[1:], __file__)

import numpy as np

import minitorch_edge as mte
from minitorch_edge import graph, onnx
from minitorch_edge.graph import opset

LABELS = bench_models.LABELS
TODAY = datetime.date.today().isoformat()


def _compute_ops(g):
    return {op: k for op, k in g.op_counts().items() if not opset.OPS[op].alias}


def _median_ms(fn, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), out


def run_model(name, size, repeats, warmup, tmpdir):
    x = np.random.default_rng(1).standard_normal((1, 3, size, size)).astype(np.float32)
    ours, state = bench_models.build_ours(name, 0)
    twin = bench_models.build_twin(name, state)
    path = os.path.join(tmpdir, f"{name}.onnx")
    bench_models.export_onnx(twin, x, path)
    row = {}
    for _ in range(warmup):
        onnx.load(path)
    row["load"], g = _median_ms(lambda: onnx.load(path), 5)
    row["optimize"], opt = _median_ms(lambda: g.optimize(), 5)
    row["compile"], imported = _median_ms(lambda: opt.compile(), 3)
    traced_graph = graph.trace(ours, mte.tensor(x)).optimize()
    traced = traced_graph.compile()
    row["same_ops"] = _compute_ops(opt) == _compute_ops(traced_graph)
    row["engine"] = f"{imported.engine} / {traced.engine}"
    want = traced(x)
    row["err"] = bench_models.rel_err(imported(x), want)
    runners = {"imported": lambda: imported(x), "traced": lambda: traced(x)}
    if bench_models.ort is not None:
        runners["onnxruntime"] = bench_models.ort_runner(path, x, 1)
        row["ort_err"] = bench_models.rel_err(runners["onnxruntime"](), want)
    times = bench_models.time_interleaved(runners, repeats, warmup)
    row.update({k: statistics.median(v) for k, v in times.items()})
    return row


def latency_report(rows, args):
    lines = [f"# ONNX import: {', '.join(LABELS[n] for n in rows)} ({TODAY})", "",
             (f"Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/onnx_import.py "
              f"--models {','.join(rows)} --size {args.size} --repeats {args.repeats} "
              f"--warmup {args.warmup}`"), "",
             (f"Batch 1, 3x{args.size}x{args.size} float32, 1 thread everywhere; the PyTorch "
              f"twin exported by torch.onnx.export (opset 17, dynamo=False). Medians in ms; "
              f"latency: {args.repeats} interleaved rounds in one process (the order "
              f"rotating). Machine: "
              f"{bench_models.platform.processor() or bench_models.platform.machine()}, "
              f"{os.cpu_count()} cores (shared with other jobs: expect noise)."), "",
             "## Import time", "",
             "| model | onnx.load | .optimize() | .compile() | same fused ops as traced |",
             "|---|---:|---:|---:|---|"]
    for name, r in rows.items():
        lines.append(f"| {LABELS[name]} | {r['load']:.1f} | {r['optimize']:.1f} | "
                     f"{r['compile']:.1f} | {'yes' if r['same_ops'] else 'NO'} |")
    lines += ["", "## Latency", "",
              ("| model | imported | traced | onnxruntime | imported / traced | "
               "imported / onnxruntime | engines (imported / traced) | max rel. diff imported "
               "vs traced | onnxruntime vs traced |"),
              "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for name, r in rows.items():
        ort_ms = r.get("onnxruntime")
        vs_ort = "n/a" if ort_ms is None else f"{r['imported'] / ort_ms:.2f}"
        lines.append(
            f"| {LABELS[name]} | {r['imported']:.2f} | {r['traced']:.2f} | "
            f"{'n/a' if ort_ms is None else f'{ort_ms:.2f}'} | "
            f"{r['imported'] / r['traced']:.3f} | "
            f"{vs_ort} | {r['engine']} | "
            f"{r['err']:.1e} | {r.get('ort_err', float('nan')):.1e} |")
    return "\n".join(lines) + "\n"


def conformance_report():
    import onnx_node_cases as cases
    t0 = time.perf_counter()
    results = cases.run_all()
    seconds = time.perf_counter() - t0
    table = cases.per_operator(results)
    total = collections.Counter(status for _, _, status, _ in results)
    n = len(results)
    missing = collections.Counter()
    for _, _, status, detail in results:
        if status == "unsupported":
            for what in detail.split(", "):
                missing[what] += 1
    import onnx as onnx_pkg
    lines = [f"# ONNX backend node tests through minitorch_edge.onnx.load ({TODAY})", "",
             (f"onnx {onnx_pkg.__version__}: {n} cases "
              f"(onnx.backend.test.case.node.collect_testcases()), run by "
              f"tests/onnx_node_cases.py (import, then the executor's Python engine) in "
              f"{seconds:.0f} s. Command: `python bench/onnx_import.py --conformance`."), "",
             (f"Overall: **{total['pass']} pass ({100 * total['pass'] / n:.1f}%)**, "
              f"{total['unsupported']} unsupported ({100 * total['unsupported'] / n:.1f}%), "
              f"{total['fail']} fail. Of the cases whose operators are all supported, "
              f"{100 * total['pass'] / max(total['pass'] + total['fail'], 1):.1f}% pass."), "",
             ("A graph input that decides a shape (a Reshape's shape, Slice's starts, ...) is "
              "frozen to the case's value: our graphs have static shapes. Unsupported: the "
              "importer raised OnnxUnsupportedError (the operator, or the feature in "
              "parentheses), or the case feeds non-tensor or non-numeric values (sequences, "
              "strings, bfloat16, float8)."), "",
             "## Failures", ""]
    fails = [(name, op, d) for name, op, status, d in results if status == "fail"]
    lines += [f"- `{name}` ({op}): {d}" for name, op, d in fails] or ["none"]
    lines += ["", "## Not supported (cases needing it)", "",
              ", ".join(f"{what} ({k})" for what, k in missing.most_common()), "",
              "## Per operator", "", "| operator | pass | unsupported | fail | pass rate |",
              "|---|---:|---:|---:|---:|"]
    for op, row in table.items():
        k = sum(row.values())
        lines.append(f"| {op} | {row['pass']} | {row['unsupported']} | {row['fail']} | "
                     f"{100 * row['pass'] / k:.0f}% |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mobilenet_v2,resnet18")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--conformance", action="store_true")
    p.add_argument("--out")
    p.add_argument("--no-reexec", action="store_true")
    args = p.parse_args(argv)
    if args.conformance:
        text = conformance_report()
        out = args.out or os.path.join(_HERE, "results", "onnx_conformance.md")
    else:
        bench_models._set_native_threads(1)
        rows = {}
        with tempfile.TemporaryDirectory() as tmpdir:
            for name in args.models.split(","):
                rows[name] = run_model(name, args.size, args.repeats, args.warmup, tmpdir)
        text = latency_report(rows, args)
        out = args.out or os.path.join(_HERE, "results", f"onnx-{TODAY}.md")
    bench_models.write_atomic(out, text)
    print(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
