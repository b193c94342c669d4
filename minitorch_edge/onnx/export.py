"""ONNX export: a Module or a Graph written as a standard ONNX file (opsets 13..21).

Our Graph already uses ONNX's op names and attributes (opset 17) for every op outside the
``mte`` domain, so export is a translation of the same structure, in three steps:

1. lowering (`lower`): a new Graph of standard ops only, still in our opset (so it is checked
   and can be run by our reference executor). Each ``mte`` op is expanded back into the ONNX
   subgraph it replaces (EXPANSIONS, one function an op): mte.ConvAct -> Conv [+ Add] + act,
   mte.Attention -> MatMul/Softmax, ... Int8 ops become QDQ form, what onnxruntime and
   OpenVINO run as int8:

       mte.QLinearConv(xq; Xs, Xz, Wq, Ws, Ys, Yz, Bq)
           -> Q(act(Conv(DQ(xq), DQ(Wq, axis 0), DQ(Bq, Xs * Ws, axis 0))), Ys, Yz)

   where act is the clamp [act_min, act_max] written back as Relu / Clip in real units.
   MaxPool, Reshape, Flatten, ... on int8 values stay int8 ops. Ops the requested opset lacks
   are expanded too (LayerNormalization < 17, HardSwish < 14, Gelu < 20);
2. dynamic axes (`_honour_dynamic_axes`): the lowered graph is re-inferred with every dynamic
   input axis at another size; a Reshape whose shape constant copies such a dim gets 0 (or
   -1) there, and a node that cannot take the other size raises a ValueError naming it;
3. the protobuf (`_to_model`): one NodeProto a node, in the form of the requested opset
   (ReduceMean's axes become an input at 18, Split takes num_outputs at 18, Cast's dtype
   becomes a TensorProto code), constants as initializers, checked by
   ``onnx.checker.check_model(full_check=True)``.

    from minitorch_edge import onnx
    onnx.export(model, x, "model.onnx", dynamic_axes={"input": {0: "batch"}})
    onnx.export(quant.quantize(model, [x]), x, "model_int8.onnx")     # QDQ int8

The ``onnx`` package (extra ``onnx``) is imported only inside `export`.
"""
import contextlib
import os
import tempfile

import numpy as np

from ..graph.ir import Graph, GraphError

__all__ = ["EXPANSIONS", "OPSETS", "export", "lower"]

OPSETS = range(13, 22)           # the opset versions we emit (ONNX's default domain)
# ops whose `axes` attribute (ours) is an int64 input from this opset on
AXES_INPUT_SINCE = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18,
                    "ReduceProd": 18, "ReduceL2": 18}


def export(model, args, f, opset_version=17, input_names=None, output_names=None,
           dynamic_axes=None):
    """Write `model` (a Module, traced on `args` in eval mode and not optimized, or a Graph,
    exported as it is) to `f` (a path, written atomically, or a binary file object) as ONNX
    with `opset_version` (13..21). `input_names` / `output_names` rename the graph's inputs and
    outputs; `dynamic_axes` ({name: {axis: "dim name"} or [axes]}) gives those dims a
    dim_param. Returns None, as torch.onnx.export."""
    if not isinstance(opset_version, (int, np.integer)) or int(opset_version) not in OPSETS:
        raise ValueError(f"onnx.export: opset_version {opset_version!r} is not supported; use "
                         f"one of {OPSETS.start}..{OPSETS.stop - 1} (default 17)")
    opset_version = int(opset_version)
    try:
        import onnx
    except ImportError:
        raise ImportError('onnx.export needs the onnx package: pip install '
                          '"minitorch_edge[onnx]"') from None
    g = _graph_of(model, args)
    low = lower(g, opset_version)
    renames = _renames(low, input_names, output_names)
    dims = _honour_dynamic_axes(low, dynamic_axes or {}, renames)
    proto = _to_model(onnx, low, opset_version, renames, dims)
    onnx.checker.check_model(proto, full_check=True)
    data = proto.SerializeToString()
    if hasattr(f, "write"):
        f.write(data)
    else:
        _write_atomic(os.fspath(f), data)


# ---- the graph to export ----------------------------------------------------------------------
def _graph_of(model, args):
    if isinstance(model, Graph):
        return model.check()
    from ..graph import trace
    if not callable(model):
        raise TypeError(f"onnx.export: model must be a Module or a Graph, got "
                        f"{type(model).__name__}")
    if args is None:
        raise ValueError("onnx.export: a Module needs example inputs `args` (one input or a "
                         "tuple) to be traced")
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    was_training = getattr(model, "training", None)
    if was_training is not None:
        model.eval()
    try:
        return trace(model, *args)
    finally:
        if was_training is not None:
            model.train(was_training)


