"""softmax and log_softmax along one dim, computed stably; every softmax Function lives here.

softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m) with m = max_j x_j: subtracting the max changes
nothing mathematically but keeps exp from overflowing (x = 1e4 is fine). log_softmax is
(x - m) - log(sum exp(x - m)), never log(softmax), which would underflow to log(0).
`SafeSoftmax` (PyTorch's ``_safe_softmax``, used by scaled_dot_product_attention) gives 0
instead of nan on a slice that is all -inf (a fully masked row of attention scores).

The arrays are computed by the backend kernels ``backend.softmax`` / ``softmax_backward``
(numpy_backend.py has the readable version; along the last dim of float32 input libmte does
each row in one fused pass). Backward uses the saved output y:
  softmax:      dx = y * (g - sum(g * y))
  log_softmax:  dx = g - exp(y) * sum(g)
(sums along dim, kept as size 1); under create_graph it is written with Tensor ops, so it can
be differentiated again. float16 and bfloat16 are computed in float32 and cast back.
"""
from .. import backend
from .. import dtypes as _dt
from ..autograd.engine import mark_fresh
from ..autograd.function import Function
from ..autograd.grad_mode import _State
from ..tensor import Tensor
from ._util import norm_dim, tensor_method

__all__ = ["softmax", "log_softmax"]


def _forward(ctx, a, dim, log, safe):
    if ctx.needs_input_grad:
        ctx.dim = dim
    x = a._data                             # bfloat16: computed in float32, rounded once
    y = backend.softmax(_dt.compute_array(x), dim, log, safe).reshape(x.shape)
    return _dt.result_array(y, x.dtype)


def _backward(ctx, grad, log):
    """dx from the saved output: the backend kernel on the arrays, or Tensor ops when the
    backward is itself recorded (create_graph=True)."""
    y, = ctx.saved_tensors
    dim = ctx.dim
    if not _State.enabled:
        yd, gd = _dt.compute_array(y._data), _dt.compute_array(grad._data)
        if yd.ndim == 0:
            yd, gd = yd.reshape(1), gd.reshape(1)
        dx = backend.softmax_backward(yd, gd, dim, log).reshape(y._data.shape)
        return Tensor._make(mark_fresh(dx.astype(y._data.dtype, copy=False))), None
    if log:
        return grad - y.exp() * grad.sum(dim, keepdim=True), None
    return y * (grad - (grad * y).sum(dim, keepdim=True)), None


class Softmax(Function):
    """y = exp(x - m) / sum(exp(x - m)).  dx = y * (g - sum(g * y, dim))."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dim):
        return _forward(ctx, a, dim, False, False)

    @staticmethod
    def backward(ctx, grad):
        return _backward(ctx, grad, False)


class SafeSoftmax(Softmax):
    """Softmax where a slice of only -inf gives 0 (not nan).

    y = exp(x - m) / sum(exp(x - m)), m = max(x) (m = 0 for an all -inf slice, so y = 0/0 -> 0).
    dx = y * (g - sum(g * y)), Softmax's backward: zero on such slices, since y is zero there."""

    @staticmethod
    def forward(ctx, a, dim):
        return _forward(ctx, a, dim, False, True)


class LogSoftmax(Function):
    """y = (x - m) - log(sum(exp(x - m))).  dx = g - exp(y) * sum(g, dim)."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dim):
        return _forward(ctx, a, dim, True, False)

    @staticmethod
    def backward(ctx, grad):
        return _backward(ctx, grad, True)


def _prepare(op, input, dim, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}; wrap it with minitorch_edge.tensor(...)")
    if dim is None:
        raise TypeError(f"{op}(): missing required argument 'dim': pass the dimension to "
                        f"normalize over, e.g. {op}(x, dim=-1) (there is no implicit dim)")
    d = norm_dim(dim, input._data.ndim, op)
    if dtype is not None:
        input = input.to(_dt.to_dtype(dtype))
    if not _dt.is_float_dtype(input._data.dtype):
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
