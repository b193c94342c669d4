"""Native Transformer kernels: softmax, layer_norm, gelu (each with its backward) and fused
attention, computed by libmte (native/src/rowwise.c, attention.c) through ``_C``.

Each function has its numpy twin's name, signature and result (to float32 rounding); the
dispatch table in backend/__init__.py binds ``backend.<name>`` to it where libmte's
"transformer" kernels are built. The C kernels take float32: row kernels C-contiguous rows
along the last axis, attention 4-D strided views with a unit last stride. This module puts
arrays into that form where it costs nothing (a view) and hands every other case (another
dtype, softmax along another axis, a view the kernel cannot read) to the numpy twin, so
behaviour never differs between backends.

Attention writes into views: ``out`` (and dq, dk, dv in the backward) may be windows into
the caller's own arrays, so heads are split and merged without a copy (see
nn/functional/attention.py).
"""
import numpy as np

from .. import _C  # ImportError when the extension is not built
from . import numpy_backend as _ref

__all__ = ["softmax", "softmax_backward", "layer_norm", "layer_norm_backward", "gelu",
           "gelu_backward", "attention", "attention_backward"]
_F32 = np.dtype(np.float32)


def _f32(*arrays):
    """True when every array (None skipped) is an exact float32 ndarray."""
    return all(a is None or (type(a) is np.ndarray and a.dtype == _F32) for a in arrays)


def _rows(x):
    """x as C-contiguous rows along its last axis (a copy only when it is not already)."""
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _last_axis(dim, ndim):
    return dim == -1 or dim == ndim - 1


def softmax(x, dim=-1, log=False, safe=False):
    """The twin's softmax along the last axis in one native pass per row."""
    if not (_f32(x) and x.ndim >= 1 and _last_axis(dim, x.ndim)):
        return _ref.softmax(x, dim, log, safe)
    return _C.softmax(_rows(x), log=log, safe=safe)


def softmax_backward(y, dy, dim=-1, log=False):
    """The twin's softmax_backward along the last axis, one native pass per row."""
    if not (_f32(y, dy) and y.ndim >= 1 and y.shape == dy.shape and _last_axis(dim, y.ndim)):
        return _ref.softmax_backward(y, dy, dim, log)
    return _C.softmax_backward(_rows(y), _rows(dy), log=log)


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """The twin's layer_norm: (y, mean, rstd), statistics in one native pass per row."""
    if not (_f32(x, weight, bias) and x.ndim >= 1 and x.shape[-1] > 0):
        return _ref.layer_norm(x, weight, bias, eps)
    y, mean, rstd = _C.layer_norm(_rows(x), None if weight is None else _rows(weight),
                                  None if bias is None else _rows(bias), eps)
    return y, mean.reshape(x.shape[:-1]), rstd.reshape(x.shape[:-1])


def layer_norm_backward(dy, x, mean, rstd, weight=None, need_input=True, need_weight=True,
                        need_bias=True):
    """The twin's layer_norm_backward: dx per row and dweight, dbias summed over rows."""
    if not (_f32(dy, x, mean, rstd, weight) and x.ndim >= 1 and dy.shape == x.shape
            and x.shape[-1] > 0):
        return _ref.layer_norm_backward(dy, x, mean, rstd, weight, need_input, need_weight,
                                        need_bias)
    return _C.layer_norm_backward(_rows(dy), _rows(x), _rows(mean).reshape(-1),
                                  _rows(rstd).reshape(-1),
                                  None if weight is None else _rows(weight), need_input,
                                  need_weight, need_bias)


def gelu(x, approximate="none"):
    """The twin's gelu in float32 polynomials (erf, exp), one native pass."""
    if not _f32(x) or approximate not in ("none", "tanh"):
        return _ref.gelu(x, approximate)
    return _C.gelu(_rows(x), approximate)


