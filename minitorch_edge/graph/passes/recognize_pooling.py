"""recognize_pooling: a mean over the blocks of a split image is an average pool.

Eager adaptive_avg_pool2d with an output size that divides the input is traced as a Reshape
that splits each spatial dim into (cells, cell size) and a ReduceMean over the cell-size dims.
That is exactly an AveragePool whose kernel and stride are the cell size, or a
GlobalAveragePool for one cell; the pooling op says what is computed, runs in one kernel and
has an int8 version (fuse_quantized):

    before:  x[N, C, H, W] ─> Reshape[N, C, oh, H/oh, ow, W/ow] ─> ReduceMean(axes=[3, 5],
             keepdims=0) ─> y[N, C, oh, ow]
    after:   x ─> AveragePool(kernel_shape=strides=[H/oh, W/ow]) ─> y     (oh = ow = 1:
             GlobalAveragePool)

Matched when the Reshape's output is read only by the ReduceMean and is not a graph output.

A mean over H and W of a 4-D value (what torch.onnx.export writes for ``x.mean((2, 3))``) is
a GlobalAveragePool too, followed by a Reshape to [N, C] when the dims are not kept:

    before:  x[N, C, H, W] ─> ReduceMean(axes=[2, 3], keepdims=k) ─> y
    after:   x ─> GlobalAveragePool ─> y                        (k = 1)
             x ─> GlobalAveragePool ─> Reshape[N, C] ─> y       (k = 0)
"""
import numpy as np

from ..ir import Node, Value
from .registry import register

__all__ = ["recognize_pooling"]


@register("recognize_pooling")
def recognize_pooling(graph):
    g = graph
    producers, readers = g.producers(), g.consumers()
    replaced = {}
    for node in g.nodes:
        x = g.values[node.inputs[0]] if node.op == "ReduceMean" else None
        if x is not None and len(x.shape) == 4 and x.dtype in ("float32", "float64") and sorted(
                a % 4 for a in node.attrs.get("axes") or ()) == [2, 3]:
            replaced[id(node)] = (None, "GlobalAveragePool", {})
            continue
        if node.op != "ReduceMean" or node.attrs.get("keepdims", 1) != 0:
            continue
        axes = sorted(a % 6 for a in node.attrs.get("axes") or ())
        split = producers.get(node.inputs[0])
        if axes != [3, 5] or split is None or split.op != "Reshape" \
                or len(readers.get(split.outputs[0], [])) != 1 or split.outputs[0] in g.outputs:
            continue
        x = g.values[split.inputs[0]]
        cells = g.values[split.outputs[0]].shape
        if len(x.shape) != 4 or len(cells) != 6 or cells[:2] != x.shape[:2] \
                or (cells[2] * cells[3], cells[4] * cells[5]) != x.shape[2:]:
            continue
        kernel = [cells[3], cells[5]]
        if cells[2] == cells[4] == 1:
            op, attrs = "GlobalAveragePool", {}
        else:
            op, attrs = "AveragePool", {"kernel_shape": kernel, "strides": kernel}
        replaced[id(node)] = (split, op, attrs)
    if not replaced:
        return g
    drop = {id(split) for split, _, _ in replaced.values() if split is not None}
    nodes = []
    for n in g.nodes:
        if id(n) in drop:
            continue
        if id(n) in replaced:
            split, op, attrs = replaced[id(n)]
            keep = n.attrs.get("keepdims", 1)
            n.op, n.attrs = op, attrs
            n.inputs = n.inputs[:1] if split is None else [split.inputs[0]]
            if split is None and not keep:        # a mean over H, W without the dims
                nodes.extend([n, _flatten_after(g, n)])
                continue
        nodes.append(n)
    g.nodes = nodes
    return g


def _flatten_after(g, pool):
    """`pool` (now a GlobalAveragePool) gets a fresh [N, C, 1, 1] output; the Reshape returned
    writes its old output [N, C] from it."""
    x = g.values[pool.inputs[0]]
    pooled = g.fresh_name("pooled")
    g.values[pooled] = Value(pooled, x.shape[:2] + (1, 1), x.dtype)
    shape = g.add_constant(g.fresh_name("shape"), np.asarray(x.shape[:2], np.int64))
    y, pool.outputs = pool.outputs[0], [pooled]
    return Node("Reshape", [pooled, shape], [y], {}, g.fresh_name(pool.name + "/flatten"))