def _write_atomic(path, data):
    """Write bytes to `path` through a temporary file renamed into place."""
    path = os.path.realpath(path)
    folder, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
                             f"expansion; add one to minitorch_edge.onnx.export.EXPANSIONS or "
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


# ---- names ------------------------------------------------------------------------------------
def _renames(g, input_names, output_names):
    """{old value name: new} from input_names / output_names (counts checked)."""
    renames = {}
    for what, new, old in (("input_names", input_names, g.inputs),
                           ("output_names", output_names, g.outputs)):
        if new is None:
            continue
        new = list(new)
        if len(new) != len(old):
            raise ValueError(f"onnx.export: {what} has {len(new)} names but the graph has "
                             f"{len(old)} {what.split('_')[0]}s ({', '.join(old)})")
        renames.update(zip(old, (str(n) for n in new)))
    final = [renames.get(n, n) for n in list(g.inputs) + list(g.outputs)]
    if len(set(final)) != len(final):
        raise ValueError(f"onnx.export: input and output names must be distinct, got {final}")
    clash = [n for old, n in renames.items() if n != old and n in g.values]
    if clash:
        raise ValueError(f"onnx.export: the new names {clash} are already names of values in "
                         f"the graph; choose others")
    return renames


# ---- step 2: dynamic axes ---------------------------------------------------------------------
def _dynamic_spec(g, dynamic_axes, renames):
    """{value name (ours): {axis: dim_param}} from PyTorch's dynamic_axes (keys: new names or
    ours)."""
    back = {new: old for old, new in renames.items()}
    spec = {}
    for key, axes in dynamic_axes.items():
        name = back.get(key, key)
        if name not in g.inputs and name not in g.outputs:
            raise ValueError(f"onnx.export: dynamic_axes names {key!r}, which is not a graph "
                             f"input or output ({', '.join(renames.get(n, n) for n in g.inputs + g.outputs)})")
        rank = len(g.values[name].shape)
        if isinstance(axes, dict):
            items = axes.items()
        else:
            items = [(a, f"{renames.get(name, name)}_dynamic_axes_{k + 1}")
                     for k, a in enumerate(axes)]
        spec[name] = {}
        for axis, dim in items:
            if not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank:
                raise ValueError(f"onnx.export: dynamic_axes[{key!r}] has axis {axis!r}, out "
                                 f"of range for its rank {rank}")
            spec[name][int(axis) % rank] = str(dim)
    return spec


def _honour_dynamic_axes(g, dynamic_axes, renames):
    """Make the lowered graph `g` (changed in place) run at other sizes of the dynamic input
    axes, and return {value: {axis: dim_param}} for the graph's inputs and outputs."""
    spec = _dynamic_spec(g, dynamic_axes, renames)
    if not any(spec.get(i) for i in g.inputs):
        return spec
    probe = Graph(g.name)           # the same graph, the dynamic input axes at other sizes
    for name in g.inputs:
        shape = list(g.values[name].shape)
        for axis in spec.get(name, {}):
            shape[axis] += 2
        probe.add_input(name, shape, g.values[name].dtype)
    for name, array in g.constants.items():
        probe.add_constant(name, array)
    for node in g.nodes:
        if node.op in _SHAPE_FIXES:
            _SHAPE_FIXES[node.op](g, probe, node)
        try:
            probe.add_node(node.op, node.inputs, node.outputs, node.name, **node.attrs)
        except GraphError as e:
            raise ValueError(f"onnx.export: dynamic_axes {dynamic_axes} cannot be honoured: node "
                             f"{node.name!r} ({node.op}) does not take the inputs at another "
                             f"size of those axes ({e})") from None
    for name in g.outputs:
        grown = [k for k, (a, p) in enumerate(zip(g.values[name].shape,
                                                   probe.values[name].shape)) if a != p]
        dims = spec.setdefault(name, {})
        for k in grown:
            dims.setdefault(k, f"{renames.get(name, name)}_dim{k}")
    g.check()
    return spec


def _replace_input(g, probe, node, k, array, hint):
    name = g.add_constant(g.fresh_name(hint), array)
    probe.add_constant(name, array)
    node.inputs[k] = name


