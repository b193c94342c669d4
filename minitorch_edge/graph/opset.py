"""The operator set: for every op a graph may hold, how its output shapes/dtypes follow from its
inputs (`infer`) and how it runs (`run`). One table, `OPS`, read by `Graph.check`, the
executor, the passes and (later) the exporters.

An op is registered with the `op` decorator on its run function:

    @op("Relu", infer=same_as_input, elementwise=True)
    def relu(attrs, x, out=None):
        return np.maximum(x, 0, out=out)

* ``run(attrs, *inputs, out=None)`` computes from numpy arrays (a left-out optional input is
  None) and returns one array, or a tuple for several outputs. Ops that can write their result
  into a given array (``writes_out=True``) take ``out``: the executor passes a view into its
  memory arena; the others' results are copied there. Runs call the backend kernels
  (`minitorch_edge.backend`), so they are native where libmte is built and numpy otherwise.
* ``infer(attrs, inputs) -> [(shape, dtype), ...]`` where each input is a `Value` (None for a
  left-out one) and, for constant inputs, ``value.data`` holds the array (shape inputs of
  Reshape, axes of Squeeze, ...). It raises ValueError for inputs the op cannot take; the
  Graph turns that into a GraphError naming the node.
* ``elementwise``: the output has the first input's shape and each element depends only on the
  elements at the same place, so the planner may let the output reuse that input's memory.
* ``alias``: the output is a view of input 0's memory (Reshape, Flatten, Squeeze, ...): the
  planner gives both one buffer.
* ``c_runtime``: the C runtime (native/runtime/) has a kernel for the op (True for the ops
  above; False for the ONNX import ops in opset_onnx_*.py, which run on the Python engine
  only: the executor's engine="auto" falls back to it for a graph holding one).
* ``prepare`` (optional): ``prepare(attrs, values, constants)`` -> a function of the input
  arrays (and ``out``) with everything that depends only on the shapes and on constant inputs
  decided once (which kernel runs, the packed weights); None when it does not apply. The
  executor calls it when it builds its steps (``values``: each input's Value or None;
  ``constants``: each input's array where it is a constant, else None).

The ops themselves are in opset_tensor.py (elementwise, shape and reduction ops), opset_nn.py
(convolution, GEMM, pooling, normalization, attention and the fused ``mte`` ops) and
opset_quant.py (QuantizeLinear, DequantizeLinear and the int8 ``mte.QLinear*`` ops). The ops
the ONNX importer adds beyond those, Python-only (``c_runtime=False``), are in
opset_onnx_tensor.py (elementwise math and activations, bitwise ops, Range, ConstantOfShape,
Tile, variadic Sum/Mean, CastLike, Size), opset_onnx_reduce.py (reductions, ArgMax/ArgMin,
TopK, CumSum, Hardmax), opset_onnx_index.py (GatherElements, ScatterElements, GatherND,
ScatterND, OneHot, Trilu, Einsum, Compress, ReverseSequence), opset_onnx_nn.py (ConvTranspose,
normalizations, LRN, GlobalMaxPool, LpPool, GlobalLpPool, DepthToSpace, SpaceToDepth) and
opset_onnx_resize.py (Resize).
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["OPS", "OpDef", "infer", "known", "names", "op", "python_only", "run_node"]


@dataclass
class OpDef:
    name: str
    run: Callable
    infer: Callable
    elementwise: bool = False
    alias: bool = False
    writes_out: bool = False
    doc: str = ""
    prepare: Callable = None
    c_runtime: bool = True


OPS = {}


def op(name, infer, elementwise=False, alias=False, writes_out=False, prepare=None,
       c_runtime=True):
    """Register the decorated run function as op `name` (see the module docstring)."""
    def register(run):
        OPS[name] = OpDef(name, run, infer, elementwise, alias, writes_out,
                          (run.__doc__ or "").strip(), prepare, c_runtime)
        return run
    return register


def _load():
    from . import (  # noqa: F401
        opset_nn,
        opset_onnx_index,
        opset_onnx_nn,
        opset_onnx_reduce,
        opset_onnx_resize,
        opset_onnx_tensor,
        opset_quant,
        opset_tensor,
    )


def known(name):
    _load()
    return name in OPS


def names(c_runtime_only=False):
    """The op names, sorted; with `c_runtime_only` those the C runtime implements."""
    _load()
    return sorted(n for n, spec in OPS.items() if spec.c_runtime or not c_runtime_only)


def python_only(graph):
    """The ops of `graph`'s nodes that the C runtime does not implement, sorted."""
    _load()
    return sorted({n.op for n in graph.nodes if n.op in OPS and not OPS[n.op].c_runtime})


class _In:
    """What an infer rule sees of one input: shape, dtype and, for a constant, its data."""
    __slots__ = ("data", "dtype", "name", "shape")

    def __init__(self, value, data):
        self.name, self.shape, self.dtype, self.data = value.name, value.shape, value.dtype, data


def infer(graph, node):
    """[(shape, dtype)] of node's outputs, by its op's rule; GraphError naming the node when the
    inputs do not fit."""
    from .ir import GraphError
    _load()
    where = f"node {node.name!r} ({node.op})"
    spec = OPS.get(node.op)
    if spec is None:
        raise GraphError(f"{where}: unknown op {node.op!r}")
    ins = []
    for name in node.inputs:
        if not name:
            ins.append(None)
            continue
        value = graph.values.get(name)
        if value is None:
            raise GraphError(f"{where} reads {name!r}, which is not defined")
        ins.append(_In(value, graph.constants.get(name)))
    try:
        specs = spec.infer(node.attrs, ins)
    except (ValueError, TypeError, IndexError, KeyError) as e:
        shapes = ", ".join("<none>" if i is None else f"{i.dtype}{list(i.shape)}" for i in ins)
        raise GraphError(f"{where}: {e} (inputs: {shapes})") from None
    if len(specs) != len(node.outputs):
        raise GraphError(f"{where}: the op has {len(specs)} outputs, the node names "
                         f"{len(node.outputs)}")
    return [(tuple(int(d) for d in s), np.dtype(d).name) for s, d in specs]


def run_node(node, arrays, out=None):
    """Run one node on its input arrays; always returns a tuple of output arrays."""
    spec = OPS[node.op]
    if out is not None and spec.writes_out:
        result = spec.run(node.attrs, *arrays, out=out)
    else:
        result = spec.run(node.attrs, *arrays)
    result = result if isinstance(result, tuple) else (result,)
    # numpy reductions to 0-d give scalars (np.float32): the next op expects an ndarray
    return tuple(r if isinstance(r, np.ndarray) or r is None else np.asarray(r) for r in result)


# ---- infer rules shared by many ops ---------------------------------------------------------
def same_as_input(attrs, ins):
    return [(ins[0].shape, ins[0].dtype)]


def broadcast(attrs, ins):
    """Numpy broadcasting of every given input; the dtype numpy's promotion gives."""
    present = [i for i in ins if i is not None]
    shape = np.broadcast_shapes(*[i.shape for i in present])
    dtype = np.result_type(*[np.dtype(i.dtype) for i in present])
    return [(shape, dtype)]


def bool_broadcast(attrs, ins):
    return [(broadcast(attrs, ins)[0][0], "bool")]


def norm_axis(axis, rank, what="axis"):
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0
