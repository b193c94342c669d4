"""Pooling: max and average over sliding windows (max_pool*, avg_pool*) and over a fixed
number of output cells (adaptive_*), 1-D and 2-D; and max_unpool*, which puts pooled maxima
back at the positions max_pool*(return_indices=True) found them (zeros elsewhere).

Sliding windows (kernel k, stride s, padding p, dilation d) give
(L + 2p - d(k-1) - 1) // s + 1 outputs per dim (rounded up with ceil_mode, as long as the last
window starts inside the input or the left padding). Adaptive pooling gives output cell i the
input range floor(i*L/out) .. ceil((i+1)*L/out) - 1.

Gradients (each a Function, so double backward works):
* max pooling: the gradient goes to the element each window picked — a scatter-add by the
  saved indices (MaxPoolScatter); its own backward gathers at those indices.
* average pooling: the gradient is spread evenly over the window (AvgPool2DBackward), which is
  the adjoint of the pooling; so the backward of that is the pooling again.
* adaptive average pooling is a product with two constant averaging matrices (A_h x A_w^T) and
  differentiates through matmul.
* max unpooling is a scatter by the given indices (MaxUnpool2D); its gradient gathers at them.
1-D pooling runs the 2-D kernels on a height-1 image.
"""
from ..._autocast import autocast_op
import operator

import numpy as np

from ... import backend
from ... import dtypes as _dt
from ...autograd.function import Function
from ...backend.numpy_backend import pool_output_size
from ...tensor import Tensor
from ...ops._util import ntuple, shape_str

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "max_unpool1d",
           "max_unpool2d"]


# ---- the Functions ------------------------------------------------------------------------------
class MaxPool2DWithIndices(Function):
    """(y, indices) = max over each window (backend.max_pool2d(x, *params)) or, for
    AdaptiveMaxPool2D, over each adaptive cell (backend.adaptive_max_pool2d(x, *params)).
    dx = MaxPoolScatter(dy)."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, kernel, params):
        y, idx = getattr(backend, kernel)(_dt.compute_array(x._data), *params)  # (bfloat16:
        if ctx.needs_input_grad:                                # in float32, exact anyway)
            ctx.info = (idx, x._data.shape)
        return _dt.result_array(y, x._data.dtype), idx

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        idx, x_shape = ctx.info
        return MaxPoolScatter.apply(grad, idx, x_shape), None, None


class AdaptiveMaxPool2D(MaxPool2DWithIndices):
    """MaxPool2DWithIndices over adaptive cells: the same math, PyTorch's grad_fn name."""


class MaxPoolScatter(Function):
    """gx = zeros(x_shape) with gy[k] added at the flat plane position indices[k]. Linear in gy;
    its adjoint gathers: d/dgy = ggx at the same indices."""
    _builtin = True

    @staticmethod
    def forward(ctx, gy, idx, x_shape):
        if ctx.needs_input_grad:
            ctx.info = (idx, x_shape)
        gx = backend.max_pool2d_backward(_dt.compute_array(gy._data), idx, x_shape)
        return _dt.result_array(gx, gy._data.dtype)

    @staticmethod
    def backward(ctx, ggx):
        idx, (n, c, h, w) = ctx.info
        index = Tensor._make(idx.reshape(n * c, -1))
        return ggx.reshape((n * c, h * w)).gather(1, index).reshape(idx.shape), None, None


