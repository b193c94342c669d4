"""Per-op overhead: microseconds per small op for minitorch_edge (recording grad and under
no_grad), numpy, and PyTorch (if installed), all measured in this one run.

    python bench/overhead.py [--json out.json] [--repeats 15]
    python bench/overhead.py --profiler [--baseline /path/to/other/checkout]

``--profiler`` measures the profiler's cost: ours (recording grad) with no profiler running (the
one flag test per op), inside ``profiler.profile()``, and inside ``profile(record_shapes=True,
profile_memory=True, with_flops=True)``; with ``--baseline DIR`` also the same op in the
checkout at DIR (run in a subprocess with that PYTHONPATH), i.e. before the flag existed.

For numpy figures comparable to a plain install, run with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset (``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python ...``).
Each figure is the median over `repeats` runs of a loop of `number` calls, divided by `number`.
"""
import argparse
import json
import statistics
import sys
import timeit

import numpy as np

import minitorch_edge as mte

try:
    import torch
except ImportError:
    torch = None


def per_call_us(fn, number, repeats):
    timer = timeit.Timer(fn)
    timer.timeit(number=max(1, number // 10))  # warm up
    runs = [timer.timeit(number=number) / number * 1e6 for _ in range(repeats)]
    return statistics.median(runs)


def per_call_us_profiled(fn, number, repeats, **options):
    """per_call_us with each timed loop inside its own profiler.profile(**options) (started and
    stopped outside the timing, so only the per-op recording is measured)."""
    from minitorch_edge import profiler
    timer = timeit.Timer(fn)
    runs = []
    for _ in range(repeats):
        with profiler.profile(**options):
            runs.append(timer.timeit(number=number) / number * 1e6)
    return statistics.median(runs)


def baseline_us(directory, repeats):
    """{op: ours_grad_us} of this script run on the checkout at `directory`."""
    import os
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "base.json")
        env = dict(os.environ, PYTHONPATH=os.path.abspath(directory))
        subprocess.run([sys.executable, os.path.abspath(__file__), "--repeats", str(repeats),
                        "--json", out], env=env, check=True, capture_output=True,
                       cwd=os.path.abspath(directory))
        with open(out) as f:
            return {r["op"]: r["ours_grad_us"] for r in json.load(f)}


def profiler_main(args):
    """The --profiler table (see the module docstring)."""
    rng = np.random.default_rng(0)
    base = baseline_us(args.baseline, args.repeats) if args.baseline else {}
    rows = []
    for name, sa, sb, op, number in cases():
        xa = rng.standard_normal(sa).astype(np.float32)
        xb = rng.standard_normal(sb).astype(np.float32) if sb else None
        a, b = mte.tensor(xa, requires_grad=True), (mte.tensor(xb) if sb else None)
        row = {"op": name, "off_us": per_call_us(lambda: op(a, b), number, args.repeats)}
        if name in base:
            row["baseline_us"] = base[name]
        row["on_us"] = per_call_us_profiled(lambda: op(a, b), number, args.repeats)
        row["on_all_us"] = per_call_us_profiled(lambda: op(a, b), number, args.repeats,
                                                record_shapes=True, profile_memory=True,
                                                with_flops=True)
        rows.append(row)
    cols = [c for c in ("baseline_us", "off_us", "on_us", "on_all_us") if c in rows[0]]
    titles = {"baseline_us": "baseline (no flag)", "off_us": "profiler off",
              "on_us": "profile()", "on_all_us": "profile(shapes, memory, flops)"}
    print(f"backend: {mte.backend.active()}, python {sys.version.split()[0]}, median of "
          f"{args.repeats} runs, µs per op recording grad, 1 thread\n")
    print("| op | " + " | ".join(titles[c] for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for r in rows:
        print(f"| {r['op']} | " + " | ".join(f"{r[c]:.2f}" for c in cols) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


def cases():
    """(name, shape builder, op, number) — ops take two operands of the built shapes."""
    return [
        ("add 1 elem", (1,), (1,), lambda a, b: a + b, 20000),
        ("mul 1 elem", (1,), (1,), lambda a, b: a * b, 20000),
        ("add 1000 elem", (1000,), (1000,), lambda a, b: a + b, 20000),
        ("mul 1000 elem", (1000,), (1000,), lambda a, b: a * b, 20000),
        ("matmul 64x64", (64, 64), (64, 64), lambda a, b: a @ b, 3000),
        ("sum 1000 elem", (1000,), None, lambda a, b: a.sum(), 20000),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", default=None)
    parser.add_argument("--profiler", action="store_true",
                        help="measure the profiler's cost per op (off, on, on with everything)")
    parser.add_argument("--baseline", default=None,
                        help="with --profiler: a checkout whose figures (no profiler flag) to add")
    args = parser.parse_args(argv)
    mte.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    if args.profiler:
        return profiler_main(args)
    rng = np.random.default_rng(0)
    rows = []
    for name, sa, sb, op, number in cases():
        xa = rng.standard_normal(sa).astype(np.float32)
        xb = rng.standard_normal(sb).astype(np.float32) if sb else None
        row = {"op": name}
        a, b = mte.tensor(xa, requires_grad=True), (mte.tensor(xb) if sb else None)
        row["ours_grad_us"] = per_call_us(lambda: op(a, b), number, args.repeats)
        with mte.no_grad():
            row["ours_no_grad_us"] = per_call_us(lambda: op(a, b), number, args.repeats)
        row["numpy_us"] = per_call_us(lambda: op(xa, xb), number, args.repeats)
        if torch is not None:
            ta = torch.tensor(xa, requires_grad=True)
            tb = torch.tensor(xb) if sb else None
            row["torch_grad_us"] = per_call_us(lambda: op(ta, tb), number, args.repeats)
            with torch.no_grad():
                row["torch_no_grad_us"] = per_call_us(lambda: op(ta, tb), number, args.repeats)
        rows.append(row)
    cols = ["ours_grad_us", "ours_no_grad_us", "numpy_us", "torch_grad_us", "torch_no_grad_us"]
    cols = [c for c in cols if c in rows[0]]
    print(f"backend: {mte.backend.active()}, python {sys.version.split()[0]}, median of "
          f"{args.repeats} runs, µs per call, 1 thread\n")
    print("| op | " + " | ".join(c.replace("_us", "").replace("_", " ") for c in cols) +
          " | ours grad / torch grad |")
    print("|---" * (len(cols) + 2) + "|")
    for r in rows:
        ratio = (f"{r['ours_grad_us'] / r['torch_grad_us']:.2f}x" if "torch_grad_us" in r
                 else "n/a")
        print(f"| {r['op']} | " + " | ".join(f"{r[c]:.2f}" for c in cols) + f" | {ratio} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
