"""fold_constants: evaluate, once, every node whose inputs are all constants.

A node all of whose inputs are constants (or left out, "") is run here (`opset.run_node`) and
removed; each of its outputs becomes a constant under the output value's own name, so its
consumers need no rewiring and a graph output keeps its name (an output may be a constant).
Nodes are visited in topological order, so folded results feed further folding in one pass.

    before                                   after

    W<const> ──> Transpose ──> t ──┐         t<const> ──┐
                                   v                    v
    x ──────────────────────> MatMul         x ──> MatMul

    pos<const>, starts, ends ──> Slice ──> p   ==>   p<const>

DequantizeLinear and mte.FakeQuantize are never folded (NOT_FOLDED): DQ(Wq<int8 const>) is
how a quantized graph holds its weights, and a fake-quantized weight is where QAT's convert
reads the weight's scales; fuse_quantized folds the DQ nodes that are left itself.

The size rule: folding must not blow a small graph up into a big file. A node is kept when
its outputs together have more than 4x the elements of all its inputs together *and* more than
1M (2**20) elements (e.g. Expand of a scalar to a large tensor: the node is cheap at run time,
the folded constant would be big).
"""
import numpy as np

from .. import opset
from ..ir import GraphError
from .registry import register

GROWTH_LIMIT = 4              # outputs may have at most this many times the inputs' elements
BIG_ELEMENTS = 1 << 20        # ... unless they are this small anyway
NOT_FOLDED = ("DequantizeLinear", "mte.FakeQuantize")   # see the module docstring


def _elements(graph, names):
    return sum(int(np.prod(graph.values[n].shape, dtype=np.int64)) for n in names if n)


def too_big(graph, node):
    """The size rule (see the module docstring)."""
    out = _elements(graph, node.outputs)
    return out > GROWTH_LIMIT * _elements(graph, node.inputs) and out > BIG_ELEMENTS


@register("fold_constants")
def fold_constants(graph):
    kept = []
    for node in graph.nodes:
        if (node.op in NOT_FOLDED
                or not all(not name or graph.is_constant(name) for name in node.inputs)
                or too_big(graph, node)):
            kept.append(node)
            continue
        args = [graph.constants[name] if name else None for name in node.inputs]
        results = opset.run_node(node, args)
        if len(results) != len(node.outputs):
            raise GraphError(f"fold_constants: node {node.name!r} ({node.op}) gave "
                             f"{len(results)} outputs for {len(node.outputs)} names")
        for name, result in zip(node.outputs, results):
            v = graph.values[name]
            # an own copy: a view op's result shares its input's memory
            array = np.array(result, dtype=v.dtype, copy=True)
            if array.shape != v.shape:
                raise GraphError(f"fold_constants: node {node.name!r} ({node.op}) computed "
                                 f"{array.dtype.name}{list(array.shape)} for {name!r}, "
                                 f"recorded as {v.describe()}")
            graph.constants[name] = array
    graph.nodes = kept
    return graph
