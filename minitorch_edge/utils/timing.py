"""Timing that holds on a busy machine: medians of interleaved rounds.

Each round runs every function once, so a load that comes and goes slows all of them alike and
their ratios hold even when the milliseconds swing. A call quicker than `min_seconds` is repeated
until that much time has passed, so the clock's resolution does not matter. The tutorials time
with it; the benchmarks in bench/ follow the same rule.

    ms = median_ms({"numpy": lambda: a @ b, "ours": lambda: mte.matmul(ta, tb)})
    print(ms["numpy"] / ms["ours"])
"""
import time

import numpy as np

__all__ = ["median_ms"]


def median_ms(fns, rounds=9, min_seconds=2e-3, threads=1):
    """{name: median milliseconds per call} of `fns` ({name: zero-argument function}), timed in
    `rounds` interleaved rounds after one warm-up call each. `threads`: the kernel thread count
    while timing (restored afterwards); None keeps the current one."""
    from .. import backend
    previous = backend.get_num_threads()
    if threads is not None:
        backend.set_num_threads(threads)
    try:
        for fn in fns.values():
            fn()                                              # warm-up: caches, first-call work
        samples = {name: [] for name in fns}
        for _ in range(rounds):
            for name, fn in fns.items():
                calls, t0 = 0, time.perf_counter()
                while True:
                    fn()
                    calls += 1
                    elapsed = time.perf_counter() - t0
                    if elapsed >= min_seconds:
                        break
                samples[name].append(elapsed / calls)
    finally:
        backend.set_num_threads(previous)
    return {name: 1e3 * float(np.median(times)) for name, times in samples.items()}
