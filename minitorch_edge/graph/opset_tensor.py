"""Tensor ops of the graph: elementwise math, comparisons, shape and index ops, reductions and
MatMul, with ONNX's (opset 17) names, attributes and semantics. Where we store an attribute
differently from ONNX, the op's docstring says so (e.g. Cast's ``to`` is a numpy dtype name;
the ONNX exporter translates). See opset.py for how an op is defined.
"""
import numpy as np

from .. import backend
from .._special import erf
from .opset import bool_broadcast, broadcast, norm_axis, op, same_as_input


def _unary(name, fn, doc):
    def run(attrs, x, out=None):
        return fn(x, out=out) if out is not None else fn(x)
    run.__doc__ = doc
    op(name, same_as_input, elementwise=True, writes_out=True)(run)


def _binary(name, fn, doc):
    def run(attrs, a, b, out=None):
        return fn(a, b, out=out) if out is not None else fn(a, b)
    run.__doc__ = doc
    op(name, broadcast, elementwise=True, writes_out=True)(run)


# ---- elementwise ------------------------------------------------------------------------------
_binary("Add", np.add, "y = a + b (broadcasting)")
_binary("Sub", np.subtract, "y = a - b")
_binary("Mul", np.multiply, "y = a * b")


def _variadic(name, fn, doc):
    """An ONNX op of one to n broadcast inputs folding them with the binary ufunc `fn` (the C
    runtime implements the two-input form; it refuses others and the Python engine runs them)."""
    def infer(attrs, ins):
        if not ins or any(i is None for i in ins):
            raise ValueError(f"{name} takes one or more inputs")
        return broadcast(attrs, ins)

    def run(attrs, *xs, out=None):
        if len(xs) == 1:
            if out is None:
                return np.array(xs[0], copy=True)
            np.copyto(out, xs[0])
            return out
        if len(xs) == 2:
            return fn(xs[0], xs[1], out=out) if out is not None else fn(xs[0], xs[1])
        # three or more: fold into a fresh array (the planner may give `out` the memory of
        # any same-shaped input, which a fold into `out` would overwrite before reading it)
        y = fn(xs[0], xs[1])
        for x in xs[2:]:
            y = fn(y, x)
        if out is None:
            return y
        np.copyto(out, y)
        return out
    run.__doc__ = doc
    op(name, infer, elementwise=True, writes_out=True)(run)


_variadic("Max", np.maximum, "y = max(x_1, ..., x_n) elementwise (broadcasting; NaN wins)")
_variadic("Min", np.minimum, "y = min(x_1, ..., x_n) elementwise (broadcasting; NaN wins)")


@op("Div", broadcast, elementwise=True, writes_out=True)
def div(attrs, a, b, out=None):
    """y = a / b; integer inputs divide with truncation toward zero (ONNX)."""
    if np.result_type(a, b).kind in "iu":
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))
    return np.true_divide(a, b, out=out) if out is not None else np.true_divide(a, b)


@op("Pow", lambda attrs, ins: [(broadcast(attrs, ins)[0][0], ins[0].dtype)], elementwise=True)
def pow_(attrs, a, b):
    """y = a ** b, in a's dtype (ONNX Pow)."""
    return np.power(a, b).astype(a.dtype, copy=False)


_unary("Neg", np.negative, "y = -x")
_unary("Abs", np.abs, "y = |x|")
_unary("Exp", np.exp, "y = e^x")
_unary("Log", np.log, "y = ln x")
_unary("Sqrt", np.sqrt, "y = sqrt x")
_unary("Reciprocal", np.reciprocal, "y = 1 / x")
_unary("Tanh", np.tanh, "y = tanh x")
_unary("Sin", np.sin, "y = sin x")
_unary("Cos", np.cos, "y = cos x")
_unary("Floor", np.floor, "y = floor x")
_unary("Ceil", np.ceil, "y = ceil x")


