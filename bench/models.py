"""Whole-model inference: milliseconds per batch-1 forward of our zoo, ours (eager and the graph
executor) against PyTorch and onnxruntime, every figure measured in the same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/models.py [--threads 1 2]
        [--models mobilenet_v2,resnet18,efficientnet_lite0] [--size 224] [--repeats 30]
        [--warmup 5] [--out FILE]

Models: ``minitorch_edge.models.mobilenet_v2()``, ``resnet18()`` and ``efficientnet_lite0()``
(1000 classes), batch 1, 3 x size x size float32, eval mode. The weights are ours' random
initialisation with every BatchNorm given non-trivial statistics and affine parameters
(running_mean ~ N(0, 0.1), running_var ~ U(0.5, 1.5), weight ~ U(0.5, 1.5), bias ~ N(0, 0.1)),
so that BatchNorm folding is really tested; the same arrays are loaded into the hand-written
PyTorch twins of tests/model_twins.py (equal state_dict keys) with ``load_state_dict``.

Runners (one call each = one batch-1 forward):

    eager        ours, ``model(x)`` under ``minitorch_edge.no_grad()``
    executor     ours, ``graph.trace(model, x).optimize().compile()``, called on the numpy
                 input (shown as "n/a (reason)" when minitorch_edge.graph is missing or fails);
                 on the native backend its engine is the C runtime (graph/executor.py)
    python eng.  the same graph on the executor's Python engine (``engine="python"``: one
                 Python call per node), to show what the per-node loop costs
    PyTorch      the twin under ``torch.inference_mode()``, ``torch.set_num_threads(n)``
    onnxruntime  the twin exported by ``torch.onnx.export`` (opset 17; the TorchScript-based
                 exporter, ``dynamo=False``, which needs no onnxscript; the dynamo exporter is
                 the fallback), run by an ``InferenceSession`` on CPUExecutionProvider with
                 intra_op_num_threads = n, inter_op_num_threads = 1, ORT_ENABLE_ALL

Checks, before timing: ours eager against PyTorch and onnxruntime against PyTorch (each
``max |a - torch| / max |torch|`` <= 1e-4), the executor against eager (target <= 1e-5).
Timing: ``--warmup`` calls of each runner, then ``--repeats`` rounds in each of which every
runner is called once (the order rotating from round to round, so that no runner always runs
right after another's cache damage); the figures are medians. Ratios are of those medians in
the same run: executor / onnxruntime, executor / PyTorch (below 1 means ours is faster),
eager / executor (the executor's speed-up over eager) and eager / PyTorch.

Threads (``--threads 1 2``, the default, measures each count): our native kernels
(``minitorch_edge.backend.set_num_threads``), ``torch.set_num_threads``, onnxruntime's
intra-op pool, and numpy's OpenBLAS (OPENBLAS_NUM_THREADS at re-execution, threadpoolctl when
installed). Like bench/train_step.py the script re-executes itself once with
``MALLOC_MMAP_THRESHOLD_=1000000000 MALLOC_TRIM_THRESHOLD_=1000000000`` (glibc then reuses
freed large buffers instead of mmap/munmap-ing them per call; every runner runs under the same
setting) and OPENBLAS_NUM_THREADS set to the largest thread count; ``--no-reexec`` skips it.
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE should be unset (the command above): a warning is
printed when they are not.
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings

_ENV = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "1000000000",
        "OPENBLAS_NUM_THREADS": "1"}   # raised to the largest --threads value at re-execution
_DEFAULT_THREADS = [1, 2]


def _reexec_if_needed(argv, script=None):
    """Run `script` (default: this file) again with _ENV set, once (see the docstring)."""
    if "--no-reexec" in argv or os.environ.get("_MTE_BENCH_REEXEC") == "1":
        return
    env = dict(os.environ, _MTE_BENCH_REEXEC="1")
    for k, v in _ENV.items():
        env.setdefault(k, v)
    counts = list(_DEFAULT_THREADS)
    if "--threads" in argv:          # numpy's BLAS pool must be sized before numpy loads
        counts = []
        for a in argv[argv.index("--threads") + 1:]:
            if not a.isdigit():
                break
            counts.append(int(a))
    if counts and "OPENBLAS_NUM_THREADS" not in os.environ:
        env["OPENBLAS_NUM_THREADS"] = str(max(counts))
    os.execve(sys.executable, [sys.executable, os.path.abspath(script or __file__)] + argv, env)


if __name__ == "__main__":
    _reexec_if_needed(sys.argv[1:])

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))
sys.path.insert(0, os.path.join(_HERE, "..", "tests"))   # model_twins.py (imports harness.py)
import minitorch_edge as mte
from minitorch_edge import (
    models,
    nn,
)

try:
    import torch
except ImportError:
    torch = None
try:
    import onnxruntime as ort
except ImportError:
    ort = None

TOL_REFERENCE = 1e-4   # ours eager vs PyTorch, onnxruntime vs PyTorch
TOL_EXECUTOR = 1e-5    # executor vs ours eager (the target)

LABELS = {"mobilenet_v2": "MobileNetV2", "resnet18": "ResNet-18",
          "efficientnet_lite0": "EfficientNet-Lite0"}


def _set_native_threads(n):
    if hasattr(mte.backend, "set_num_threads"):
        mte.backend.set_num_threads(n)
        return
    try:
        from minitorch_edge import _C
        _C.set_num_threads(n)
    except (ImportError, AttributeError):
        pass


def _reason(exc):
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    msg = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return msg if len(msg) <= 90 else msg[:87] + "..."


def rel_err(a, ref):
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    if a.shape != ref.shape:
        return float("inf")
    return float(np.abs(a - ref).max() / max(np.abs(ref).max(), 1e-30))


def _as_numpy(y):
    if isinstance(y, (list, tuple)):
        y = y[0]
    if isinstance(y, dict):
        y = next(iter(y.values()))
    if hasattr(y, "detach"):
        y = y.detach()
    if hasattr(y, "numpy") and not isinstance(y, np.ndarray):
        y = y.numpy()
    return np.asarray(y)


# ---- the models and their weights ---------------------------------------------------------------
def build_ours(name, seed):
    mte.manual_seed(seed)
    ours = {"mobilenet_v2": models.mobilenet_v2, "resnet18": models.resnet18,
            "efficientnet_lite0": models.efficientnet_lite0}[name]()
    rng = np.random.default_rng(seed)
    state = {k: np.array(v.numpy()) for k, v in ours.state_dict().items()}
    for prefix, m in ours.named_modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            p = prefix + "." if prefix else ""
            state[p + "running_mean"] = (0.1 * rng.standard_normal(c)).astype(np.float32)
            state[p + "running_var"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
            state[p + "weight"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
            state[p + "bias"] = (0.1 * rng.standard_normal(c)).astype(np.float32)
    ours.load_state_dict({k: mte.tensor(v) for k, v in state.items()})
    return ours.eval(), state


def build_twin(name, state):
    import model_twins
    twin = {"mobilenet_v2": model_twins.TorchMobileNetV2,
            "resnet18": model_twins.TorchResNet18,
            "efficientnet_lite0": model_twins.TorchEfficientNetLite0}[name](1000)
    keys = list(twin.state_dict())
    if keys != list(state):
        raise RuntimeError(f"{name}: state_dict keys differ from the twin's "
                           f"(only ours {sorted(set(state) - set(keys))[:3]}, only the twin "
                           f"{sorted(set(keys) - set(state))[:3]})")
    twin.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()})
    return twin.eval()


# ---- the runners --------------------------------------------------------------------------------
def eager_runner(ours, x):
    tx = mte.tensor(x)

    def call():
        with mte.no_grad():
            return ours(tx)
    return call


def executor_runner(ours, x, engine="auto"):
    """(compiled callable, None) or (None, reason)."""
    try:
        from minitorch_edge import graph
    except Exception as e:   # not landed yet, or broken
        return None, _reason(e)
    try:
        g = graph.trace(ours, mte.tensor(x))
        g = g.optimize()
        run = g.compile(engine=engine)
        run(x)
    except Exception as e:
        return None, _reason(e)
    return (lambda: run(x)), None


def torch_runner(twin, x):
    tx = torch.from_numpy(x.copy())

    def call():
        with torch.inference_mode():
            return twin(tx)
    return call


def export_onnx(twin, x, path):
    """Export with the TorchScript-based exporter (dynamo=False) where torch still has it,
    else with the dynamo one. Returns the exporter's name."""
    tx = torch.from_numpy(x.copy())
    errors = []
    for dynamo in (False, True):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # the legacy exporter's deprecation notice
                torch.onnx.export(twin, (tx,), path, opset_version=17, dynamo=dynamo,
                                  input_names=["x"], output_names=["y"])
            return "dynamo" if dynamo else "torchscript (dynamo=False)"
        except Exception as e:
            errors.append(f"dynamo={dynamo}: {_reason(e)}")
    raise RuntimeError("; ".join(errors))


