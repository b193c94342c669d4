"""Neural-network ops the ONNX importer needs beyond the traced ones: ConvTranspose (1-, 2- and
3-D), InstanceNormalization, GroupNormalization, LRN, GlobalMaxPool, LpPool, GlobalLpPool,
LpNormalization, MeanVarianceNormalization, DepthToSpace and SpaceToDepth. ONNX (opset 17; GroupNormalization
18/21) names, attributes and semantics; numpy references, written for clarity. They run on
the Python engine only (``c_runtime=False``, see opset.py), except ConvTranspose, which the C
runtime runs in 2-D (graph.trace emits it for conv_transpose1d/2d, lifting 1-D to 2-D).
"""
import functools
import itertools

import numpy as np

from .opset import norm_axis, op

python_op = functools.partial(op, c_runtime=False)


def _need_rank(name, x, least, what="X"):
    if len(x.shape) < least:
        raise ValueError(f"{name} takes {what} of rank >= {least} (N, C, ...), got "
                         f"{list(x.shape)}")


def _per_channel(name, ins, c, which):
    for i, what in zip(ins, which):
        if i is None or tuple(i.shape) != (c,):
            raise ValueError(f"{name}: {what} must have shape [{c}] (the channels), got "
                             f"{None if i is None else list(i.shape)}")