@op("Erf", same_as_input, elementwise=True)
def erf_(attrs, x):
    """y = erf x"""
    return erf(x)


@op("Sigmoid", same_as_input, elementwise=True)
def sigmoid(attrs, x):
    """y = 1 / (1 + e^-x), computed without overflow for large |x|."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


@op("Relu", same_as_input, elementwise=True, writes_out=True)
def relu(attrs, x, out=None):
    """y = max(x, 0); NaN stays NaN (as PyTorch)."""
    y = np.maximum(x, x.dtype.type(0), out=out)
    return y


@op("LeakyRelu", same_as_input, elementwise=True)
def leaky_relu(attrs, x):
    """y = x if x >= 0 else alpha x   (attrs: alpha, default 0.01)"""
    return np.where(x >= 0, x, x * x.dtype.type(attrs.get("alpha", 0.01)))


@op("Clip", same_as_input, elementwise=True, writes_out=True)
def clip(attrs, x, lo=None, hi=None, out=None):
    """y = min(max(x, min), max); min and max are optional 0-d inputs (ONNX opset >= 11).
    ReLU6 is Clip(x, 0, 6)."""
    y = x if lo is None else np.maximum(x, lo.astype(x.dtype), out=out)
    return y if hi is None else np.minimum(y, hi.astype(x.dtype), out=out)


@op("HardSigmoid", same_as_input, elementwise=True)
def hard_sigmoid(attrs, x):
    """y = max(0, min(1, alpha x + beta))   (attrs alpha 0.2, beta 0.5; PyTorch's hardsigmoid
    is alpha = 1/6)"""
    f = x.dtype.type
    return np.clip(x * f(attrs.get("alpha", 0.2)) + f(attrs.get("beta", 0.5)), 0, 1)


@op("HardSwish", same_as_input, elementwise=True)
def hard_swish(attrs, x):
    """y = x * max(0, min(1, x / 6 + 1/2))"""
    f = x.dtype.type
    return x * np.clip(x / f(6) + f(0.5), 0, 1)


@op("Softplus", same_as_input, elementwise=True)
def softplus(attrs, x):
    """y = ln(1 + e^x)"""
    return np.logaddexp(x, x.dtype.type(0)).astype(x.dtype, copy=False)


@op("Elu", same_as_input, elementwise=True)
def elu(attrs, x):
    """y = x if x > 0 else alpha (e^x - 1)   (attrs: alpha, default 1.0)"""
    f = x.dtype.type
    return np.where(x > 0, x, f(attrs.get("alpha", 1.0)) * np.expm1(np.minimum(x, 0)))


@op("mte.Gelu", same_as_input, elementwise=True)
def gelu(attrs, x):
    """y = x Phi(x) (attrs: approximate "none" or "tanh"). Replaces ONNX's
    Mul(Mul(x, 0.5), Add(Erf(Div(x, sqrt 2)), 1)) (ONNX has Gelu only from opset 20)."""
    return backend.gelu(x, attrs.get("approximate", "none"))


@op("mte.Silu", same_as_input, elementwise=True)
def silu(attrs, x):
    """y = x sigmoid(x). Replaces ONNX's Mul(x, Sigmoid(x))."""
    return x * sigmoid({}, x)


@op("Where", lambda attrs, ins: [(broadcast(attrs, ins)[0][0],
                                  np.result_type(ins[1].dtype, ins[2].dtype))])
def where(attrs, cond, a, b):
    """y = a where cond else b (broadcasting)"""
    return np.where(cond, a, b)


for _name, _fn, _math in (("Equal", np.equal, "a == b"), ("Less", np.less, "a < b"),
                          ("Greater", np.greater, "a > b"),
                          ("LessOrEqual", np.less_equal, "a <= b"),
                          ("GreaterOrEqual", np.greater_equal, "a >= b"),
                          ("And", np.logical_and, "a and b"), ("Or", np.logical_or, "a or b"),
                          ("Xor", np.logical_xor, "a xor b")):
    def _compare(attrs, a, b, _fn=_fn):
        return _fn(a, b)
    _compare.__doc__ = f"y = {_math} (broadcasting; a bool tensor)"
    op(_name, bool_broadcast)(_compare)


