"""Lowering a Graph for ONNX export: step 1 of onnx/export.py.

`lower(g, opset_version)` returns a new Graph of standard ONNX ops only, still in our opset (so
it is checked and our reference executor can run it). Each ``mte`` op is expanded back into the
ONNX subgraph it replaces, one function an op (EXPANSIONS): mte.ConvAct -> Conv [+ Add] + act,
mte.Attention -> MatMul/Softmax, ... Int8 ops become QDQ form, what onnxruntime and OpenVINO
run as int8:

    mte.QLinearConv(xq; Xs, Xz, Wq, Ws, Ys, Yz, Bq)
        -> Q(act(Conv(DQ(xq), DQ(Wq, axis 0), DQ(Bq, Xs * Ws, axis 0))), Ys, Yz)

where act is the clamp [act_min, act_max] written back as Relu / Clip in real units. Ops the
requested opset lacks are expanded too (LayerNormalization < 17, HardSwish < 14, Gelu < 20).
"""
import numpy as np

from ..graph.ir import Graph

__all__ = ["EXPANSIONS", "lower"]


# ---- step 1: lowering to standard ops ---------------------------------------------------------
class _Lowering:
    """Builds the lowered graph: `add` appends a node of our opset, `const` a constant; the
    DQ of each int8 value is made once and shared."""

    def __init__(self, g, opset_version):
        self.src, self.opset = g, opset_version
        self.g = Graph(g.name)
        self.node_names = set()
        self.dq_cache = {}
        for name in g.inputs:
            v = g.values[name]
            self.g.add_input(name, v.shape, v.dtype)
        for name, array in g.constants.items():
            self.g.add_constant(name, array)

    def add(self, op, inputs, out=None, where=None, n_out=None, **attrs):
        """A node `op(inputs; attrs)`; its output name `out` (fresh when None; a list for
        several). Returns the output name (or list). Node names are `where`/op, unique."""
        outs = out if isinstance(out, list) else (
            [out] if out is not None else
            [self.g.fresh_name(op.split(".")[-1].lower()) for _ in range(n_out or 1)])
        base = f"{where}/{op.split('.')[-1]}" if where else op
        name, k = base, 0
        while name in self.node_names:
            k += 1
            name = f"{base}_{k}"
        self.node_names.add(name)
        self.g.add_node(op, inputs, outs, name=name, **attrs)
        return outs if isinstance(out, list) or (n_out or 1) > 1 else outs[0]

    def const(self, array, hint="c"):
        return self.g.add_constant(self.g.fresh_name(hint), np.asarray(array))

    def scalar(self, value, like):
        """A 0-d constant of the float dtype of value `like`."""
        return self.const(np.asarray(value, self.g.values[like].dtype), "c")

    def dtype(self, name):
        return self.g.values[name].dtype

    def shape(self, name):
        return self.g.values[name].shape

    def dq(self, name, scale, zero, where):
        """The float value DequantizeLinear(name, scale, zero): one node per int8 value."""
        key = (name, scale, zero)
        if key not in self.dq_cache:
            self.dq_cache[key] = self.add("DequantizeLinear", [name, scale, zero], where=where)
        return self.dq_cache[key]


def lower(g, opset_version=17):
    """Graph `g` as a checked Graph of standard ONNX ops for `opset_version` (see the module
    docstring); `g` is not changed. An ``mte`` op without an entry in EXPANSIONS raises
    ValueError naming it."""
    b = _Lowering(g, opset_version)
    for node in g.nodes:
        expand = EXPANSIONS.get(node.op)
        if expand is not None:
            expand(b, node)
        elif node.op.startswith("mte."):
            raise ValueError(f"onnx.export: op {node.op!r} (node {node.name!r}) has no ONNX "
                             f"expansion; add one to minitorch_edge.onnx.lowering.EXPANSIONS or "
                             f"run a graph without it (e.g. before optimize())")
        else:
            b.add(node.op, node.inputs, list(node.outputs), node.name, **node.attrs)
    outs = []
    for name in g.outputs:              # an output must be some node's output in ONNX
        if name in b.g.inputs or name in b.g.constants or name in outs:
            name = b.add("Identity", [name], where="output")
        outs.append(name)
    b.g.set_outputs(outs)
    return b.g.check()


