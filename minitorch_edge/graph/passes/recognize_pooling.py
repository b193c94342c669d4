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
"""
from .registry import register

__all__ = ["recognize_pooling"]


@register("recognize_pooling")
def recognize_pooling(graph):
    g = graph
    producers, readers = g.producers(), g.consumers()
    replaced = {}
    for node in g.nodes:
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
    drop = {id(split) for split, _, _ in replaced.values()}
    nodes = []
    for n in g.nodes:
        if id(n) in drop:
            continue
        if id(n) in replaced:
            split, op, attrs = replaced[id(n)]
            n.op, n.attrs, n.inputs = op, attrs, [split.inputs[0]]
        nodes.append(n)
    g.nodes = nodes
    return g