@op("Not", lambda attrs, ins: [(ins[0].shape, "bool")])
def not_(attrs, x):
    """y = not x"""
    return np.logical_not(x)


@op("Cast", lambda attrs, ins: [(ins[0].shape, attrs["to"])])
def cast(attrs, x):
    """y = x converted to dtype `to` (a numpy dtype name here; ONNX stores a TensorProto code)."""
    return x.astype(attrs["to"])


@op("Identity", same_as_input, alias=True)
def identity(attrs, x):
    """y = x"""
    return x


# ---- shape ops: their outputs are views of the input ------------------------------------------
def _reshape_shape(x_shape, shape):
    shape = [int(d) for d in shape]
    shape = [x_shape[i] if d == 0 else d for i, d in enumerate(shape)]   # ONNX: 0 copies
    size = int(np.prod(x_shape, dtype=np.int64))
    if shape.count(-1) > 1:
        raise ValueError(f"Reshape: at most one -1 in shape {shape}")
    if -1 in shape:
        rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        shape[shape.index(-1)] = size // rest if rest else 0
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise ValueError(f"Reshape: cannot reshape {list(x_shape)} ({size} elements) to {shape}")
    return tuple(shape)


def _const(inp, what):
    if inp is None or inp.data is None:
        raise ValueError(f"{what} must be a constant (shapes are static in this graph)")
    return inp.data


@op("Reshape", lambda attrs, ins: [(_reshape_shape(ins[0].shape, _const(ins[1], "shape")),
                                    ins[0].dtype)], alias=True)
def reshape(attrs, x, shape):
    """y = x with shape `shape` (an int64 input; 0 copies the input's dim, -1 is inferred)."""
    return x.reshape(_reshape_shape(x.shape, shape))


def _flatten_shape(shape, axis):
    axis = norm_axis(axis, len(shape)) if axis != len(shape) else axis
    return (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64)))


@op("Flatten", lambda attrs, ins: [(_flatten_shape(ins[0].shape, attrs.get("axis", 1)),
                                    ins[0].dtype)], alias=True)
def flatten(attrs, x):
    """y = x as 2-D: dims before `axis` (default 1) times dims from it."""
    return x.reshape(_flatten_shape(x.shape, attrs.get("axis", 1)))


def _transpose_shape(shape, perm):
    if sorted(perm) != list(range(len(shape))):
        raise ValueError(f"Transpose: perm {list(perm)} is not a permutation of {len(shape)} dims")
    return tuple(shape[p] for p in perm)


@op("Transpose", lambda attrs, ins: [(_transpose_shape(ins[0].shape, attrs["perm"]),
                                      ins[0].dtype)])
def transpose(attrs, x, out=None):
    """y = x with its dims permuted by `perm`."""
    return np.ascontiguousarray(x.transpose(attrs["perm"]))


def _axes(inp, rank, what):
    return sorted(norm_axis(int(a), rank, what) for a in _const(inp, what))


def _squeeze_shape(shape, axes_in):
    axes = (_axes(axes_in, len(shape), "Squeeze axes") if axes_in is not None
            else [i for i, d in enumerate(shape) if d == 1])
    for a in axes:
        if shape[a] != 1:
            raise ValueError(f"Squeeze: dim {a} of {list(shape)} is not 1")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@op("Squeeze", lambda attrs, ins: [(_squeeze_shape(ins[0].shape, ins[1] if len(ins) > 1
                                                   else None), ins[0].dtype)], alias=True)
def squeeze(attrs, x, axes=None):
    """y = x without the size-1 dims `axes` (an int64 input; all size-1 dims when absent)."""
    return x.reshape(_squeeze_shape(x.shape, None if axes is None else _Data(axes)))