def gelu_backward(dy, x, approximate="none"):
    """The twin's gelu_backward, one native pass."""
    if not _f32(dy, x) or dy.shape != x.shape or approximate not in ("none", "tanh"):
        return _ref.gelu_backward(dy, x, approximate)
    return _C.gelu_backward(_rows(dy), _rows(x), approximate)


def _readable(a):
    """A 4-D view the attention kernel reads as it is: unit stride along the last axis (or
    one column), non-negative strides, aligned."""
    if a.shape[-1] > 1 and a.strides[-1] != a.itemsize:
        return False
    return all(s >= 0 for s in a.strides) and a.flags.aligned


def _view(a):
    return a if _readable(a) else np.ascontiguousarray(a)


def _half_set(q, *others):
    """True when q is a bfloat16 / float16 ndarray and every other array (None skipped) is
    an exact ndarray of its dtype: the kernel's half-precision entry point takes them."""
    return (_ref.is_half(q) and type(q) is np.ndarray
            and all(a is None or (type(a) is np.ndarray and a.dtype == q.dtype) for a in others))


def attention(q, k, v, mask=None, scale=1.0, causal=False, out=None):
    """The twin's attention: each (batch, head) pair fused in one native call (QK^T, mask,
    softmax, PV); out written in place when given. The kernel keeps the weights transposed
    (a query's softmax is a column, see native/src/attention_body.h), so p is returned as a
    (B, H, L, S) view of that (B, H, S, L) array; attention_backward takes it back as it is.
    bfloat16 / float16 q, k, v (and out): the kernel widens each pair in its scratch and
    rounds out once (the mask, if any, float32; p float32)."""
    half = _half_set(q, k, v, out) and _f32(mask)
    if not ((half or _f32(q, k, v, mask, out)) and q.ndim == 4 and k.ndim == 4 and v.ndim == 4
            and q.shape[:2] == k.shape[:2] == v.shape[:2] and q.size and k.size and v.size):
        return _ref.attention(q, k, v, mask, scale, causal, out)
    B, H, L, _ = q.shape
    S, Dv = k.shape[2], v.shape[3]
    if mask is not None:
        mask = _view(np.broadcast_to(mask, (B, H, L, S)))
    own = out is None or not (_readable(out) and out.flags.writeable)
    target = np.empty((B, H, L, Dv), q.dtype) if own else out
    pt = np.empty((B, H, S, L), _F32)
    _C.attention(_view(q), _view(k), _view(v), mask, target, pt, float(scale), bool(causal))
    if own and out is not None:
        out[...] = target
        target = out
    return target, pt.swapaxes(2, 3)


def attention_backward(q, k, v, p, dout, scale, dq=None, dk=None, dv=None):
    """The twin's attention_backward, each pair in one native call; dq, dk, dv written in
    place when given (views into the caller's arrays), else returned as new arrays. p is
    read transposed (the layout attention returns it in; another p is copied once).
    bfloat16 / float16 q, k, v, dout (dq, dk, dv): in float32 per pair, each gradient
    rounded once (p float32)."""
    half = _half_set(q, k, v, dout, dq, dk, dv) and _f32(p)
    if not ((half or _f32(q, k, v, p, dout, dq, dk, dv)) and p.ndim == 4
            and q.shape[:2] == k.shape[:2] == v.shape[:2] == p.shape[:2]
            and q.size and k.size and v.size):
        return _ref.attention_backward(q, k, v, p, dout, scale, dq, dk, dv)
    grads = []
    for src, dst in ((q, dq), (k, dk), (v, dv)):
        own = dst is None or not (_readable(dst) and dst.flags.writeable)
        grads.append((np.empty(src.shape, q.dtype) if own else dst, dst if own else None))
    _C.attention_backward(_view(q), _view(k), _view(v), np.ascontiguousarray(p.swapaxes(2, 3)),
                          _view(dout), grads[0][0], grads[1][0], grads[2][0], float(scale))
    out = []
    for g, dst in grads:
        if dst is not None:      # the caller's array could not be written directly
            dst[...] = g
            g = dst
        out.append(g)
    return tuple(out)
