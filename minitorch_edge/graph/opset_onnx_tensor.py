"""Elementwise and tensor-making ops the ONNX importer needs beyond the traced ops: more math
(trigonometric, hyperbolic, Mod, Sign, Round, IsNaN, IsInf, Det, bitwise ops and BitShift),
more activations (PRelu, Selu, Celu, ThresholdedRelu, Softsign, Mish, Shrink, ONNX's Gelu), the
variadic Sum and Mean, CastLike and Size, and the ops that make a tensor from constants (Range,
ConstantOfShape, Tile). ONNX (opset 17) names, attributes and
semantics. They run on the Python engine only (``c_runtime=False``, see opset.py).
"""
import functools

import numpy as np

from .._special import erf
from .opset import broadcast, op, same_as_input

python_op = functools.partial(op, c_runtime=False)


def _const(inp, what):
    if inp is None or inp.data is None:
        raise ValueError(f"{what} must be a constant (shapes are static in this graph)")
    return inp.data


def _float_input(name, ins):
    if np.dtype(ins[0].dtype).kind != "f":
        raise ValueError(f"{name} takes a float tensor, got {ins[0].dtype}; cast it first")
    return [(ins[0].shape, ins[0].dtype)]


def _float_unary(name, fn, doc):
    def run(attrs, x):
        return fn(attrs, x).astype(x.dtype, copy=False)
    run.__doc__ = doc
    python_op(name, lambda attrs, ins: _float_input(name, ins), elementwise=True)(run)


for _name, _fn in (("Tan", np.tan), ("Asin", np.arcsin), ("Acos", np.arccos),
                   ("Atan", np.arctan), ("Sinh", np.sinh), ("Cosh", np.cosh),
                   ("Asinh", np.arcsinh), ("Acosh", np.arccosh), ("Atanh", np.arctanh)):
    _float_unary(_name, lambda attrs, x, _fn=_fn: _fn(x), f"y = {_fn.__name__}(x)")


# ---- activations ------------------------------------------------------------------------------
_float_unary("Selu", lambda attrs, x: np.where(
    x > 0, x, attrs.get("alpha", 1.67326319217681884765625) * np.expm1(np.minimum(x, 0)))
    * attrs.get("gamma", 1.05070102214813232421875),
    "y = gamma x if x > 0 else gamma alpha (e^x - 1)   (alpha 1.6733, gamma 1.0507)")
_float_unary("Celu", lambda attrs, x: np.maximum(x, 0) + np.minimum(
    0, attrs.get("alpha", 1.0) * np.expm1(x / attrs.get("alpha", 1.0))),
    "y = max(0, x) + min(0, alpha (e^(x / alpha) - 1))   (alpha 1)")
_float_unary("ThresholdedRelu", lambda attrs, x: np.where(x > attrs.get("alpha", 1.0), x, 0),
             "y = x if x > alpha else 0   (alpha 1)")
_float_unary("Softsign", lambda attrs, x: x / (1 + np.abs(x)), "y = x / (1 + |x|)")
_float_unary("Mish", lambda attrs, x: x * np.tanh(np.logaddexp(x, 0)),
             "y = x tanh(ln(1 + e^x))")


def _prelu_shape(attrs, ins):
    x, slope = ins[0].shape, ins[1].shape
    try:
        fits = np.broadcast_shapes(x, slope) == tuple(x)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"PRelu: slope {list(slope)} does not broadcast to X {list(x)} "
                         f"(give it as [C, 1, 1] for per-channel slopes of NCHW)")
    return [(x, ins[0].dtype)]


@python_op("PRelu", _prelu_shape, elementwise=True)
def prelu(attrs, x, slope):
    """y = x if x >= 0 else slope x (slope broadcast to x's shape)"""
    return np.where(x >= 0, x, x * slope.astype(x.dtype))


# ---- more math --------------------------------------------------------------------------------
@python_op("Mod", broadcast, elementwise=True)
def mod(attrs, a, b):
    """y = a mod b: with fmod=0 (the default) the remainder has b's sign (Python's %); with
    fmod=1 it has a's sign (C's fmod)."""
    return np.fmod(a, b) if attrs.get("fmod", 0) else np.mod(a, b)