def _unsqueeze_shape(shape, axes_in):
    rank = len(shape) + len(_const(axes_in, "Unsqueeze axes"))
    axes = _axes(axes_in, rank, "Unsqueeze axes")
    out, src = [], iter(shape)
    for i in range(rank):
        out.append(1 if i in axes else next(src))
    return tuple(out)


@op("Unsqueeze", lambda attrs, ins: [(_unsqueeze_shape(ins[0].shape, ins[1]), ins[0].dtype)],
    alias=True)
def unsqueeze(attrs, x, axes):
    """y = x with size-1 dims inserted at `axes` (an int64 input; axes of the output)."""
    return x.reshape(_unsqueeze_shape(x.shape, _Data(axes)))


class _Data:
    """An array standing in for a constant input, for the shape helpers at run time."""
    def __init__(self, data):
        self.data = data


def _expand_shape(shape, target):
    return tuple(np.broadcast_shapes(tuple(shape), tuple(int(d) for d in target)))


@op("Expand", lambda attrs, ins: [(_expand_shape(ins[0].shape, _const(ins[1], "Expand shape")),
                                   ins[0].dtype)])
def expand(attrs, x, shape):
    """y = x broadcast to `shape` (numpy broadcasting of both)."""
    return np.ascontiguousarray(np.broadcast_to(x, _expand_shape(x.shape, shape)))


def _concat_shape(attrs, ins):
    axis = norm_axis(attrs["axis"], len(ins[0].shape))
    shape = list(ins[0].shape)
    for i in ins[1:]:
        if len(i.shape) != len(shape) or any(a != b for k, (a, b) in
                                             enumerate(zip(i.shape, shape)) if k != axis):
            raise ValueError(f"Concat: shapes {[list(j.shape) for j in ins]} differ outside "
                             f"axis {axis}")
    shape[axis] = sum(i.shape[axis] for i in ins)
    return [(tuple(shape), np.result_type(*[i.dtype for i in ins]))]


@op("Concat", _concat_shape)
def concat(attrs, *xs):
    """y = the inputs joined along `axis`."""
    return np.concatenate(xs, axis=attrs["axis"])


def _split_sizes(shape, attrs, split_in):
    axis = norm_axis(attrs.get("axis", 0), len(shape))
    sizes = [int(s) for s in _const(split_in, "Split sizes")]
    if sum(sizes) != shape[axis]:
        raise ValueError(f"Split: sizes {sizes} do not add up to dim {axis} = {shape[axis]}")
    return axis, sizes


@op("Split", lambda attrs, ins: [
    (tuple(s if k == _split_sizes(ins[0].shape, attrs, ins[1])[0] else d
           for k, d in enumerate(ins[0].shape)), ins[0].dtype)
    for s in _split_sizes(ins[0].shape, attrs, ins[1])[1]])
def split(attrs, x, sizes):
    """outputs = x cut along `axis` into pieces of the given sizes (an int64 input)."""
    axis, sizes = _split_sizes(x.shape, attrs, _Data(sizes))
    return tuple(np.ascontiguousarray(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis))


