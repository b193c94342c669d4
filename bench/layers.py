"""Per-node profile of one model through the graph executor, against onnxruntime's own
per-node profile of the ONNX twin (same weights): where the milliseconds go.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/layers.py [--model resnet18]
        [--rounds 30] [--no-ort]

Ours: every step of the compiled executor is timed alone (perf_counter around its call,
inside a full forward, so caches hold what the previous layers left); the figure is the
median over --rounds forwards. A conv's GFLOP/s counts 2 * MACs of the direct convolution
(whatever algorithm ran), so Winograd can exceed the peak; "%pk" is that against
`_C.peak_gflops()` measured in the same run. onnxruntime: SessionOptions.enable_profiling,
per-node "dur" of the kernel events, median over the same number of runs, listed in
execution order (its fused Conv nodes carry the Relu/Add). 1 thread for both.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, ".."))
sys.path.insert(0, os.path.join(_HERE, "..", "tests"))
sys.path.insert(0, _HERE)
import models as bm  # noqa: E402  (bench/models.py: the models, the twins, the export)

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import _C, graph  # noqa: E402


def node_flops(g, node):
    """2 * MACs of a Conv-like or Gemm node, else 0."""
    if node.op in ("Conv", "mte.ConvAct"):
        w = g.values[node.inputs[1]].shape
        y = g.values[node.outputs[0]].shape
        return 2 * int(np.prod(y)) * w[1] * w[2] * w[3]
    if node.op == "Gemm":
        a, b = (g.values[n].shape for n in node.inputs[:2])
        return 2 * a[0] * a[1] * b[0]
    return 0


def describe(g, node):
    if node.op in ("Conv", "mte.ConvAct"):
        x = g.values[node.inputs[0]].shape
        w = g.values[node.inputs[1]].shape
        s = node.attrs["strides"][0]
        res = "+res" if len(node.inputs) > 3 and node.inputs[3] else ""
        return f"conv{w[2]}x{w[3]}/{s} {w[1]}->{w[0]} @{x[2]}{res}"
    return node.op


def profile_ours(model, x, rounds):
    g = graph.trace(model, mte.tensor(x)).optimize()
    ex = g.compile()
    times = [[] for _ in ex._steps]
    steps = ex._steps
    for i, (node, run, writes_out, alias, outs) in enumerate(steps):   # wrap each step
        def timed(*a, _run=run, _i=i, **k):
            t0 = time.perf_counter()
            r = _run(*a, **k)
            times[_i].append(time.perf_counter() - t0)
            return r
        steps[i] = (node, timed, writes_out, alias, outs)
    for _ in range(3):
        ex(x)
    for t in times:
        t.clear()
    total = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        ex(x)
        total.append(time.perf_counter() - t0)
    rows = [(describe(g, n), node_flops(g, n), statistics.median(t) * 1e3)
            for (n, *_), t in zip(steps, times)]
    return rows, statistics.median(total) * 1e3


def profile_ort(path, x, rounds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(os.path.dirname(path), "ort_prof")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        sess.run(None, {"x": x})
    total = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        sess.run(None, {"x": x})
        total.append(time.perf_counter() - t0)
    prof = sess.end_profiling()
    with open(prof) as f:
        events = json.load(f)
    per = {}
    order = []
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][:-len("_kernel_time")]
            if name not in per:
                per[name] = []
                order.append((name, e["args"].get("op_name", "")))
            per[name].append(e["dur"] / 1e3)
    # drop the warm-up runs' events
    rows = [(op, name, statistics.median(per[name][3:] or per[name])) for name, op in order]
    return rows, statistics.median(total) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet18")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--no-ort", action="store_true")
    a = p.parse_args()
    mte.backend.set_num_threads(1)
    peak = _C.peak_gflops()
    model, state = bm.build_ours(a.model, 0)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    rows, total = profile_ours(model, x, a.rounds)
    print(f"peak {peak:.0f} GFLOP/s; ours: {total:.2f} ms per forward "
          f"(sum of steps {sum(r[2] for r in rows):.2f})")
    print(f"{'node':34s} {'MFLOP':>8s} {'ms':>7s} {'GF/s':>6s} {'%pk':>5s}")
    for d, fl, ms in rows:
        gf = fl / ms / 1e6 if fl else 0
        print(f"{d:34s} {fl / 1e6:8.1f} {ms:7.3f} {gf:6.0f} {100 * gf / peak:5.0f}")
    if a.no_ort:
        return
    import torch
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.onnx")
        bm.export_onnx(bm.build_twin(a.model, state), x, path)
        orows, ototal = profile_ort(path, x, a.rounds)
    print(f"\nonnxruntime: {ototal:.2f} ms per forward (sum of nodes "
          f"{sum(r[2] for r in orows):.2f})")
    for op, name, ms in orows:
        print(f"{op:16s} {name[:40]:40s} {ms:7.3f}")


if __name__ == "__main__":
    main()
