"""Reductions: sum, mean, prod, var/std, logsumexp, norm, all/any, ... over one dim, a tuple of
dims, or everything (dim=None).

Backward broadcasts the incoming gradient back over the reduced dims: with keepdim=False the
reduced dims are first re-inserted as size 1, then the gradient is expanded to the input shape
(`_grad_back`). Every backward below is written with Tensor ops, so it can be differentiated
again; constant masks (where the zeros are, which element was the largest) are numpy arrays
wrapped with `Tensor._make`.

Dtypes follow PyTorch: sums and products of integers/bools give int64; float16 and bfloat16 are
accumulated in float32 and the result cast back; mean/var/std/norm refuse integer input (pass
dtype= or convert with .float()). As in PyTorch, ``dim=()`` (an empty tuple) means "every dim", except
for all/any, where it reduces nothing.
Max/min/argmax/median live in minmax.py, cumsum/cumprod in cumulative.py, softmax and
log_softmax in softmax.py.
"""
from .._autocast import autocast_op
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import norm_dims, tensor_method
from .elementwise import where

__all__ = ["sum", "mean", "nansum", "nanmean", "prod", "var", "std", "var_mean", "std_mean",
           "logsumexp", "norm", "all", "any", "count_nonzero"]


# ---- helpers shared by the reductions -------------------------------------------------------
def _grad_back(grad, in_shape, dims, keepdim):
    """Re-insert reduced dims (size 1) and expand to the input's shape."""
    if not keepdim and dims:
        shape = list(in_shape)
        for d in dims:
            shape[d] = 1
        grad = grad.reshape(tuple(shape))
    return grad.expand(in_shape)


def _dims(dim, ndim, op):
    """dim=None or () -> every dim (PyTorch's rule for sum/mean/var/...); else sorted dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return norm_dims(dim, ndim, op)


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _acc(x):
    """The array to accumulate in: float16 and bfloat16 are summed in float32 (as PyTorch does
    on CPU)."""
    return x.astype(np.float32) if x.dtype == np.float16 else _dt.compute_array(x)


def _const(array, like):
    """A constant (no grad) Tensor with `like`'s float dtype, for masks and weights."""
    return Tensor._make(np.asarray(array, dtype=like._data.dtype))


def _require_float(input, op, what="Input dtype must be either a floating point dtype"):
    if not _dt.is_float_dtype(input._data.dtype):
        raise RuntimeError(f"{op}(): could not infer output dtype. {what}. Got: {input.dtype.name}"
                           f". Pass dtype=minitorch_edge.float32 or convert with .float() first.")


def _cast(input, dtype):
    """Apply a reduction's dtype= argument (differentiable cast) before reducing."""
    return input if dtype is None else input.to(_dt.to_dtype(dtype))


# ---- sums and means --------------------------------------------------------------------------
class Sum(Function):
    """y = sum of x over dims.  dy/dx = 1 broadcast over the reduced dims.
    Integer and bool inputs sum in int64 (as PyTorch)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dims, keepdim, dtype):
        x = a._data
        if dtype is not None:
            x = x.astype(dtype.np)
        elif x.dtype.kind in "biu":
            x = x.astype(np.int64)
        if ctx.needs_input_grad:
            ctx.info = (x.shape, dims, keepdim)
        if x.dtype.itemsize == 2 and _dt.is_float_dtype(x.dtype):   # float16, bfloat16
            out = np.add.reduce(x.astype(np.float32), axis=dims, keepdims=keepdim)
            return np.asarray(out).astype(x.dtype)
        # (inf + -inf gives nan with numpy's RuntimeWarning; an errstate here would cost
        # more than the whole sum of a small tensor)
        out = np.add.reduce(x, axis=dims, keepdims=keepdim)
        if dtype is not None and out.dtype != x.dtype:   # numpy widened a small int dtype= sum
            return np.asarray(out).astype(x.dtype)        # (wraps, as PyTorch's int8 sum does)
        return out if out.__class__ is np.ndarray else np.asarray(out)

    @staticmethod
    def backward(ctx, grad):
        shape, dims, keepdim = ctx.info
        return _grad_back(grad, shape, dims, keepdim), None, None, None


@tensor_method("sum")
def sum(input, dim=None, keepdim=False, dtype=None):
    """Sum over `dim` (None or () -> all). dtype= casts the input first."""
    dims = _dims(dim, input._data.ndim, "sum")
    return Sum.apply(input, dims, keepdim, None if dtype is None else _dt.to_dtype(dtype))


class Nansum(Function):
    """y = sum of the non-NaN x.  dy/dx = 1 where x is not NaN, else 0."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        x = a._data
        x = x.astype(np.int64) if x.dtype.kind in "biu" else x
        if ctx.needs_input_grad:
            ctx.info = (x.shape, dims, keepdim)
            ctx.keep = ~np.isnan(x)
        return np.asarray(np.nansum(_acc(x), axis=dims, keepdims=keepdim)).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        shape, dims, keepdim = ctx.info
        return _grad_back(grad, shape, dims, keepdim) * _const(ctx.keep, grad), None, None


