"""Native kernel benchmark: every figure a ratio against a reference measured in the same run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/kernels.py [--threads 1 2]
        [--repeats 15] [--json out.json] [--quick]

* SGEMM n = 256 ... 2048 against numpy's OpenBLAS (unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in
  this command only, as above), with GFLOP/s and % of peak: the peak is measured in the same
  run by libmte's FMA loop (`_C.peak_gflops`, one core, times the thread count);
* conv 3x3 stride 1 (batch 1), 1x1 conv, depthwise 3x3 against PyTorch NCHW and channels_last
  (through `minitorch_edge.backend.conv2d(..., inference=True)`, i.e. whatever the dispatcher
  picks: im2col, Winograd with its weights prepared once, depthwise), with the workspace each
  call takes from libmte's arena (peak bytes) and the arena allocations made by the timed
  calls after the first (0 = nothing allocated in steady state).
PyTorch's reference should run with MALLOC_MMAP_THRESHOLD_=1000000000 and
MALLOC_TRIM_THRESHOLD_=1000000000 (otherwise glibc maps fresh pages per call for some
convolutions); the script re-executes itself once with them set. Medians of `repeats` timings.
Ratios are reference time / our time: above 1 means we are faster.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

_ENV = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "1000000000"}
if any(os.environ.get(k) != v for k, v in _ENV.items()):
    os.environ.update(_ENV)
    os.execv(sys.executable, [sys.executable] + sys.argv)

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import backend  # noqa: E402

try:
    from minitorch_edge import _C  # noqa: E402
except ImportError:
    _C = None
try:
    import torch  # noqa: E402
except ImportError:
    torch = None


def median_ms(fn, repeats, warmup=3, min_seconds=0.2):
    """Median of at least `repeats` timed calls, more for short ones (about min_seconds in
    all), so that a burst of noise on a shared machine cannot be the median of a 30 us op."""
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-6)
    repeats = max(repeats, min(2000, int(min_seconds / once)))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def sgemm_rows(sizes, repeats):
    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        reps = max(3, repeats // (1 + n // 512))
        ours = median_ms(lambda: backend.matmul(a, b), reps)
        ref = median_ms(lambda: np.matmul(a, b), reps)
        gflops = 2 * n ** 3 / (ours * 1e-3) / 1e9
        ref_gflops = 2 * n ** 3 / (ref * 1e-3) / 1e9
        rows.append({"case": f"sgemm n={n}", "ours_ms": ours, "ref_ms": ref, "ref": "numpy",
                     "ratio": ref / ours, "gflops": gflops, "ref_gflops": ref_gflops})
    return rows


CONV_CASES = [  # name, N, C, K, H, kernel, stride, groups
    ("conv3x3 64->64 56^2", 1, 64, 64, 56, 3, 1, 1),
    ("conv3x3 128->128 28^2", 1, 128, 128, 28, 3, 1, 1),
    ("conv3x3 256->256 14^2", 1, 256, 256, 14, 3, 1, 1),
    ("conv1x1 96->576 14^2", 1, 96, 576, 14, 1, 1, 1),
    ("depthwise C=144 56^2 s1", 1, 144, 144, 56, 3, 1, 144),
    ("depthwise C=144 56^2 s2", 1, 144, 144, 56, 3, 2, 144),
    ("depthwise C=576 14^2 s1", 1, 576, 576, 14, 3, 1, 576),
]


def conv_rows(repeats):
    rows = []
    rng = np.random.default_rng(0)
    for name, n, c, k, h, ks, s, g in CONV_CASES:
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        w = (rng.standard_normal((k, c // g, ks, ks)) * 0.1).astype(np.float32)
        bias = rng.standard_normal(k).astype(np.float32)
        p = ks // 2
        with mte.no_grad():
            def call():
                return backend.conv2d(x, w, bias, (s, s), (p, p, p, p), (1, 1), g,
                                      inference=True)
            call()
            workspace = allocations = None
            if _C is not None:   # the GEMM arena + Winograd's own (either may be unused)
                _C.arena_reset_peak()
                _C.winograd_workspace_reset_peak()
                before = _C.workspace_allocations()
                call()
                workspace = _C.arena_peak_bytes() + _C.winograd_workspace_peak_bytes()
            ours = median_ms(call, repeats)
            if _C is not None:
                allocations = _C.workspace_allocations() - before
        row = {"case": name, "ours_ms": ours, "workspace_bytes": workspace,
               "allocations_after_first": allocations}
        if torch is not None:
            tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(bias)
            F = torch.nn.functional
            with torch.no_grad():
                nchw = median_ms(lambda: F.conv2d(tx, tw, tb, s, p, 1, g), repeats)
                cx = tx.contiguous(memory_format=torch.channels_last)
                cw = tw.contiguous(memory_format=torch.channels_last)
                cl = median_ms(lambda: F.conv2d(cx, cw, tb, s, p, 1, g), repeats)
            row.update(torch_nchw_ms=nchw, torch_cl_ms=cl, ratio_nchw=nchw / ours,
                       ratio_cl=cl / ours)
        rows.append(row)
    return rows


def measure(threads, sizes, repeats):
    """One thread count, measured in this process (numpy's BLAS pool was sized for it by
    the parent through OPENBLAS_NUM_THREADS before numpy loaded)."""
    mte.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    peak = _C.peak_gflops(0.3) * threads if _C is not None else float("nan")
    sg, cv = sgemm_rows(sizes, repeats), conv_rows(repeats)
    for r in sg:
        r["pct_peak"], r["ref_pct_peak"] = 100 * r["gflops"] / peak, 100 * r["ref_gflops"] / peak
    return {"peak_gflops": peak, "isa": _C.active_isa() if _C else None,
            "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"), "sgemm": sg, "conv": cv}


def report(threads, run):
    peak, sg, cv = run["peak_gflops"], run["sgemm"], run["conv"]
    print(f"\n### {threads} thread(s), backend {backend.active()}, medians; fp32 peak "
          f"{peak:.0f} GFLOP/s (FMA loop, {run['isa']}); numpy's OpenBLAS on "
          f"{run['openblas_threads']} thread(s)\n")
    print("| case | ours ms | numpy ms | numpy / ours | ours GFLOP/s (% peak) | "
          "numpy GFLOP/s (% peak) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in sg:
        print(f"| {r['case']} | {r['ours_ms']:.3f} | {r['ref_ms']:.3f} | {r['ratio']:.2f} | "
              f"{r['gflops']:.0f} ({r['pct_peak']:.0f}%) | "
              f"{r['ref_gflops']:.0f} ({r['ref_pct_peak']:.0f}%) |")
    print("\n| case | ours ms | torch NCHW ms | NCHW / ours | torch CL ms | CL / ours | "
          "workspace KiB | allocs after 1st |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in cv:
        ws = "n/a" if r["workspace_bytes"] is None else f"{r['workspace_bytes'] / 1024:.0f}"
        al = "n/a" if r["allocations_after_first"] is None else r["allocations_after_first"]
        if "torch_nchw_ms" in r:
            print(f"| {r['case']} | {r['ours_ms']:.3f} | {r['torch_nchw_ms']:.3f} | "
                  f"{r['ratio_nchw']:.2f} | {r['torch_cl_ms']:.3f} | {r['ratio_cl']:.2f} | "
                  f"{ws} | {al} |")
        else:
            print(f"| {r['case']} | {r['ours_ms']:.3f} | n/a | | n/a | | {ws} | {al} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="n <= 1024, fewer repeats")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child-json", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = [256, 512, 1024] if args.quick else [256, 512, 1024, 2048]
    repeats = 5 if args.quick else args.repeats
    if args.child_json:   # one thread count, in a process started for it
        run = measure(args.threads[0], sizes, repeats)
        with open(args.child_json, "w") as f:
            json.dump(run, f)
        return
    # numpy's OpenBLAS sizes its thread pool when numpy loads: each count gets its own
    # process, started with OPENBLAS_NUM_THREADS (and OMP_NUM_THREADS) set to it
    results = {"backend": backend.active(), "runs": {}}
    for threads in args.threads:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run.json")
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
                       OMP_NUM_THREADS=str(threads))
            cmd = [sys.executable, os.path.abspath(__file__), "--threads", str(threads),
                   "--repeats", str(args.repeats), "--child-json", out]
            subprocess.run(cmd + (["--quick"] if args.quick else []), env=env, check=True)
            with open(out) as f:
                results["runs"][threads] = json.load(f)
        report(threads, results["runs"][threads])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
