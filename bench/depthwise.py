"""Depthwise convolution benchmark: every depthwise layer of EfficientNet-Lite0 and MobileNetV2
at 224x224 (batch 1, float32), timed through ``backend.conv2d(..., inference=True)`` (whatever
native_conv routes it to), with the fused epilogue an inference executor uses (bias + ReLU6).

    python bench/depthwise.py [--repeats 30] [--threads 1] [--json out.json]
        [--compare before.json] [--models efficientnet_lite0 mobilenet_v2] [--check]
    python bench/depthwise.py --table before1.json,before2.json after1.json,after2.json

(--table: no timing; prints the before/after table from runs saved with --json, each layer's
time the minimum over the runs given: on a shared machine, alternate before and after runs.)

The layers are found by walking the model's modules (Conv2d with groups == in_channels) and a
forward hook on a 1x3x224x224 input records each one's input shape. Per layer: the median of
`repeats` timings (each the mean of enough calls to last ~2 ms), GFLOP/s (2 * C * Ho * Wo * K^2
flops) and GB/s (input + output bytes). --compare prints a before/after table against a JSON
written by an earlier run (--json). --check compares every layer with the numpy twin.
"""
import argparse
import json
import statistics
import time

import numpy as np

import minitorch_edge as mte
from minitorch_edge import backend, models
from minitorch_edge.backend import numpy_backend as nb

try:
    from minitorch_edge import _C
except ImportError:  # pragma: no cover
    _C = None


def depthwise_layers(name):
    """[(layer index, C, H, W, K, stride, padding)] of model `name`, in forward order."""
    model = getattr(models, name)()
    model.eval()
    found = []

    def hook(mod, args, out):
        x = args[0]
        found.append((mod, tuple(x.shape)))

    handles = []
    for m in model.modules():
        if isinstance(m, mte.nn.Conv2d) and m.groups == m.in_channels and m.groups > 1:
            handles.append(m.register_forward_hook(hook))
    with mte.no_grad():
        model(mte.tensor(np.zeros((1, 3, 224, 224), np.float32)))
    for h in handles:
        h.remove()
    layers = []
    for i, (m, shape) in enumerate(found):
        k = m.kernel_size[0]
        layers.append(dict(idx=i, C=shape[1], H=shape[2], W=shape[3], K=k, stride=m.stride[0],
                           padding=m.padding[0]))
    return layers


def time_call(fn, repeats):
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    inner = max(1, int(2e-3 / one))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


def run_layer(L, repeats, check):
    rng = np.random.default_rng(L["idx"])
    C, H, W, K, s, p = L["C"], L["H"], L["W"], L["K"], L["stride"], L["padding"]
    x = rng.standard_normal((1, C, H, W)).astype(np.float32)
    w = (rng.standard_normal((C, 1, K, K)) / K).astype(np.float32)
    b = rng.standard_normal(C).astype(np.float32)
    args = (x, w, b, (s, s), (p, p, p, p), (1, 1), C)

    def fn():
        return backend.conv2d(*args, act="relu6", inference=True)
    y = fn()
    if check:
        ref = nb.conv2d(*args, act="relu6")
        err = float(np.max(np.abs(y - ref) / (1 + np.abs(ref))))
        assert err < 1e-5, (L, err)
    t = time_call(fn, repeats)
    Ho, Wo = y.shape[2:]
    flops = 2.0 * C * Ho * Wo * K * K
    nbytes = 4.0 * (x.size + y.size)
    return dict(L, Ho=int(Ho), Wo=int(Wo), ms=t * 1e3, gflops=flops / t * 1e-9,
                gbs=nbytes / t * 1e-9)


def print_table(name, rows, prev, isa, threads):
    print(f"\n## {name} ({isa}, {threads} thread(s))\n")
    head = "| # | C | HxW | K | s | p | out |"
    head += " before ms | after ms | speedup |" if prev else " ms |"
    head += " GFLOP/s | GB/s |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for i, r in enumerate(rows):
        line = (f"| {r['idx']} | {r['C']} | {r['H']}x{r['W']} | {r['K']} | {r['stride']} | "
                f"{r['padding']} | {r['Ho']}x{r['Wo']} |")
        if prev:
            line += f" {prev[i]['ms']:.4f} | {r['ms']:.4f} | {prev[i]['ms'] / r['ms']:.2f}x |"
        else:
            line += f" {r['ms']:.4f} |"
        line += f" {r['gflops']:.1f} | {r['gbs']:.1f} |"
        print(line)
    tot = sum(r["ms"] for r in rows)
    if prev:
        ptot = sum(r["ms"] for r in prev)
        print(f"| total | | | | | | | {ptot:.3f} | {tot:.3f} | {ptot / tot:.2f}x | | |")
    else:
        print(f"| total | | | | | | | {tot:.3f} | | |")
    for k in sorted({r["K"] for r in rows}):
        sub = [j for j, r in enumerate(rows) if r["K"] == k]
        msg = f"  K={k}: {len(sub)} layers, {sum(rows[j]['ms'] for j in sub):.3f} ms"
        if prev:
            msg += f" (before {sum(prev[j]['ms'] for j in sub):.3f} ms)"
        print(msg)


def _min_runs(paths):
    runs = [json.load(open(p)) for p in paths.split(",")]
    out = runs[0]
    for name, rows in out["models"].items():
        for i, r in enumerate(rows):
            best = min(run["models"][name][i]["ms"] for run in runs)
            scale = r["ms"] / best
            r.update(ms=best, gflops=r["gflops"] * scale, gbs=r["gbs"] * scale)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--compare")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--models", nargs="+", default=["efficientnet_lite0", "mobilenet_v2"])
    ap.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"))
    a = ap.parse_args()
    if a.table:
        before, after = (_min_runs(p) for p in a.table)
        for name, rows in after["models"].items():
            print_table(name, rows, before["models"].get(name), after["isa"], after["threads"])
        return
    backend.use("auto")
    if _C is not None:
        _C.set_num_threads(a.threads)
    before = json.load(open(a.compare)) if a.compare else None
    out = {"isa": _C.active_isa() if _C else "numpy", "threads": a.threads, "models": {}}
    for name in a.models:
        rows = [run_layer(L, a.repeats, a.check) for L in depthwise_layers(name)]
        out["models"][name] = rows
        prev = before["models"].get(name) if before else None
        print_table(name, rows, prev, out["isa"], a.threads)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
