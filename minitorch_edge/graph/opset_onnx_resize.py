"""Resize (ONNX opset 11..19): nearest, linear and cubic interpolation of an N-D tensor, with
the output size given by constant `scales` or `sizes`.

Interpolation is separable: each resized dim is done on its own, as a matrix M (out x in)
applied along that dim. Row o of M holds the weights of the input taps around x = the source
coordinate of output o (``coordinate_transformation_mode``: half_pixel (default),
half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize):

* nearest: weight 1 at x rounded by ``nearest_mode`` (round_prefer_floor (default),
  round_prefer_ceil, floor, ceil);
* linear: the tent kernel k(d) = max(0, 1 - |d|) at taps floor(x) and floor(x) + 1;
* cubic: Keys' kernel with a = ``cubic_coeff_a`` (-0.75) at taps floor(x) - 1 .. floor(x) + 2;
* with ``antialias`` (linear, cubic) and a scale s < 1 the kernel is stretched, k(s d),
  over 1/s times as many taps, and normalised to sum 1.

Taps outside the input take the edge value, or are dropped (weights renormalised) with
``exclude_outside``; tf_crop_and_resize reads the region ``roi`` and gives
``extrapolation_value`` where x falls outside the input. ``axes`` and
``keep_aspect_ratio_policy`` (opset 18) are taken as ONNX defines them. Python engine only.
"""
import functools

import numpy as np

from .opset import norm_axis, op

python_op = functools.partial(op, c_runtime=False)

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                    "align_corners", "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _given(inp):
    """A constant optional input's data, None when it is left out or empty."""
    if inp is None:
        return None
    if inp.data is None:
        raise ValueError("Resize: roi, scales and sizes must be constants (shapes are static)")
    return None if inp.data.size == 0 else np.asarray(inp.data)


def _plan(attrs, shape, roi, scales, sizes):
    """(output shape, scale per dim, roi per dim as (start, end) or None)."""
    rank = len(shape)
    for key, allowed in (("mode", ("nearest", "linear", "cubic")),
                         ("coordinate_transformation_mode", COORDINATE_MODES),
                         ("nearest_mode", NEAREST_MODES),
                         ("keep_aspect_ratio_policy", ("stretch", "not_larger", "not_smaller"))):
        if key in attrs and attrs[key] not in allowed:
            raise ValueError(f"Resize: {key} {attrs[key]!r} is not one of {', '.join(allowed)}")
    axes = [norm_axis(int(a), rank, "Resize axis") for a in attrs.get("axes", range(rank))]
    if (scales is None) == (sizes is None):
        raise ValueError("Resize: give exactly one of scales and sizes (as constants)")
    given = scales if scales is not None else sizes
    if given.size != len(axes):
        raise ValueError(f"Resize: {'scales' if scales is not None else 'sizes'} has "
                         f"{given.size} entries for {len(axes)} axes of input {list(shape)}")
    scale = [1.0] * rank
    out = list(shape)
    if scales is not None:
        for a, s in zip(axes, scales.reshape(-1)):
            if s <= 0:
                raise ValueError(f"Resize: scales must be positive, got {scales.tolist()}")
            scale[a], out[a] = float(s), int(np.floor(shape[a] * float(s)))
    else:
        for a, n in zip(axes, sizes.reshape(-1)):
            scale[a], out[a] = int(n) / shape[a], int(n)
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(scale[a] for a in axes)
            for a in axes:
                scale[a], out[a] = s, int(s * shape[a] + 0.5)
    spans = None
    if roi is not None:
        roi = roi.reshape(-1).astype(np.float64)
        if roi.size != 2 * len(axes):
            raise ValueError(f"Resize: roi has {roi.size} entries, expected {2 * len(axes)}")
        spans = [(0.0, 1.0)] * rank
        for i, a in enumerate(axes):
            spans[a] = (roi[i], roi[len(axes) + i])
    return tuple(out), scale, spans


def _source_coordinates(mode, n_in, n_out, scale, span):
    """x[o]: where output o of this dim samples the input; and which o fall outside it. The
    resized length in the formulas is n_in * scale, unrounded (as ONNX's reference)."""
    o = np.arange(n_out, dtype=np.float64)
    length = n_in * scale
    outside = None
    if mode == "align_corners":
        x = np.zeros(n_out) if length == 1 else o * (n_in - 1) / (length - 1)
    elif mode == "asymmetric":
        x = o / scale
    elif mode == "pytorch_half_pixel":
        x = np.full(n_out, -0.5) if length == 1 else (o + 0.5) / scale - 0.5
    elif mode == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / length)
        x = offset + (o + 0.5) / scale - 0.5
    elif mode == "tf_crop_and_resize":
        start, end = span if span is not None else (0.0, 1.0)
        x = (np.full(n_out, (end - start) * (n_in - 1) / 2) if length == 1
             else o * (end - start) * (n_in - 1) / (length - 1)) + start * (n_in - 1)
        outside = (x < 0) | (x > n_in - 1)
    else:                                               # half_pixel
        x = (o + 0.5) / scale - 0.5
    return x, outside