@python_op("Sign", same_as_input, elementwise=True)
def sign(attrs, x):
    """y = -1, 0 or 1 as x < 0, x == 0 or x > 0"""
    return np.sign(x)


@python_op("Round", lambda attrs, ins: _float_input("Round", ins), elementwise=True)
def round_(attrs, x):
    """y = x rounded to the nearest integer, halves to even (ONNX Round)"""
    return np.round(x)


@python_op("IsNaN", lambda attrs, ins: [(ins[0].shape, "bool")])
def is_nan(attrs, x):
    """y = x is NaN"""
    return np.isnan(x)


@python_op("IsInf", lambda attrs, ins: [(ins[0].shape, "bool")])
def is_inf(attrs, x):
    """y = x is +inf (when detect_positive, default 1) or -inf (when detect_negative, default 1)"""
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    return ((np.isposinf(x) if pos else np.zeros(x.shape, bool))
            | (np.isneginf(x) if neg else np.zeros(x.shape, bool)))


def _variadic_shape(name):
    def infer(attrs, ins):
        if not ins or any(i is None for i in ins):
            raise ValueError(f"{name} takes one or more inputs")
        return broadcast(attrs, ins)
    return infer


@python_op("Sum", _variadic_shape("Sum"), elementwise=True)
def sum_(attrs, *xs):
    """y = x_1 + x_2 + ... + x_n (broadcasting; one to n inputs)"""
    return functools.reduce(np.add, xs[1:], np.array(xs[0], copy=True))


@python_op("Mean", _variadic_shape("Mean"), elementwise=True)
def mean(attrs, *xs):
    """y = (x_1 + ... + x_n) / n (broadcasting; one to n inputs)"""
    total = sum_(attrs, *xs)
    return (total / total.dtype.type(len(xs))).astype(total.dtype, copy=False)


# ---- making tensors ---------------------------------------------------------------------------
def _range_count(start, limit, delta):
    if delta == 0:
        raise ValueError("Range: delta must not be 0")
    return max(int(np.ceil((limit - start) / delta)), 0)


def _range_shape(attrs, ins):
    vals = [_const(i, f"Range {what}") for i, what in zip(ins, ("start", "limit", "delta"))]
    if any(v.size != 1 for v in vals) or len({i.dtype for i in ins}) != 1:
        raise ValueError("Range takes three scalars of one dtype")
    return [((_range_count(*[v.item() for v in vals]),), ins[0].dtype)]


@python_op("Range", _range_shape)
def range_(attrs, start, limit, delta):
    """y[i] = start + i delta for i < ceil((limit - start) / delta) (all constant scalars)"""
    s, d = start.item(), delta.item()
    n = _range_count(s, limit.item(), d)
    return (s + np.arange(n) * d).astype(start.dtype)


def _fill_value(attrs):
    value = attrs.get("value")
    if value is None:
        return np.zeros((), np.float32)
    value = np.asarray(value)
    if value.size != 1:
        raise ValueError(f"ConstantOfShape: value must have one element, got shape "
                         f"{list(value.shape)}")
    return value.reshape(())


def _shape_values(inp, what):
    dims = [int(d) for d in np.asarray(_const(inp, what)).reshape(-1)]
    if any(d < 0 for d in dims):
        raise ValueError(f"{what} has a negative dim: {dims}")
    return tuple(dims)


@python_op("ConstantOfShape", lambda attrs, ins: [
    (_shape_values(ins[0], "ConstantOfShape shape"), _fill_value(attrs).dtype)])
def constant_of_shape(attrs, shape):
    """y = a tensor of the shape given (a constant int64 input) filled with `value` (a
    one-element array whose dtype is y's; float32 0 when absent)"""
    value = _fill_value(attrs)
    return np.full(tuple(int(d) for d in shape), value, value.dtype)


def _tile_shape(attrs, ins):
    reps = _shape_values(ins[1], "Tile repeats")
    if len(reps) != len(ins[0].shape):
        raise ValueError(f"Tile: repeats has {len(reps)} entries for an input of rank "
                         f"{len(ins[0].shape)}")
    return [(tuple(d * r for d, r in zip(ins[0].shape, reps)), ins[0].dtype)]


@python_op("Tile", _tile_shape)
def tile(attrs, x, repeats):
    """y = x repeated repeats[i] times along dim i (repeats a constant int64 input)"""
    return np.tile(x, [int(r) for r in repeats])