class AvgPool2D(Function):
    """y = window sums / divisor (backend.avg_pool2d). dx = AvgPool2DBackward(dy): dy / divisor
    spread over each window."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, params):
        if ctx.needs_input_grad:
            ctx.info = (x._data.shape, params)
        y = backend.avg_pool2d(_dt.compute_array(x._data), *params)  # bfloat16: in float32
        return _dt.result_array(y, x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x_shape, params = ctx.info
        return AvgPool2DBackward.apply(grad, x_shape, params), None


class AvgPool2DBackward(Function):
    """gx = the adjoint of average pooling applied to gy. Linear; its adjoint is the pooling:
    d/dgy = AvgPool2D(ggx)."""
    _builtin = True

    @staticmethod
    def forward(ctx, gy, x_shape, params):
        if ctx.needs_input_grad:
            ctx.params = params
        kernel, stride, padding, _ceil, include_pad, divisor = params
        gx = backend.avg_pool2d_backward(_dt.compute_array(gy._data), x_shape, kernel, stride,
                                         padding, include_pad, divisor)
        return _dt.result_array(gx, gy._data.dtype)

    @staticmethod
    def backward(ctx, ggx):
        return AvgPool2D.apply(ggx, ctx.params), None, None


class MaxUnpool2D(Function):
    """y = zeros(N, C, oH, oW) with y.flat_plane[idx[n, c, k]] = x[n, c, k] (a later duplicate
    index wins). dx[n, c, k] = dy.flat_plane[idx[n, c, k]], a gather (Tensor ops, so it is
    differentiable again)."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, idx, out_hw):
        n, c = x._data.shape[:2]
        if ctx.needs_input_grad:
            ctx.info = (idx, x._data.shape)
        out = np.zeros((n * c, out_hw[0] * out_hw[1]), x._data.dtype)
        rows = np.arange(n * c)[:, None]
        out[rows, idx.reshape(n * c, -1)] = x._data.reshape(n * c, -1)
        return out.reshape((n, c) + tuple(out_hw))

    @staticmethod
    def backward(ctx, grad):
        idx, x_shape = ctx.info
        n, c = x_shape[:2]
        flat = grad.reshape((n * c, -1))
        index = Tensor._make(idx.reshape(n * c, -1))
        return flat.gather(1, index).reshape(x_shape), None, None


# ---- argument checking --------------------------------------------------------------------------
def _check_rank(input, nd, op, empty=None):
    """(batched?) for an input of nd+1 (unbatched) or nd+2 dims; RuntimeError otherwise.
    Empty dims, as PyTorch: only the batch dim may be 0 (empty="window": sliding-window
    pooling; "adaptive": adaptive max pooling, where dim 0 of an unbatched input may be 0 too);
    otherwise only the spatial dims are checked."""
    shape = tuple(input._data.shape)
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) "
                           f"input, got input of shape {shape}")
    batched = len(shape) == nd + 2
    if empty == "window" and 0 in shape[1 if batched else 0:]:
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got:{list(shape)}")
    if empty == "adaptive" and 0 in shape[1:]:
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(shape)} with dimension "
                           f"{shape.index(0, 1)} being empty")
    if any(s == 0 for s in shape[-nd:]):
        raise RuntimeError(f"{op}: expected non-empty spatial dims, got input of shape {shape}")
    return batched


