"""Running reductions (scans) along one dim: cumsum, cumprod, cummax/cummin, logcumsumexp; and
their inverse, diff.

y_i combines x_0..x_i. The adjoint of a running sum is a running sum taken from the other end
(`ReverseCumsum`), so cumsum's backward is a reversed cumsum and vice versa: both are Functions,
so gradients of any order flow. cumprod's backward reuses them (see Cumprod for zeros).
cummax/cummin find *positions* first and read the values with gather (so their gradient is
gather's), logcumsumexp's backward is again a reversed logcumsumexp, and diff is slices and a
subtraction: every backward here is made of differentiable ops.
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import norm_dim, tensor_method
from .elementwise import where
from .reduce import _acc
from .sorting import Gather, _result_type

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff"]


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


# ---- running max / min -------------------------------------------------------------------------
CummaxResult = _result_type("cummax")
CumminResult = _result_type("cummin")


class Cummax(Gather):
    """Gather at the positions of the running maxima (cummax()'s values):
    dx = scatter_add(zeros, dim, indices, dy)."""


class Cummin(Gather):
    """Gather at the positions of the running minima (cummin()'s values)."""


def _running(input, dim, op, ufunc, fn, result):
    x = input._data
    d = norm_dim(dim, x.ndim, op)
    a = np.atleast_1d(x)
    if a.size == 0:
        idx = np.zeros(a.shape, np.int64)
    else:
        best = ufunc.accumulate(a, axis=d)
        # a new extreme, a tie (the later position wins) or a NaN (which always takes over)
        mark = best == a
        if _dt.is_float_dtype(a.dtype):
            mark |= np.isnan(a)
        pos = np.arange(a.shape[d]).reshape([-1 if k == d else 1 for k in range(a.ndim)])
        idx = np.maximum.accumulate(np.where(mark, pos, -1), axis=d).astype(np.int64)
    idx = Tensor._make(idx.reshape(x.shape))
    return result(fn.apply(input, d, idx), idx)


@tensor_method("cummax")
def cummax(input, dim):
    """(values, indices): values_i = max(x_0..x_i) along dim and the position it came from (on
    ties the later position, as PyTorch; NaN propagates). values are differentiable: each
    gradient goes back to the position in `indices`."""
    return _running(input, dim, "cummax", np.maximum, Cummax, CummaxResult)


@tensor_method("cummin")
def cummin(input, dim):
    """(values, indices): values_i = min(x_0..x_i) along dim (see cummax)."""
    return _running(input, dim, "cummin", np.minimum, Cummin, CumminResult)


# ---- logcumsumexp -------------------------------------------------------------------------------
class Logcumsumexp(Function):
    """y_j = log(exp(x_0) + ... + exp(x_j)) along dim (computed pairwise, np.logaddexp, so
    nothing overflows).
    dx_i = sum_{j >= i} dy_j * dy_j/dx_i = sum_{j >= i} dy_j exp(x_i - y_j). In log space,
    with dy split by sign: dx = exp(x + R(log dy+ - y)) - exp(x + R(log dy- - y)), R the reversed
    logcumsumexp (log 0 stands in as the lowest finite float, so no inf - inf appears): again
    this op, so double backward works."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dim):
        x = a._data
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.dim = dim
        if x.ndim == 0 or x.size == 0:
            return x.copy()
        wide = x.astype(np.float32) if x.dtype.itemsize < 4 else x
        return np.logaddexp.accumulate(wide, axis=dim).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        dim = ctx.dim
        if x._data.ndim == 0:
            return grad, None

        g = grad._data
        lowest = float(_dt.finfo(g.dtype).min)      # finite, so that no inf - inf appears

        def part(mask):
            m = Tensor._make(mask)
            logg = where(m, where(m, grad, 1.0).abs().log(), lowest)
            r = Logcumsumexp.apply((logg - y).flip(dim), dim).flip(dim)
            return (r + x).exp()
        return part(g > 0) - part(g < 0), None


@tensor_method("logcumsumexp")
def logcumsumexp(input, dim):
    """Running log-sum-exp along dim: y_j = log(sum_{i <= j} exp(x_i)); floating point only.
    Gradient: dx_i = sum_{j >= i} dy_j exp(x_i - y_j) (see Logcumsumexp)."""
    if not input.is_floating_point():
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{input.dtype.name}' (convert with .float())")
    return Logcumsumexp.apply(input, norm_dim(dim, input._data.ndim, "logcumsumexp"))


# ---- diff ---------------------------------------------------------------------------------------
@tensor_method("diff")
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward difference along dim: out_i = x_{i+1} - x_i, applied n times (bool: x_{i+1}
    != x_i), after concatenating `prepend` / `append` (tensors of input's shape apart from dim,
    promoted as cat does). Each pass shortens dim by one (to 0 at least). Made of slices and a
    subtraction, so the gradient is theirs: dx_i = dy_{i-1} - dy_i."""
    from .join import cat
    x = input._data
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = norm_dim(dim, x.ndim, "diff")
    for name, t in (("prepend", prepend), ("append", append)):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if t._data.ndim != x.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
        for k in range(x.ndim):
            if k != d and t._data.shape[k] != x.shape[k]:
                raise RuntimeError(f"diff expects the shape of tensor to prepend or append to "
                                   f"match that of input except along the differencing "
                                   f"dimension; input.size({k}) = {x.shape[k]}, but got "
                                   f"tensor.size({k}) = {t._data.shape[k]}")
    if prepend is not None or append is not None:
        input = cat([t for t in (prepend, input, append) if t is not None], d)
    out = input
    for _ in range(n):
        size = out._data.shape[d]
        if size == 0:
            break
        hi, lo = out.narrow(d, 1, size - 1), out.narrow(d, 0, size - 1)
        out = hi != lo if out._data.dtype == np.bool_ else hi - lo
    return out