def _slices(shape, starts, ends, axes, steps):
    rank = len(shape)
    axes = range(len(starts)) if axes is None else [norm_axis(int(a), rank) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * rank
    for a, s, e, st in zip(axes, starts, ends, steps):
        big = np.iinfo(np.int64).max
        index[a] = slice(int(s), None if int(e) >= big or (int(st) < 0 and int(e) <= -big)
                         else int(e), int(st))
    return tuple(index)


def _data(inp):
    return None if inp is None else _const(inp, "Slice argument")


def _slice_shape(attrs, ins):
    index = _slices(ins[0].shape, *[_data(i) for i in (ins + [None] * 5)[1:5]])
    return [(np.empty(ins[0].shape, np.bool_)[index].shape, ins[0].dtype)]


@op("Slice", _slice_shape)
def slice_(attrs, x, starts, ends, axes=None, steps=None):
    """y = x[starts:ends:steps] along `axes` (int64 inputs, ONNX opset 13)."""
    return np.ascontiguousarray(x[_slices(x.shape, starts, ends, axes, steps)])


@op("Gather", lambda attrs, ins: [(
    ins[0].shape[:norm_axis(attrs.get("axis", 0), len(ins[0].shape))] + ins[1].shape
    + ins[0].shape[norm_axis(attrs.get("axis", 0), len(ins[0].shape)) + 1:], ins[0].dtype)])
def gather(attrs, data, indices):
    """y = data indexed by `indices` along `axis` (an Embedding is Gather(weight, tokens))."""
    return np.take(data, indices.astype(np.int64), axis=attrs.get("axis", 0))


# ---- reductions: axes and keepdims are attributes (opset 17) ----------------------------------
def _reduce_shape(attrs, ins):
    shape = ins[0].shape
    axes = attrs.get("axes")
    axes = range(len(shape)) if axes is None else [norm_axis(a, len(shape)) for a in axes]
    keep = attrs.get("keepdims", 1)
    out = tuple((1 if i in axes else d) for i, d in enumerate(shape) if keep or i not in axes)
    return [(out, ins[0].dtype)]


def _reduce(name, fn, doc):
    def run(attrs, x):
        axes = attrs.get("axes")
        return fn(x, axis=None if axes is None else tuple(axes),
                  keepdims=bool(attrs.get("keepdims", 1))).astype(x.dtype, copy=False)
    run.__doc__ = doc
    op(name, _reduce_shape)(run)


_reduce("ReduceMean", np.mean, "y = mean of x over `axes` (attribute; all when absent)")
_reduce("ReduceSum", np.sum, "y = sum of x over `axes` (an attribute here; ONNX 13+ takes an "
        "input: the exporter translates)")
def _max(x, axis, keepdims):
    """np.max with ONNX's identity for an empty set: the lowest value of the dtype."""
    if x.size:
        return np.max(x, axis=axis, keepdims=keepdims)
    lowest = (-np.inf if x.dtype.kind == "f" else False if x.dtype.kind == "b"
              else np.iinfo(x.dtype).min)
    return np.max(x, axis=axis, keepdims=keepdims, initial=lowest)


_reduce("ReduceMax", _max, "y = max of x over `axes` (the dtype's lowest value over an empty "
        "set)")


def _softmax_rule(attrs, ins):
    norm_axis(attrs.get("axis", -1), len(ins[0].shape))
    return [(ins[0].shape, ins[0].dtype)]


@op("Softmax", _softmax_rule)
def softmax(attrs, x):
    """y = e^x / sum e^x along `axis` (default -1)"""
    return backend.softmax(x, attrs.get("axis", -1))


@op("LogSoftmax", _softmax_rule)
def log_softmax(attrs, x):
    """y = x - ln sum e^x along `axis` (default -1)"""
    return backend.softmax(x, attrs.get("axis", -1), log=True)


def _matmul_shape(attrs, ins):
    a, b = ins[0].shape, ins[1].shape
    if len(a) < 1 or len(b) < 1:
        raise ValueError("MatMul: inputs must have at least one dim")
    ka = a[-1]
    kb = b[-2] if len(b) > 1 else b[0]
    if ka != kb:
        raise ValueError(f"MatMul: shapes {list(a)} and {list(b)} cannot be multiplied")
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    rows = a[-2:-1] if len(a) > 1 else ()
    cols = b[-1:] if len(b) > 1 else ()
    return [(tuple(batch) + tuple(rows) + tuple(cols), np.result_type(ins[0].dtype, ins[1].dtype))]


@op("MatMul", _matmul_shape)
def matmul(attrs, a, b):
    """y = a @ b (numpy matmul semantics, batched)"""
    return backend.matmul(a, b)
