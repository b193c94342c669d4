"""ONNX nodes of opsets 13..21 (and older where it was cheap) in our opset-17 form: one table,
CONVERT, of what differs by op type; every other op whose name is in `graph.opset.OPS` is
taken as it is.

A converter ``f(b, n)`` gets the importer's builder `b` (onnx/importer.py: the graph so far,
its constants, `b.const_input`, `b.emit`, `b.define`) and the node `n` (op, inputs, outputs,
attrs already decoded, `version`: the op's own since-version at the model's opset). It
rewrites `n` in place (op, inputs, attrs) and returns None, or builds what the node computes
itself and returns True. What it rewrites (each a difference between ONNX versions, or between
ONNX and the form our ops store):

    Constant, Shape, Size          -> constants (shapes are static here)
    ReduceX axes input (ReduceSum >= 13, the others >= 18) -> the `axes` attribute ours take;
        noop_with_empty_axes with no axes -> Identity
    Split `split` attr (< 13), `num_outputs` (>= 18) or neither -> the sizes input ours take
    Squeeze / Unsqueeze axes attr (< 13), Clip min/max attrs (< 11), Pad pads/value attrs
        (< 11), Slice starts/ends/axes attrs (< 10)   -> inputs
    Pad `axes` input (>= 18)       -> pads for every dim
    Gelu (20)                      -> mte.Gelu (approximate "none" or "tanh")
    Cast `to` (a TensorProto code) -> a numpy dtype name; CastLike -> Cast
    Conv / pools `auto_pad`        -> explicit pads (from the static shapes)
    1-D Conv / MaxPool / AveragePool -> the 2-D op on an H = 1 image (Unsqueeze, Squeeze)
    MaxPool with asymmetric pads   -> Pad with the lowest value, then MaxPool
    LayerNormalization's Mean and InvStdDev outputs, when read -> ReduceMean, Sub, Mul,
        ReduceMean, Add, Sqrt, Reciprocal next to our LayerNormalization
    Swish (alpha 1)                -> mte.Silu
    Softmax family < 13 (2-D coercion) -> Flatten, the op on axis 1, Reshape back
    Dropout (ratio, training_mode inputs; mask output) -> Dropout(x) [mask: constant True]
    Transpose without perm         -> the reversing perm
    Resize 10 (X, scales)          -> Resize 13's inputs (X, roi "", scales)

What we cannot compute raises OnnxUnsupportedError naming the feature (Conv(3-D),
Pad(wrap), MaxPool(Indices), ...), so a conformance report can list it.
"""
import numpy as np

from ._safety import OnnxUnsupportedError, dtype_of

__all__ = ["CONVERT", "REDUCTIONS", "STATIC_INPUTS"]

# inputs that decide an output's shape: our graphs have static shapes, so these must be
# constants (initializers, Constant nodes, or folded at import, as a torch export's
# Shape -> Gather -> Concat chains are); one computed at run time is OnnxUnsupportedError
STATIC_INPUTS = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Squeeze": (1,), "Unsqueeze": (1,),
    "Slice": (1, 2, 3, 4), "Split": (1,), "Pad": (1, 3), "ConstantOfShape": (0,),
    "Range": (0, 1, 2), "OneHot": (1,), "TopK": (1,), "Resize": (1, 2, 3), "Upsample": (1,),
    "CenterCropPad": (1, 2), "Compress": (1,), "ReduceSum": (1,), "ReduceMean": (1,),
    "ReduceMax": (1,), "ReduceMin": (1,), "ReduceProd": (1,), "ReduceL1": (1,),
    "ReduceL2": (1,), "ReduceLogSum": (1,), "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,),
}

REDUCTIONS = ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


def _unsupported(n, feature):
    raise OnnxUnsupportedError(f"node {n.name!r} ({n.op}): {feature} is not supported",
                               [f"{n.op}({feature})"])


