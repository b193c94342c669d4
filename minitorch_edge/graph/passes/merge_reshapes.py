"""merge_reshapes: consecutive shape ops become one.

1. A chain of Reshape / Flatten / Squeeze / Unsqueeze nodes becomes one Reshape from the
   chain's input straight to its final shape (an int64 constant):

    x ──> Reshape ──> Flatten ──> Unsqueeze ──> y    ==>    x ──> Reshape(shape=y's) ──> y

2. Transpose(Transpose(x, p1), p2) becomes one Transpose with the composed perm,
   perm[i] = p1[p2[i]], and is removed altogether when that is the identity (or only reorders
   size-1 dims):

    x ──> Transpose(p1) ──> Transpose(p2) ──> y      ==>    x ──> Transpose(p1∘p2) ──> y
    x ──> Transpose([0,2,1]) ──> Transpose([0,2,1]) ──> y   ==>   x ──> (y's readers)

How: nodes are visited in topological order; a node of either kind whose input is written by a
node of the same kind reads that node's input instead, with the combined shape or perm (so a
chain of any length collapses as the visit goes down it). The earlier node is removed when
nothing else reads its output and it is not a graph output; when it has other readers it stays
for them (it would be needed anyway, and the later node is no dearer than before). The last
node keeps its output name, so graph outputs survive. A merged chain that ends where it
started (final shape == input shape) and a merged Transpose that moves no data (the identity
perm, or one that only reorders size-1 dims: remove_identities' rule) are removed here, with
remove_identities' rewiring (`bypass`: a graph output's name survives). Where that must keep a
node (its output is a graph output and its input a graph input, a constant or another graph
output) the Reshape stays, and the Transpose becomes an Identity. Removing them here, during
the visit, lets what follows merge across them:

    x ──> Transpose(p) ──> Flatten ──> Reshape(back) ──> Transpose(p^-1) ──> y   ==>   x ──> y

Not handled: a Reshape that only inserts or removes size-1 dims around a Transpose; a final
shape with a 0 dim (Reshape would read 0 as "copy the input's dim").
"""
import numpy as np

from .registry import register
from .remove_identities import bypass, is_noop

RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _drop_if_unused(graph, node):
    out = node.outputs[0]
    if out in graph.outputs or any(out in n.inputs for n in graph.nodes):
        return
    graph.nodes = [n for n in graph.nodes if n is not node]


@register("merge_reshapes")
def merge_reshapes(graph):
    for node in list(graph.nodes):
        if node.op not in RESHAPES and node.op != "Transpose":
            continue
        if not node.inputs or len(node.outputs) != 1:
            continue
        producers = {o: n for n in graph.nodes for o in n.outputs}
        first = producers.get(node.inputs[0])
        if first is None or len(first.outputs) != 1:
            continue
        if node.op in RESHAPES and first.op in RESHAPES:
            shape = graph.values[node.outputs[0]].shape
            if 0 in shape:
                continue
            const = graph.add_constant(f"{node.outputs[0]}_shape", np.asarray(shape, np.int64))
            node.op, node.inputs, node.attrs = "Reshape", [first.inputs[0], const], {}
            _drop_if_unused(graph, first)
            if graph.values[first.inputs[0]].shape == shape:
                bypass(graph, node)        # back where it started: gone (or kept, see above)
        elif node.op == "Transpose" and first.op == "Transpose":
            p1 = [int(p) for p in first.attrs["perm"]]
            p2 = [int(p) for p in node.attrs["perm"]]
            perm = [p1[p] for p in p2]
            node.inputs = [first.inputs[0]]
            node.attrs = dict(node.attrs, perm=perm)
            _drop_if_unused(graph, first)
            if is_noop(graph, node) and not bypass(graph, node):
                node.op, node.attrs = "Identity", {}
    return graph
