"""Unary elementwise math: neg, abs, exp/log, powers, trig, sigmoid, erf, rounding, clamp.

Forward applies a numpy function; backward multiplies the incoming gradient by the derivative,
written with Tensor ops so it can be differentiated again (constant masks are numpy arrays
wrapped with `Tensor._make`). Dtypes follow PyTorch: integer and bool inputs to ops with
fractional results (exp, log, sqrt, sin, sigmoid, ...) are computed in the default float dtype;
sign-like and rounding ops keep the integer dtype. Out-of-domain inputs give nan/inf silently,
as in PyTorch (numpy's floating-point warnings are switched off inside forward).

Differences from PyTorch: a dtype an op does not support (``abs`` of bool, ``frac`` of int)
raises TypeError (PyTorch: RuntimeError/NotImplementedError); ``clamp`` also accepts one
Tensor bound with one number bound.
"""
import math

import numpy as np

from .. import dtypes as _dt
from .._special import TWO_OVER_SQRT_PI as _TWO_OVER_SQRT_PI
from .._special import erf as _erf
from .._special import erfinv as _erfinv
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import check_broadcast, checked_scalar, promote, sum_to, tensor_method
from .elementwise import Pow, where

__all__ = ["neg", "negative", "abs", "absolute", "sign", "sgn", "reciprocal", "exp", "exp2",
           "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "square",
           "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan",
           "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh",
           "sigmoid", "erf", "erfinv", "floor", "ceil", "round", "trunc", "fix", "frac",
           "clamp", "clip", "clamp_min", "clamp_max", "nan_to_num", "xlogy"]

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)


def _float_input(a):
    """The array to compute on: integer/bool inputs are promoted to the default float dtype."""
    x = a._data
    return x if _dt.is_float_dtype(x.dtype) else x.astype(_dt.get_default_dtype().np)


def _keep(mask, grad):
    """grad where the numpy bool array `mask` holds, 0 elsewhere (routes gradients at kinks)."""
    return where(Tensor._make(np.asarray(mask)), grad, 0.0)


def _zeros(grad):
    """The zero gradient of a piecewise-constant op (floor, sign, ...)."""
    return Tensor._make(np.zeros_like(grad._data))


def _check(input, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


class _Unary(Function):
    """Base of the one-input ops: y = _f(x) on the float-promoted input (on the input as it is
    when `_keep_int`). Saves x for backward, unless the op saves its output instead."""
    _builtin = True
    _keep_int = False      # integer inputs keep their dtype (abs, sign, floor, ...)
    _no_bool = False       # bool inputs are rejected (abs, floor, ...)

    @staticmethod
    def _f(x):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a):
        x = a._data
        if cls._no_bool and x.dtype == np.bool_:
            raise TypeError(f"{cls.__name__.lower()}: not supported for bool tensors; convert "
                            f"with .int() or .float() first")
        if ctx.needs_input_grad and not cls.save_output:
            ctx.save_for_backward(a)
        if not cls._keep_int:
            x = _float_input(a)
        with np.errstate(all="ignore"):     # bfloat16: computed in float32, rounded once
            return _dt.result_array(np.asarray(cls._f(_dt.compute_array(x))), x.dtype)


def _unary(name, f, doc, backward, save_output=False, keep_int=False, no_bool=False):
    """Make a _Unary subclass from a numpy function `f` and `backward(grad, v)`, where v is the
    saved input (the saved output when save_output)."""
    def bw(ctx, grad):
        v, = ctx.saved_tensors
        return backward(grad, v)
    return type(name, (_Unary,), {"__doc__": doc, "_f": staticmethod(f),
                                  "backward": staticmethod(bw), "save_output": save_output,
                                  "_keep_int": keep_int, "_no_bool": no_bool})


