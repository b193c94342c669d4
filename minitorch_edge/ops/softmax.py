"""softmax and log_softmax along one dim, computed stably; every softmax Function lives here.

softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m) with m = max_j x_j: subtracting the max changes
nothing mathematically but keeps exp from overflowing (x = 1e4 is fine). log_softmax is
(x - m) - log(sum exp(x - m)), never log(softmax), which would underflow to log(0).
`SafeSoftmax` (PyTorch's ``_safe_softmax``, used by scaled_dot_product_attention) gives 0
instead of nan on a slice that is all -inf (a fully masked row of attention scores).

Backward uses the saved output y, with Tensor ops so it can be differentiated again:
  softmax:      dx = y * (g - sum(g * y))
  log_softmax:  dx = g - exp(y) * sum(g)
(sums along dim, kept as size 1). float16 is computed in float32 and cast back.
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ._util import norm_dim, tensor_method

__all__ = ["softmax", "log_softmax"]


def _compute_dtype(a):
    """The input's array, in float32 for float16 input."""
    x = a._data
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _shifted(a, dim):
    """x - max(x) along dim, in float32 for float16 input (a 0-d tensor is a 1-element dim)."""
    x = _compute_dtype(a)
    x = x.reshape(1) if x.ndim == 0 else x
    if x.size == 0:
        return x
    return x - np.amax(x, axis=dim, keepdims=True)


class Softmax(Function):
    """y = exp(x - m) / sum(exp(x - m)).  dx = y * (g - sum(g * y, dim))."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dim):
        if ctx.needs_input_grad:
            ctx.dim = dim
        with np.errstate(invalid="ignore", over="ignore"):
            e = np.exp(_shifted(a, dim))
            y = e / np.sum(e, axis=dim, keepdims=True)
        return y.reshape(a._data.shape).astype(a._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        dim = ctx.dim
        return y * (grad - (grad * y).sum(dim, keepdim=True)), None


class SafeSoftmax(Softmax):
    """Softmax where a slice of only -inf gives 0 (not nan).

    y = exp(x - m) / sum(exp(x - m)), m = max(x) (m = 0 for an all -inf slice, so y = 0/0 -> 0).
    dx = y * (g - sum(g * y)), Softmax's backward: zero on such slices, since y is zero there."""

    @staticmethod
    def forward(ctx, a, dim):
        if ctx.needs_input_grad:
            ctx.dim = dim
        x = _compute_dtype(a)
        if x.shape[dim] == 0:
            return np.zeros(a._data.shape, a._data.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            m = np.amax(x, axis=dim, keepdims=True)
            m = np.where(m == -np.inf, 0, m)
            e = np.exp(x - m)
            s = e.sum(dim, keepdims=True)
            y = np.divide(e, s, out=np.zeros_like(e), where=s != 0)
        return y.astype(a._data.dtype, copy=False)


class LogSoftmax(Function):
    """y = (x - m) - log(sum(exp(x - m))).  dx = g - exp(y) * sum(g, dim)."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dim):
        if ctx.needs_input_grad:
            ctx.dim = dim
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            z = _shifted(a, dim)
            y = z - np.log(np.sum(np.exp(z), axis=dim, keepdims=True))
        return y.reshape(a._data.shape).astype(a._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return grad - y.exp() * grad.sum(ctx.dim, keepdim=True), None


def _prepare(op, input, dim, dtype):
    if dim is None:
        raise TypeError(f"{op}(): missing required argument 'dim': pass the dimension to "
                        f"normalize over, e.g. {op}(x, dim=-1) (there is no implicit dim)")
    d = norm_dim(dim, input._data.ndim, op)
    if dtype is not None:
        input = input.to(_dt.to_dtype(dtype))
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f"{op}(): not implemented for {input.dtype.name} input; pass "
                                  f"dtype=minitorch_edge.float32 or convert with .float() first")
    return input, d


@tensor_method("softmax")
def softmax(input, dim=None, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (required). dtype= casts the input first."""
    input, d = _prepare("softmax", input, dim, dtype)
    return Softmax.apply(input, d)


@tensor_method("log_softmax")
def log_softmax(input, dim=None, dtype=None):
    """log(softmax(x)) along `dim` (required), computed without forming softmax."""
    input, d = _prepare("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(input, d)
