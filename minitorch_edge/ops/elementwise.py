"""Binary elementwise arithmetic: + - * / // % **, atan2, where/maximum/minimum/lerp, casts.
(Comparisons and logic, which give bool results and no gradient, are in compare.py.)

Each op is a Function whose forward calls numpy on promoted operands (see `_util.operands`) and
whose backward is written with Tensor ops, then reduced to each input's shape by `sum_to` —
broadcasting is undone there and nowhere else. Python scalars may appear on either side.
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import as_tensor, operands, sum_to, tensor_method

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


class Add(_Binary):
    """y = a + alpha*b.  dy/da = 1, dy/db = alpha."""

    @staticmethod
    def forward(ctx, a, b):
        x, y = operands(a, b, "add")
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
        x, y = operands(a, b, "sub")
        if x.dtype == np.bool_ if hasattr(x, "dtype") else False:
            raise TypeError("sub: subtraction with two bool tensors is not supported; use "
                            "logical_xor() or cast with .int() first")
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
        x, y = operands(a, b, "mul")
        need = ctx.needs_input_grad
        if need:
            ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
            ctx.shapes = _shapes(a, b)
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
        x, y = operands(a, b, "div")
        if getattr(x, "dtype", np.dtype(type(x))).kind != "f" and \
                getattr(y, "dtype", np.dtype(type(y))).kind != "f":
            f = _dt.get_default_dtype().np
            x, y = np.asarray(x, f), np.asarray(y, f)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
            ctx.shapes = _shapes(a, b)
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
        x, y = operands(a, b, "floor_divide")
        return np.floor_divide(x, y)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for floor_divide is not implemented")


class Remainder(_Binary):
    """y = a - floor(a/b)*b (sign of b, as Python's %).  dy/da = 1, dy/db = -floor(a/b)."""

    @staticmethod
    def forward(ctx, a, b):
        x, y = operands(a, b, "remainder")
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
        x, y = operands(a, b, "fmod")
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


class Pow(_Binary):
    """y = a ** b.  dy/da = b * a^(b-1) (0 where b == 0), dy/db = a^b * log(a) (0 where a == 0
    and b >= 0, as PyTorch)."""

    @staticmethod
    def forward(ctx, a, b):
        x, y = operands(a, b, "pow")
        if getattr(x, "dtype", None) is not None and x.dtype.kind in "iu" and \
                np.any(np.asarray(y) < 0) and np.asarray(y).dtype.kind in "iu":
            raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
            ctx.shapes = _shapes(a, b)
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
        x, y = operands(a, b, "atan2")
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
        x, y = operands(a, b, cls.__name__.lower())
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
        x, y = operands(a, b, "where")
        from ._util import check_broadcast
        check_broadcast(c.shape, np.broadcast_shapes(np.shape(x), np.shape(y)), "where")
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


class Lerp(Function):
    """y = a + w*(b - a).  dy/da = 1-w, dy/db = w, dy/dw = b-a."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, b, w):
        x, y = operands(a, b, "lerp")
        wv = w._data if isinstance(w, Tensor) else w
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b, w)
            ctx.shapes = (_shape(a), _shape(b), _shape(w))
        return np.asarray(x + wv * (y - x)).astype(np.result_type(x, y), copy=False)

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
        return a._data.astype(dtype.np)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.src), None


class Clone(Function):
    """A copy with its own memory.  dy/dx = 1."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        return a._data.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


# ---- functions and Tensor methods ------------------------------------------------------------
def _check(a, op):
    if not isinstance(a, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(a).__name__}")


def add(input, other, alpha=1):
    _check(input, "add")
    return Add.apply(input, other if alpha == 1 else other * alpha)


def sub(input, other, alpha=1):
    _check(input, "sub")
    return Sub.apply(input, other if alpha == 1 else other * alpha)


def rsub(input, other, alpha=1):
    return Rsub.apply(other, input if alpha == 1 else input * alpha)


def mul(input, other):
    return Mul.apply(input, other)


def div(input, other, rounding_mode=None):
    if rounding_mode is None:
        return Div.apply(input, other)
    if rounding_mode == "floor":
        return FloorDiv.apply(input, other)
    if rounding_mode == "trunc":
        q = Div.apply(input, other)
        from .unary import trunc
        out = trunc(q)
        x, _ = operands(input, other, "div")
        return out.to(_dt.from_numpy_dtype(np.asarray(x).dtype)) if not \
            np.asarray(x).dtype.kind == "f" else out
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def floor_divide(input, other):
    return FloorDiv.apply(input, other)


def remainder(input, other):
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
    """where(cond, a, b) picks a where cond holds, else b; where(cond) = nonzero(as_tuple)."""
    if input is None and other is None:
        from .index import nonzero
        return nonzero(condition, as_tuple=True)
    return Where.apply(as_tensor(condition), input, other)


def lerp(input, end, weight):
    return Lerp.apply(input, end, weight)


def clone(input, memory_format=None):
    return Clone.apply(input)


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
Tensor.__radd__ = _reflected(Add)
Tensor.__sub__ = lambda self, other: Sub.apply(self, other)
Tensor.__rsub__ = _reflected(Rsub)
Tensor.__mul__ = lambda self, other: Mul.apply(self, other)
Tensor.__rmul__ = _reflected(Mul)
Tensor.__truediv__ = lambda self, other: Div.apply(self, other)
Tensor.__rtruediv__ = _reflected(Div)
Tensor.__floordiv__ = lambda self, other: FloorDiv.apply(self, other)
Tensor.__rfloordiv__ = _reflected(FloorDiv)
Tensor.__mod__ = lambda self, other: Remainder.apply(self, other)
Tensor.__rmod__ = _reflected(Remainder)
Tensor.__pow__ = lambda self, other: Pow.apply(self, other)
Tensor.__rpow__ = _reflected(Pow)
Tensor.__hash__ = lambda self: id(self)