# ---- sign-like ----------------------------------------------------------------------------------
class Neg(Function):
    """y = -x.  dy/dx = -1."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        if a._data.dtype == np.bool_:
            raise TypeError("neg: negation of a bool tensor is not supported; use ~ or "
                            "logical_not() instead")
        return np.negative(a._data)

    @staticmethod
    def backward(ctx, grad):
        return -grad


def _sign(x):
    """-1, 0 or 1 in x's dtype; nan -> 0 as in PyTorch (numpy's sign gives nan)."""
    if x.dtype == np.bool_:
        return x.copy()
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


Abs = _unary("Abs", np.abs, "y = |x|.  dy/dx = sign(x) (0 at x = 0, as PyTorch).",
             lambda g, x: g * Tensor._make(_sign(x._data)), keep_int=True, no_bool=True)
Sign = _unary("Sign", _sign, "y = sign(x) in {-1, 0, 1} (nan -> 0).  dy/dx = 0.",
              lambda g, x: _zeros(g), keep_int=True)
Sgn = _unary("Sgn", _sign, "y = sgn(x) = sign(x) (for real tensors).  dy/dx = 0.",
             lambda g, x: _zeros(g), keep_int=True)
Reciprocal = _unary("Reciprocal", np.reciprocal, "y = 1/x.  dy/dx = -y^2.",
                    lambda g, y: -g * y * y, save_output=True)

# ---- exponentials and logarithms ----------------------------------------------------------------
Exp = _unary("Exp", np.exp, "y = e^x.  dy/dx = y (the saved output).",
             lambda g, y: g * y, save_output=True)
Exp2 = _unary("Exp2", np.exp2, "y = 2^x.  dy/dx = y ln 2.",
              lambda g, y: g * y * _LN2, save_output=True)
Expm1 = _unary("Expm1", np.expm1, "y = e^x - 1 (accurate near 0).  dy/dx = y + 1.",
               lambda g, y: g * (y + 1), save_output=True)
Log = _unary("Log", np.log, "y = ln x.  dy/dx = 1/x.", lambda g, x: g / x)
Log2 = _unary("Log2", np.log2, "y = log2 x.  dy/dx = 1/(x ln 2).",
              lambda g, x: g / (x * _LN2))
Log10 = _unary("Log10", np.log10, "y = log10 x.  dy/dx = 1/(x ln 10).",
               lambda g, x: g / (x * _LN10))
Log1P = _unary("Log1P", np.log1p, "y = ln(1 + x) (accurate near 0).  dy/dx = 1/(1 + x).",
               lambda g, x: g / (x + 1))
Sqrt = _unary("Sqrt", np.sqrt, "y = sqrt(x).  dy/dx = 1/(2y).",
              lambda g, y: g / (y * 2), save_output=True)
Rsqrt = _unary("Rsqrt", lambda x: 1 / np.sqrt(x), "y = 1/sqrt(x).  dy/dx = -y^3/2.",
               lambda g, y: g * (y * y * y) * -0.5, save_output=True)

# ---- trigonometric and hyperbolic ---------------------------------------------------------------
Sin = _unary("Sin", np.sin, "y = sin x.  dy/dx = cos x.", lambda g, x: g * cos(x))
Cos = _unary("Cos", np.cos, "y = cos x.  dy/dx = -sin x.", lambda g, x: -g * sin(x))
Tan = _unary("Tan", np.tan, "y = tan x.  dy/dx = 1 + y^2.",
             lambda g, y: g * (y * y + 1), save_output=True)
Asin = _unary("Asin", np.arcsin, "y = asin x.  dy/dx = 1/sqrt(1 - x^2).",
              lambda g, x: g * rsqrt(1 - x * x))
Acos = _unary("Acos", np.arccos, "y = acos x.  dy/dx = -1/sqrt(1 - x^2).",
              lambda g, x: -g * rsqrt(1 - x * x))
Atan = _unary("Atan", np.arctan, "y = atan x.  dy/dx = 1/(1 + x^2).",
              lambda g, x: g / (x * x + 1))
Sinh = _unary("Sinh", np.sinh, "y = sinh x.  dy/dx = cosh x.", lambda g, x: g * cosh(x))
Cosh = _unary("Cosh", np.cosh, "y = cosh x.  dy/dx = sinh x.", lambda g, x: g * sinh(x))
Tanh = _unary("Tanh", np.tanh, "y = tanh x.  dy/dx = 1 - y^2.",
              lambda g, y: g * (1 - y * y), save_output=True)
Asinh = _unary("Asinh", np.arcsinh, "y = asinh x.  dy/dx = 1/sqrt(x^2 + 1).",
               lambda g, x: g * rsqrt(x * x + 1))
Acosh = _unary("Acosh", np.arccosh, "y = acosh x.  dy/dx = 1/sqrt(x^2 - 1).",
               lambda g, x: g * rsqrt(x * x - 1))
Atanh = _unary("Atanh", np.arctanh, "y = atanh x.  dy/dx = 1/(1 - x^2).",
               lambda g, x: g / (1 - x * x))


def _sigmoid(x):
    """1/(1 + e^-x) without overflow: e = e^-|x| is at most 1, then pick by the sign of x."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