# ---- float expansions -------------------------------------------------------------------------
def _activation(b, x, act, out, where):
    """act(x) (an epilogue activation name) as standard ops writing `out`; returns its name."""
    if act == "none":
        return b.add("Identity", [x], out, where) if out is not None else x
    if act == "relu":
        return b.add("Relu", [x], out, where)
    if act == "relu6":
        return b.add("Clip", [x, b.scalar(0, x), b.scalar(6, x)], out, where)
    if act in ("gelu", "gelu_tanh"):
        approx = "tanh" if act == "gelu_tanh" else "none"
        if b.opset >= 20:
            return b.add("mte.Gelu", [x], out, where, approximate=approx)   # Gelu in step 3
        if approx == "none":      # x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
            e = b.add("Erf", [b.add("Div", [x, b.scalar(np.sqrt(2.0), x)], where=where)],
                      where=where)
            inner = b.add("Add", [e, b.scalar(1, x)], where=where)
        else:                     # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
            cube = b.add("Mul", [b.add("Pow", [x, b.scalar(3, x)], where=where),
                                 b.scalar(0.044715, x)], where=where)
            t = b.add("Tanh", [b.add("Mul", [b.add("Add", [x, cube], where=where),
                                             b.scalar(np.sqrt(2 / np.pi), x)], where=where)],
                      where=where)
            inner = b.add("Add", [t, b.scalar(1, x)], where=where)
        return b.add("Mul", [b.add("Mul", [x, inner], where=where), b.scalar(0.5, x)], out,
                     where)
    if act == "silu":             # x sigmoid(x)
        return b.add("Mul", [x, b.add("Sigmoid", [x], where=where)], out, where)
    if act == "hardswish":        # x max(0, min(1, x / 6 + 1/2))
        if b.opset >= 14:
            return b.add("HardSwish", [x], out, where)
        hs = b.add("HardSigmoid", [x], where=where, alpha=1 / 6, beta=0.5)
        return b.add("Mul", [x, hs], out, where)
    raise ValueError(f"onnx.export: activation {act!r} (node {where!r}) has no ONNX form")


def _layer_act(core_op, n_core):
    """mte.ConvAct / mte.GemmAct: the layer, the residual Add, the activation."""
    def expand(b, node):
        ins = (node.inputs + ["", "", ""])[:n_core + 1]
        core_in, residual = [i for i in ins[:n_core]], ins[n_core]
        while core_in and not core_in[-1]:
            core_in.pop()
        attrs = {k: v for k, v in node.attrs.items() if k != "activation"}
        act = node.attrs.get("activation", "none")
        out = node.outputs[0]
        last = not residual and act == "none"
        y = b.add(core_op, core_in, out if last else None, node.name, **attrs)
        if residual:
            y = b.add("Add", [y, residual], out if act == "none" else None, node.name)
        if act != "none":
            _activation(b, y, act, out, node.name)
    return expand


def _gelu(b, node):
    act = "gelu_tanh" if node.attrs.get("approximate", "none") == "tanh" else "gelu"
    _activation(b, node.inputs[0], act, node.outputs[0], node.name)


def _silu(b, node):
    _activation(b, node.inputs[0], "silu", node.outputs[0], node.name)


def _hardswish(b, node):
    _activation(b, node.inputs[0], "hardswish", node.outputs[0], node.name)


def _attention(b, node):
    """softmax(scale Q K^T + M [+ causal -inf above the diagonal]) V."""
    q, k, v, mask = (node.inputs + [""])[:4]
    where = node.name
    rank = len(b.shape(k))
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    s = b.add("MatMul", [q, b.add("Transpose", [k], where=where, perm=perm)], where=where)
    s = b.add("Mul", [s, b.scalar(node.attrs.get("scale", 1.0), q)], where=where)
    if mask:
        s = b.add("Add", [s, mask], where=where)
    if node.attrs.get("causal", 0):
        L, S = b.shape(q)[-2], b.shape(k)[-2]
        tri = np.where(np.arange(S)[None, :] > np.arange(L)[:, None], -np.inf, 0)
        s = b.add("Add", [s, b.const(tri.astype(b.dtype(q)), "causal_mask")], where=where)
    p = b.add("Softmax", [s], where=where, axis=-1)
    b.add("MatMul", [p, v], node.outputs[0], where)


