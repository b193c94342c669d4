"""int8 inference kernels against our float32 ones, one thread, in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/int8.py [--repeats N] [--json F]

Rows (the shapes of bench/kernels.py):
* conv 3x3 and 1x1 (kernels.py's, then INT8_CASES): backend.qconv2d (weights prepacked once,
  cached) against backend.conv2d
  with inference=True (prepacked panels or Winograd's cached U, whichever the dispatcher
  picks), ratio = float ms / int8 ms, and the int8 GEMM's GOPS against the peak of the
  active ISA's int8 microkernel step (_C.peak_gops_int8: VPDPBUSD chains on VNNI);
* depthwise 3x3: backend.qconv2d (the qdepthwise kernels) against backend.conv2d's depthwise
  kernels, on kernels.py's three shapes and MobileNetV2's (MNV2_DW: C at 112..7, s 1 and 2).
Medians of many timed calls (bench/kernels.py's median_ms).
"""
import argparse
import json
import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(_HERE), _HERE]  # this checkout's package, then kernels.py
from kernels import CONV_CASES, median_ms

import minitorch_edge as mte
from minitorch_edge import _C, backend
from minitorch_edge.backend import numpy_int8


# the short-K 1x1 expansions of MobileNetV2 and the stride-2 3x3 of ResNet-18 (kernels.py's
# row layout: name, N, C, K, H, kernel, stride, groups)
INT8_CASES = [("conv1x1 24->144 56^2", 1, 24, 144, 56, 1, 1, 1),
              ("conv1x1 32->192 28^2", 1, 32, 192, 28, 1, 1, 1),
              ("conv3x3 64->128 56^2 s2", 1, 64, 128, 56, 3, 2, 1),
              ("conv3x3 128->256 28^2 s2", 1, 128, 256, 28, 3, 2, 1)]

# MobileNetV2's depthwise 3x3 layers (pad 1): C, H, stride
MNV2_DW = [(96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (192, 28, 2), (384, 14, 1),
           (576, 14, 1), (576, 14, 2), (960, 7, 1)]


def case_rows(repeats):
    rng = np.random.default_rng(0)
    rows = []
    cases = CONV_CASES + INT8_CASES + [(f"mnv2 dw C={c} {h}^2 s{s}", 1, c, c, h, 3, s, c)
                                       for c, h, s in MNV2_DW]
    for name, n, c, k, h, ks, s, g in cases:
        p = ks // 2
        x = rng.standard_normal((n, c, h, h)).astype(np.float32)
        w = (rng.standard_normal((k, c // g, ks, ks)) * 0.1).astype(np.float32)
        bias = rng.standard_normal(k).astype(np.float32)
        geom = ((s, s), (p, p, p, p), (1, 1), g)
        with mte.no_grad():
            f32 = median_ms(lambda x=x, w=w, bias=bias, geom=geom: backend.conv2d(
                x, w, bias, *geom, inference=True), repeats)
        qx = rng.integers(-128, 128, x.shape, dtype=np.int8)
        qw = rng.integers(-127, 128, w.shape, dtype=np.int8)
        qb = rng.integers(-5000, 5000, k).astype(np.int32)
        m = np.empty(k, np.int32)
        m[:], sh = numpy_int8.quantize_multiplier(0.0007)
        shift = np.full(k, sh, np.int32)
        i8 = median_ms(lambda qx=qx, qw=qw, qb=qb, m=m, shift=shift, geom=geom: backend.qconv2d(
            qx, 3, qw, qb, m, shift, -2, -128, 127, *geom), repeats)
        ho = (h + 2 * p - ks) // s + 1
        gops = 2.0 * n * k * (c // g) * ks * ks * ho * ho / (i8 * 1e-3) / 1e9
        rows.append({"case": name, "float32_ms": f32, "int8_ms": i8, "ratio": f32 / i8,
                     "int8_gops": gops})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    backend.set_num_threads(1)
    peak = _C.peak_gops_int8(0.3)
    rows = case_rows(args.repeats)
    print(f"1 thread, ISA {_C.active_isa()} (qgemm: {_C.dispatch_table()['qgemm']}; "
          f"K=16: {_C.qgemm_path(16)}, K=576: {_C.qgemm_path(576)}), int8 peak {peak:.0f} GOPS, "
          f"fp32 peak {_C.peak_gflops(0.3):.0f} GFLOP/s")
    print(f"{'case':26s} {'float32 ms':>10s} {'int8 ms':>9s} {'ratio':>6s} {'int8 GOPS':>10s} "
          f"{'% peak':>6s}")
    for r in rows:
        print(f"{r['case']:26s} {r['float32_ms']:10.3f} {r['int8_ms']:9.3f} {r['ratio']:6.2f} "
              f"{r['int8_gops']:10.1f} {100 * r['int8_gops'] / peak if peak else 0:6.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"isa": _C.active_isa(), "peak_gops_int8": peak, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