def _cubic(d, a):
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _weights(attrs, n_in, n_out, scale, span):
    """One dim's interpolation: (M, None, outside) with M the matrix (n_out x n_in), or for
    mode nearest (None, the input index of each output, outside); `outside` marks the outputs
    whose source lies outside the input (tf_crop_and_resize), else None."""
    mode = attrs.get("mode", "nearest")
    x, outside = _source_coordinates(
        attrs.get("coordinate_transformation_mode", "half_pixel"), n_in, n_out, scale, span)
    if mode == "nearest":
        how = attrs.get("nearest_mode", "round_prefer_floor")
        pick = {"round_prefer_floor": lambda v: np.ceil(v - 0.5),
                "round_prefer_ceil": lambda v: np.floor(v + 0.5),
                "floor": np.floor, "ceil": np.ceil}[how]
        return None, np.clip(pick(x), 0, n_in - 1).astype(np.int64), outside
    m = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    # taps base + j, j in [start, 1 - start]; base = floor(x), or x - 1 when x is a whole
    # number (its weight then sits on j = 1, as ONNX's reference has it)
    base = np.floor(x)
    base = np.where(base == x, x - 1, base)
    ratio = x - base
    s = min(scale, 1.0) if attrs.get("antialias", 0) else 1.0
    reach = 1 if mode == "linear" else 2
    start = int(np.floor(-reach / s) + 1)
    taps = np.arange(start, 2 - start)
    dist = s * (taps[None, :] - ratio[:, None])
    w = (np.clip(1 - np.abs(dist), 0, None) if mode == "linear"
         else _cubic(dist, attrs.get("cubic_coeff_a", -0.75)))
    idx = base[:, None].astype(np.int64) + taps[None, :]
    if attrs.get("exclude_outside", 0):
        w = np.where((idx < 0) | (idx >= n_in), 0.0, w)
    if s != 1.0 or attrs.get("exclude_outside", 0):
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    np.add.at(m, (np.repeat(rows, len(taps)), np.clip(idx, 0, n_in - 1).reshape(-1)),
              w.reshape(-1))
    return m, None, outside


def _along(m, y, axis):
    """M applied to dim `axis` of y: out[..., o, ...] = sum_i M[o, i] y[..., i, ...]."""
    n_out, n_in = m.shape
    pre = int(np.prod(y.shape[:axis], dtype=np.int64))
    post = int(np.prod(y.shape[axis + 1:], dtype=np.int64))
    if post == 1:
        z = np.ascontiguousarray(y).reshape(-1, n_in) @ m.T
    else:
        z = np.matmul(m, np.ascontiguousarray(y).reshape(pre, n_in, post))
    return z.reshape(y.shape[:axis] + (n_out,) + y.shape[axis + 1:])


def _resize_shape(attrs, ins):
    x = ins[0]
    if attrs.get("mode", "nearest") == "nearest" and attrs.get("antialias", 0):
        raise ValueError("Resize: antialias applies to linear and cubic modes, not nearest")
    opt = [_given(i) for i in (ins + [None] * 3)[1:4]]
    out, _, _ = _plan(attrs, x.shape, *opt)
    return [(out, x.dtype)]


@python_op("Resize", _resize_shape)
def resize(attrs, x, roi=None, scales=None, sizes=None):
    """y = x interpolated to the output size (see the module docstring for the math)."""
    given = [None if a is None or a.size == 0 else np.asarray(a) for a in (roi, scales, sizes)]
    out, scale, spans = _plan(attrs, x.shape, *given)
    nearest = attrs.get("mode", "nearest") == "nearest"
    y = x if nearest else x.astype(np.float64)     # nearest copies; the others mix in float64
    for axis in range(x.ndim):
        span = None if spans is None else spans[axis]
        identity = (out[axis] == x.shape[axis] and np.isclose(scale[axis], 1.0)
                    and (span is None or np.allclose(span, (0.0, 1.0))))
        if identity:
            continue
        m, idx, outside = _weights(attrs, x.shape[axis], out[axis], scale[axis], span)
        y = np.take(y, idx, axis) if m is None else _along(m, y, axis)
        if outside is not None and outside.any():
            mask = outside.reshape((1,) * axis + (-1,) + (1,) * (x.ndim - axis - 1))
            y = np.where(mask, attrs.get("extrapolation_value", 0.0), y)
    if nearest and y.dtype == x.dtype:
        return np.ascontiguousarray(y)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(np.round(y), info.min, info.max).astype(x.dtype)
    return y.astype(x.dtype)
