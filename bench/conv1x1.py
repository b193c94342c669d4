"""1x1 convolutions of MobileNetV2 (and ResNet-18's downsample 1x1s) at 224x224, batch 1.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/conv1x1.py [--threads 1]
        [--repeats 30] [--isa avx512] [--resnet] [--json out.json]

The inference executor folds BatchNorm into the convolutions and runs the activation in the
GEMM epilogue, so every 1x1 conv here is timed as it runs there: `_C.conv2d` with weights
prepacked once (`_C.conv2d_pack_weight`), a bias, and the layer's epilogue (expand: ReLU6;
project: none, plus the block input as residual where the block has its skip connection;
the last 320 -> 1280 conv: ReLU6; ResNet's downsample: none).

The layer list is not typed in: it is read from `minitorch_edge.models.mobilenet_v2()` by
walking its modules (Conv2d with a 1x1 kernel) and a forward hook on a 1x3x224x224 input
that records each conv's input size. A 1x1 conv Cin -> Cout over HxW is the GEMM
C[Cout, HW] = W[Cout, Cin] @ X[Cin, HW]; the table shows, per distinct shape, the median
time, GFLOP/s, % of one core's FMA peak (`_C.peak_gflops()`, measured in the same run) and
the ratio numpy(OpenBLAS) `W @ X` time / our time (above 1: we are faster; numpy does the
bare GEMM, no bias or activation). The total line sums each shape's time times the number of
layers that have it: the whole network's 1x1 convolutions.

--resnet adds the guard table: every convolution of ResNet-18 at 224 through
`backend.conv2d(..., inference=True)` (the dispatcher's choice: Winograd, im2col, 1x1).

Output arrays are allocated per call, as in the executor; the script re-executes itself with
MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ raised (as bench/kernels.py does), so that a
4.8 MB output is recycled heap memory rather than ~1200 fresh page faults per call, which
would be most of what is timed (for numpy's `W @ X` as much as for us); OpenBLAS runs on
one thread (OPENBLAS_NUM_THREADS=1 unless set) to compare with --threads 1.
"""
import argparse
import json
import os
import statistics
import sys
import time

_ENV = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "1000000000",
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
if any(os.environ.get(k) != v for k, v in _ENV.items()):  # outputs reuse freed heap memory
    os.environ.update(_ENV)                                # instead of fresh zeroed pages
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import _C, backend, models, nn  # noqa: E402


def median_s(fn, repeats, warmup=3, min_seconds=0.3):
    """Median of at least `repeats` timed calls (more for short ones: ~min_seconds in all)."""
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    n = max(repeats, min(3000, int(min_seconds / once)))
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def conv_records(model, size=224):
    """(conv module, input shape, output shape, parent block) of every Conv2d, in order."""
    recs, parents = [], {}
    for _, mod in model.named_modules():
        for child in getattr(mod, "_modules", {}).values():
            for _, sub in child.named_modules():
                parents.setdefault(id(sub), mod)

    def hook(mod, inp, out):
        recs.append((mod, tuple(inp[0].shape), tuple(out.shape)))

    for _, mod in model.named_modules():
        if isinstance(mod, nn.Conv2d):
            mod.register_forward_hook(hook)
    model.eval()
    with mte.no_grad():
        model(mte.tensor(np.zeros((1, 3, size, size), np.float32)))
    return recs


def mobilenet_1x1_layers():
    """[(cin, cout, h, w, act, residual)] of MobileNetV2's 1x1 convs, in network order."""
    m = models.mobilenet_v2()
    # which 1x1 convs are the project conv of a block with a skip connection
    project_res, last_of_block = set(), set()
    for _, mod in m.named_modules():
        if type(mod).__name__ == "InvertedResidual":
            convs = [c for _, c in mod.named_modules() if isinstance(c, nn.Conv2d)]
            last_of_block.add(id(convs[-1]))
            if mod.use_res_connect:
                project_res.add(id(convs[-1]))
    layers = []
    for mod, i, o in conv_records(m):
        if tuple(mod.kernel_size) != (1, 1):
            continue
        act = None if id(mod) in last_of_block else "relu6"
        layers.append((i[1], o[1], o[2], o[3], act, id(mod) in project_res))
    return layers


def resnet_records():
    return [(mod, i, o) for mod, i, o in conv_records(models.resnet18())]


