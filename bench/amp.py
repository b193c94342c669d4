"""Half-precision GEMM benchmark: libmte's bfloat16 and float16 GEMM against our float32 GEMM
and PyTorch's CPU bf16 matmul, in one run (issue 18's kernel target).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/amp.py [--threads 1 2]
        [--sizes 256 512 1024 2048] [--repeats 9] [--json out.json]

For each n (square n x n x n products; inputs random normal, already in their dtype, so the
timed call is the product alone): the median time of `_C.matmul` (float32), `_C.half_gemm`
on bfloat16 and on float16 (ml_dtypes / numpy arrays, results in their own dtype), and
`torch.matmul` on bfloat16 tensors; GFLOP/s, our bf16 speed-up over our float32 GEMM, and
the fraction of the bf16 peak: `_C.bf16_peak_gflops` (one core's VDPBF16PS / BFDOT loop,
times the thread count, measured in the same run; the fp32 FMA peak where the CPU has no bf16
arithmetic). Medians of `repeats` timings (more for short calls), the four variants timed
in turns. Runs with glibc's
MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ raised (it re-executes itself once with them).
"""
import argparse
import json
import os
import statistics
import time

import sys

# glibc would map fresh pages for every result array of these sizes (a page fault per 4 KiB
# inside the timed call, for every library alike); bench/kernels.py does the same
_ENV = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "1000000000"}
if any(os.environ.get(k) != v for k, v in _ENV.items()):
    os.environ.update(_ENV)
    os.execv(sys.executable, [sys.executable] + sys.argv)

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from minitorch_edge import _C  # noqa: E402

try:
    import torch  # noqa: E402
except ImportError:
    torch = None


def medians_ms(fns, repeats, warmup=2, min_seconds=0.3):
    """{name: median ms} of the callables in `fns`, timed in turns (one call of each per
    round), so that a burst of load from other processes hits all of them alike; at least
    `repeats` rounds, more for short calls (about min_seconds per callable)."""
    once = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        t0 = time.perf_counter()
        fn()
        once[name] = max(time.perf_counter() - t0, 1e-6)
    rounds = max(repeats, min(300, int(min_seconds / max(once.values()))))
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def run(threads, sizes, repeats):
    _C.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    peak = _C.bf16_peak_gflops(0.3) * threads
    fpeak = _C.peak_gflops(0.3) * threads
    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        a32 = rng.standard_normal((n, n)).astype(np.float32)
        b32 = rng.standard_normal((n, n)).astype(np.float32)
        abf, bbf = a32.astype(ml_dtypes.bfloat16), b32.astype(ml_dtypes.bfloat16)
        af16, bf16_ = a32.astype(np.float16), b32.astype(np.float16)
        flops = 2.0 * n ** 3
        fns = {"f32_ms": lambda: _C.matmul(a32, b32),
               "bf16_ms": lambda: _C.half_gemm(abf, bbf),
               "fp16_ms": lambda: _C.half_gemm(af16, bf16_)}
        if torch is not None:
            ta, tb = torch.from_numpy(a32).bfloat16(), torch.from_numpy(b32).bfloat16()
            fns["torch_bf16_ms"] = lambda: torch.matmul(ta, tb)
        row = {"n": n, **medians_ms(fns, repeats)}
        for k in [k for k in row if k.endswith("_ms")]:
            row[k.replace("_ms", "_gflops")] = flops / (row[k] * 1e-3) * 1e-9
        row["bf16_speedup"] = row["f32_ms"] / row["bf16_ms"]
        row["fp16_speedup"] = row["f32_ms"] / row["fp16_ms"]
        row["bf16_peak_frac"] = row["bf16_gflops"] / peak
        row["f32_peak_frac"] = row["f32_gflops"] / fpeak
        rows.append(row)
    return {"threads": threads, "isa": _C.active_isa(), "bf16_path": _C.half_gemm_path(
        ml_dtypes.bfloat16), "fp16_path": _C.half_gemm_path(np.float16),
        "bf16_peak_gflops": peak, "f32_peak_gflops": fpeak, "rows": rows}


def report(r):
    print(f"threads {r['threads']}, isa {r['isa']}; bf16: {r['bf16_path']}, fp16: "
          f"{r['fp16_path']}; peaks: bf16 {r['bf16_peak_gflops']:.0f}, fp32 "
          f"{r['f32_peak_gflops']:.0f} GFLOP/s")
    head = (f"{'n':>5} {'f32 ms':>8} {'bf16 ms':>8} {'fp16 ms':>8} {'torch bf16':>10} "
            f"{'bf16/f32':>8} {'fp16/f32':>8} {'bf16 GF/s':>9} {'%bf16pk':>7} {'%f32pk':>6} "
            f"{'torch/ours':>10}")
    print(head)
    for x in r["rows"]:
        t = x.get("torch_bf16_ms", float("nan"))
        print(f"{x['n']:>5} {x['f32_ms']:>8.2f} {x['bf16_ms']:>8.2f} {x['fp16_ms']:>8.2f} "
              f"{t:>10.2f} {x['bf16_speedup']:>7.2f}x {x['fp16_speedup']:>7.2f}x "
              f"{x['bf16_gflops']:>9.0f} {100 * x['bf16_peak_frac']:>6.0f}% "
              f"{100 * x['f32_peak_frac']:>5.0f}% {t / x['bf16_ms']:>9.2f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--json")
    args = p.parse_args()
    results = []
    for t in args.threads:
        results.append(run(t, args.sizes, args.repeats))
        report(results[-1])
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump(results, f, indent=1)
        os.replace(args.json + ".tmp", args.json)


if __name__ == "__main__":
    main()
