"""Running reductions (scans) along one dim: cumsum and cumprod.

y_i combines x_0..x_i. The adjoint of a running sum is a running sum taken from the other end
(`ReverseCumsum`), so cumsum's backward is a reversed cumsum and vice versa: both are Functions,
so gradients of any order flow. cumprod's backward reuses them (see Cumprod for zeros).
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import norm_dim, tensor_method
from .elementwise import where
from .reduce import _acc

__all__ = ["cumsum", "cumprod"]


def _scan_dtype(x, dtype):
    if dtype is not None:
        return x.astype(_dt.to_dtype(dtype).np)
    return x.astype(np.int64) if x.dtype.kind in "biu" else x


class Cumsum(Function):
    """y_i = x_0 + ... + x_i along dim.  dx = reversed cumsum of dy (ReverseCumsum)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, dtype):
        x = _scan_dtype(a._data, dtype)
        if ctx.needs_input_grad:
            ctx.dim = dim
        if x.ndim == 0:
            return x.copy()
        return np.cumsum(_acc(x), axis=dim).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return ReverseCumsum.apply(grad, ctx.dim), None, None


class ReverseCumsum(Function):
    """y_i = x_i + ... + x_(n-1) along dim (the adjoint of cumsum).  dx = cumsum of dy."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim):
        x = a._data
        if ctx.needs_input_grad:
            ctx.dim = dim
        if x.ndim == 0:
            return x.copy()
        return np.flip(np.cumsum(np.flip(_acc(x), dim), axis=dim), dim).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return Cumsum.apply(grad, ctx.dim, None), None


class Cumprod(Function):
    """y_i = x_0 * ... * x_i along dim.  Without zeros dx = revcumsum(dy * y) / x.
    With zeros (k = the first zero of a slice): positions before k use the same formula,
    position k gets revcumsum(dy * z) with z = cumprod of x with x_k replaced by 1, positions
    after k get 0. First derivatives are exact; second derivatives miss the terms through the
    zero elements (the masks are constants)."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dim, dtype):
        x = _scan_dtype(a._data, dtype)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.dim = dim
        if x.ndim == 0:
            return x.copy()
        return np.cumprod(_acc(x), axis=dim).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dim = ctx.dim
        xd = x._data
        zero = xd == 0
        if xd.ndim == 0 or not zero.any():
            return ReverseCumsum.apply(grad * y, dim) / x, None, None
        pos = np.arange(xd.shape[dim]).reshape([-1 if d == dim else 1 for d in range(xd.ndim)])
        has = zero.any(axis=dim, keepdims=True)
        first = np.where(has, np.argmax(zero, axis=dim, keepdims=True), xd.shape[dim])
        before, at = Tensor._make(pos < first), Tensor._make(pos == first)
        xs = where(Tensor._make(zero), 1.0, x)
        z = Cumprod.apply(where(at, 1.0, x), dim, None)
        g = where(before, ReverseCumsum.apply(grad * y, dim) / xs,
                  where(at, ReverseCumsum.apply(grad * z, dim), 0.0))
        return g, None, None


@tensor_method("cumsum")
def cumsum(input, dim, dtype=None):
    """Running sum along `dim` (required). Integers accumulate in int64."""
    return Cumsum.apply(input, norm_dim(dim, input._data.ndim, "cumsum"),
                        None if dtype is None else _dt.to_dtype(dtype))


@tensor_method("cumprod")
def cumprod(input, dim, dtype=None):
    """Running product along `dim` (required). Integers accumulate in int64."""
    return Cumprod.apply(input, norm_dim(dim, input._data.ndim, "cumprod"),
                         None if dtype is None else _dt.to_dtype(dtype))