def ort_runner(path, x, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    feed = {name: x}
    return lambda: sess.run(None, feed)[0]


# ---- timing -------------------------------------------------------------------------------------
def time_interleaved(runners, repeats, warmup):
    """{name: [ms, ...]}: warmup calls of each, then `repeats` rounds of one call each, the
    order rotated every round."""
    names = list(runners)
    for _ in range(warmup):
        for n in names:
            runners[n]()
    times = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            t0 = time.perf_counter()
            runners[n]()
            times[n].append((time.perf_counter() - t0) * 1e3)
    return times


def run_model(name, threads, size, repeats, warmup, seed, tmpdir, cache):
    x = np.random.default_rng(seed + 1).standard_normal((1, 3, size, size)).astype(np.float32)
    if name not in cache:       # the same weights (and ONNX file) for every thread count
        ours, state = build_ours(name, seed)
        entry = {"ours": ours, "twin": None, "onnx": None, "notes": {}}
        if torch is None:
            entry["notes"]["torch"] = "torch not installed"
        else:
            try:
                entry["twin"] = build_twin(name, state)
            except Exception as e:
                entry["notes"]["torch"] = _reason(e)
        if entry["twin"] is None:
            entry["notes"]["ort"] = "no PyTorch twin to export"
        elif ort is None:
            entry["notes"]["ort"] = "onnxruntime not installed"
        else:
            path = os.path.join(tmpdir, f"{name}.onnx")
            try:
                entry["exporter"] = export_onnx(entry["twin"], x, path)
                entry["onnx"] = path
            except Exception as e:
                entry["notes"]["ort"] = f"export failed: {_reason(e)}"
        cache[name] = entry
    entry = cache[name]
    res = {"model": name, "label": LABELS[name], "threads": threads,
           "notes": dict(entry["notes"]), "exporter": entry.get("exporter")}

    runners = {"eager": eager_runner(entry["ours"], x)}
    y_eager = _as_numpy(runners["eager"]())
    run, why = executor_runner(entry["ours"], x)
    if run is None:
        res["notes"]["executor"] = why
    else:
        try:
            res["exec_vs_eager"] = rel_err(_as_numpy(run()), y_eager)
            runners["executor"] = run
        except Exception as e:
            res["notes"]["executor"] = _reason(e)
    run, why = executor_runner(entry["ours"], x, engine="python")
    if run is None:
        res["notes"]["executor_py"] = why
    else:
        runners["executor_py"] = run
    y_torch = None
    if entry["twin"] is not None:
        runners["torch"] = torch_runner(entry["twin"], x)
        y_torch = runners["torch"]().numpy()
        res["eager_vs_torch"] = rel_err(y_eager, y_torch)
    if entry["onnx"] is not None:
        try:
            runners["ort"] = ort_runner(entry["onnx"], x, threads)
            res["ort_vs_torch"] = rel_err(runners["ort"](), y_torch)
        except Exception as e:
            runners.pop("ort", None)
            res["notes"]["ort"] = _reason(e)

    times = time_interleaved(runners, repeats, warmup)
    res["ms"] = {k: statistics.median(v) for k, v in times.items()}
    return res


# ---- the report ---------------------------------------------------------------------------------
def _ms(r, key):
    if key in r["ms"]:
        return f"{r['ms'][key]:.2f}"
    return f"n/a ({r['notes'].get(key, 'not run')})"


def _ratio(r, a, b):
    if a in r["ms"] and b in r["ms"]:
        return f"{r['ms'][a] / r['ms'][b]:.2f}x"
    return "n/a"


def _err(r, key, tol):
    if key not in r:
        return "n/a"
    return f"{r[key]:.1e}" + ("" if r[key] <= tol else " **FAIL**")


def markdown(results, header):
    out = [header, "",
           "| model | threads | ours eager (ms) | ours executor (ms) | "
           "executor, Python engine (ms) | PyTorch (ms) | "
           "onnxruntime (ms) | executor / ORT | executor / PyTorch | eager / executor | "
           "eager / PyTorch |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        out.append(f"| {r['label']} | {r['threads']} | {_ms(r, 'eager')} | "
                   f"{_ms(r, 'executor')} | {_ms(r, 'executor_py')} | {_ms(r, 'torch')} | "
                   f"{_ms(r, 'ort')} | "
                   f"{_ratio(r, 'executor', 'ort')} | {_ratio(r, 'executor', 'torch')} | "
                   f"{_ratio(r, 'eager', 'executor')} | {_ratio(r, 'eager', 'torch')} |")
    out += ["", "Agreement, max |a - ref| / max |ref| (eager vs PyTorch and onnxruntime vs "
            f"PyTorch must be <= {TOL_REFERENCE:g}; executor vs eager target <= "
            f"{TOL_EXECUTOR:g}):", "",
            "| model | threads | eager vs PyTorch | onnxruntime vs PyTorch | "
            "executor vs eager |", "|---|---:|---:|---:|---:|"]
    for r in results:
        out.append(f"| {r['label']} | {r['threads']} | "
                   f"{_err(r, 'eager_vs_torch', TOL_REFERENCE)} | "
                   f"{_err(r, 'ort_vs_torch', TOL_REFERENCE)} | "
                   f"{_err(r, 'exec_vs_eager', TOL_EXECUTOR)} |")
    return "\n".join(out)


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".models-", suffix=".md.tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text + "\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp makes it 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=list(_DEFAULT_THREADS),
                        help="thread counts to measure, e.g. --threads 1 2")
    parser.add_argument("--models", default="mobilenet_v2,resnet18,efficientnet_lite0")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the markdown tables here")
    parser.add_argument("--no-reexec", action="store_true")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    for n in names:
        if n not in LABELS:
            raise SystemExit(f"unknown model {n!r}; choose from {', '.join(LABELS)}")
    set_vars = [k for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ]
    if set_vars:
        print(f"warning: {', '.join(f'{k}={os.environ[k]}' for k in set_vars)} set; run as "
              "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/models.py` so that "
              "OpenBLAS picks its kernels as a plain install would", file=sys.stderr)
    if torch is None:
        print("warning: PyTorch is not installed: no PyTorch / onnxruntime columns",
              file=sys.stderr)
    elif ort is None:
        print("warning: onnxruntime is not installed (pip install -e '.[bench]')",
              file=sys.stderr)

    results, cache = [], {}
    with tempfile.TemporaryDirectory(prefix="mte-bench-models-") as tmpdir:
        for threads in args.threads:
            _set_native_threads(threads)
            if torch is not None:
                torch.set_num_threads(threads)
            limit = None
            try:   # numpy's OpenBLAS follows too, when threadpoolctl is there
                from threadpoolctl import threadpool_limits
                limit = threadpool_limits(threads)
            except ImportError:
                pass
            for n in names:
                r = run_model(n, threads, args.size, args.repeats, args.warmup, args.seed,
                              tmpdir, cache)
                results.append(r)
                print(f"  {r['label']}, {threads} thread(s): " + ", ".join(
                    f"{k} {v:.2f} ms" for k, v in r["ms"].items()), file=sys.stderr)
            if limit is not None and hasattr(limit, "unregister"):
                limit.unregister()

    exporters = sorted({r["exporter"] for r in results if r.get("exporter")})
    info = mte.backend.info()
    header = (f"### Whole-model inference, batch 1, 3x{args.size}x{args.size} float32, eval; "
              f"medians of {args.repeats} interleaved rounds after {args.warmup} warm-up "
              f"calls\n\nbackend {info.get('backend')} ({info.get('isa')}), python "
              f"{platform.python_version()}, numpy {np.__version__}, torch "
              f"{torch.__version__ if torch is not None else 'n/a'}, onnxruntime "
              f"{ort.__version__ if ort is not None else 'n/a'} (ONNX export: "
              f"{', '.join(exporters) or 'n/a'}, opset 17), {os.cpu_count()} CPUs, "
              f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}. "
              "Ratios below 1 mean the numerator is faster.")
    text = markdown(results, header)
    print(text)
    if args.out:
        write_atomic(args.out, text)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
