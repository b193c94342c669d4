"""Resizing images and feature maps: ``interpolate`` (nearest, nearest-exact, linear, bilinear,
bicubic, trilinear, area), ``pixel_shuffle`` and ``pixel_unshuffle``.

Every interpolate mode is separable: resizing an (N, C, H, W) input is a 1-D resize along H,
then one along W. A 1-D resize along one axis is a short weighted sum of gathered slices,

    y[..., o, ...] = sum_k  w_k[o] * x[..., idx_k[o], ...]          (1 tap for nearest,
                                                                     2 for linear, 4 for cubic)

which is the Function `Resample`. Its backward scatters each output gradient back, with the
same weights, onto the positions it was gathered from: the transposed operator `ResampleT`
(each is the other's backward, so second derivatives work). The indices idx_k[o] never decrease
with o, so the scatter is one `np.add.reduceat` per tap instead of an element-wise loop.

Where the taps come from (matching PyTorch exactly, in the input's float precision):

* the ratio between input and output coordinates is ``1/scale_factor`` when a scale factor was
  given (and not recomputed), else ``in/out``; with align_corners=True it is
  ``(in-1)/(out-1)``, so the corner pixels of input and output line up;
* nearest: src = min(floor(o * ratio), in - 1), in float32, so a scale_factor of 1.1 that
  keeps the size still moves pixels. PyTorch's 2-D kernel (4-D input) alone copies an axis
  whose size is unchanged and uses o // 2 for an axis exactly doubled; we do the same there;
  nearest-exact: src = min(floor((o + 0.5) * ratio), in - 1);
* linear: src = ratio * (o + 0.5) - 0.5 clamped below at 0 (ratio * o with align_corners);
  idx0 = floor(src), idx1 = idx0 + 1 (clamped to the last pixel), weights 1 - t and t for the
  fraction t; same-size input is copied;
* cubic: the same src without the clamp, Keys' cubic convolution with A = -0.75 over
  idx0 - 1 .. idx0 + 2, each index clamped into the image;
* area: average over [floor(o*in/out), ceil((o+1)*in/out)) (adaptive average pooling).

Differs from PyTorch: its backward of nearest (3-D, 5-D input) and bicubic treats an axis
whose size a scale_factor leaves unchanged as a copy although its forward does not; our
gradient is always the exact adjoint of our (PyTorch-equal) forward.

pixel_shuffle moves channel blocks into space: (*, C*r*r, H, W) -> (*, C, H*r, W*r), a reshape,
a permute and a reshape; pixel_unshuffle undoes it.
"""
import math

import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...tensor import Tensor

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle"]

_CUBIC_A = -0.75
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_MODE_NDIM = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}


# ---- the 1-D resample operator and its transpose ------------------------------------------------
def _runs(idx):
    """Start positions of the runs of equal values in the non-decreasing int array idx."""
    return np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]]) if idx.size else idx


def _bcast(w, dim, ndim):
    """A weight vector along `dim` shaped to broadcast against an ndim-array."""
    return w.reshape((-1,) + (1,) * (ndim - dim - 1))