# ---- ConvTranspose ----------------------------------------------------------------------------
def _deconv_geometry(attrs, x_shape, w_shape):
    """(output spatial dims, pads begin, strides, dilations, output_padding) by ONNX's rules:
    out = s (in - 1) + output_padding + (k - 1) d + 1 - pad_begin - pad_end; `output_shape`
    or auto_pad SAME_* (out = in s) decide the pads instead when given."""
    spatial = len(x_shape) - 2
    ones, zeros = [1] * spatial, [0] * spatial
    strides = list(attrs.get("strides", ones))
    dil = list(attrs.get("dilations", ones))
    opad = list(attrs.get("output_padding", zeros))
    kernel = list(attrs.get("kernel_shape", w_shape[2:]))
    if kernel != list(w_shape[2:]):
        raise ValueError(f"ConvTranspose: kernel_shape {kernel} != W's {list(w_shape[2:])}")
    if any(len(v) != spatial for v in (strides, dil, opad)):
        raise ValueError(f"ConvTranspose: strides {strides}, dilations {dil} and "
                         f"output_padding {opad} need {spatial} entries each")
    ins = x_shape[2:]
    full = [s * (i - 1) + o + (k - 1) * d + 1
            for i, k, s, d, o in zip(ins, kernel, strides, dil, opad)]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"ConvTranspose: auto_pad {auto_pad!r} is not NOTSET, VALID, "
                         f"SAME_UPPER or SAME_LOWER")
    target = attrs.get("output_shape")
    if target is not None:
        target = list(target)[-spatial:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = [i * s for i, s in zip(ins, strides)]
    if target is not None:
        total = [f - t for f, t in zip(full, target)]
        upper = auto_pad == "SAME_UPPER"
        begin = [p // 2 if upper else p - p // 2 for p in total]
        return target, begin, strides, dil, opad
    pads = list(attrs.get("pads", zeros * 2)) if auto_pad == "NOTSET" else zeros * 2
    if len(pads) != 2 * spatial:
        raise ValueError(f"ConvTranspose: pads {pads} needs {2 * spatial} entries")
    out = [f - pads[i] - pads[i + spatial] for i, f in enumerate(full)]
    return out, pads[:spatial], strides, dil, opad


def _deconv_shape(attrs, ins):
    x, w = ins[0], ins[1]
    _need_rank("ConvTranspose", x, 3)
    if len(w.shape) != len(x.shape):
        raise ValueError(f"ConvTranspose: W {list(w.shape)} must have X's rank "
                         f"(X {list(x.shape)})")
    group = attrs.get("group", 1)
    if x.shape[1] != w.shape[0] or x.shape[1] % group:
        raise ValueError(f"ConvTranspose: X has {x.shape[1]} channels, W {list(w.shape)} "
                         f"(C, M / group, k...) with group={group} needs W's dim 0 = C, "
                         f"a multiple of group")
    m = w.shape[1] * group
    if len(ins) > 2 and ins[2] is not None and tuple(ins[2].shape) != (m,):
        raise ValueError(f"ConvTranspose: B must have shape [{m}], got {list(ins[2].shape)}")
    out = _deconv_geometry(attrs, x.shape, w.shape)[0]
    if any(d <= 0 for d in out):
        raise ValueError(f"ConvTranspose: the output would be empty ({out})")
    return [((x.shape[0], m) + tuple(out), x.dtype)]


@op("ConvTranspose", _deconv_shape)
def conv_transpose(attrs, x, w, b=None):
    """y[n, g M/G + m, o] = sum over c in group g, kernel offsets k with o + pad = i s + k d of
    x[n, c, i] W[c, m, k] (+ B[m]): every input pixel scatters its kernel-weighted copy into
    the output (col2im); attrs strides, dilations, pads, output_padding, output_shape,
    auto_pad, group."""
    out, begin, strides, dil, _ = _deconv_geometry(attrs, x.shape, w.shape)
    n, c = x.shape[:2]
    group, kernel, ins = attrs.get("group", 1), w.shape[2:], x.shape[2:]
    cg, mg = c // group, w.shape[1]
    full = [s * (i - 1) + (k - 1) * d + 1 for i, k, s, d in zip(ins, kernel, strides, dil)]
    # room for the cropped window: pads may be negative or output_padding may reach past
    size = [max(f, b0 + o) - min(0, b0) for f, b0, o in zip(full, begin, out)]
    shift = [-min(0, b0) for b0 in begin]
    y = np.zeros((n, group, mg) + tuple(size), np.float64 if x.dtype == np.float64
                 else np.float32)
    xg = x.reshape((n, group, cg, -1)).astype(y.dtype)                  # (n, g, c, pixels)
    wg = w.reshape((group, cg, -1)).astype(y.dtype).transpose(0, 2, 1)  # (g, m k, c)
    cols = np.matmul(wg, xg).reshape((n, group, mg, -1) + xg.shape[-1:])  # (n, g, m, k, p):
    # every input pixel's contribution to each kernel offset
    for kidx, koff in enumerate(itertools.product(*[range(k) for k in kernel])):
        window = tuple(slice(sh + k * d, sh + k * d + (i - 1) * s + 1, s)
                       for sh, k, d, i, s in zip(shift, koff, dil, ins, strides))
        y[(slice(None),) * 3 + window] += cols[:, :, :, kidx].reshape((n, group, mg) + ins)
    crop = tuple(slice(sh + b0, sh + b0 + o) for sh, b0, o in zip(shift, begin, out))
    y = y[(slice(None),) * 3 + crop].reshape((n, group * mg) + tuple(out))
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * len(out))
    return np.ascontiguousarray(y.astype(x.dtype))


# ---- normalizations ---------------------------------------------------------------------------
def _normalized(x, axes, eps):
    """(x - mean) / sqrt(var + eps) with the statistics over `axes`, in float32 or wider."""
    work = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
    mean = work.mean(axis=axes, keepdims=True)
    var = np.square(work - mean).mean(axis=axes, keepdims=True)
    return (work - mean) / np.sqrt(var + eps)


def _instance_norm_shape(attrs, ins):
    _need_rank("InstanceNormalization", ins[0], 3, "input")
    _per_channel("InstanceNormalization", ins[1:3], ins[0].shape[1], ("scale", "B"))
    return [(ins[0].shape, ins[0].dtype)]


@python_op("InstanceNormalization", _instance_norm_shape)
def instance_norm(attrs, x, scale, bias):
    """y = (x - mean) / sqrt(var + epsilon) * scale[c] + B[c], the statistics over the spatial
    dims of each (n, c) (epsilon 1e-5)"""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = _normalized(x, tuple(range(2, x.ndim)), attrs.get("epsilon", 1e-5))
    return (y * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


def _group_norm_shape(attrs, ins):
    x = ins[0]
    _need_rank("GroupNormalization", x, 2)
    c, g = x.shape[1], attrs.get("num_groups")
    if not g or c % g:
        raise ValueError(f"GroupNormalization: num_groups={g} must divide the {c} channels of "
                         f"X {list(x.shape)}")
    for i, what in zip(ins[1:3], ("scale", "bias")):
        if i is None or tuple(i.shape) not in ((c,), (g,)):
            raise ValueError(f"GroupNormalization: {what} must have shape [{c}] (opset 21: per "
                             f"channel) or [{g}] (opset 18: per group), got "
                             f"{None if i is None else list(i.shape)}")
    return [(x.shape, x.dtype)]


@python_op("GroupNormalization", _group_norm_shape)
def group_norm(attrs, x, scale, bias):
    """y = (x - mean) / sqrt(var + epsilon) * scale + bias, the statistics over each group of
    C / num_groups channels and all spatial dims of a sample (epsilon 1e-5; computed in
    float32 or wider, stash_type 1). scale and bias are per channel [C] (opset 21) or per group
    [num_groups] (opset 18: repeated over the group's channels)."""
    n, c = x.shape[:2]
    g = attrs["num_groups"]
    grouped = x.reshape((n, g, -1))
    y = _normalized(grouped, (2,), attrs.get("epsilon", 1e-5)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)

    def per_channel(p):
        return np.repeat(p, c // g) if p.shape[0] != c else p
    return (y * per_channel(scale).reshape(shape) + per_channel(bias).reshape(shape)).astype(
        x.dtype)


def _mvn_shape(attrs, ins):
    rank = len(ins[0].shape)
    for a in attrs.get("axes", (0, 2, 3)):
        norm_axis(a, rank, "MeanVarianceNormalization axis")
    return [(ins[0].shape, ins[0].dtype)]


@python_op("MeanVarianceNormalization", _mvn_shape)
def mean_variance_norm(attrs, x):
    """y = (x - mean) / (sqrt(var) + 1e-9), the statistics over `axes` (default [0, 2, 3])"""
    axes = tuple(a % x.ndim for a in attrs.get("axes", (0, 2, 3)))
    work = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
    mean = work.mean(axis=axes, keepdims=True)
    std = np.sqrt(np.square(work - mean).mean(axis=axes, keepdims=True))
    return ((work - mean) / (std + 1e-9)).astype(x.dtype)


def _lrn_shape(attrs, ins):
    _need_rank("LRN", ins[0], 3)
    if attrs.get("size", 0) < 1:
        raise ValueError(f"LRN: size must be a positive int, got {attrs.get('size')}")
    return [(ins[0].shape, ins[0].dtype)]


@python_op("LRN", _lrn_shape)
def lrn(attrs, x):
    """y = x / (bias + alpha / size * sum of x^2 over the channels c - (size-1)//2 ..
    c + ceil((size-1)/2))^beta   (alpha 1e-4, beta 0.75, bias 1)"""
    size = attrs["size"]
    alpha, beta, bias = attrs.get("alpha", 1e-4), attrs.get("beta", 0.75), attrs.get("bias", 1.0)
    sq = np.square(x.astype(np.float64 if x.dtype == np.float64 else np.float32))
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = np.pad(sq, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
    window = np.cumsum(padded, axis=1)
    window = np.concatenate([window[:, size - 1:size], window[:, size:] - window[:, :-size]], 1)
    return (x / (bias + alpha / size * window) ** beta).astype(x.dtype)


def _lp_shape(attrs, ins):
    norm_axis(attrs.get("axis", -1), len(ins[0].shape), "LpNormalization axis")
    if attrs.get("p", 2) not in (1, 2):
        raise ValueError(f"LpNormalization: p must be 1 or 2, got {attrs.get('p')}")
    return [(ins[0].shape, ins[0].dtype)]


@python_op("LpNormalization", _lp_shape)
def lp_norm(attrs, x):
    """y = x / ||x||_p along `axis` (default -1; p 1 or 2, default 2); 0 where the norm is 0"""
    axis, p = attrs.get("axis", -1), attrs.get("p", 2)
    norm = (np.sum(np.abs(x), axis, keepdims=True) if p == 1
            else np.sqrt(np.sum(np.square(x), axis, keepdims=True)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm == 0, 0, x / norm).astype(x.dtype)


@python_op("GlobalMaxPool", lambda attrs, ins: (_need_rank("GlobalMaxPool", ins[0], 3), [(
    ins[0].shape[:2] + (1,) * (len(ins[0].shape) - 2), ins[0].dtype)])[1])
def global_max_pool(attrs, x):
    """y = the max over all positions, keeping them as size-1 dims"""
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)


# ---- DepthToSpace, SpaceToDepth ---------------------------------------------------------------
def _block_shape(name, attrs, ins, to_space):
    x = ins[0].shape
    b = attrs.get("blocksize", 0)
    if len(x) != 4 or b < 1:
        raise ValueError(f"{name} takes a 4-D NCHW input and a positive blocksize, got "
                         f"{list(x)} and blocksize={b}")
    n, c, h, w = x
    if attrs.get("mode", "DCR") not in ("DCR", "CRD"):
        raise ValueError(f"{name}: mode must be DCR or CRD, got {attrs['mode']!r}")
    if to_space:
        if c % (b * b):
            raise ValueError(f"{name}: channels {c} of {list(x)} are not a multiple of "
                             f"blocksize^2 = {b * b}")
        return [((n, c // (b * b), h * b, w * b), ins[0].dtype)]
    if h % b or w % b:
        raise ValueError(f"{name}: H and W of {list(x)} must be multiples of blocksize {b}")
    return [((n, c * b * b, h // b, w // b), ins[0].dtype)]


@python_op("DepthToSpace", lambda attrs, ins: _block_shape("DepthToSpace", attrs, ins, True))
def depth_to_space(attrs, x):
    """y[n, c, h b + i, w b + j] = x[n, (i b + j) C' + c, h, w] (mode DCR, the default) or
    x[n, c b^2 + i b + j, h, w] (mode CRD), C' = C / b^2"""
    n, c, h, w = x.shape
    b = attrs["blocksize"]
    if attrs.get("mode", "DCR") == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return np.ascontiguousarray(t.reshape(n, c // (b * b), h * b, w * b))


@python_op("SpaceToDepth", lambda attrs, ins: _block_shape("SpaceToDepth", attrs, ins, False))
def space_to_depth(attrs, x):
    """y[n, (i b + j) C + c, h, w] (mode DCR, the default) or y[n, c b^2 + i b + j, h, w]
    (mode CRD) = x[n, c, h b + i, w b + j]: DepthToSpace's inverse"""
    n, c, h, w = x.shape
    b = attrs["blocksize"]
    t = x.reshape(n, c, h // b, b, w // b, b)
    t = t.transpose(0, 3, 5, 1, 2, 4) if attrs.get("mode", "DCR") == "DCR" else t.transpose(
        0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(t.reshape(n, c * b * b, h // b, w // b))


# ---- LpPool, GlobalLpPool ---------------------------------------------------------------------
def _lp_pool_geometry(attrs, shape):
    """(output spatial dims, pads begin, pads end, kernel, strides, dilations) by ONNX's pooling
    rules (pads, auto_pad SAME_UPPER / SAME_LOWER / VALID, ceil_mode)."""
    spatial = len(shape) - 2
    kernel = list(attrs.get("kernel_shape", ()))
    strides = list(attrs.get("strides", [1] * spatial))
    dil = list(attrs.get("dilations", [1] * spatial))
    if len(kernel) != spatial or len(strides) != spatial or len(dil) != spatial:
        raise ValueError(f"LpPool: kernel_shape {kernel}, strides {strides} and dilations "
                         f"{dil} need {spatial} entries each for input {list(shape)}")
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    ins = shape[2:]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-i // s) for i, s in zip(ins, strides)]
        total = [max((o - 1) * s + k - i, 0) for o, s, k, i in zip(out, strides, span, ins)]
        begin = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]
        return out, begin, [t - b for t, b in zip(total, begin)], kernel, strides, dil
    pads = [0] * (2 * spatial) if auto_pad == "VALID" else list(attrs.get("pads",
                                                                           [0] * (2 * spatial)))
    begin, end = pads[:spatial], pads[spatial:]
    ceil = bool(attrs.get("ceil_mode", 0))
    out = []
    for i, b, e, k, s in zip(ins, begin, end, span, strides):
        room = i + b + e - k
        o = (-(-room // s) if ceil else room // s) + 1
        if ceil and (o - 1) * s >= i + b:       # a last window starting in the end padding
            o -= 1
        out.append(o)
    return out, begin, end, kernel, strides, dil


def _lp_pool_shape(attrs, ins):
    _need_rank("LpPool", ins[0], 3)
    out = _lp_pool_geometry(attrs, ins[0].shape)[0]
    if any(o <= 0 for o in out):
        raise ValueError(f"LpPool: the output would be empty ({out})")
    return [(ins[0].shape[:2] + tuple(out), ins[0].dtype)]


@python_op("LpPool", _lp_pool_shape)
def lp_pool(attrs, x):
    """y = (sum over each window of |x|^p)^(1/p), zero padding (attrs kernel_shape, strides,
    dilations, pads, auto_pad, ceil_mode, p (default 2))"""
    out, begin, _, kernel, strides, dil = _lp_pool_geometry(attrs, x.shape)
    p = attrs.get("p", 2)
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    need = [(o - 1) * s + k for o, s, k in zip(out, strides, span)]
    powered = np.abs(x.astype(np.float64 if x.dtype == np.float64 else np.float32)) ** p
    widths = [(0, 0), (0, 0)] + [(b, max(n - b - i, 0))
                                 for b, n, i in zip(begin, need, x.shape[2:])]
    padded = np.pad(powered, widths)
    windows = np.lib.stride_tricks.sliding_window_view(padded, span, axis=tuple(
        range(2, x.ndim)))
    pick = (slice(None),) * 2 + tuple(slice(0, o * s, s) for o, s in zip(out, strides)) + tuple(
        slice(None, None, d) for d in dil)
    total = windows[pick].sum(axis=tuple(range(x.ndim, windows.ndim)))
    return (total ** (1.0 / p)).astype(x.dtype)


@python_op("GlobalLpPool", lambda attrs, ins: (_need_rank("GlobalLpPool", ins[0], 3), [(
    ins[0].shape[:2] + (1,) * (len(ins[0].shape) - 2), ins[0].dtype)])[1])
def global_lp_pool(attrs, x):
    """y = (sum over all positions of |x|^p)^(1/p), keeping them as size-1 dims (p 2)"""
    p = attrs.get("p", 2)
    total = np.sum(np.abs(x.astype(np.float64)) ** p, axis=tuple(range(2, x.ndim)),
                   keepdims=True)
    return (total ** (1.0 / p)).astype(x.dtype)