Sigmoid = _unary("Sigmoid", _sigmoid, "y = 1/(1 + e^-x).  dy/dx = y (1 - y).",
                 lambda g, y: g * y * (1 - y), save_output=True)

# ---- error function (the numerics, which numpy lacks, are in _special.py) ----------------------
Erf = _unary("Erf", _erf, "y = erf x = 2/sqrt(pi) int_0^x e^(-t^2) dt.  "
             "dy/dx = 2/sqrt(pi) e^(-x^2).",
             lambda g, x: g * exp(-(x * x)) * _TWO_OVER_SQRT_PI)
Erfinv = _unary("Erfinv", _erfinv, "y = erfinv x (erf(y) = x).  dy/dx = sqrt(pi)/2 e^(y^2).",
                lambda g, y: g * exp(y * y) * _HALF_SQRT_PI, save_output=True)

# ---- rounding (zero gradient, integers pass through) --------------------------------------------
Floor = _unary("Floor", np.floor, "y = floor x.  dy/dx = 0.", lambda g, x: _zeros(g),
               keep_int=True, no_bool=True)
Ceil = _unary("Ceil", np.ceil, "y = ceil x.  dy/dx = 0.", lambda g, x: _zeros(g),
              keep_int=True, no_bool=True)
Trunc = _unary("Trunc", np.trunc, "y = trunc x (round toward zero).  dy/dx = 0.",
               lambda g, x: _zeros(g), keep_int=True, no_bool=True)