# ---- constants: shapes are static ----------------------------------------------------------
def _constant(b, n):
    a = n.attrs
    if "sparse_value" in a or "value_string" in a or "value_strings" in a:
        _unsupported(n, "a sparse or string value")
    given = [k for k in ("value", "value_float", "value_floats", "value_int", "value_ints")
             if k in a]
    if len(given) != 1:
        b.fail(n, f"needs exactly one value attribute, has {given or 'none'}")
    v = a[given[0]]
    array = (v if isinstance(v, np.ndarray) else
             np.asarray(v, np.float32 if "float" in given[0] else np.int64))
    b.define(n.outputs[0], array)
    return True


def _shape(b, n):
    shape = b.shape(n.inputs[0])
    rank = len(shape)
    start, end = n.attrs.get("start", 0), n.attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    b.define(n.outputs[0], np.asarray(shape[start:end], np.int64))
    return True


def _size(b, n):
    b.define(n.outputs[0], np.asarray(int(np.prod(b.shape(n.inputs[0]), dtype=np.int64)),
                                      np.int64))
    return True


# ---- axes / sizes that became inputs over the versions ---------------------------------------
def _reduce(b, n):
    axes_from_input = n.version >= (13 if n.op == "ReduceSum" else 18)
    if axes_from_input:
        axes = b.const_input(n, 1, "axes") if len(n.inputs) > 1 and n.inputs[1] else None
        n.inputs = n.inputs[:1]
    else:
        axes = n.attrs.get("axes")
    noop = n.attrs.pop("noop_with_empty_axes", 0)
    axes = None if axes is None else [int(x) for x in np.asarray(axes).reshape(-1)]
    if not axes:
        if noop:
            n.op, n.attrs = "Identity", {}
            return
        axes = None
    n.attrs.pop("axes", None)
    if axes is not None:
        n.attrs["axes"] = axes
    return