def _window_args(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    """Check sliding-window arguments; return (kernel, stride, padding, dilation) as tuples."""
    kernel = ntuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else ntuple(stride, nd, "stride", op)
    padding = ntuple(padding, nd, "padding", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    for what, vals in (("kernel_size", kernel), ("stride", stride), ("dilation", dilation)):
        if any(v < 1 for v in vals):
            raise RuntimeError(f"{op}: {what} must be positive, got {what}={vals}")
    if any(p < 0 or p > k // 2 for p, k in zip(padding, kernel)):
        raise RuntimeError(f"{op}: padding must be at most half of kernel_size, got "
                           f"padding={padding}, kernel_size={kernel}")
    sizes = input._data.shape[-nd:]
    out = tuple(pool_output_size(n, k, s, p, d, bool(ceil_mode))
                for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation))
    if any(o < 1 for o in out):
        raise RuntimeError(f"{op}: input of shape {tuple(input._data.shape)} is too small for "
                           f"kernel_size={kernel}, stride={stride}, padding={padding}, "
                           f"dilation={dilation}: the output would be {shape_str(out)}")
    return kernel, stride, padding, dilation


def _as_4d(input, batched, nd):
    """The (N, C, H, W) view the 2-D kernels take (unbatched and 1-D inputs gain dims)."""
    x = input if batched else input.unsqueeze(0)
    return x.unsqueeze(-2) if nd == 1 else x


def _from_4d(y, batched, nd):
    if nd == 1:
        y = y.squeeze(-2)
    return y if batched else y.squeeze(0)


def _lift(vals, nd, fill):
    return vals if nd == 2 else (fill,) + vals


# ---- max pooling -------------------------------------------------------------------------------
def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, op):
    batched = _check_rank(input, nd, op, "window")
    k, s, p, d = _window_args(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op)
    params = (_lift(k, nd, 1), _lift(s, nd, 1), _lift(p, nd, 0), _lift(d, nd, 1),
              bool(ceil_mode))
    y, idx = MaxPool2DWithIndices.apply(_as_4d(input, batched, nd), "max_pool2d", params)
    y, idx = _from_4d(y, batched, nd), _from_4d(idx, batched, nd)
    return (y, idx) if return_indices else y


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """y[n, c, r, s] = max_{i, j} x[n, c, r*sh + i*dh - ph, s*sw + j*dw - pw] over input
    (N, C, H, W) or (C, H, W); padding (at most half the kernel) never wins. stride defaults to
    kernel_size. return_indices also gives the flat position h*W + w of each maximum (int64,
    what max_unpool2d takes). Gradient: dy goes to the chosen element (overlaps add up)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     2, "max_pool2d")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling of (N, C, L) or (C, L); as max_pool2d (indices are positions along L)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     1, "max_pool1d")


# ---- average pooling ---------------------------------------------------------------------------
def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, nd, op):
    batched = _check_rank(input, nd, op, "window")
    if not _dt.is_float_dtype(input._data.dtype):
        raise RuntimeError(f"{op}: expected a floating-point input, got {input.dtype}")
    k, s, p, _ = _window_args(input, kernel_size, stride, padding, 1, ceil_mode, nd, op)
    if divisor_override is not None:
        divisor_override = operator.index(divisor_override)
        if divisor_override == 0:
            raise RuntimeError(f"{op}: divisor_override must not be zero")
    params = (_lift(k, nd, 1), _lift(s, nd, 1), _lift(p, nd, 0), bool(ceil_mode),
              bool(count_include_pad), divisor_override)
    return _from_4d(AvgPool2D.apply(_as_4d(input, batched, nd), params), batched, nd)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """y = (sum of each kh x kw window of the zero-padded input) / divisor, where divisor is
    divisor_override if given, else the window size clipped to the padded input
    (count_include_pad=True) or the number of real input elements it covers. Gradient: dy /
    divisor spread over each window."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2, "avg_pool2d")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling of (N, C, L) or (C, L); as avg_pool2d."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None,
                     1, "avg_pool1d")


# ---- adaptive pooling -------------------------------------------------------------------------
def _out_sizes(output_size, sizes, nd, op):
    """output_size (int, tuple; None entries keep the input size) -> tuple of nd ints."""
    vals = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    if len(vals) != nd:
        raise RuntimeError(f"{op}: output_size must be an int or a tuple of {nd} ints, got "
                           f"{output_size!r}")
    out = tuple(n if v is None else operator.index(v) for v, n in zip(vals, sizes))
    if any(o < 1 for o in out):
        raise RuntimeError(f"{op}: output_size must be positive, got {output_size!r}")
    return out


def _averaging_matrix(size, out, dtype):
    """A (out, size) matrix whose row i averages input range floor(i*size/out) ..
    ceil((i+1)*size/out) - 1."""
    i = np.arange(out)
    start, end = (i * size) // out, -((-(i + 1) * size) // out)
    cols = np.arange(size)
    inside = (cols >= start[:, None]) & (cols < end[:, None])
    return Tensor._make((inside / (end - start)[:, None]).astype(dtype))


