"""Quick single-thread SGEMM timing: minitorch_edge._C.sgemm (each ISA) vs numpy/OpenBLAS.

    python bench/gemm_quick.py [sizes...]          (default 256 512 1024)

Speed is a ratio measured in the same run (README, "Benchmarks"): the calls are interleaved, so a
noisy neighbour slows both sides alike, and the median of many runs is reported. OpenBLAS
is left to pick its own kernel (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are dropped from this
process's environment before numpy loads) and both sides run on one thread.
"""
import os
import sys
import time

for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(var, None)
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

from minitorch_edge import _C  # noqa: E402


def median_ms(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def main(sizes):
    _C.set_num_threads(1)
    isas = [i for i in ("avx512", "avx2", "neon", "generic") if i in _C.available_isas()]
    print(f"libmte {_C.version()} on {' '.join(_C.cpu_features())}; 1 thread")
    head = f"{'n':>6} {'numpy ms':>9}" + "".join(f" {i + ' ms':>11} {'ratio':>6}" for i in isas)
    print(head)
    try:
        for n in sizes:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((n, n), dtype=np.float32)
            b = rng.standard_normal((n, n), dtype=np.float32)
            c = np.empty((n, n), np.float32)
            reps = max(5, int(3e9 / (2 * n**3)))  # ~1-2 s per column
            results = {isa: [] for isa in isas}
            ref = []
            for _ in range(3):  # interleave rounds: numpy, then each ISA
                ref.append(median_ms(lambda: np.matmul(a, b, out=c), reps))
                for isa in isas:
                    _C.set_isa(isa)
                    _C.sgemm(a, b, out=c)  # warm up (arena, caches)
                    results[isa].append(median_ms(lambda: _C.sgemm(a, b, out=c), reps))
            t_np = float(np.median(ref))
            row = f"{n:>6} {t_np:>9.3f}"
            for isa in isas:
                t = float(np.median(results[isa]))
                row += f" {t:>11.3f} {t_np / t:>6.2f}"
            print(row, flush=True)
    finally:
        _C.set_isa("auto")


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [256, 512, 1024])