def _fix_reshape(g, probe, node):
    """A Reshape's shape constant: an entry that copies a dynamic input dim at its place
    becomes 0; if the element count still disagrees, one entry becomes -1."""
    x, shape_name = node.inputs[:2]
    old, new = g.values[x].shape, probe.values[x].shape
    if old == new or shape_name not in g.constants:
        return
    target = [int(t) for t in g.constants[shape_name]]
    grown = {k for k, (a, p) in enumerate(zip(old, new)) if a != p}
    fixed = [0 if k in grown and k < len(old) and t == old[k] else t
             for k, t in enumerate(target)]
    count = int(np.prod(new))

    def fits(t):
        dims = [new[k] if d == 0 else d for k, d in enumerate(t)]
        known = int(np.prod([d for d in dims if d != -1]))
        return count % known == 0 if -1 in dims else known == count

    if not fits(fixed) and -1 not in fixed:
        for j in range(len(fixed)):
            trial = fixed[:j] + [-1] + fixed[j + 1:]
            if fixed[j] != 0 and fits(trial):
                fixed = trial
                break
    if fixed != target:
        _replace_input(g, probe, node, 1, np.asarray(fixed, np.int64), "shape")


def _fix_expand(g, probe, node):
    """An Expand's shape constant: an entry equal to a dynamic input dim becomes 1 (keep)."""
    x, shape_name = node.inputs[:2]
    old, new = g.values[x].shape, probe.values[x].shape
    if old == new or shape_name not in g.constants:
        return
    target = [int(t) for t in g.constants[shape_name]]
    off = len(target) - len(old)
    fixed = [1 if k - off >= 0 and old[k - off] != new[k - off] and t == old[k - off] else t
             for k, t in enumerate(target)]
    if fixed != target:
        _replace_input(g, probe, node, 1, np.asarray(fixed, np.int64), "shape")


_SHAPE_FIXES = {"Reshape": _fix_reshape, "Expand": _fix_expand}


# ---- step 3: the protobuf ---------------------------------------------------------------------
def _attr_value(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, tuple):
        return [_attr_value(x) for x in v]
    if isinstance(v, list):
        return [_attr_value(x) for x in v]
    return v


def _node_form(onnx, g, node, opset, extra_inits):
    """(op_type, inputs, attrs) of `node` in the form of `opset`."""
    op, inputs = node.op, list(node.inputs)
    attrs = {k: _attr_value(v) for k, v in node.attrs.items()}
    if op == "mte.Gelu":
        op = "Gelu"
    elif op == "Cast":
        attrs["to"] = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(attrs["to"]))
    elif op in AXES_INPUT_SINCE and opset >= AXES_INPUT_SINCE[op] and "axes" in attrs:
        name = f"{node.name}/axes"
        extra_inits.append((name, np.asarray(attrs.pop("axes"), np.int64)))
        inputs = inputs[:1] + [name]
    elif op == "Split" and opset >= 18 and len(inputs) > 1 and inputs[1] in g.constants:
        sizes = [int(s) for s in g.constants[inputs[1]]]
        if len(set(sizes)) == 1:
            inputs, attrs["num_outputs"] = inputs[:1], len(sizes)
    while inputs and not inputs[-1]:
        inputs.pop()
    return op, inputs, attrs


def _tensor_type(onnx, v, dims, name):
    shape = [dims.get(k, d) for k, d in enumerate(v.shape)]
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(v.dtype)), shape)


def _to_model(onnx, g, opset, renames, dims):
    from .._version import __version__
    h = onnx.helper
    rn = lambda n: renames.get(n, n) if n else n
    extra, nodes = [], []
    for node in g.nodes:
        op, ins, attrs = _node_form(onnx, g, node, opset, extra)
        nodes.append(h.make_node(op, [rn(i) for i in ins], [rn(o) for o in node.outputs],
                                 name=node.name, **attrs))
    used = {i for n in nodes for i in n.input}
    inits = [onnx.numpy_helper.from_array(np.ascontiguousarray(a), rn(name))
             for name, a in g.constants.items() if rn(name) in used]
    inits += [onnx.numpy_helper.from_array(a, name) for name, a in extra]
    graph = h.make_graph(
        nodes, g.name,
        [_tensor_type(onnx, g.values[i], dims.get(i, {}), rn(i)) for i in g.inputs],
        [_tensor_type(onnx, g.values[o], dims.get(o, {}), rn(o)) for o in g.outputs],
        initializer=inits,
        doc_string=f"graph {g.name!r}: {len(nodes)} nodes, {len(inits)} initializers")
    imports = [h.make_opsetid("", opset)]
    model = h.make_model(graph, opset_imports=imports, producer_name="minitorch_edge",
                         producer_version=__version__,
                         doc_string=f"{g.name} exported by minitorch_edge {__version__} "
                                    f"(ONNX opset {opset})")
    model.ir_version = h.find_min_ir_version_for(imports)
    return model