def _layer_norm(b, node):
    """LayerNormalization (opset 17) for older opsets: (x - mean) / sqrt(var + eps) * S + B."""
    if b.opset >= 17:
        b.add(node.op, node.inputs, list(node.outputs), node.name, **node.attrs)
        return
    x, scale, bias = (node.inputs + ["", ""])[:3]
    where, rank = node.name, len(b.shape(x))
    axes = list(range(node.attrs.get("axis", -1) % rank, rank))
    d = b.add("Sub", [x, b.add("ReduceMean", [x], where=where, axes=axes, keepdims=1)],
              where=where)
    var = b.add("ReduceMean", [b.add("Mul", [d, d], where=where)], where=where, axes=axes,
                keepdims=1)
    eps = b.scalar(node.attrs.get("epsilon", 1e-5), x)
    steps = [("Mul", scale), ("Add", bias)]
    steps = [s for s in steps if s[1]]
    y = b.add("Div", [d, b.add("Sqrt", [b.add("Add", [var, eps], where=where)], where=where)],
              None if steps else node.outputs[0], where)
    for k, (op, arg) in enumerate(steps):
        y = b.add(op, [y, arg], node.outputs[0] if k == len(steps) - 1 else None, where)


def _fake_quantize(b, node):
    """mte.FakeQuantize = DQ(Q(x)), clamped to [quant_min, quant_max] when narrower than int8."""
    x, scale, zp = node.inputs
    where, attrs = node.name, node.attrs
    s, z = b.g.constants.get(scale), b.g.constants.get(zp)
    if s is None or z is None:
        raise ValueError(f"onnx.export: mte.FakeQuantize node {where!r} needs constant scale "
                         f"and zero point")
    axis = {} if attrs.get("axis") is None else {"axis": int(attrs["axis"])}
    z8 = b.const(np.asarray(z).astype(np.int8), "zero_point")
    s32 = b.const(np.asarray(s, np.float32), "scale")
    lo, hi = int(attrs.get("quant_min", -128)), int(attrs.get("quant_max", 127))
    full = (lo, hi) == (-128, 127)
    y = b.add("DequantizeLinear", [b.add("QuantizeLinear", [x, s32, z8], where=where, **axis),
                                   s32, z8], node.outputs[0] if full else None, where, **axis)
    if not full:
        shape = [1] * len(b.shape(x))
        if axis and np.asarray(s).size > 1:
            shape[axis["axis"] % len(shape)] = -1
        bound = lambda q: ((q - np.asarray(z, np.float64)) * s).astype(b.dtype(x)).reshape(
            shape if np.asarray(s).size > 1 else ())
        y = b.add("Max", [y, b.const(bound(lo), "qmin")], where=where)
        b.add("Min", [y, b.const(bound(hi), "qmax")], node.outputs[0], where)


# ---- int8 expansions: QDQ form ----------------------------------------------------------------
def _clamp(b, x, node, ys, yz):
    """The folded activation [act_min, act_max] of an int8 node as Relu / Clip on float x in
    the output's real units (nothing when it is the whole int8 range)."""
    lo, hi = int(node.attrs.get("act_min", -128)), int(node.attrs.get("act_max", 127))
    if lo <= -128 and hi >= 127:
        return x
    s = float(np.asarray(b.g.constants[ys]).reshape(-1)[0])
    z = int(np.asarray(b.g.constants[yz]).reshape(-1)[0])
    if lo == z and hi >= 127:
        return b.add("Relu", [x], where=node.name)
    bounds = [b.scalar((lo - z) * s, x) if lo > -128 else "",
              b.scalar((hi - z) * s, x) if hi < 127 else ""]
    while not bounds[-1]:
        bounds.pop()
    return b.add("Clip", [x] + bounds, where=node.name)