def _split(b, n):
    shape = b.shape(n.inputs[0])
    axis = int(n.attrs.pop("axis", 0))
    if not -len(shape) <= axis < max(len(shape), 1):
        b.fail(n, f"axis {axis} is out of range for rank {len(shape)}")
    dim = shape[axis]
    if n.version < 13 and "split" in n.attrs:
        sizes = list(n.attrs.pop("split"))
    elif len(n.inputs) > 1 and n.inputs[1]:
        sizes = [int(s) for s in b.const_input(n, 1, "split")]
    else:
        parts = int(n.attrs.pop("num_outputs", len(n.outputs)))
        if parts <= 0:
            b.fail(n, f"num_outputs {parts} must be positive")
        step = -(-dim // parts)                    # ceil: the last piece may be smaller
        sizes = [min(step, max(dim - k * step, 0)) for k in range(parts)]
    n.attrs.pop("num_outputs", None)
    n.attrs.pop("split", None)
    n.attrs["axis"] = axis
    n.inputs = [n.inputs[0], b.new_const(np.asarray(sizes, np.int64), "split")]


def _axes_attr_to_input(since):
    def convert(b, n):
        if n.version < since and "axes" in n.attrs:
            n.inputs = n.inputs[:1] + [b.new_const(np.asarray(n.attrs.pop("axes"), np.int64),
                                                   "axes")]
    return convert


def _clip(b, n):
    if n.version < 11:
        dt = b.dtype(n.inputs[0])
        lo, hi = n.attrs.pop("min", None), n.attrs.pop("max", None)
        n.inputs = n.inputs[:1] + ["" if v is None else b.new_const(np.asarray(v, dt), "clip")
                                   for v in (lo, hi)]


def _pad(b, n):
    mode = n.attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        _unsupported(n, f"mode {mode!r}")
    n.attrs["mode"] = mode
    rank = len(b.shape(n.inputs[0]))
    if n.version < 11:
        pads = n.attrs.pop("pads")
        value = n.attrs.pop("value", 0.0)
        n.inputs = [n.inputs[0], b.new_const(np.asarray(pads, np.int64), "pads"),
                    b.new_const(np.asarray(value, b.dtype(n.inputs[0])), "pad_value")]
        return
    if len(n.inputs) > 3 and n.inputs[3]:           # axes (18): pads only for those dims
        axes = [int(a) % max(rank, 1) for a in b.const_input(n, 3, "axes")]
        given = [int(p) for p in b.const_input(n, 1, "pads")]
        if len(given) != 2 * len(axes):
            b.fail(n, f"pads has {len(given)} entries for {len(axes)} axes")
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[a + rank] = given[k], given[k + len(axes)]
        n.inputs = [n.inputs[0], b.new_const(np.asarray(full, np.int64), "pads")] + \
            n.inputs[2:3]
    n.inputs = n.inputs[:3]
    return


def _slice(b, n):
    if n.version < 10:
        ins = [n.inputs[0]]
        for key in ("starts", "ends", "axes"):
            ins.append(b.new_const(np.asarray(n.attrs.pop(key), np.int64), key)
                       if key in n.attrs else "")
        n.inputs = ins


# ---- dtypes ----------------------------------------------------------------------------------
def _cast(b, n):
    n.attrs.pop("saturate", None)
    n.attrs.pop("round_mode", None)
    if n.op == "CastLike":
        n.attrs["to"] = b.dtype(n.inputs[1])
        n.op, n.inputs = "Cast", n.inputs[:1]
    else:
        n.attrs["to"] = dtype_of(int(n.attrs["to"]), f"node {n.name!r} (Cast) `to`")


def _gelu(b, n):
    approx = n.attrs.get("approximate", "none")
    if approx not in ("none", "tanh"):
        b.fail(n, f"approximate must be 'none' or 'tanh', got {approx!r}")
    n.op, n.attrs = "mte.Gelu", {"approximate": approx}


# ---- geometry ----------------------------------------------------------------------------------
def _auto_pads(b, n, kernel, spatial):
    """ONNX auto_pad SAME_UPPER / SAME_LOWER / VALID as explicit pads [begins..., ends...]."""
    auto = n.attrs.pop("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        return
    strides = n.attrs.get("strides", [1] * len(spatial))
    dilations = n.attrs.get("dilations", [1] * len(spatial))
    if auto == "VALID":
        n.attrs["pads"] = [0] * (2 * len(spatial))
        return
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        b.fail(n, f"unknown auto_pad {auto!r}")
    begins, ends = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else big)
        ends.append(big if auto == "SAME_UPPER" else small)
    n.attrs["pads"] = begins + ends


def _conv(b, n):
    x_shape, w_shape = b.shape(n.inputs[0]), b.shape(n.inputs[1])
    if len(x_shape) != len(w_shape) or len(x_shape) not in (3, 4):
        _unsupported(n, f"{len(x_shape) - 2}-D convolution (only 1-D and 2-D)")
    n.attrs.setdefault("kernel_shape", list(w_shape[2:]))
    _auto_pads(b, n, n.attrs["kernel_shape"], x_shape[2:])
    if len(x_shape) == 3:
        return _as_2d(b, n, [1])
    return None


def _as_2d(b, n, weights):
    """A 1-D Conv / pool as the 2-D one on an H = 1 image: Unsqueeze(x, 2) (and the weights
    `weights`: input indices), the op with 1 prepended to its geometry, Squeeze(y, 2)."""
    a = n.attrs
    for key, unit in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
        if key in a:
            a[key] = [unit] + list(a[key])
    if "pads" in a:
        begin, end = list(a["pads"])
        a["pads"] = [0, begin, 0, end]
    axis = b.new_const(np.asarray([2], np.int64), "axes")
    ins = list(n.inputs)
    for k in [0] + weights:
        if k < len(ins) and ins[k]:
            ins[k] = b.emit("Unsqueeze", [ins[k], axis], [b.fresh("as_2d")], {},
                            n.name + "/as_2d")[0]
    y = b.emit(n.op, ins, [b.fresh("y_2d")] + n.outputs[1:], a, n.name)
    b.emit("Squeeze", [y[0], axis], n.outputs[:1], {}, n.name + "/as_1d")
    return True


def _pool(b, n):
    x_shape = b.shape(n.inputs[0])
    if len(x_shape) not in (3, 4):
        _unsupported(n, f"{len(x_shape) - 2}-D pooling (only 1-D and 2-D)")
    if n.attrs.pop("storage_order", 0):
        _unsupported(n, "storage_order 1")
    if "kernel_shape" not in n.attrs:
        b.fail(n, "kernel_shape is required")
    _auto_pads(b, n, n.attrs["kernel_shape"], x_shape[2:])
    rank = len(x_shape) - 2
    pads = list(n.attrs.get("pads", [0] * (2 * rank)))
    if pads[:rank] != pads[rank:]:
        if n.op != "MaxPool" or n.attrs.get("ceil_mode", 0):
            _unsupported(n, f"asymmetric pads {pads}")
        # MaxPool: pad explicitly with the lowest value first (a max never picks it)
        x = n.inputs[0]
        dt = np.dtype(b.dtype(x))
        low = -np.inf if dt.kind == "f" else np.iinfo(dt).min
        full = [0, 0] + pads[:rank] + [0, 0] + pads[rank:]
        n.inputs = b.emit("Pad", [x, b.new_const(np.asarray(full, np.int64), "pads"),
                                  b.new_const(np.asarray(low, dt), "pad_value")],
                          [b.fresh("padded")], {"mode": "constant"}, n.name + "/pad")
        n.attrs["pads"] = [0] * (2 * rank)
    if n.op == "AveragePool" and any(d != 1 for d in n.attrs.pop("dilations", [1] * rank)):
        _unsupported(n, "dilations")
    if rank == 1:
        return _as_2d(b, n, [])
    return None


def _swish(b, n):
    """Swish(x; alpha) = x sigmoid(alpha x): mte.Silu for alpha 1."""
    if float(n.attrs.get("alpha", 1.0)) != 1.0:
        _unsupported(n, "alpha other than 1")
    n.op, n.attrs = "mte.Silu", {}


def _softmax(b, n):
    """Softmax, LogSoftmax, Hardmax: axis default -1 from 13 on; before, the input was coerced
    to 2-D at `axis` (default 1)."""
    if n.version >= 13:
        return None
    shape = b.shape(n.inputs[0])
    axis = int(n.attrs.get("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    flat = b.emit("Flatten", [n.inputs[0]], [b.fresh("flat")], {"axis": axis}, n.name + "/2d")
    y = b.emit(n.op, flat, [b.fresh("y2d")], {"axis": 1}, n.name)
    b.emit("Reshape", [y[0], b.new_const(np.asarray(shape, np.int64), "shape")], n.outputs,
           {}, n.name + "/back")
    return True


def _dropout(b, n):
    if len(n.inputs) > 2 and n.inputs[2] and bool(
            np.asarray(b.const_input(n, 2, "training_mode")).reshape(-1)[0]):
        _unsupported(n, "training_mode true")
    if n.attrs.pop("is_test", 1) == 0 and n.version < 7:
        _unsupported(n, "is_test 0")
    n.attrs = {}
    n.inputs = n.inputs[:1]
    if len(n.outputs) > 1 and n.outputs[1]:
        b.define(n.outputs[1], np.ones(b.shape(n.inputs[0]), np.bool_))
    n.outputs = n.outputs[:1]


def _transpose(b, n):
    n.attrs.setdefault("perm", list(range(len(b.shape(n.inputs[0])) - 1, -1, -1)))


def _reshape(b, n):
    if n.attrs.pop("allowzero", 0) and 0 in [int(d) for d in b.const_input(n, 1, "shape")]:
        _unsupported(n, "allowzero 1 with a 0 in the shape")


def _batch_norm(b, n):
    if n.attrs.pop("training_mode", 0):
        _unsupported(n, "training_mode 1")
    for k in ("momentum", "spatial", "is_test", "consumed_inputs"):
        n.attrs.pop(k, None)


def _layer_norm(b, n):
    """The optional outputs Mean and InvStdDev, when read, from our ops:
    Mean = ReduceMean(x), InvStdDev = 1 / sqrt(ReduceMean((x - Mean)^2) + epsilon)."""
    n.attrs.pop("stash_type", None)
    extra = (n.outputs + ["", ""])[1:3]
    if not any(o and b.used(o) for o in extra):
        return None
    x, where = n.inputs[0], n.name
    rank = len(b.shape(x))
    axes = list(range(int(n.attrs.get("axis", -1)) % max(rank, 1), rank))
    keep = {"axes": axes, "keepdims": 1}
    mean = b.emit("ReduceMean", [x], [extra[0] or b.fresh("mean")], keep, where + "/mean")[0]
    d = b.emit("Sub", [x, mean], [b.fresh("centered")], {}, where + "/sub")[0]
    var = b.emit("ReduceMean", [b.emit("Mul", [d, d], [b.fresh("sq")], {}, where + "/sq")[0]],
                 [b.fresh("var")], keep, where + "/var")[0]
    eps = b.new_const(np.asarray(n.attrs.get("epsilon", 1e-5), b.dtype(x)), "epsilon")
    std = b.emit("Sqrt", [b.emit("Add", [var, eps], [b.fresh("var_eps")], {}, where + "/eps")[0]],
                 [b.fresh("std")], {}, where + "/sqrt")[0]
    b.emit("Reciprocal", [std], [extra[1] or b.fresh("inv_std")], {}, where + "/inv")
    b.emit("LayerNormalization", n.inputs, n.outputs[:1], n.attrs, where)
    return True


def _quantize(b, n):
    """Q / DQ: block quantization (21) is not supported; Q's uint8 activations become int8
    (zero point - 128) when every reader is a DQ, DQ's of such values follow (importer)."""
    if n.attrs.pop("block_size", 0):
        _unsupported(n, "block_size")
    n.attrs.pop("saturate", None)
    out_dtype = n.attrs.pop("output_dtype", 0)
    if n.op == "QuantizeLinear" and out_dtype and (len(n.inputs) < 3 or not n.inputs[2]):
        dt = dtype_of(int(out_dtype), f"node {n.name!r} output_dtype")
        n.inputs = n.inputs[:2] + [b.new_const(np.zeros((), dt), "zero_point")]
    if n.op == "QuantizeLinear":
        zp = n.inputs[2] if len(n.inputs) > 2 else ""
        dtype = b.dtype(zp) if zp else "uint8"
        ok = ("int8", "uint8")
    else:
        dtype, ok = b.dtype(n.inputs[0]), ("int8", "uint8", "int32")
    if dtype not in ok:
        _unsupported(n, f"{dtype} quantization")
    b.shift_uint8(n)


def _resize(b, n):
    if n.version < 11:                            # (X, scales) -> (X, roi, scales)
        n.inputs = [n.inputs[0], "", n.inputs[1]]


CONVERT = {
    "Constant": _constant, "Shape": _shape, "Size": _size,
    **{op: _reduce for op in REDUCTIONS},
    "Split": _split,
    "Squeeze": _axes_attr_to_input(13), "Unsqueeze": _axes_attr_to_input(13),
    "Clip": _clip, "Pad": _pad, "Slice": _slice,
    "Cast": _cast, "CastLike": _cast, "Gelu": _gelu,
    "Conv": _conv, "MaxPool": _pool, "AveragePool": _pool,
    "Softmax": _softmax, "LogSoftmax": _softmax, "Hardmax": _softmax,
    "Dropout": _dropout, "Transpose": _transpose, "Reshape": _reshape,
    "BatchNormalization": _batch_norm, "LayerNormalization": _layer_norm,
    "QuantizeLinear": _quantize, "DequantizeLinear": _quantize,
    "Resize": _resize, "Swish": _swish,
}
