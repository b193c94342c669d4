"""Binary elementwise arithmetic: + - * / // % **, atan2, where/maximum/minimum/lerp, casts.
(Comparisons and logic, which give bool results and no gradient, are in compare.py.)

Each op is a Function whose forward calls numpy on promoted operands (see `_util.promote`) and
whose backward is written with Tensor ops, then reduced to each input's shape by `sum_to` —
broadcasting is undone there and nowhere else. Python scalars may appear on either side.
"""
import numpy as np

from .. import backend
from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._layout import layout_copy
from ._util import (_cast, as_tensor, checked_scalar, is_float, promote, scalar_operand,
                    sum_to, tensor_method)

__all__ = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
           "maximum", "minimum", "where", "lerp", "rsub", "subtract", "multiply", "divide",
           "clone", "atan2"]


def _shape(x):
    return x._data.shape if isinstance(x, Tensor) else ()


def _shapes(a, b):
    return (a._data.shape if isinstance(a, Tensor) else (),
            b._data.shape if isinstance(b, Tensor) else ())


class _Binary(Function):
    """Base for binary ops. When recording, forward keeps the input shapes in ``ctx.shapes``
    (for `sum_to`) and saves what backward needs."""
    _builtin = True


_BOOL = np.dtype(np.bool_)
SUB_BOOL_MSG = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
SUB_BOOLS_MSG = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                 "`^` or `logical_xor()` operator instead.")


def _is_bool(v):
    if isinstance(v, Tensor):
        return v._data.dtype == _BOOL
    return isinstance(v, (bool, np.bool_))


def _sub_check(a, b):
    """PyTorch refuses subtraction with a bool operand (tensor or Python bool)."""
    ab, bb = _is_bool(a), _is_bool(b)
    if ab and bb:
        raise RuntimeError(SUB_BOOLS_MSG)
    if ab or bb:
        raise RuntimeError(SUB_BOOL_MSG)


def _no_bool(t, op):
    if t == _BOOL:
        raise TypeError(f"{op}: not implemented for bool tensors (as in PyTorch); convert with "
                        f".int() first")


def _half_scalar(b, t):
    """PyTorch's CPU mul and true division in float16/bfloat16 with a one-element second
    operand of another dtype (a number, a 0-d tensor) use that operand's own value in float32,
    not its value rounded to the half dtype (float16_tensor * 1e10: inf, and 0 * 1e10 = 0).
    Returns that float32 value, or None where the ordinary path applies."""
    if t.itemsize != 2 or not is_float(t):
        return None
    if isinstance(b, Tensor):
        d = b._data
        if d.size != 1 or d.dtype == t:
            return None
        with np.errstate(over="ignore"):
            return d.astype(np.float32)
    with np.errstate(over="ignore"):
        return np.float32(b)


def _no_zero_divisor(x, y, t):
    """Integer division (//, %, fmod, trunc division) by zero raises, as in PyTorch."""
    if t.kind in "iu" and np.size(x) and np.size(y) and not np.all(y):
        raise RuntimeError("ZeroDivisionError")


class Add(_Binary):
    """y = a + alpha*b.  dy/da = 1, dy/db = alpha."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, _ = promote(a, b, "add")
        if ctx.needs_input_grad:
            ctx.shapes = _shapes(a, b)
        return np.add(x, y)

    @staticmethod
    def backward(ctx, grad):
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        return (sum_to(grad, sa) if need[0] else None), (sum_to(grad, sb) if need[1] else None)


class Sub(_Binary):
    """y = a - b.  dy/da = 1, dy/db = -1."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "sub")
        if t.kind == "b":
            _sub_check(a, b)
        elif a.__class__ is not Tensor or b.__class__ is not Tensor or \
                a._data.dtype is not b._data.dtype:      # a bool operand may have promoted
            if _is_bool(a) or _is_bool(b):
                _sub_check(a, b)
        if ctx.needs_input_grad:
            ctx.shapes = _shapes(a, b)
        return np.subtract(x, y)

    @staticmethod
    def backward(ctx, grad):
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        return (sum_to(grad, sa) if need[0] else None), (sum_to(-grad, sb) if need[1] else None)


class Rsub(Sub):
    """Sub with its operands swapped by the caller: rsub(x, y) = y - x, and number - tensor."""