def _weight_dq(b, w, ws, where):
    """DQ of int8 weights: per output channel (axis 0) when the scale is a vector, with a
    zero-point vector of its size."""
    scale = b.g.constants[ws]
    if scale.size > 1:
        zero = b.const(np.zeros(scale.size, np.int8), "w_zero")
        return b.add("DequantizeLinear", [w, ws, zero], where=where, axis=0)
    return b.add("DequantizeLinear", [w, ws, b.const(np.zeros((), np.int8), "w_zero")],
                 where=where)


def _bias_dq(b, bias, xs, ws, where):
    """DQ of an int32 bias with scale Xs * Ws[o] and zero point 0."""
    scale = (np.float64(np.asarray(b.g.constants[xs]).reshape(-1)[0])
             * np.asarray(b.g.constants[ws], np.float64)).astype(np.float32)
    sc = b.const(scale, "bias_scale")
    zero = b.const(np.zeros(scale.shape, np.int32), "bias_zero")
    return b.add("DequantizeLinear", [bias, sc, zero], where=where,
                 **({"axis": 0} if scale.size > 1 else {}))


def _quantized_layer(core_op, fixed):
    """mte.QLinearConv / mte.QLinearGemm -> Q(act(core(DQ(X), DQ(W), DQ(B))))."""
    def expand(b, node):
        x, xs, xz, w, ws, _wz, ys, yz = node.inputs[:8]
        bias = node.inputs[8] if len(node.inputs) > 8 else ""
        where = node.name
        ins = [b.dq(x, xs, xz, where), _weight_dq(b, w, ws, where)]
        if bias:
            ins.append(_bias_dq(b, bias, xs, ws, where))
        attrs = {k: v for k, v in node.attrs.items() if k not in ("act_min", "act_max")}
        y = b.add(core_op, ins, where=where, **{**attrs, **fixed})
        y = _clamp(b, y, node, ys, yz)
        b.add("QuantizeLinear", [y, ys, yz], node.outputs[0], where)
    return expand


def _qadd(b, node):
    a, as_, az, c, cs, cz, ys, yz = node.inputs
    y = b.add("Add", [b.dq(a, as_, az, node.name), b.dq(c, cs, cz, node.name)], where=node.name)
    b.add("QuantizeLinear", [_clamp(b, y, node, ys, yz), ys, yz], node.outputs[0], node.name)


def _qunary(core_op):
    """mte.QLinearGlobalAveragePool / mte.QLinearAveragePool / mte.Requantize (core None):
    Q(act(core(DQ(X))))."""
    def expand(b, node):
        x, xs, xz, ys, yz = node.inputs
        attrs = {k: v for k, v in node.attrs.items() if k not in ("act_min", "act_max")}
        y = b.dq(x, xs, xz, node.name)
        if core_op:
            y = b.add(core_op, [y], where=node.name, **attrs)
        b.add("QuantizeLinear", [_clamp(b, y, node, ys, yz), ys, yz], node.outputs[0],
              node.name)
    return expand


def _hardswish_or_copy(b, node):
    if b.opset >= 14:
        b.add(node.op, node.inputs, list(node.outputs), node.name, **node.attrs)
    else:
        _hardswish(b, node)


# op -> expand(builder, node): the one table of what each op becomes in ONNX
EXPANSIONS = {
    "mte.ConvAct": _layer_act("Conv", 3),
    "mte.GemmAct": _layer_act("Gemm", 3),
    "mte.Gelu": _gelu,
    "mte.Silu": _silu,
    "mte.Attention": _attention,
    "mte.FakeQuantize": _fake_quantize,
    "mte.QLinearConv": _quantized_layer("Conv", {}),
    "mte.QLinearGemm": _quantized_layer("Gemm", {"transB": 1}),
    "mte.QLinearAdd": _qadd,
    "mte.QLinearGlobalAveragePool": _qunary("GlobalAveragePool"),
    "mte.QLinearAveragePool": _qunary("AveragePool"),
    "mte.Requantize": _qunary(None),
    "LayerNormalization": _layer_norm,
    "HardSwish": _hardswish_or_copy,
}
