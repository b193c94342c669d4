"""Per-layer int8 conv times at the small images where the int8 GEMM's last column tile is
partly empty: ResNet-18's layer3 (14x14, N = 196) and layer4 (7x7, N = 49) convs and
MobileNetV2's 14x14 / 7x7 pointwise convs, one thread, weights prepacked
(backend.native_int8.qconv2d_prepare), with the GEMM's columns N (flat convs: Ho * Wq).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/qgemm_tail.py [--isa auto]

Medians of many timed calls (bench/kernels.py's median_ms); GOPS counts the real outputs.
"""
import argparse
import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_HERE), _HERE]
from kernels import median_ms

from minitorch_edge import _C, backend
from minitorch_edge.backend import native_int8, numpy_int8

# name, C in, C out, H (= W), kernel, stride
LAYERS = [("r18 l3 3x3 256->256 14^2", 256, 256, 14, 3, 1),
          ("r18 l3 3x3 128->256 28^2 s2", 128, 256, 28, 3, 2),
          ("r18 l3 1x1 128->256 28^2 s2", 128, 256, 28, 1, 2),
          ("r18 l4 3x3 512->512 7^2", 512, 512, 7, 3, 1),
          ("r18 l4 3x3 256->512 14^2 s2", 256, 512, 14, 3, 2),
          ("r18 l4 1x1 256->512 14^2 s2", 256, 512, 14, 1, 2),
          ("mnv2 1x1 64->384 14^2", 64, 384, 14, 1, 1),
          ("mnv2 1x1 384->96 14^2", 384, 96, 14, 1, 1),
          ("mnv2 1x1 160->960 7^2", 160, 960, 7, 1, 1),
          ("mnv2 1x1 960->160 7^2", 960, 160, 7, 1, 1),
          ("mnv2 1x1 320->1280 7^2", 320, 1280, 7, 1, 1)]


def columns(h, k, s):
    """the GEMM's N: the flat route computes Wq = ceil((W + 2 pad) / s) columns per row"""
    ho = (h + 2 * (k // 2) - k) // s + 1
    return ho * ho if k == 1 else ho * -(-(h + 2 * (k // 2)) // s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--isa", default="auto")
    ap.add_argument("--repeats", type=int, default=30)
    a = ap.parse_args()
    backend.set_num_threads(1)
    _C.set_isa(a.isa)
    rng = np.random.default_rng(0)
    print(f"isa {a.isa}, 1 thread, load {os.getloadavg()[0]:.2f}")
    print(f"{'layer':32s} {'N':>5s} {'ms':>8s} {'GOPS':>7s}")
    for name, c, o, h, k, s in LAYERS:
        x = rng.integers(-128, 128, (1, c, h, h), dtype=np.int8)
        w = rng.integers(-127, 128, (o, c, k, k), dtype=np.int8)
        bias = rng.integers(-2000, 2000, o, dtype=np.int32)
        m = np.full(o, numpy_int8.quantize_multiplier(0.002)[0], np.int32)
        shift = np.full(o, -8, np.int32)
        p = k // 2
        run = native_int8.qconv2d_prepare(x.shape, 3, w, bias, m, shift, -5, -128, 127, (s, s),
                                          (p, p, p, p), (1, 1), 1)
        y = run(x)
        ms = median_ms(lambda: run(x, out=y), a.repeats)
        ops = 2.0 * o * c * k * k * y.shape[2] * y.shape[3]
        print(f"{name:32s} {columns(h, k, s):5d} {ms:8.4f} {ops / ms / 1e6:7.1f}")


if __name__ == "__main__":
    main()
