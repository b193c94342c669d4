"""remove_identities: drop the nodes whose output is their input.

Matched (single-output nodes only):

* Identity, and Dropout (inference: ONNX Dropout with training_mode false is the identity);
* Reshape, Flatten, Squeeze, Unsqueeze, Expand whose output shape equals the input's;
* Transpose whose output shape equals the input's and whose perm keeps the dims of size > 1
  in order (the identity perm, or one that only moves size-1 dims among themselves);
* Cast to the dtype the input already has.

The node's consumers are rewired to read its input:

    x ──> Relu ──> r ──> Identity ──> i ──> Conv     ==>     x ──> Relu ──> r ──> Conv

When the node's output is a graph output, its name must survive, so the rewiring goes the
other way: the producer of the input is renamed to write the graph output directly (and the
input's other readers read that name):

    ... ──> Gemm ──> g ──> Identity ──> output       ==>     ... ──> Gemm ──> output

(graph.trace ends every graph with such an Identity). That is impossible when the input is a
graph input, a constant or itself a graph output (two names for one value): then the node
stays, it is what gives the output its own name:

    input ──> Identity ──> output                    (kept)
    ... ──> Relu ──> a ──> Identity ──> b,  outputs (a, b)   (kept)
"""
import numpy as np

from .registry import register

VIEW_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand")


def is_noop(graph, node):
    """Whether `node` returns its first input unchanged (the list in the module docstring)."""
    if len(node.outputs) != 1 or not node.inputs or not node.inputs[0]:
        return False
    src, dst = graph.values[node.inputs[0]], graph.values[node.outputs[0]]
    if src.dtype != dst.dtype or src.shape != dst.shape:
        return False
    if node.op in ("Identity", "Dropout") or node.op in VIEW_OPS:
        return True
    if node.op == "Transpose":
        perm = [int(p) for p in node.attrs["perm"]]
        moved = [p for p in perm if src.shape[p] != 1]
        return moved == sorted(moved)
    if node.op == "Cast":
        return np.dtype(node.attrs["to"]).name == src.dtype
    return False


def replace_uses(graph, old, new):
    """Every node that reads `old` reads `new` instead."""
    for n in graph.nodes:
        if old in n.inputs:
            n.inputs = [new if name == old else name for name in n.inputs]


def _same_quant(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def bypass(graph, node):
    """Remove `node`, whose output equals its first input, rewiring as the module docstring
    says. Returns False (and changes nothing) when the node must stay."""
    src, out = node.inputs[0], node.outputs[0]
    if out not in graph.outputs:
        replace_uses(graph, out, src)
    else:
        if src in graph.inputs or graph.is_constant(src) or src in graph.outputs:
            return False
        producer = next((n for n in graph.nodes if src in n.outputs), None)
        if producer is None:
            return False
        vs, vo = graph.values[src], graph.values[out]
        if vs.quant is not None and vo.quant is not None and not _same_quant(vs.quant,
                                                                              vo.quant):
            return False          # a requantising copy: not ours to drop
        if vo.quant is None:
            vo.quant = vs.quant
        producer.outputs = [out if name == src else name for name in producer.outputs]
        replace_uses(graph, src, out)
        del graph.values[src]
    graph.nodes = [n for n in graph.nodes if n is not node]
    return True


@register("remove_identities")
def remove_identities(graph):
    for node in list(graph.nodes):
        if is_noop(graph, node):
            bypass(graph, node)
    return graph
