"""Normalization: subtract a mean, divide by a standard deviation, then scale and shift.

    y = (x - mean) / sqrt(var + eps) * weight + bias

The functions differ only in which elements share one mean/var:

    batch_norm     per channel, over the batch and all positions   dims (0, 2, 3, ...)
    instance_norm  per sample and channel, over positions           dims (2, 3, ...)
    layer_norm     per sample, over the last len(normalized_shape) dims
    group_norm     per sample and group of channels (the input viewed as (N, G, C/G, rest))

All four run through one fused Function, `Normalize` (forward in numpy, one backward formula),
under PyTorch's grad_fn name for each: `NativeBatchNorm` (batch_norm and instance_norm, which
PyTorch computes as a batch norm), `NativeLayerNorm`, `NativeGroupNorm`. layer_norm's
statistics are per row of the trailing dims, so `NativeLayerNorm` runs the backend kernels
``backend.layer_norm`` / ``layer_norm_backward`` on the input viewed as (rows, n): one fused
pass per row in libmte for float32, the numpy twin otherwise. ``rms_norm``, ``normalize``
and ``local_response_norm`` are composed of Tensor ops.

batch_norm and instance_norm in training also update the running statistics in place
(running = (1 - momentum) * running + momentum * batch value, with the *unbiased* batch variance,
as PyTorch), after the input has been validated; in evaluation they normalize with the running
statistics instead. bfloat16 is normalized in float32 and each result rounded back once.
"""
import math

import numpy as np

from ... import backend
from ... import dtypes as _dt
from ...autograd.engine import mark_fresh
from ...autograd.function import Function
from ...autograd.grad_mode import _State
from ...ops._util import sum_to
from ...backend.prepared import wrote as _wrote
from ...ops.join import cat
from ...tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "normalize",
           "local_response_norm"]


_c = _dt.compute_array   # the array to compute on: bfloat16 widened to float32


def _sum_to_np(a, shape):
    """numpy twin of ops._util.sum_to: sum `a` down to `shape` (undo broadcasting)."""
    if a.shape == tuple(shape):
        return a
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and a.shape[lead + i] != 1)
    return (a.sum(axis=axes, keepdims=True) if axes else a).reshape(shape)