@tensor_method("nansum")
def nansum(input, dim=None, keepdim=False, dtype=None):
    """sum() that treats NaN as zero."""
    input = _cast(input, dtype)
    out = Nansum.apply(input, _dims(dim, input._data.ndim, "nansum"), keepdim)
    return out if dtype is None or out.dtype is input.dtype else out.to(input.dtype)


class Mean(Function):
    """y = sum(x) / N over dims (N = number of reduced elements; N = 0 gives NaN).
    dy/dx = 1/N broadcast over the reduced dims."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        x = a._data
        n = _count(x.shape, dims)
        if ctx.needs_input_grad:
            ctx.info = (x.shape, dims, keepdim, n)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.sum(_acc(x), axis=dims, keepdims=keepdim) / (n if n else np.nan)
        return np.asarray(out).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        shape, dims, keepdim, n = ctx.info
        return _grad_back(grad, shape, dims, keepdim) * (1.0 / n if n else 0.0), None, None


@tensor_method("mean")
def mean(input, dim=None, keepdim=False, dtype=None):
    """Arithmetic mean over `dim`. Floating input only, as PyTorch (or pass dtype=)."""
    dims = _dims(dim, input._data.ndim, "mean")
    input = _cast(input, dtype)
    _require_float(input, "mean", "Input dtype must be either a floating point or complex dtype")
    return Mean.apply(input, dims, keepdim)


@tensor_method("nanmean")
def nanmean(input, dim=None, keepdim=False, dtype=None):
    """Mean of the non-NaN elements: nansum(x) / count(not NaN); an all-NaN slice gives NaN."""
    input = _cast(input, dtype)
    if not _dt.is_float_dtype(input._data.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{input.dtype.name}; convert with .float() first")
    dims = _dims(dim, input._data.ndim, "nanmean")
    count = np.sum(~np.isnan(input._data), axis=dims, keepdims=keepdim)
    with np.errstate(invalid="ignore", divide="ignore"):
        return Nansum.apply(input, dims, keepdim) / _const(count, input)


# ---- products --------------------------------------------------------------------------------
class Prod(Function):
    """y = product of x over dims.  dy/dx_i = product of the other elements of its slice.
    Without zeros that is y / x_i. With one zero in a slice only the zero's position gets a
    gradient (the product of the rest); with two or more zeros the whole slice gets 0.
    Second derivatives are exact when the input has no zeros; with zeros they miss the terms
    through the zero elements (the masks are constants)."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        x = a._data
        x = x.astype(np.int64) if x.dtype.kind in "biu" else x
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.info = (x.shape, dims, keepdim)
        return np.asarray(np.prod(_acc(x), axis=dims, keepdims=keepdim)).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        shape, dims, keepdim = ctx.info
        g = _grad_back(grad, shape, dims, keepdim)
        zero = x._data == 0
        if not zero.any():
            return g * _grad_back(y, shape, dims, keepdim) / x, None, None
        n_zero = np.broadcast_to(zero.sum(axis=dims, keepdims=True), shape)
        xs = where(Tensor._make(zero), 1.0, x)               # zeros replaced by 1
        others = Prod.apply(xs, dims, True).expand(shape)    # product of the non-zeros
        w = where(Tensor._make(n_zero == 0), others / xs,
                  where(Tensor._make(zero & (n_zero == 1)), others, 0.0))
        return g * w, None, None


@tensor_method("prod")
@autocast_op("prod")
def prod(input, dim=None, keepdim=False, dtype=None):
    """Product over `dim` (None -> all). Unlike PyTorch, a tuple of dims is accepted too."""
    dims = _dims(dim, input._data.ndim, "prod")
    input = _cast(input, dtype)
    out = Prod.apply(input, dims, keepdim)
    return out if dtype is None or out.dtype is input.dtype else out.to(input.dtype)


# ---- variance and standard deviation ----------------------------------------------------------
def _var_args(op, input, dim, unbiased, correction):
    """PyTorch's var/std signatures: var(x, unbiased), var(x, dim, unbiased, keepdim),
    var(x, dim, correction=c). Returns (dims, correction)."""
    if isinstance(dim, bool):          # x.var(True): the old var(input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): pass either unbiased= or correction=, not both")
    if not _dt.is_float_dtype(input._data.dtype):
        raise RuntimeError(f"{op}(): std and var only support floating point dtypes, got "
                           f"{input.dtype.name}; convert with .float() first")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return _dims(dim, input._data.ndim, op), correction