def _adaptive_avg(input, output_size, nd, op):
    batched = _check_rank(input, nd, op)
    if not _dt.is_float_dtype(input._data.dtype):
        raise RuntimeError(f"{op}: expected a floating-point input, got {input.dtype}")
    sizes = tuple(input._data.shape[-nd:])
    out = _out_sizes(output_size, sizes, nd, op)
    x = _as_4d(input, batched, nd)
    h, w = x._data.shape[2:]
    oh, ow = _lift(out, nd, 1)
    if h % oh == 0 and w % ow == 0:     # equal cells: a reshape and a mean
        n, c = x._data.shape[:2]
        y = x.reshape((n, c, oh, h // oh, ow, w // ow)).mean((3, 5))
    else:                               # y = A_h @ x @ A_w^T
        dt = x._data.dtype
        y = x
        if w != ow:
            y = y.matmul(_averaging_matrix(w, ow, dt).transpose(0, 1))
        if h != oh:
            y = _averaging_matrix(h, oh, dt).matmul(y)
    return _from_4d(y, batched, nd)


def adaptive_avg_pool2d(input, output_size):
    """Average of each of output_size = (oh, ow) cells of the input (N, C, H, W) or (C, H, W):
    cell (r, s) covers rows floor(r*H/oh) .. ceil((r+1)*H/oh) - 1 and the matching columns
    (cells overlap when H is not a multiple of oh). A None size keeps the input's."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool1d(input, output_size):
    """Adaptive average pooling of (N, C, L) or (C, L) to output_size positions."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def _adaptive_max(input, output_size, return_indices, nd, op):
    batched = _check_rank(input, nd, op, "adaptive")
    out = _out_sizes(output_size, tuple(input._data.shape[-nd:]), nd, op)
    y, idx = AdaptiveMaxPool2D.apply(_as_4d(input, batched, nd), "adaptive_max_pool2d",
                               _lift(out, nd, 1))
    y, idx = _from_4d(y, batched, nd), _from_4d(idx, batched, nd)
    return (y, idx) if return_indices else y


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum of each adaptive cell (see adaptive_avg_pool2d); return_indices also gives the
    flat position h*W + w of each maximum. Gradient: dy goes to the chosen element."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive max pooling of (N, C, L) or (C, L) to output_size positions."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


# ---- max unpooling ----------------------------------------------------------------------------
def _unpool_size(input, kernel, stride, padding, output_size, nd, op):
    """The spatial output size: (in - 1) * stride - 2 * padding + kernel per dim, or
    output_size (nd sizes, or nd + 2 with batch and channel), which must lie strictly within
    one stride of that."""
    sizes = input._data.shape[-nd:]
    default = [(n - 1) * s - 2 * p + k for n, k, s, p in zip(sizes, kernel, stride, padding)]
    if output_size is None:
        return tuple(default)
    out = [operator.index(v) for v in output_size]
    if len(out) == nd + 2:
        out = out[2:]
    if len(out) != nd:
        raise ValueError(f"{op}: output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(out)}'")
    for d, (o, dflt, s) in enumerate(zip(out, default, stride)):
        if not dflt - s < o < dflt + s:
            raise ValueError(f"{op}: invalid output_size \"{tuple(output_size)}\" (dim {d} must "
                             f"be between {dflt - s} and {dflt + s})")
    return tuple(out)


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, op):
    if not isinstance(input, Tensor) or not isinstance(indices, Tensor):
        raise TypeError(f"{op}: input and indices must be Tensors")
    x_shape = tuple(input._data.shape)
    if len(x_shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Input to max_unpooling{nd}d should be a {nd + 1}d or "
                           f"{nd + 2}d Tensor, but got a tensor with {len(x_shape)} dimensions "
                           f"(shape {x_shape})")
    if not _dt.is_float_dtype(input._data.dtype):
        raise NotImplementedError(f"{op}: not implemented for {input.dtype.name} input; "
                                  f"convert it with .float()")
    if indices._data.dtype != np.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64 but got: "
                           f"{indices.dtype.name} (pass the indices max_pool{nd}d("
                           f"return_indices=True) gives)")
    if tuple(indices._data.shape) != x_shape:
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input "
                           f"tensor ({list(x_shape)}) but got indices tensor with shape: "
                           f"{list(indices._data.shape)}")
    kernel = ntuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else ntuple(stride, nd, "stride", op)
    padding = ntuple(padding, nd, "padding", op)
    out = _unpool_size(input, kernel, stride, padding, output_size, nd, op)
    idx = indices._data
    plane = int(np.prod(out))
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= plane):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise RuntimeError(f"{op}: Found an invalid max index: {bad} (output volumes are of "
                           f"size {'x'.join(map(str, out))})")
    batched = len(x_shape) == nd + 2
    x, i = _as_4d(input, batched, nd), _as_4d(indices, batched, nd)
    y = MaxUnpool2D.apply(x, i._data, _lift(out, nd, 1))
    return _from_4d(y, batched, nd)


@autocast_op("max_unpool2d")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: y = zeros of shape (N, C, oH, oW) (or (C, oH, oW))
    with y.flat[indices[k]] = input[k] per plane, where `indices` are the flat positions
    h * oW + w that max_pool2d(return_indices=True) gives. oH = (H - 1) * stride - 2 * padding +
    kernel_size unless output_size says otherwise (within one stride of that). Gradient:
    dinput = dy read at the indices."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d for (N, C, L) or (C, L) input: y = zeros with
    y[indices[k]] = input[k] along L; see max_unpool2d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")