class Normalize(Function):
    """y = xhat * w + b,  xhat = (x - mean) * invstd,  invstd = 1 / sqrt(var + eps),
    mean and var (biased) taken over `dims` of x (kept as size-1 dims); w and b (optional)
    broadcast against x.

    Backward, with n the number of elements behind one statistic and gw = dy * w:
        dx = invstd * (gw - mean(gw) - xhat * mean(gw * xhat))      (means over `dims`)
        dw = dy * xhat summed to w's shape,   db = dy summed to b's shape.
    The plain backward runs in numpy from the saved x, mean and invstd. Under create_graph
    (grad mode on during backward) the same formula is written in Tensor ops, recomputing
    mean, var and xhat from x, so second derivatives are exact.

    `stats_out`, when a list, receives the numpy (mean, biased var) for running statistics."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, weight, bias, dims, eps, stats_out):
        xd = _c(x._data)                   # bfloat16: in float32, rounded once at the end
        mean = xd.mean(axis=dims, keepdims=True)
        xc = xd - mean
        var = np.mean(xc * xc, axis=dims, keepdims=True)
        invstd = 1 / np.sqrt(var + xd.dtype.type(eps))
        y = xc
        y *= invstd                       # xc is ours: scale and shift it in place
        if weight is not None:
            w = _c(weight._data)
            y = np.multiply(y, w, out=y) if w.dtype == y.dtype else y * w
        if bias is not None:
            b = _c(bias._data)
            y = np.add(y, b, out=y) if b.dtype == y.dtype else y + b
        if stats_out is not None:
            stats_out.extend((mean, var))
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, weight, bias)
            ctx.mean, ctx.invstd, ctx.dims, ctx.eps = mean, invstd, dims, eps
        return _as_input_dtype(y, x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, w, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        if _State.enabled:                 # create_graph=True: record the backward
            return Normalize._backward_graph(ctx, grad, x, w, b)
        dims, invstd = ctx.dims, ctx.invstd
        g = _c(grad._data)                 # bfloat16: in float32, each result rounded once
        wd = None if w is None else _c(w._data)
        xhat = _c(x._data) - ctx.mean
        xhat *= invstd
        dx = dw = db = None
        gx = g * xhat if (w is not None and need[1]) or (need[0] and w is None) else None
        if w is not None and need[1]:
            dw = Tensor._make(_dt.result_array(_sum_to_np(gx, w._data.shape), w._data.dtype))
        if b is not None and need[2]:
            db = Tensor._make(_dt.result_array(_sum_to_np(g, b._data.shape), b._data.dtype))
        if need[0]:
            # dx = gw*invstd - xhat * (s2*invstd/n) - s1*invstd/n, with few full-size passes
            gw = g * wd if w is not None else g
            n = xhat.size // invstd.size if invstd.size else 1
            s1 = gw.sum(axis=dims, keepdims=True)
            s2 = (gx * wd if w is not None else gx).sum(axis=dims, keepdims=True) \
                if gx is not None else (gw * xhat).sum(axis=dims, keepdims=True)
            out = gw * invstd
            xhat *= s2 * (invstd / n)
            out -= xhat
            out -= s1 * (invstd / n)
            dx = Tensor._make(out.astype(grad._data.dtype, copy=False))
        return dx, dw, db, None, None, None

    @staticmethod
    def _backward_graph(ctx, grad, x, w, b):
        """The backward in Tensor ops (recorded when create_graph=True)."""
        dims, need = ctx.dims, ctx.needs_input_grad
        mean = x.mean(dims, keepdim=True)
        xc = x - mean
        invstd = ((xc * xc).mean(dims, keepdim=True) + ctx.eps).rsqrt()
        xhat = xc * invstd
        dx = dw = db = None
        if need[0]:
            gw = grad * w if w is not None else grad
            dx = invstd * (gw - gw.mean(dims, keepdim=True) -
                           xhat * (gw * xhat).mean(dims, keepdim=True))
        if w is not None and need[1]:
            dw = sum_to(grad * xhat, w._data.shape)
        if b is not None and need[2]:
            db = sum_to(grad, b._data.shape)
        return dx, dw, db, None, None, None


class NativeBatchNorm(Normalize):
    """Normalize per channel (batch_norm(); instance_norm() per sample and channel).

    With ``running = (running_mean, running_var)`` (batch_norm in evaluation) the statistics
    are the running ones, so the op is one affine map per channel c (axis 1):

        y = x k + (b - mean k),   k = w / sqrt(var + eps)     (w = 1, b = 0 when absent)
        dx = dy k,   dw = sum(dy xhat),   db = sum(dy),   xhat = (x - mean) / sqrt(var + eps)

    (sums over every axis but 1). The running statistics get no gradient, as in PyTorch."""

    @staticmethod
    def forward(ctx, x, weight, bias, dims, eps, stats_out, running=None):
        if running is None:
            return Normalize.forward(ctx, x, weight, bias, dims, eps, stats_out)
        xd = _c(x._data)                   # bfloat16: in float32, rounded once at the end
        f, shape = xd.dtype.type, (1, -1) + (1,) * (xd.ndim - 2)
        invstd = (1 / np.sqrt(_c(running[1]._data) + f(eps))).astype(xd.dtype, copy=False)
        k = invstd if weight is None else invstd * _c(weight._data).reshape(-1)
        shift = -_c(running[0]._data) * k
        if bias is not None:
            shift = shift + _c(bias._data).reshape(-1)
        y = xd * k.reshape(shape)
        y += shift.astype(xd.dtype, copy=False).reshape(shape)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, weight, bias)
            ctx.running, ctx.invstd, ctx.shape = running, invstd.reshape(shape), shape
        return _dt.result_array(y, x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        if getattr(ctx, "running", None) is None:
            return Normalize.backward(ctx, grad) + (None,)
        x, w, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        mean = ctx.running[0]._data.reshape(ctx.shape)
        if _State.enabled:                 # create_graph=True: record the backward
            invstd = Tensor._make(ctx.invstd)
            k = invstd if w is None else invstd * w.reshape(ctx.shape)
            dx = grad * k if need[0] else None
            axes = (0,) + tuple(range(2, grad._data.ndim))   # every axis but the channels
            dw = (grad * ((x - Tensor._make(mean)) * invstd)).sum(axes).reshape(w._data.shape) \
                if w is not None and need[1] else None
            db = grad.sum(axes).reshape(b._data.shape) if b is not None and need[2] else None
            return dx, dw, db, None, None, None, None
        g = _c(grad._data)                 # bfloat16: in float32, each result rounded once
        axes = (0,) + tuple(range(2, g.ndim))
        dx = dw = db = None
        if need[0]:
            k = ctx.invstd if w is None else ctx.invstd * _c(w._data).reshape(ctx.shape)
            dx = Tensor._make(_dt.result_array(g * k, grad._data.dtype))
        if w is not None and need[1]:
            xhat = (_c(x._data) - _c(mean)) * ctx.invstd
            dw = Tensor._make(_dt.result_array((g * xhat).sum(axis=axes).reshape(w._data.shape),
                                               w._data.dtype))
        if b is not None and need[2]:
            db = Tensor._make(_dt.result_array(g.sum(axis=axes).reshape(b._data.shape),
                                               b._data.dtype))
        return dx, dw, db, None, None, None, None


class NativeLayerNorm(Normalize):
    """Normalize over the trailing dims (layer_norm()): Normalize's math with the input viewed
    as (rows, n), n the number of elements of the normalized dims, and w, b as (n,):

        y = (x - mean) rstd w + b per row (backend.layer_norm, which returns mean and rstd)
        dx, dw, db = backend.layer_norm_backward(dy, x, mean, rstd, w)   (Normalize's formula)

    Under create_graph the backward is Normalize's Tensor-op version."""

    @staticmethod
    def forward(ctx, x, weight, bias, dims, eps, stats_out):
        xd = x._data
        n = math.prod(xd.shape[len(xd.shape) - len(dims):])
        if n == 0:                         # nothing to normalize: Normalize's numpy path
            return Normalize.forward(ctx, x, weight, bias, dims, eps, stats_out)
        rows = _c(xd.reshape(-1, n))       # bfloat16: in float32, rounded once at the end
        w = None if weight is None else _c(weight._data.reshape(n))
        b = None if bias is None else _c(bias._data.reshape(n))
        y, mean, rstd = backend.layer_norm(rows, w, b, eps)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, weight, bias)
            ctx.mean, ctx.invstd, ctx.dims, ctx.eps = mean, rstd, dims, eps
        return _as_input_dtype(y.reshape(xd.shape), xd.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, w, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        if _State.enabled:                 # create_graph=True: record the backward
            return Normalize._backward_graph(ctx, grad, x, w, b)
        xd = x._data
        n = math.prod(xd.shape[len(xd.shape) - len(ctx.dims):])
        if n == 0:
            return Normalize.backward(ctx, grad)
        dx, dw, db = backend.layer_norm_backward(
            _c(grad._data.reshape(-1, n)), _c(xd.reshape(-1, n)), ctx.mean, ctx.invstd,
            None if w is None else _c(w._data.reshape(n)), need[0], w is not None and need[1],
            b is not None and need[2])

        def fresh(a, like):                # (bfloat16: each result rounded once)
            return Tensor._make(mark_fresh(_as_input_dtype(a.reshape(like.shape), like.dtype)))
        out = [None if dx is None else fresh(dx, grad._data),
               None if dw is None else fresh(dw, w._data),
               None if db is None else fresh(db, b._data)]
        return out[0], out[1], out[2], None, None, None


class NativeGroupNorm(Normalize):
    """Normalize per sample and group of channels (group_norm())."""


def _as_input_dtype(y, np_dtype):
    """`y` (computed in float32 or wider) as the 16-bit input's dtype: bfloat16 and float16
    inputs keep their dtype with float32 weight and bias, as PyTorch's CPU norms (and so under
    autocast); any other result comes back as computed."""
    if y.dtype != np_dtype and np_dtype.itemsize == 2 and _dt.is_float_dtype(np_dtype):
        return y.astype(np_dtype)
    return y


# ---- checks -------------------------------------------------------------------------------------
def _need_tensor(x, name, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(x).__name__}")
    if not _dt.is_float_dtype(x._data.dtype):
        raise TypeError(f"{op}(): expected a floating point {name}, got {x.dtype.name}; convert "
                        f"with .float() first")


def _check_per_channel(op, input, channels, **tensors):
    """Every given tensor (running_mean, weight, ...) must hold one value per channel."""
    for name, t in tensors.items():
        if t is not None and t._data.size != channels:
            raise RuntimeError(f"{op}: expected input with {t._data.size} channels ({name} of "
                               f"shape {tuple(t._data.shape)}), got input of shape "
                               f"{tuple(input._data.shape)}")


def _update_running(buf, value, momentum):
    """buf = (1 - momentum) * buf + momentum * value, in place (no graph; version bumped)."""
    if buf is None:
        return
    arr = buf._data
    arr *= 1 - momentum
    arr += (momentum * value.reshape(arr.shape)).astype(arr.dtype, copy=False)
    buf._vc[0] += 1
    _wrote(arr)


def _channel_view(t, ndim):
    """A per-channel vector (C,) as (1, C, 1, ...) so it broadcasts over an (N, C, *) input."""
    return None if t is None else t.reshape((1, -1) + (1,) * (ndim - 2))


def _eval_norm(input, running_mean, running_var, weight, bias, eps):
    """(x - running_mean) / sqrt(running_var + eps) * w + b as one multiply and one add."""
    nd = input._data.ndim
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    return input * _channel_view(scale, nd) + _channel_view(shift, nd)


# ---- the functions ------------------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalize each channel of an (N, C, *) input over the batch and all positions.

    training=True: batch statistics; running_mean/running_var (if given) are updated in place
    with `momentum` (None counts as 0.0: no update) and the unbiased batch variance.
    training=False: the running statistics are used (they must be given)."""
    _need_tensor(input, "input", "batch_norm")
    nd = input._data.ndim
    if nd < 2:
        raise ValueError(f"batch_norm: expected input of shape (N, C, *) with at least 2 dims, "
                         f"got input of shape {tuple(input._data.shape)}")
    C = input._data.shape[1]
    _check_per_channel("batch_norm", input, C, running_mean=running_mean,
                       running_var=running_var, weight=weight, bias=bias)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                               "evaluation mode (training=False)")
        return NativeBatchNorm.apply(input, weight, bias, None, eps, None,
                                     (running_mean, running_var))
    dims = (0,) + tuple(range(2, nd))
    n = input._data.size // C if C else 0
    if n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{tuple(input._data.shape)}")
    stats = [] if (running_mean is not None or running_var is not None) else None
    out = NativeBatchNorm.apply(input, _channel_view(weight, nd), _channel_view(bias, nd), dims,
                                eps, stats)
    if stats:
        m = 0.0 if momentum is None else momentum
        _update_running(running_mean, stats[0], m)
        _update_running(running_var, stats[1] * (n / (n - 1)), m)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) of an (N, C, *) input over its positions.

    With use_input_stats and running statistics given, these are updated with the batch average
    of the per-instance mean and unbiased variance (as PyTorch)."""
    _need_tensor(input, "input", "instance_norm")
    nd = input._data.ndim
    if nd < 3:
        raise ValueError(f"instance_norm: expected input of shape (N, C, L, ...) with at least 3 "
                         f"dims, got input of shape {tuple(input._data.shape)}")
    shape = input._data.shape
    C = shape[1]
    _check_per_channel("instance_norm", input, C, running_mean=running_mean,
                       running_var=running_var, weight=weight, bias=bias)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("instance_norm: running_mean and running_var must be defined when "
                               "use_input_stats=False")
        return _eval_norm(input, running_mean, running_var, weight, bias, eps)
    n = int(np.prod(shape[2:]))
    if n <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{tuple(shape)}")
    stats = [] if (running_mean is not None or running_var is not None) else None
    out = NativeBatchNorm.apply(input, _channel_view(weight, nd), _channel_view(bias, nd),
                                tuple(range(2, nd)), eps, stats)
    if stats and shape[0]:
        m = 0.0 if momentum is None else momentum
        _update_running(running_mean, stats[0].mean(axis=0), m)
        _update_running(running_var, (stats[1] * (n / (n - 1))).mean(axis=0), m)
    return out


def _normalized_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


def _check_trailing(op, input, shape):
    k = len(shape)
    got = tuple(input._data.shape)
    if k == 0 or len(got) < k or got[len(got) - k:] != shape:
        raise RuntimeError(f"{op}: given normalized_shape={list(shape)}, expected input with "
                           f"shape [*, {', '.join(map(str, shape))}], but got input of size "
                           f"{list(got)}")


def _check_affine(op, shape, **tensors):
    for name, t in tensors.items():
        if t is not None and tuple(t._data.shape) != shape:
            raise RuntimeError(f"{op}: expected {name} of shape {shape} (normalized_shape), got "
                               f"{tuple(t._data.shape)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the last len(normalized_shape) dims; weight/bias have normalized_shape."""
    _need_tensor(input, "input", "layer_norm")
    shape = _normalized_shape(normalized_shape)
    _check_trailing("layer_norm", input, shape)
    _check_affine("layer_norm", shape, weight=weight, bias=bias)
    nd = input._data.ndim
    return NativeLayerNorm.apply(input, weight, bias, tuple(range(nd - len(shape), nd)), eps,
                                 None)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the C channels of an (N, C, *) input into num_groups groups and normalize each
    (sample, group) over its channels and positions; weight/bias are per channel (C,)."""
    _need_tensor(input, "input", "group_norm")
    shape = input._data.shape
    if len(shape) < 2:
        raise RuntimeError(f"group_norm: expected input of shape (N, C, *), got input of shape "
                           f"{tuple(shape)}")
    N, C = shape[:2]
    if num_groups <= 0 or C % num_groups:
        raise RuntimeError(f"group_norm: expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(shape)} and "
                           f"num_groups={num_groups}")
    _check_per_channel("group_norm", input, C, weight=weight, bias=bias)
    G = num_groups
    rest = int(np.prod(shape[2:]))
    view = (N, G, C // G, rest)
    wv = None if weight is None else weight.reshape(1, G, C // G, 1)
    bv = None if bias is None else bias.reshape(1, G, C // G, 1)
    out = NativeGroupNorm.apply(input.reshape(view), wv, bv, (2, 3), eps, None)
    return out.reshape(shape)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """y = x / sqrt(mean(x^2) + eps) * weight, the mean over the last len(normalized_shape)
    dims; eps=None uses the machine epsilon of the input's dtype (as PyTorch)."""
    _need_tensor(input, "input", "rms_norm")
    shape = _normalized_shape(normalized_shape)
    _check_trailing("rms_norm", input, shape)
    _check_affine("rms_norm", shape, weight=weight)
    if eps is None:
        eps = float(_dt.finfo(input._data.dtype).eps)
    nd = input._data.ndim
    dims = tuple(range(nd - len(shape), nd))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p, eps), the norm taken along `dim`."""
    if out is not None:
        raise NotImplementedError("normalize(): out= is not supported; use the returned tensor")
    _need_tensor(input, "input", "normalize")
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    return input / denom


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over a window of `size` neighbouring channels)^beta.

    The window around channel c covers channels c - size//2 .. c + (size-1)//2, zero outside
    the range, and the mean always divides by `size` (as PyTorch)."""
    _need_tensor(input, "input", "local_response_norm")
    shape = input._data.shape
    if len(shape) < 3:
        raise ValueError(f"local_response_norm: expected 3D or higher dimensionality input (got "
                         f"{len(shape)} dimensions)")
    if input._data.size == 0:
        return input
    C = shape[1]
    sq = input * input
    before, after = size // 2, (size - 1) // 2
    parts = [sq]
    if before:
        parts.insert(0, Tensor._make(np.zeros((shape[0], before) + shape[2:], sq._data.dtype)))
    if after:
        parts.append(Tensor._make(np.zeros((shape[0], after) + shape[2:], sq._data.dtype)))
    padded = cat(parts, 1) if len(parts) > 1 else sq
    win = padded.narrow(1, 0, C)
    for j in range(1, size):
        win = win + padded.narrow(1, j, C)
    div = (win * (alpha / size) + k) ** beta
    return input / div
