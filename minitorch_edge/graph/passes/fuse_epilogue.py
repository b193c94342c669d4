"""fuse_epilogue: a conv or linear layer, the residual Add after it and the activation after
that become one node whose GEMM applies the Add and the activation to each output tile while
it is still in cache (backend.conv2d / backend.linear with ``residual`` and ``act``).

    before:  x -> Conv(W, B) -> c -> Add(c, r) -> s -> Relu -> y
    after:   x -> mte.ConvAct(x, W, B, r; Conv's attrs, activation="relu") -> y

    before:  a -> Gemm(W, C, transB=1) -> c -> [Add(c, r)] -> [act] -> y
    after:   a -> mte.GemmAct(a, W, C, r or ""; transB=1, activation=act or "none") -> y

Both the Add and the activation are optional (but at least one is there: a lone Conv stays a
Conv); the Add comes first. Matched exactly:

* the layer: Conv; Gemm with transB=1, transA=0, alpha = beta = 1 and C absent or 1-D (A is
  2-D, as Gemm's always is); or an mte.ConvAct / mte.GemmAct with activation "none" (which
  may still take an activation, and a residual if it has none);
* the residual: an Add one of whose inputs is the layer's output (once) and whose other input
  r has exactly that output's shape and dtype (so no broadcasting); r may be any value (the
  block input, a constant, another layer's output). r cannot be computed from the layer's
  output, since that output has no reader but the Add. When both inputs of the Add are
  outputs of fusable layers (ResNet's downsample shortcut), the later layer takes the Add;
* the activation: an op in ACTIVATION_OPS (below: the one table from op to epilogue
  activation) whose rule gives an activation that the backend's epilogue and the opset's
  mte ops both support;
* every intermediate output (the layer's, the Add's) is read by exactly one node, the next one
  in the chain, and is not a graph output.

The fused node takes the layer's node name and the last fused node's output name (so graph
outputs keep their names), and sits where that last node was (the residual may be computed
after the layer).
"""
import numpy as np

from ...backend import numpy_backend
from .. import opset_nn
from ..ir import Node
from .registry import register

__all__ = ["ACTIVATION_OPS", "SUPPORTED_ACTIVATIONS", "fuse_epilogue"]


def _clip(g, node):
    """Clip(x, 0, 6) is relu6, Clip(x, 0) (no max) relu; other bounds do not fuse."""
    lo, hi = (node.inputs + ["", ""])[1:3]
    if _scalar(g, lo) != 0.0:
        return None
    if not hi:
        return "relu"
    return "relu6" if _scalar(g, hi) == 6.0 else None


def _gelu(g, node):
    return {"none": "gelu", "tanh": "gelu_tanh"}.get(node.attrs.get("approximate", "none"))


# op -> rule (graph, node) -> the epilogue activation it is, or None. The one table.
ACTIVATION_OPS = {
    "Relu": lambda g, node: "relu",
    "Clip": _clip,
    "mte.Gelu": _gelu,
    "mte.Silu": lambda g, node: "silu",
    "HardSwish": lambda g, node: "hardswish",
}

# what both the backend's epilogue (backend/numpy_backend.py) and the mte ops' `activation`
# attribute (graph/opset_nn.py) take, as of import time: silu / hardswish join when they do
SUPPORTED_ACTIVATIONS = frozenset(a for a in numpy_backend.ACTIVATIONS
                                  if a not in (None, "none") and a in opset_nn.ACTIVATIONS)


def activation_of(g, node):
    """The epilogue activation `node` computes on its input 0, or None."""
    rule = ACTIVATION_OPS.get(node.op)
    if rule is None or len(node.outputs) != 1 or not node.inputs:
        return None
    if node.inputs[0] in node.inputs[1:]:
        return None
    act = rule(g, node)
    return act if act in SUPPORTED_ACTIVATIONS else None


@register("fuse_epilogue")
def fuse_epilogue(graph):
    g = graph
    consumers = g.consumers()
    outputs = set(g.outputs)
    claimed = set()          # ids of the Add / activation nodes taken by a chain
    fused = {}               # id(last node of a chain) -> the fused node
    starts = set()           # ids of the layers that were fused
    for layer in reversed(g.nodes):       # later layers first: they take a shared Add
        spec = _layer(g, layer)
        if spec is None:
            continue
        op, inputs, attrs = spec
        cur, last, chain = layer.outputs[0], layer, []

        def sole_reader(value):
            """The one node reading `value` (not a graph output) when no chain has it yet."""
            users = consumers.get(value, [])
            if value in outputs or len(users) != 1 or id(users[0]) in claimed:
                return None
            return users[0]

        add = None if inputs[3] else sole_reader(cur)      # a layer with a residual has its Add
        if add is not None and add.op == "Add" and len(add.outputs) == 1:
            other = _residual(g, add, cur)
            if other is not None:
                inputs[3] = other
                cur, last = add.outputs[0], add
                chain.append(add)
        act_node = sole_reader(cur)
        act = None if act_node is None else activation_of(g, act_node)
        if act is not None:
            attrs["activation"] = act
            cur, last = act_node.outputs[0], act_node
            chain.append(act_node)
        if not chain:
            continue
        claimed.update(id(n) for n in chain)
        starts.add(id(layer))
        fused[id(last)] = Node(op, inputs, [cur], attrs, layer.name)
    nodes = []
    for n in g.nodes:
        if id(n) in fused:
            nodes.append(fused[id(n)])
        elif id(n) not in claimed and id(n) not in starts:
            nodes.append(n)
    g.nodes = nodes
    return g


def _layer(g, node):
    """(fused op, [X, W, B, R], attrs) for a layer that can take an epilogue; else None."""
    if len(node.outputs) != 1 or len(node.inputs) < 2:
        return None
    x, w, b, r = (node.inputs + ["", "", ""])[:4]
    attrs = dict(node.attrs)
    if node.op in ("mte.ConvAct", "mte.GemmAct"):
        if attrs.get("activation", "none") != "none":
            return None
        op = node.op
    elif node.op == "Conv":
        op, r = "mte.ConvAct", ""
    elif node.op == "Gemm":
        op, r = "mte.GemmAct", ""
    else:
        return None
    if op == "mte.GemmAct" and (
            attrs.get("transB", 0) != 1 or attrs.get("transA", 0) != 0
            or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0
            or len(g.values[x].shape) != 2 or (b and len(g.values[b].shape) != 1)):
        return None
    attrs["activation"] = "none"
    return op, [x, w, b, r], attrs


def _residual(g, add, cur):
    """The other input of Add(cur, r) / Add(r, cur) when it can be the fused residual."""
    if len(add.inputs) != 2 or add.inputs.count(cur) != 1:
        return None
    other = add.inputs[1] if add.inputs[0] == cur else add.inputs[0]
    if not other:
        return None
    vc, vo, vs = g.values[cur], g.values[other], g.values[add.outputs[0]]
    if vo.shape != vc.shape or vo.dtype != vc.dtype or (vs.shape, vs.dtype) != (vc.shape,
                                                                               vc.dtype):
        return None
    return other


def _scalar(g, name):
    """The value of a one-element constant, as a float; None otherwise."""
    if not name or not g.is_constant(name):
        return None
    a = np.asarray(g.constants[name])
    return float(a.reshape(-1)[0]) if a.size == 1 else None