# ---- more elementwise: Gelu (ONNX 20), Shrink, bitwise, CastLike, Size, Det ------------------
@python_op("Gelu", lambda attrs, ins: _float_input("Gelu", ins), elementwise=True)
def gelu(attrs, x):
    """y = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, or with approximate="tanh"
    x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 (ONNX opset 20; the traced graphs use
    mte.Gelu)"""
    if attrs.get("approximate", "none") == "tanh":
        inner = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
        return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * x * (1 + erf(x / np.sqrt(2)))).astype(x.dtype)


@python_op("Shrink", same_as_input, elementwise=True)
def shrink(attrs, x):
    """y = x + bias if x < -lambd, x - bias if x > lambd, else 0   (lambd 0.5, bias 0)"""
    lambd, bias = attrs.get("lambd", 0.5), attrs.get("bias", 0.0)
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)).astype(x.dtype)


def _int_broadcast(name):
    def infer(attrs, ins):
        for i in ins:
            if np.dtype(i.dtype).kind not in "iu":
                raise ValueError(f"{name} takes integer tensors, got {i.dtype}")
        if len({i.dtype for i in ins}) != 1:
            raise ValueError(f"{name} takes inputs of one dtype, got "
                             f"{', '.join(i.dtype for i in ins)}")
        return broadcast(attrs, ins)
    return infer


for _name, _fn, _math in (("BitwiseAnd", np.bitwise_and, "a & b"),
                          ("BitwiseOr", np.bitwise_or, "a | b"),
                          ("BitwiseXor", np.bitwise_xor, "a ^ b")):
    def _bitwise(attrs, a, b, _fn=_fn):
        return _fn(a, b)
    _bitwise.__doc__ = f"y = {_math} bit by bit (integers, broadcasting)"
    python_op(_name, _int_broadcast(_name), elementwise=True)(_bitwise)


@python_op("BitwiseNot", _int_broadcast("BitwiseNot"), elementwise=True)
def bitwise_not(attrs, x):
    """y = ~x bit by bit (integers)"""
    return np.invert(x)


def _bit_shift_shape(attrs, ins):
    if attrs.get("direction") not in ("LEFT", "RIGHT"):
        raise ValueError(f"BitShift: direction must be LEFT or RIGHT, got "
                         f"{attrs.get('direction')!r}")
    return _int_broadcast("BitShift")(attrs, ins)


@python_op("BitShift", _bit_shift_shape, elementwise=True)
def bit_shift(attrs, x, shift):
    """y = x << shift (direction LEFT; bits shifted out are lost, as on the unsigned
    representation) or x >> shift (RIGHT; arithmetic for signed x). A shift below 0 or not
    below the bit width gives 0 (LEFT) or the sign fill, -1 for x < 0 and 0 otherwise (RIGHT)."""
    x, shift = np.broadcast_arrays(x, shift)
    bits = x.dtype.itemsize * 8
    valid = (shift >= 0) & (shift < bits)
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    amount = np.where(valid, shift, 0).astype(unsigned)
    if attrs["direction"] == "LEFT":
        y = np.left_shift(x.astype(unsigned), amount).astype(x.dtype)
        return np.where(valid, y, 0).astype(x.dtype)
    y = np.right_shift(x, amount.astype(x.dtype))
    return np.where(valid, y, np.where(x < 0, -1, 0)).astype(x.dtype)


@python_op("CastLike", lambda attrs, ins: [(ins[0].shape, ins[1].dtype)])
def cast_like(attrs, x, target):
    """y = x converted to target's dtype (target's values are not read)"""
    return x.astype(target.dtype)


@python_op("Size", lambda attrs, ins: [((), "int64")])
def size(attrs, x):
    """y = the number of elements of x, an int64 scalar"""
    return np.array(x.size, np.int64)


def _det_shape(attrs, ins):
    shape = ins[0].shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Det takes square matrices (..., M, M), got {list(shape)}")
    _float_input("Det", ins)
    return [(shape[:-2], ins[0].dtype)]


@python_op("Det", _det_shape)
def det(attrs, x):
    """y = the determinant of each square matrix in the last two dims"""
    return np.asarray(np.linalg.det(x)).astype(x.dtype)