def _dof(n, correction):
    """Degrees of freedom max(N - correction, 0); 0 makes var inf (or NaN for 0/0) as torch."""
    return max(n - correction, 0)


class Var(Function):
    """var = sum((x - mean)^2) / max(N - correction, 0).
    dvar/dx = 2 (x - mean) / (N - correction)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dims, correction, keepdim):
        return np.asarray(_var(ctx, a, dims, correction, keepdim)).astype(a._data.dtype,
                                                                          copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return _var_backward(grad, x, *ctx.info), None, None, None


def _var(ctx, a, dims, correction, keepdim):
    """Var's value in the accumulation dtype (float32 for float16/bfloat16 input)."""
    x = _acc(a._data)
    n = _count(x.shape, dims)
    if ctx.needs_input_grad:
        ctx.save_for_backward(a)
        ctx.info = (x.shape, dims, keepdim, _dof(n, correction))
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.sum(x, axis=dims, keepdims=True) / (n if n else np.nan)
        d = x - m
        return np.sum(d * d, axis=dims, keepdims=keepdim) / _dof(n, correction)


def _var_backward(grad, x, shape, dims, keepdim, dof):
    g = _grad_back(grad, shape, dims, keepdim)
    scale = 2.0 / dof if dof else float("inf")
    return g * (x - mean(x, dims, keepdim=True)) * scale


class Std(Function):
    """std = sqrt(var).  dstd/dx = dvar/dx / (2 std), taken as 0 where std == 0 (as PyTorch)."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dims, correction, keepdim):
        out = np.sqrt(_var(ctx, a, dims, correction, keepdim))   # rounded once, after the sqrt
        return np.asarray(out).astype(a._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        zero = Tensor._make(y._data == 0)
        gvar = where(zero, 0.0, grad / (2 * where(zero, 1.0, y)))
        return _var_backward(gvar, x, *ctx.info), None, None, None


@tensor_method("var")
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over `dim` with Bessel's correction (correction=1) by default."""
    dims, correction = _var_args("var", input, dim, unbiased, correction)
    return Var.apply(input, dims, correction, keepdim)


