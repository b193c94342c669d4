"""Native pooling kernels: the numpy twins' max_pool2d, max_pool2d_inference,
max_pool2d_backward, avg_pool2d and avg_pool2d_backward, computed by libmte (native/src/pool.c)
through ``_C``.

Each function has exactly the twin's name, signature and result (max pooling bit for bit,
indices included; average pooling to float32 rounding). The native kernel takes float32 input
with PyTorch's window rules (padding at most half the kernel); anything else -- other dtypes,
array-likes, parameters the twin accepts but PyTorch does not -- goes to the numpy twin, so
behaviour never differs. Arrays that are not C-contiguous are copied once.

The forward kernels take ``out=`` (epilogue.py's rule): the C kernel writes y straight into it
(an `out` that is not a float32 ndarray goes to the twin, which refuses it with a ValueError).
max_pool2d_inference computes no indices at all.

The dispatch table in backend/__init__.py binds them where libmte's "pool2d" kernels are
built.
"""
import operator

import numpy as np

from .. import _C  # ImportError when the extension is not built
from . import numpy_backend as _np_backend

__all__ = ["max_pool2d", "max_pool2d_inference", "max_pool2d_backward", "avg_pool2d",
           "avg_pool2d_backward"]


def _pair(v):
    """(a, b) of Python ints, or None if v is not a 2-sequence of integers."""
    try:
        if len(v) != 2:
            return None
        a, b = v
        if isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
            return None
        return operator.index(a), operator.index(b)
    except TypeError:
        return None


def _window(kernel, stride, padding, dilation=(1, 1)):
    """The four pairs if the native kernel takes them (PyTorch's rules), else None."""
    k, s, p, d = _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    if None in (k, s, p, d):
        return None
    if min(k + s + d) < 1 or max(k + s + d) > 2**30:
        return None
    if any(pi < 0 or pi > ki // 2 for pi, ki in zip(p, k)):
        return None
    return k, s, p, d


def _f32(x, ndim=4):
    """x as a C-contiguous float32 array the kernels take, or None."""
    if type(x) is not np.ndarray or x.dtype != np.float32 or x.ndim != ndim:
        return None
    return np.ascontiguousarray(x)


def _shape4(x_shape):
    try:
        s = tuple(operator.index(v) for v in x_shape)
    except TypeError:
        return None
    return s if len(s) == 4 and min(s) >= 0 else None


def _divisor(divisor_override):
    """None (no override) or a nonzero int; False when the native kernel cannot take it."""
    if not divisor_override:  # the twin's own test: None and 0 mean no override
        return None
    if isinstance(divisor_override, (bool, np.bool_)):
        return False
    try:
        d = operator.index(divisor_override)
    except TypeError:
        return False
    return d if abs(d) < 2**62 else False


def _out_ok(out):
    """True when `out` (None allowed) is something the bindings write into: a float32 ndarray
    (its shape and layout they check themselves)."""
    return out is None or (type(out) is np.ndarray and out.dtype == np.float32)


def _max_window(x, kernel, stride, padding, dilation, ceil_mode, out):
    """(C-contiguous x, window) when the native max pooling takes the call, else None."""
    xc, win = _f32(x), _window(kernel, stride, padding, dilation)
    if xc is None or win is None or not _out_ok(out):
        return None
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = win
    n, c, h, w = xc.shape
    ho = _np_backend.pool_output_size(h, kh, sh, ph, dh, bool(ceil_mode))
    wo = _np_backend.pool_output_size(w, kw, sw, pw, dw, bool(ceil_mode))
    if ho >= 0 and wo >= 0 and (h > 0 and w > 0 or n * c * ho * wo == 0):
        return xc, win
    return None


def max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out=None):
    """numpy_backend.max_pool2d on libmte: (y, int64 flat h*W + w indices); y is `out` when
    given."""
    native = _max_window(x, kernel, stride, padding, dilation, ceil_mode, out)
    if native is not None:
        return _C.max_pool2d(native[0], *native[1], bool(ceil_mode), out=out)
    return _np_backend.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out=out)


def max_pool2d_inference(x, kernel, stride, padding, dilation, ceil_mode, out=None):
    """numpy_backend.max_pool2d_inference on libmte: y alone (the kernel computes no
    indices), written into `out` when given."""
    native = _max_window(x, kernel, stride, padding, dilation, ceil_mode, out)
    if native is not None:
        return _C.max_pool2d(native[0], *native[1], bool(ceil_mode), out=out,
                             return_indices=False)
    return _np_backend.max_pool2d_inference(x, kernel, stride, padding, dilation, ceil_mode,
                                            out=out)


def max_pool2d_backward(grad_y, indices, x_shape):
    """numpy_backend.max_pool2d_backward on libmte (an index outside its plane raises
    ValueError)."""
    gy, shape = _f32(grad_y), _shape4(x_shape)
    if (gy is not None and shape is not None and type(indices) is np.ndarray
            and indices.dtype == np.int64 and indices.shape == gy.shape
            and shape[:2] == gy.shape[:2]):
        return _C.max_pool2d_backward(gy, np.ascontiguousarray(indices), shape)
    return _np_backend.max_pool2d_backward(grad_y, indices, x_shape)


def avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
               out=None):
    """numpy_backend.avg_pool2d on libmte (y written into `out` when given)."""
    xc, win, div = _f32(x), _window(kernel, stride, padding), _divisor(divisor_override)
    if xc is not None and win is not None and div is not False and _out_ok(out):
        (kh, kw), (sh, sw), (ph, pw), _ = win
        ho = _np_backend.pool_output_size(xc.shape[2], kh, sh, ph, 1, bool(ceil_mode))
        wo = _np_backend.pool_output_size(xc.shape[3], kw, sw, pw, 1, bool(ceil_mode))
        if ho >= 0 and wo >= 0:
            return _C.avg_pool2d(xc, win[0], win[1], win[2], bool(ceil_mode),
                                 bool(count_include_pad), div, out=out)
    return _np_backend.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad,
                                  divisor_override, out=out)


def avg_pool2d_backward(grad_y, x_shape, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """numpy_backend.avg_pool2d_backward on libmte."""
    gy, shape = _f32(grad_y), _shape4(x_shape)
    win, div = _window(kernel, stride, padding), _divisor(divisor_override)
    if gy is not None and shape is not None and win is not None and div is not False \
            and shape[:2] == gy.shape[:2]:
        return _C.avg_pool2d_backward(gy, shape, win[0], win[1], win[2],
                                      bool(count_include_pad), div)
    return _np_backend.avg_pool2d_backward(grad_y, x_shape, kernel, stride, padding,
                                           count_include_pad, divisor_override)