class Mul(_Binary):
    """y = a * b.  dy/da = b, dy/db = a.  (Each operand is saved only if the *other* one needs
    a gradient, as PyTorch does, so ``h[1] = h[1] * 3`` does not trip the version check.)"""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "mul")
        need = ctx.needs_input_grad
        if need:
            ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
            ctx.shapes = _shapes(a, b)
        if t.itemsize == 2 and t.kind != "i":
            s = _half_scalar(b, t)
            if s is not None:
                with np.errstate(over="ignore", invalid="ignore"):
                    return np.asarray(np.multiply(np.asarray(x, np.float32), s)).astype(t)
        return np.multiply(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        return (sum_to(grad * b, sa) if need[0] else None), \
               (sum_to(grad * a, sb) if need[1] else None)


class Div(_Binary):
    """y = a / b (true division; integers give the default float dtype).
    dy/da = 1/b, dy/db = -a/b^2."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "div", floating=True)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
            ctx.shapes = _shapes(a, b)
        if t.itemsize == 2:
            s = _half_scalar(b, t)
            if s is not None:
                with np.errstate(all="ignore"):
                    return np.asarray(np.true_divide(np.asarray(x, np.float32), s)).astype(t)
        return np.true_divide(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        ga = sum_to(grad / b, sa) if need[0] else None
        gb = sum_to(-grad * a / (b * b), sb) if need[1] else None
        return ga, gb


class FloorDiv(_Binary):
    """y = floor(a / b). Not differentiable (PyTorch raises in backward too)."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "floor_divide")
        if not is_float(t):
            _no_bool(t, "floor_divide")
            _no_zero_divisor(x, y, t)
        return np.floor_divide(x, y)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for floor_divide is not implemented")


class Remainder(_Binary):
    """y = a - floor(a/b)*b (sign of b, as Python's %).  dy/da = 1, dy/db = -floor(a/b)."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "remainder")
        if not is_float(t):
            _no_bool(t, "remainder")
            _no_zero_divisor(x, y, t)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
            ctx.shapes = _shapes(a, b)
        return np.mod(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        ga = sum_to(grad, sa) if need[0] else None
        gb = sum_to(-grad * floor_divide(a, b).detach(), sb) if need[1] else None
        return ga, gb


class Fmod(_Binary):
    """y = a - trunc(a/b)*b (sign of a, as C's fmod).  dy/da = 1, dy/db = -trunc(a/b)."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "fmod")
        if not is_float(t):
            _no_bool(t, "fmod")
            _no_zero_divisor(x, y, t)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
            ctx.shapes = _shapes(a, b)
        return np.fmod(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        ga = sum_to(grad, sa) if need[0] else None
        q = Tensor._make(np.trunc(np.true_divide(_raw(a), _raw(b))))
        gb = sum_to(-grad * q, sb) if need[1] else None
        return ga, gb


def _raw(x):
    return x._data if isinstance(x, Tensor) else x


def _int_pow(x, y, t):
    """x ** y for signed integers with some negative exponents, as PyTorch computes it:
    1 ** -n = 1, (-1) ** -n = +-1 by the parity of n, anything else ** -n = 0."""
    neg = y < 0
    out = np.power(x, np.where(neg, 0, y).astype(t, copy=False))
    xb = np.broadcast_to(x, out.shape)
    special = np.where(xb == 1, 1, np.where(xb == -1, np.where(y % 2 == 0, 1, -1), 0))
    return np.where(neg, special, out).astype(t, copy=False)


class Pow(_Binary):
    """y = a ** b.  dy/da = b * a^(b-1) (0 where b == 0), dy/db = a^b * log(a) (0 where a == 0
    and b >= 0, as PyTorch)."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "pow")
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
            ctx.shapes = _shapes(a, b)
        if not isinstance(b, Tensor) and not (
                t.kind == "f" and t.itemsize > 2 and b.__class__ in (int, float)
                and -1e38 < b < 1e38):
            checked_scalar(b, t)   # a number exponent must fit the dtype (uint8 ** 300 raises)
        if t.kind == "f" or is_float(t):
            if isinstance(b, int) and not isinstance(b, bool) and abs(b) > 2 ** 24:
                # an integer exponent the dtype cannot hold exactly (2**31 + 5 is odd)
                with np.errstate(all="ignore"):
                    return np.power(x.astype(np.float64), float(b)).astype(t)
            return np.power(x, y)
        if t == _BOOL:
            if isinstance(b, Tensor) or not isinstance(a, Tensor):
                raise TypeError("pow: not implemented for a bool base with a bool tensor "
                                "exponent (as in PyTorch)")
            # a Python bool exponent: x ** True = x, x ** False = 1 (PyTorch's shortcuts)
            return x.copy() if y else np.ones_like(x)
        if not isinstance(b, Tensor):
            if b < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            return np.power(x, y)
        if t.kind == "i" and np.any(y < 0):
            return _int_pow(x, y, t)
        return np.power(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        ga = gb = None
        if need[0]:
            if isinstance(b, Tensor):
                ga = where(b == 0, 0.0, grad * b * a ** (b - 1))
            else:
                ga = grad * 0.0 if b == 0 else grad * b * a ** (b - 1)
            ga = sum_to(ga, sa)
        if need[1]:
            a_t = as_tensor(a) if not isinstance(a, Tensor) else a
            y = a_t ** b
            safe_log = where(a_t == 0, 0.0, a_t).log() if isinstance(a, Tensor) else \
                as_tensor(np.log(a) if a != 0 else 0.0)
            gb = grad * where((a_t == 0) & (b >= 0), 0.0, y * safe_log)
            gb = sum_to(gb, sb)
        return ga, gb


class Atan2(_Binary):
    """y = atan2(a, b).  dy/da = b/(a^2+b^2), dy/db = -a/(a^2+b^2)."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, _ = promote(a, b, "atan2", floating=True)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
            ctx.shapes = _shapes(a, b)
        return np.arctan2(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        denom = a * a + b * b
        need = ctx.needs_input_grad
        return (sum_to(grad * b / denom, sa) if need[0] else None), \
               (sum_to(-grad * a / denom, sb) if need[1] else None)


class Maximum(_Binary):
    """y = max(a, b); the gradient goes to the larger input (split evenly on ties, as PyTorch)."""
    _np = staticmethod(np.maximum)

    @classmethod
    def forward(cls, ctx, a, b):
        x, y, _ = promote(a, b, cls.__name__.lower())
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
            ctx.shapes = _shapes(a, b)
        return cls._np(x, y)

    @classmethod
    def backward(cls, ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        pick_a = cls._np(a._data, b._data) == a._data
        pick_b = cls._np(a._data, b._data) == b._data
        share = np.where(pick_a & pick_b, 0.5, 1.0)
        wa = Tensor._make((pick_a * share).astype(grad._data.dtype))
        wb = Tensor._make((pick_b * share).astype(grad._data.dtype))
        need = ctx.needs_input_grad
        return (sum_to(grad * wa, sa) if need[0] else None), \
               (sum_to(grad * wb, sb) if need[1] else None)


class Minimum(Maximum):
    _np = staticmethod(np.minimum)


class Where(Function):
    """y = cond ? a : b.  dy/da = cond, dy/db = not cond (condition not differentiable)."""
    _builtin = True

    @staticmethod
    def forward(ctx, cond, a, b):
        c = cond._data
        if c.dtype != np.bool_:
            raise TypeError(f"where: expected condition to be a bool tensor, got {c.dtype}")
        x, y = _where_operands(a, b)
        from ._util import check_broadcast
        check_broadcast(c.shape, check_broadcast(np.shape(x), np.shape(y), "where"), "where")
        if ctx.needs_input_grad:
            ctx.cond = c
            ctx.shapes = _shapes(a, b)
        return np.asarray(np.where(c, x, y))

    @staticmethod
    def backward(ctx, grad):
        c = Tensor._make(ctx.cond)
        zero = grad * 0
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        return None, (sum_to(where(c, grad, zero), sa) if need[1] else None), \
            (sum_to(where(c, zero, grad), sb) if need[2] else None)


def _where_operands(a, b):
    """where's values: promoted as a binary op's, but a number is a Scalar argument there
    (checked: where(c, uint8_tensor, 300) raises, as in PyTorch)."""
    t = _dt.result_type(a, b).np
    out = []
    for v in (a, b):
        if isinstance(v, Tensor):
            d = v._data
            out.append(d if d.dtype is t else _cast(d, t))
        elif isinstance(v, (int, float, bool, np.number, np.bool_)):
            # checked for integer dtypes; cast for floating ones (float16: 1e10 -> inf)
            out.append(np.asarray(scalar_operand(v, t) if is_float(t) else
                                  checked_scalar(v, t), t))
        else:
            raise TypeError(f"where(): expected a Tensor or a number, got {type(v).__name__}")
    return out


class Lerp(Function):
    """y = a + w*(b - a).  dy/da = 1-w, dy/db = w, dy/dw = b-a."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, b, w):
        x, y, _ = promote(a, b, "lerp")
        wv = w._data if isinstance(w, Tensor) else w
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b, w)
            ctx.shapes = (_shape(a), _shape(b), _shape(w))
        t = np.result_type(x, y)
        x, y = _dt.compute_array(np.asarray(x)), _dt.compute_array(np.asarray(y))
        if isinstance(wv, np.ndarray):                   # bfloat16: in float32, rounded once
            wv = _dt.compute_array(wv)
        out = np.asarray(x + wv * (y - x)).astype(_dt.compute_dtype(t), copy=False)
        return _dt.result_array(out, t)

    @staticmethod
    def backward(ctx, grad):
        a, b, w = ctx.saved_tensors
        sa, sb, sw = ctx.shapes
        need = ctx.needs_input_grad
        return (sum_to(grad * (1 - w), sa) if need[0] else None), \
               (sum_to(grad * w, sb) if need[1] else None), \
               (sum_to(grad * (b - a), sw) if len(need) > 2 and need[2] else None)


class ToCopy(Function):
    """Cast to another dtype (to(dtype), .double(), ...); the gradient is cast back (only
    between floating types)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dtype):
        if ctx.needs_input_grad:
            ctx.src = a.dtype
        return backend.cast(a._data, dtype.np)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.src), None


class Clone(Function):
    """A copy with its own memory.  dy/dx = 1.
    `memory_format` picks the copy's strides (see _layout.py); without it (internal uses such
    as contiguous()) the copy is row-major."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, memory_format="contiguous_format"):
        if memory_format == "contiguous_format":
            return a._data.copy()
        return layout_copy(a._data, memory_format)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


# ---- functions and Tensor methods ------------------------------------------------------------
def _check(a, op):
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(a).__name__}")


def _check_number_or_tensor(a, b, op):
    """add/sub/mul/div/...(number, tensor) and (number, number) are accepted, as in PyTorch."""
    for v in (a, b):
        if not isinstance(v, (Tensor, int, float, bool, np.number, np.bool_)):
            raise TypeError(f"{op}(): expected a Tensor or a number, got {type(v).__name__}")


def _scaled(input, other, alpha, op):
    """alpha * other, computed in the dtype of ``input op other`` (PyTorch's add/sub with
    alpha): alpha is checked against that dtype (a bool alpha needs a bool result, a float
    alpha a floating one; a value that does not fit raises)."""
    t = _dt.result_type(input, other)
    if isinstance(alpha, (bool, np.bool_)):
        if t is not _dt.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif not t.is_floating_point and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    elif not isinstance(alpha, (int, float, np.number)):
        raise TypeError(f"{op}(): alpha must be a number, got {type(alpha).__name__}")
    al = checked_scalar(alpha, t.np).item()
    if isinstance(other, Tensor):
        return (other if other.dtype is t else other.to(t)) * al
    if t is _dt.bool_:
        return bool(other) and al
    if not t.is_floating_point:
        return int(scalar_operand(other, t.np)) * al
    return other * al


def add(input, other, alpha=1):
    """input + alpha * other (either may be a number, as in PyTorch)."""
    _check_number_or_tensor(input, other, "add")
    if alpha.__class__ is int and alpha == 1:
        return Add.apply(input, other)
    return Add.apply(input, _scaled(input, other, alpha, "add"))


def sub(input, other, alpha=1):
    """input - alpha * other (either may be a number). A bool operand raises, as in PyTorch."""
    _check_number_or_tensor(input, other, "sub")
    if alpha.__class__ is int and alpha == 1:
        return Sub.apply(input, other)
    if _is_bool(input) or _is_bool(other):
        _sub_check(input, other)
    return Sub.apply(input, _scaled(input, other, alpha, "sub"))


def rsub(input, other, alpha=1):
    """other - alpha * input."""
    _check(input, "rsub")
    if alpha.__class__ is int and alpha == 1:
        return Rsub.apply(other, input)
    if _is_bool(input) or _is_bool(other):
        _sub_check(input, other)
    return Rsub.apply(other, _scaled(other, input, alpha, "rsub"))


def mul(input, other):
    _check_number_or_tensor(input, other, "mul")
    return Mul.apply(input, other)


class TruncDiv(_Binary):
    """y = trunc(a / b) for integer operands (exact: no float round trip). Not
    differentiable."""

    @staticmethod
    def forward(ctx, a, b):
        x, y, t = promote(a, b, "div")
        _no_bool(t, "div(rounding_mode='trunc')")
        _no_zero_divisor(x, y, t)
        q = np.floor_divide(x, y)
        if t.kind == "i":   # floor -> trunc: one up where the quotient is negative and inexact
            fix = (np.multiply(q, y) != x) & ((x < 0) != (y < 0))
            q = np.add(q, fix.astype(t), dtype=t)
        return np.asarray(q)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for div with rounding_mode='trunc' on integers is not "
                           "implemented")


def div(input, other, rounding_mode=None):
    """input / other; rounding_mode 'trunc' or 'floor' rounds the quotient (integers stay
    integers then, as in PyTorch)."""
    _check_number_or_tensor(input, other, "div")
    if rounding_mode is None:
        return Div.apply(input, other)
    if rounding_mode == "floor":
        return FloorDiv.apply(input, other)
    if rounding_mode == "trunc":
        t = _dt.result_type(input, other)
        if not t.is_floating_point:
            return TruncDiv.apply(input, other)
        from .unary import trunc
        return trunc(Div.apply(input, other))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def floor_divide(input, other):
    _check_number_or_tensor(input, other, "floor_divide")
    return FloorDiv.apply(input, other)


def remainder(input, other):
    _check_number_or_tensor(input, other, "remainder")
    return Remainder.apply(input, other)


def fmod(input, other):
    return Fmod.apply(input, other)


def pow(input, exponent):
    return Pow.apply(input, exponent)


def atan2(input, other):
    return Atan2.apply(input, other)


def maximum(input, other):
    return Maximum.apply(input, as_tensor(other))


def minimum(input, other):
    return Minimum.apply(input, as_tensor(other))


def where(condition, input=None, other=None):
    """where(cond, a, b) picks a where cond holds, else b (either may be a number; numbers
    are checked against the result dtype); where(cond) = nonzero(cond, as_tuple=True)."""
    if input is None and other is None:
        from .sorting import nonzero
        return nonzero(as_tensor(condition), as_tuple=True)
    if input is None or other is None:
        raise TypeError("where(): expected both input and other, or neither")
    return Where.apply(as_tensor(condition), input, other)


def lerp(input, end, weight):
    """input + weight * (end - input). As in PyTorch, floating-point only, and Tensor `end` and
    `weight` must have input's dtype (a number end is accepted here)."""
    _check(input, "lerp")
    if not input.is_floating_point():
        raise TypeError(f"lerp: not implemented for {input.dtype.name} tensors (as in "
                        f"PyTorch); use floating-point tensors")
    for name, v in (("end", end), ("weight", weight)):
        if isinstance(v, Tensor) and v.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {input.dtype.name} for `{name}` but got dtype "
                               f"{v.dtype.name}")
    return Lerp.apply(input, end, weight)


def clone(input, memory_format=None):
    """A copy of input (differentiable: dy/dx = 1). memory_format: None or preserve_format
    (the default: a dense input keeps its strides, e.g. a transposed tensor's clone is
    transposed; see _layout.py), contiguous_format (row-major), channels_last (4-D),
    channels_last_3d (5-D)."""
    from ..tensor import check_memory_format
    fmt = check_memory_format(memory_format, input._data.ndim)
    return Clone.apply(input, "preserve_format" if fmt is None else fmt.name)


subtract, multiply, divide, true_divide = sub, mul, div, div

for _name, _fn in [("add", add), ("sub", sub), ("subtract", sub), ("mul", mul),
                   ("multiply", mul), ("div", div), ("divide", div), ("true_divide", div),
                   ("floor_divide", floor_divide), ("remainder", remainder), ("fmod", fmod),
                   ("pow", pow), ("atan2", atan2), ("maximum", maximum), ("minimum", minimum),
                   ("lerp", lerp), ("clone", clone)]:
    tensor_method(_name)(_fn)


@tensor_method("where")
def _where_method(self, condition, other):
    return where(condition, self, other)


# ---- Python operators -------------------------------------------------------------------------
def _reflected(cls):
    def op(self, other):
        return cls.apply(other, self)
    return op


Tensor.__add__ = lambda self, other: Add.apply(self, other)
Tensor.__radd__ = lambda self, other: Add.apply(self, other)   # (commutative: the number
# goes second, where PyTorch puts it)
Tensor.__sub__ = lambda self, other: Sub.apply(self, other)
Tensor.__rsub__ = _reflected(Rsub)
Tensor.__mul__ = lambda self, other: Mul.apply(self, other)
Tensor.__rmul__ = lambda self, other: Mul.apply(self, other)
Tensor.__truediv__ = lambda self, other: Div.apply(self, other)
Tensor.__rtruediv__ = _reflected(Div)
Tensor.__floordiv__ = lambda self, other: FloorDiv.apply(self, other)
Tensor.__rfloordiv__ = _reflected(FloorDiv)
Tensor.__mod__ = lambda self, other: Remainder.apply(self, other)
Tensor.__rmod__ = _reflected(Remainder)
Tensor.__pow__ = lambda self, other: Pow.apply(self, other)
Tensor.__rpow__ = _reflected(Pow)
Tensor.__hash__ = lambda self: id(self)