def bench_1x1(cin, cout, h, w, act, res, stride, repeats, rng):
    hi, wi = h * stride, w * stride
    x = rng.standard_normal((1, cin, hi, wi)).astype(np.float32)
    wt = (rng.standard_normal((cout, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    r = rng.standard_normal((1, cout, h, w)).astype(np.float32) if res else None
    pk = _C.conv2d_pack_weight(wt, 1)
    st = (stride, stride)

    def ours():
        return _C.conv2d(x, wt, b, st, (0, 0, 0, 0), (1, 1), 1, act, r, packed_w=pk)

    # correctness on the way: the same as the numpy product
    xs = x[:, :, ::stride, ::stride].reshape(cin, h * w)
    ref = wt.reshape(cout, cin) @ xs + b[:, None]
    if r is not None:
        ref += r.reshape(cout, h * w)
    if act == "relu6":
        ref = np.clip(ref, 0, 6)
    err = float(np.max(np.abs(ours().reshape(cout, h * w) - ref)))
    assert err < 1e-3 * max(1.0, float(np.max(np.abs(ref)))), (cin, cout, h, w, err)
    w2 = np.ascontiguousarray(wt.reshape(cout, cin))
    xs = np.ascontiguousarray(xs)
    t_ours = median_s(ours, repeats)
    t_np = median_s(lambda: w2 @ xs, repeats)
    return t_ours, t_np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--isa", default=None)
    ap.add_argument("--resnet", action="store_true", help="add the ResNet-18 guard table")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    _C.set_num_threads(args.threads)
    if args.isa:
        _C.set_isa(args.isa)
    rng = np.random.default_rng(0)
    peak = _C.peak_gflops() * args.threads
    print(f"isa {_C.active_isa()}, {args.threads} thread(s), FMA peak {peak:.1f} GFLOP/s")

    layers = mobilenet_1x1_layers()
    counts = {}
    for L in layers:
        counts[L] = counts.get(L, 0) + 1
    rn = []  # ResNet-18 downsample 1x1s: stride 2
    for mod, i, o in resnet_records():
        if tuple(mod.kernel_size) == (1, 1):
            rn.append((i[1], o[1], o[2], o[3], None, False))
    out = {"peak": peak, "isa": _C.active_isa(), "rows": []}
    hdr = (f"{'shape (Cin->Cout @ HxW)':<28}{'epilogue':<15}{'n':>3}{'us':>10}"
           f"{'GFLOP/s':>9}{'%peak':>7}{'np us':>10}{'np/ours':>8}")
    print(hdr)
    tot_t = tot_np = tot_f = 0.0
    for (L, n) in list(counts.items()) + [(L, 0) for L in rn]:
        cin, cout, h, w, act, res = L
        stride = 2 if n == 0 else 1
        t, tn = bench_1x1(cin, cout, h, w, act, res, stride, args.repeats, rng)
        flops = 2.0 * cin * cout * h * w
        gf = flops / t / 1e9
        ep = ("bias+" + (act or "none")) + ("+res" if res else "")
        name = f"{cin}->{cout} @ {h}x{w}" + (" s2" if n == 0 else "")
        print(f"{name:<28}{ep:<15}{n if n else '-':>3}{t * 1e6:>10.1f}{gf:>9.1f}"
              f"{100 * gf / peak:>6.1f}%{tn * 1e6:>10.1f}{tn / t:>8.2f}")
        out["rows"].append({"shape": [cin, cout, h, w], "act": act, "residual": res,
                            "count": n, "stride": stride, "us": t * 1e6, "numpy_us": tn * 1e6,
                            "gflops": gf})
        if n:
            tot_t += n * t
            tot_np += n * tn
            tot_f += n * flops
    gf = tot_f / tot_t / 1e9
    print(f"{'TOTAL MobileNetV2 1x1':<28}{'':<15}{len(layers):>3}{tot_t * 1e6:>10.1f}{gf:>9.1f}"
          f"{100 * gf / peak:>6.1f}%{tot_np * 1e6:>10.1f}{tot_np / tot_t:>8.2f}"
          f"   ({tot_f / 2e6:.0f} MMAC)")
    out["total"] = {"us": tot_t * 1e6, "numpy_us": tot_np * 1e6, "gflops": gf}

    if args.resnet:
        print("\nResNet-18 @ 224 guard: backend.conv2d(inference=True), bias + relu")
        print(f"{'conv':<36}{'n':>3}{'us':>10}{'GFLOP/s':>9}{'%peak':>7}")
        seen = {}
        for mod, i, o in resnet_records():
            key = (i[1], o[1], i[2], tuple(mod.kernel_size), tuple(mod.stride),
                   tuple(mod.padding))
            seen[key] = seen.get(key, 0) + 1
        tot = 0.0
        out["resnet"] = []
        for key, n in seen.items():
            cin, cout, hi, k, s, p = key
            x = rng.standard_normal((1, cin, hi, hi)).astype(np.float32)
            wt = (rng.standard_normal((cout, cin) + k) * 0.1).astype(np.float32)
            b = rng.standard_normal(cout).astype(np.float32)
            pad = (p[0], p[0], p[1], p[1])
            y = backend.conv2d(x, wt, b, s, pad, (1, 1), 1, "relu", None, inference=True)
            t = median_s(lambda: backend.conv2d(x, wt, b, s, pad, (1, 1), 1, "relu", None,
                                                inference=True), max(5, args.repeats // 3))
            flops = 2.0 * cin * cout * k[0] * k[1] * y.shape[2] * y.shape[3]
            gf = flops / t / 1e9
            tot += n * t
            name = f"{k[0]}x{k[1]}/{s[0]} {cin}->{cout} @ {hi}x{hi}"
            print(f"{name:<36}{n:>3}{t * 1e6:>10.1f}{gf:>9.1f}{100 * gf / peak:>6.1f}%")
            out["resnet"].append({"conv": name, "count": n, "us": t * 1e6})
        print(f"{'TOTAL ResNet-18 convs':<36}{sum(seen.values()):>3}{tot * 1e6:>10.1f}")
        out["resnet_total_us"] = tot * 1e6
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