class Frac(Function):
    """y = x - trunc(x) (keeps the sign of x).  dy/dx = 1."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        x = a._data
        if not _dt.is_float_dtype(x.dtype):
            raise TypeError(f"frac: not supported for {x.dtype} tensors; use a floating-point "
                            f"tensor (x.float())")
        return x - np.trunc(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class Round(Function):
    """y = x rounded to `decimals` places, halves to even (as PyTorch: x*10^d is rounded, then
    divided by 10^d, in the input's dtype).  dy/dx = 0."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, decimals):
        x = a._data
        if not _dt.is_float_dtype(x.dtype):
            if x.dtype == np.bool_ or decimals != 0:
                raise TypeError(f"round: not supported for {x.dtype} tensors"
                                + (" with decimals != 0" if x.dtype != np.bool_ else "")
                                + "; use a floating-point tensor (x.float())")
            return x.copy()
        if decimals == 0:
            return np.rint(x)
        t, x = x.dtype, _dt.compute_array(x)            # bfloat16: in float32, rounded once
        ten = x.dtype.type(10.0 ** (decimals if decimals > 0 else -decimals))
        with np.errstate(all="ignore"):
            y = np.rint(x * ten) / ten if decimals > 0 else np.rint(x / ten) * ten
        return _dt.result_array(y, t)

    @staticmethod
    def backward(ctx, grad):
        return _zeros(grad), None


# ---- clamp, nan_to_num, xlogy -------------------------------------------------------------------
def _bound(v, dtype):
    """A clamp bound as a numpy value of `dtype` (None stays None). A Tensor bound is cast (an
    out-of-range value wraps, as PyTorch's cast does); a number is a Scalar argument, checked
    as PyTorch checks it (int8 clamp(max=300) raises; uint8 clamp(min=-1) means 255)."""
    if v is None:
        return None
    if isinstance(v, Tensor):
        return v._data.astype(dtype, copy=False)
    return checked_scalar(v, dtype)


class Clamp(Function):
    """y = min(max(x, lo), hi): where lo > hi every element becomes hi (as PyTorch).
    dy/dx = 1 where lo <= x <= hi (boundaries included), else 0;
    dy/dlo = 1 where x < lo (and lo < hi); dy/dhi = 1 where x > hi (or hi < lo).
    Bounds are numbers or Tensors that broadcast with x."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, lo, hi):
        for v in (lo, hi):
            if v is not None and not isinstance(v, (Tensor, int, float, np.number)):
                raise TypeError(f"clamp(): min and max must be numbers or Tensors, got "
                                f"{type(v).__name__}")
            if isinstance(v, Tensor):
                check_broadcast(a._data.shape, v._data.shape, "clamp")
        target = _dt.result_type(*[v for v in (a, lo, hi) if v is not None]).np
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, *[v if isinstance(v, Tensor) else None for v in (lo, hi)])
            ctx.bounds = (lo, hi)
        x, lo, hi = _bound(a, target), _bound(lo, target), _bound(hi, target)
        y = x if lo is None else np.maximum(x, lo)
        return np.asarray(y if hi is None else np.minimum(y, hi))

    @staticmethod
    def backward(ctx, grad):
        a, lo_t, hi_t = ctx.saved_tensors
        dtype = grad._data.dtype
        x = _bound(a, dtype)
        lo = _bound(lo_t if lo_t is not None else ctx.bounds[0], dtype)
        hi = _bound(hi_t if hi_t is not None else ctx.bounds[1], dtype)
        with np.errstate(invalid="ignore"):
            if lo is not None and hi is not None:
                masks = ((x >= lo) & (x <= hi), (x < lo) & (lo < hi), (x > hi) | (hi < lo))
            elif lo is not None:
                masks = (x >= lo, x < lo, None)
            else:
                masks = (x <= hi, None, x > hi)
        shape = grad._data.shape
        return tuple(sum_to(_keep(np.broadcast_to(m, shape), grad), t._data.shape)
                     if need and t is not None else None
                     for m, t, need in zip(masks, (a, lo_t, hi_t), ctx.needs_input_grad))


class ClampMin(Clamp):
    """Clamp with only a lower bound (clamp_min())."""


class ClampMax(Clamp):
    """Clamp with only an upper bound (clamp_max())."""


class NanToNum(Function):
    """y = x with nan, +inf, -inf replaced (defaults: 0 and the dtype's largest finite values).
    dy/dx = 1 where x is finite, else 0."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, nan, posinf, neginf):
        x = a._data
        if not _dt.is_float_dtype(x.dtype):
            return x.copy()
        if ctx.needs_input_grad:
            ctx.finite = np.isfinite(x)
        if _dt.is_bf16(x.dtype):     # numpy's finfo does not know bfloat16: its largest value
            big = float(_dt.finfo(x.dtype).max)
            posinf = big if posinf is None else posinf
            neginf = -big if neginf is None else neginf
            y = np.nan_to_num(x.astype(np.float32), nan=nan, posinf=posinf, neginf=neginf)
            return y.astype(x.dtype)
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, grad):
        return _keep(ctx.finite, grad), None, None, None


class Xlogy(Function):
    """y = x log(o), with y = 0 where x == 0 (unless o is nan).
    dy/dx = log(o), but 0 where x == 0 and o <= 0 (as PyTorch); dy/do = x / o."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, b):
        x, o, dtype = promote(a, b, "xlogy", floating=True)
        x, o = np.asarray(x, dtype), np.asarray(o, dtype)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a if isinstance(a, Tensor) else None,
                                  b if isinstance(b, Tensor) else None)
            ctx.arrays = (x, o)
            ctx.shapes = (x.shape if isinstance(a, Tensor) else (),
                          o.shape if isinstance(b, Tensor) else ())
        xc, oc = _dt.compute_array(x), _dt.compute_array(o)   # bfloat16: in float32
        with np.errstate(all="ignore"):
            y = np.asarray(np.where((xc == 0) & ~np.isnan(oc), 0, xc * np.log(oc)), xc.dtype)
        return _dt.result_array(y, dtype)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        x, o = ctx.arrays
        sa, sb = ctx.shapes
        need = ctx.needs_input_grad
        o_t = b if b is not None else Tensor._make(o)
        gx = gb = None
        if need[0]:
            with np.errstate(invalid="ignore"):
                mask = np.broadcast_to(~((x == 0) & (o <= 0)), grad._data.shape)
            gx = sum_to(_keep(mask, xlogy(grad, o_t)), sa)
        if need[1]:
            gb = sum_to(grad * (a if a is not None else Tensor._make(x)) / b, sb)
        return gx, gb


# ---- functions and Tensor methods ---------------------------------------------------------------
def _function(name, cls, *methods):
    def fn(input):
        _check(input, name)
        return cls.apply(input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = cls.__doc__
    tensor_method(name, *methods)(fn)
    return fn


neg = _function("neg", Neg, "negative", "__neg__")
abs = _function("abs", Abs, "absolute", "__abs__")  # noqa: A001 (torch.abs)
sign, sgn = _function("sign", Sign), _function("sgn", Sgn)
reciprocal = _function("reciprocal", Reciprocal)
exp, exp2, expm1 = _function("exp", Exp), _function("exp2", Exp2), _function("expm1", Expm1)
log, log2, log10 = _function("log", Log), _function("log2", Log2), _function("log10", Log10)
log1p, sqrt, rsqrt = _function("log1p", Log1P), _function("sqrt", Sqrt), _function("rsqrt", Rsqrt)
sin, cos, tan = _function("sin", Sin), _function("cos", Cos), _function("tan", Tan)
asin, acos = _function("asin", Asin, "arcsin"), _function("acos", Acos, "arccos")
atan = _function("atan", Atan, "arctan")
sinh, cosh, tanh = _function("sinh", Sinh), _function("cosh", Cosh), _function("tanh", Tanh)
asinh, acosh = _function("asinh", Asinh, "arcsinh"), _function("acosh", Acosh, "arccosh")
atanh = _function("atanh", Atanh, "arctanh")
sigmoid, erf = _function("sigmoid", Sigmoid), _function("erf", Erf)
erfinv = _function("erfinv", Erfinv)
floor, ceil, frac = _function("floor", Floor), _function("ceil", Ceil), _function("frac", Frac)
trunc = _function("trunc", Trunc, "fix")
negative, absolute, fix = neg, abs, trunc
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


@tensor_method("square")
def square(input):
    """y = x^2 (integers stay integers, bool gives int64): pow(x, 2), as in PyTorch."""
    _check(input, "square")
    return Pow.apply(input, 2)


@tensor_method("round")
def round(input, decimals=0):  # noqa: A001 (torch.round)
    """Round to `decimals` places (halves to even); see Round."""
    _check(input, "round")
    return Round.apply(input, int(decimals))


@tensor_method("clamp", "clip")
def clamp(input, min=None, max=None):  # noqa: A002 (PyTorch's argument names)
    """Clamp into [min, max]; either bound may be omitted, bounds may be Tensors; see Clamp."""
    return _clamp(Clamp, input, min, max)


@tensor_method("clamp_min")
def clamp_min(input, min):  # noqa: A002
    return _clamp(ClampMin, input, min, None)


@tensor_method("clamp_max")
def clamp_max(input, max):  # noqa: A002
    return _clamp(ClampMax, input, None, max)


def _clamp(fn, input, lo, hi):
    _check(input, "clamp")
    if lo is None and hi is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    return fn.apply(input, lo, hi)


clip = clamp


@tensor_method("nan_to_num")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace nan/+inf/-inf; see NanToNum."""
    _check(input, "nan_to_num")
    return NanToNum.apply(input, nan, posinf, neginf)


@tensor_method("xlogy")
def xlogy(input, other):
    """x * log(other), 0 where x == 0; either argument may be a number; see Xlogy."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlogy(): expected at least one Tensor argument")
    return Xlogy.apply(input, other)


Tensor.__pos__ = lambda self: self