@tensor_method("std")
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: sqrt(var(...)) with the same arguments."""
    dims, correction = _var_args("std", input, dim, unbiased, correction)
    return Std.apply(input, dims, correction, keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over the same dims."""
    dims, correction = _var_args("var_mean", input, dim, unbiased, correction)
    return Var.apply(input, dims, correction, keepdim), Mean.apply(input, dims, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over the same dims."""
    dims, correction = _var_args("std_mean", input, dim, unbiased, correction)
    return Std.apply(input, dims, correction, keepdim), Mean.apply(input, dims, keepdim)


# ---- logsumexp ---------------------------------------------------------------------------------
class Logsumexp(Function):
    """y = m + log(sum(exp(x - m))) with m = max(x) (replaced by 0 where it is +-inf, so all
    -inf gives -inf and any +inf gives inf).  dy/dx = exp(x - y) (softmax of x)."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        x = _acc(a._data)
        if x.dtype.kind != "f":
            x = x.astype(_dt.get_default_dtype().np)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.info = (x.shape, dims, keepdim)
        out_dtype = a._data.dtype if _dt.is_float_dtype(a._data.dtype) else x.dtype
        if _count(x.shape, dims) == 0:        # empty sum: log(0) = -inf
            out = np.full(np.sum(x, axis=dims, keepdims=keepdim).shape, -np.inf, out_dtype)
            return out
        m = np.amax(x, axis=dims, keepdims=True)
        m = np.where(np.isinf(m), 0, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True)) + m
        if not keepdim:
            s = np.squeeze(s, axis=dims)
        return np.asarray(s).astype(out_dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        shape, dims, keepdim = ctx.info
        g = _grad_back(grad, shape, dims, keepdim)
        return g * (x - _grad_back(y, shape, dims, keepdim)).exp(), None, None


@tensor_method("logsumexp")
def logsumexp(input, dim=None, keepdim=False):
    """log(sum(exp(x))) over `dim`, computed stably. `dim` is required (int or tuple), as in
    PyTorch; integer input gives the default float dtype."""
    if dim is None:
        raise TypeError("logsumexp(): missing required argument 'dim' (an int or a tuple of "
                        "ints); pass dim=tuple(range(x.ndim)) to reduce over everything")
    return Logsumexp.apply(input, _dims(dim, input._data.ndim, "logsumexp"), keepdim)


# ---- norms -----------------------------------------------------------------------------------
class LinalgVectorNorm(Function):
    """Vector p-norm over dims (norm(), which PyTorch computes as linalg.vector_norm):
    (sum |x|^p)^(1/p); p=inf -> max|x|, p=-inf -> min|x|, p=0 -> number of non-zeros.
    Gradients (PyTorch's conventions, 0 where the norm is 0):
      p=2: x / y;  p=1: sign(x);  p=+-inf: sign(x) split evenly among the |x| equal to y;
      p>=2: x |x|^(p-2) / y^(p-1);  1<=p<2: sign(x) |x|^(p-1) / y^(p-1);
      p<1: sign(x) |x|^(p-1) y^(1-p) (0 where x == 0);  p=0: 0."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, p, dims, keepdim):
        x = a._data
        ax = np.abs(_acc(x))
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.info = (x.shape, p, dims, keepdim)
        kw = dict(axis=dims, keepdims=keepdim)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p == 2:
                out = np.sqrt(np.sum(ax * ax, **kw))
            elif p == 1:
                out = np.sum(ax, **kw)
            elif p == np.inf:
                out = np.amax(ax, **kw)
            elif p == -np.inf:
                out = np.amin(ax, **kw)
            elif p == 0:
                out = np.sum(ax != 0, **kw)
            else:
                out = np.sum(ax ** p, **kw) ** (1.0 / p)
        return np.asarray(out).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        shape, p, dims, keepdim = ctx.info
        g = _grad_back(grad, shape, dims, keepdim)
        y = _grad_back(y, shape, dims, keepdim)
        xd = x._data
        sgn = _const(np.sign(xd), x)
        if p == 0:
            return g * 0.0, None, None, None
        if p == 1:
            return g * sgn, None, None, None
        if p in (np.inf, -np.inf):
            hit = np.abs(xd) == y._data
            count = np.broadcast_to(hit.sum(axis=dims, keepdims=True), shape)
            with np.errstate(invalid="ignore", divide="ignore"):
                return g * sgn * _const(hit / count, x), None, None, None
        y_zero = Tensor._make(y._data == 0)
        y_safe = where(y_zero, 1.0, y)
        if p == 2:
            return where(y_zero, 0.0, g * x / y_safe), None, None, None
        x_zero = Tensor._make(xd == 0)
        ax_safe = where(x_zero, 1.0, x * sgn)                    # |x|, with 1 at the zeros
        if p < 1:
            scaled = sgn * where(x_zero, 0.0, ax_safe ** (p - 1))
            return scaled * g * y ** (1 - p), None, None, None
        if p < 2:
            scaled = sgn * where(x_zero, 0.0, ax_safe ** (p - 1))
        else:
            scaled = x * where(x_zero, 0.0, ax_safe ** (p - 2))
        return scaled * where(y_zero, 0.0, g / y_safe ** (p - 1)), None, None, None


@tensor_method("norm")
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over `dim` (None -> all). p: a number (2, 1, inf, -inf, 0, any other),
    or 'fro' (the 2-norm of the elements over `dim`). 'nuc' is not supported."""
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError("norm(): p='nuc' (nuclear norm) is not supported; it is the "
                                      "sum of the singular values of the matrix")
        if p != "fro":
            raise ValueError(f"norm(): unknown norm type {p!r}; use a number, 'fro' or inf")
        p = 2
    dims = _dims(dim, input._data.ndim, "norm")
    input = _cast(input, dtype)
    if not _dt.is_float_dtype(input._data.dtype):
        raise RuntimeError(f"norm(): expected a floating point tensor as input, got "
                           f"{input.dtype.name}; pass dtype=minitorch_edge.float32 or convert "
                           f"with .float() first")
    p = float(p)
    if p in (np.inf, -np.inf) and _count(input._data.shape, dims) == 0:
        raise RuntimeError(f"norm(): cannot compute the {p} norm over an empty dimension "
                           f"because the operation does not have an identity")
    return LinalgVectorNorm.apply(input, p, dims, keepdim)


# ---- logical reductions (not differentiable) -------------------------------------------------
def _logical(np_fn, op, input, dim, keepdim):
    x = input._data
    dims = tuple(range(x.ndim)) if dim is None else norm_dims(dim, x.ndim, op)
    out = np.asarray(np_fn(x, axis=dims, keepdims=keepdim))
    return Tensor._make(out.astype(np.uint8) if x.dtype == np.uint8 else out)


@tensor_method("all")
def all(input, dim=None, keepdim=False):
    """True where every element over `dim` is non-zero (uint8 input gives uint8, as PyTorch)."""
    return _logical(np.all, "all", input, dim, keepdim)


@tensor_method("any")
def any(input, dim=None, keepdim=False):
    """True where some element over `dim` is non-zero (uint8 input gives uint8, as PyTorch)."""
    return _logical(np.any, "any", input, dim, keepdim)


@tensor_method("count_nonzero")
def count_nonzero(input, dim=None):
    """Number of non-zero elements over `dim` (int64)."""
    dims = _dims(dim, input._data.ndim, "count_nonzero")
    return Tensor._make(np.asarray(np.count_nonzero(input._data, axis=dims)).astype(np.int64))