class Resample(Function):
    """y = sum_k w_k * take(x, idx_k, axis=dim) (w_k None means 1).
    dx = ResampleT(dy): dy scattered back to idx_k with weights w_k."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, dim, taps, in_size):
        xd = _dt.compute_array(x._data)        # bfloat16: in float32, rounded once
        shape = list(xd.shape)
        shape[dim] = taps[0][0].size if taps else 0
        out = None if taps else np.zeros(shape, xd.dtype)
        for idx, w in taps:
            part = np.take(xd, idx, axis=dim)
            if w is not None:
                part *= _bcast(w.astype(xd.dtype, copy=False), dim, xd.ndim)
            out = part if out is None else np.add(out, part, out=out)
        if ctx.needs_input_grad:
            ctx.args = (dim, taps, in_size)
        return _dt.result_array(out, x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        return ResampleT.apply(grad, *ctx.args), None, None, None


class ResampleT(Function):
    """The transpose of Resample: y (size in_size along dim) = sum over taps and outputs o of
    w_k[o] * g[..., o, ...] added at position idx_k[o].  dg = Resample(dy)."""
    _builtin = True

    @staticmethod
    def forward(ctx, g, dim, taps, in_size):
        gd = _dt.compute_array(g._data)        # bfloat16: in float32, rounded once
        shape = list(gd.shape)
        shape[dim] = in_size
        out = np.zeros(shape, gd.dtype)
        for idx, w in taps:
            v = gd if w is None else gd * _bcast(w.astype(gd.dtype, copy=False), dim, gd.ndim)
            if not idx.size:
                continue
            starts = _runs(idx)
            sums = np.add.reduceat(v, starts, axis=dim)
            where = (slice(None),) * dim + (idx[starts],)
            out[where] += sums
        if ctx.needs_input_grad:
            ctx.args = (dim, taps, in_size)
        return _dt.result_array(out, g._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        dim, taps, in_size = ctx.args
        return Resample.apply(grad, dim, taps, in_size), None, None, None


# ---- taps per mode ------------------------------------------------------------------------------
def _ratio(n_in, n_out, align_corners, scale, ft):
    """Input coordinate step per output step (PyTorch's area_pixel_compute_scale)."""
    if align_corners:
        return ft((n_in - 1) / (n_out - 1)) if n_out > 1 else ft(0)
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(n_in) / ft(n_out)


def _nearest_taps(n_in, n_out, scale, exact, shortcuts):
    o = np.arange(n_out)
    if shortcuts and n_out == n_in:
        return [(o, None)]
    if shortcuts and n_out == 2 * n_in:
        return [(o >> 1, None)]
    r = np.float32(1.0 / scale) if scale is not None and scale > 0 else \
        np.float32(n_in) / np.float32(n_out)
    if exact:
        src = np.floor(((o + 0.5) * np.float64(r)).astype(np.float32))
    else:
        src = np.floor(o.astype(np.float32) * r)
    return [(np.minimum(src.astype(np.int64), n_in - 1), None)]


def _linear_taps(n_in, n_out, align_corners, scale, ft):
    o = np.arange(n_out)
    if n_out == n_in:
        return [(o, None)]
    r = _ratio(n_in, n_out, align_corners, scale, ft)
    of = o.astype(ft)
    src = r * of if align_corners else np.maximum(r * (of + ft(0.5)) - ft(0.5), ft(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam1 = np.clip(src - i0.astype(ft), 0, 1).astype(ft)
    i1 = i0 + (i0 < n_in - 1)
    return [(i0, ft(1) - lam1), (i1, lam1)]


def _cubic_taps(n_in, n_out, align_corners, scale, ft):
    o = np.arange(n_out).astype(ft)
    r = _ratio(n_in, n_out, align_corners, scale, ft)
    src = r * o if align_corners else r * (o + ft(0.5)) - ft(0.5)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    t = np.clip(src - i0.astype(ft), 0, 1).astype(ft)
    A = ft(_CUBIC_A)

    def near(x):      # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):       # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    return [(np.clip(i0 - 1 + k, 0, n_in - 1), w) for k, w in enumerate(weights)]


def _area_taps(n_in, n_out, ft):
    o = np.arange(n_out)
    start = (o * n_in) // n_out
    end = -((-(o + 1) * n_in) // n_out)
    length = end - start
    taps = []
    for k in range(int(length.max()) if n_out else 0):
        w = np.where(k < length, 1.0 / length, 0.0).astype(ft)
        taps.append((np.minimum(start + k, end - 1), w))
    return taps


# ---- interpolate --------------------------------------------------------------------------------
def _spatial_list(value, n, what, input_shape):
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"Input and {what} must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {list(input_shape[2:])} "
                             f"and {what} of {tuple(value)}. Please provide input tensor in "
                             f"(N, C, d1, d2, ...,dK) format and {what} in (o1, o2, ...,oK) "
                             f"format.")
        return list(value)
    return [value] * n


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of an (N, C, *spatial) input to `size`, or by `scale_factor`
    (output size floor(in * scale)); see the file header for each mode's exact rule."""
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be a Tensor, not "
                        f"{type(input).__name__}")
    shape = input._data.shape
    nd = len(shape)
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate(): unknown mode {mode!r}; use one of "
                                  f"{' | '.join(_MODES)}")
    if nd < 3 or nd > 5:
        raise NotImplementedError(f"interpolate(): only 3D, 4D and 5D input tensors (N, C, "
                                  f"*spatial) are supported, got input of shape {tuple(shape)}")
    need = _MODE_NDIM.get(mode)
    if need is not None and nd != need:
        raise NotImplementedError(f"Got {nd}D input, but {mode} mode needs {need}D input")
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not supported")
    n = nd - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        out_size = [int(s) for s in _spatial_list(size, n, "output size", shape)]
        scales = [None] * n
    elif scale_factor is not None:
        scales = [float(s) for s in _spatial_list(scale_factor, n, "scale_factor", shape)]
        out_size = [int(math.floor(float(shape[2 + i]) * scales[i])) for i in range(n)]
        if recompute_scale_factor or mode == "area":
            scales = [None] * n
    else:
        raise ValueError("either size or scale_factor should be defined")
    if any(s <= 0 for s in shape[2:]) or any(s < (0 if mode == "area" else 1)
                                             for s in out_size):
        raise RuntimeError(f"interpolate(): input and output sizes should be greater than 0, but "
                         f"got input (spatial) {list(shape[2:])} and output {out_size}")
    if mode not in ("nearest", "nearest-exact") and not _dt.is_float_dtype(input._data.dtype):
        raise TypeError(f"interpolate(): mode {mode!r} needs a floating point input, got "
                        f"{input.dtype.name}; convert with .float() first")
    ft = input._data.dtype.type if input._data.dtype.kind == "f" else np.float32
    if ft is np.float16:       # (bfloat16, kind 'V', gets float32 taps too)
        ft = np.float32
    out = input
    for i in range(n):
        n_in, n_out, s = shape[2 + i], out_size[i], scales[i]
        if mode in ("nearest", "nearest-exact"):
            taps = _nearest_taps(n_in, n_out, s, mode == "nearest-exact",
                                 shortcuts=(nd == 4 and mode == "nearest"))
        elif mode == "bicubic":
            taps = _cubic_taps(n_in, n_out, align_corners, s, ft)
        elif mode == "area":
            taps = _area_taps(n_in, n_out, ft)
        else:
            taps = _linear_taps(n_in, n_out, align_corners, s, ft)
        if n_in == n_out and len(taps) == 1 and taps[0][1] is None and \
                np.array_equal(taps[0][0], np.arange(n_out)):
            continue                                    # this axis is copied as it is
        out = Resample.apply(out, 2 + i, tuple(taps), n_in)
    return out if out is not input else input.clone()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The old name of interpolate (PyTorch keeps it too)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Bilinear with align_corners=True (as the old PyTorch function)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- pixel shuffle ------------------------------------------------------------------------------
def _check_shuffle(input, factor, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if not isinstance(factor, int) or factor <= 0:
        raise ValueError(f"{op}: the factor must be a positive int, got {factor!r}")
    if input._data.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input._data.ndim} dimension(s)")


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r):
    out[c, h*r + i, w*r + j] = in[c*r*r + i*r + j, h, w]."""
    r = upscale_factor
    _check_shuffle(input, r, "pixel_shuffle")
    *lead, c, h, w = input._data.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of pixel_shuffle."""
    r = downscale_factor
    _check_shuffle(input, r, "pixel_unshuffle")
    *lead, c, h, w = input._data.shape
    for name, size, d in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({d})={size} is not divisible "
                               f"by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
