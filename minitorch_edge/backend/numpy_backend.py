"""The numpy backend: the readable reference implementation of every kernel.

Each function takes numpy arrays and returns a numpy array. The native modules
(native_gemm.py, native_conv.py, native_pool.py, native_optim.py, native_transformer.py) offer
the same names with the same results, computed by libmte; backend/__init__.py's table says
which one runs, and tests compare the two. Keep this file the one a student reads to learn
what a kernel computes.
"""

import numpy as np

from .epilogue import ACTIVATIONS, check_out, epilogue_activation, result_into

NAME = "numpy"


def matmul(a, b):
    """np.matmul semantics: 1-D, 2-D and batched (broadcast) matrix products. bfloat16 or
    float16 operands of one dtype are multiplied in float32 and the result rounded once to
    their dtype (PyTorch's CPU rule; see half_gemm)."""
    if is_half_pair(a, b):
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    return np.matmul(a, b)


# ==== half precision ============================================================================
# bfloat16 (ml_dtypes) and float16 arrays are storage: every kernel that takes them widens to
# float32, computes, and rounds the result once to the inputs' dtype (to nearest even), as
# libmte's half-precision GEMM does (native/include/mte_bf16.h) and as PyTorch's CPU kernels
# do. Biases stay float32 (a half bias is widened first).
HALF_DTYPES = ("bfloat16", "float16")


def cast(x, np_dtype):
    """x.astype(np_dtype): a new array (the native version converts float32 <-> bfloat16 /
    float16 in libmte, exactly as ml_dtypes and numpy do, to nearest even, 10-20x faster)."""
    return x.astype(np_dtype)


def is_half(x):
    """True for a bfloat16 or float16 ndarray."""
    return isinstance(x, np.ndarray) and x.dtype.itemsize == 2 and x.dtype.name in HALF_DTYPES


def is_half_pair(a, b):
    """True when a and b are bfloat16 or float16 ndarrays of one dtype."""
    return is_half(a) and is_half(b) and a.dtype == b.dtype


def _check_half_pair(op, a, b, an, bn):
    if not is_half_pair(a, b):
        got = [getattr(x, "dtype", type(x).__name__) for x in (a, b)]
        raise TypeError(f"{op}: {an} and {bn} must be bfloat16 or float16 arrays of one dtype, "
                        f"got {got[0]} and {got[1]} (cast with .astype(ml_dtypes.bfloat16) or "
                        f".astype(np.float16))")


def _f32(x):
    return None if x is None else np.asarray(x).astype(np.float32)


def half_gemm(a, b, trans_a=False, trans_b=False, bias=None, bias_mode="col",
              out_float32=False):
    """op(a) @ op(b) (+ bias) for 2-D bfloat16 / float16 a and b of one dtype: float32
    products and sums, rounded once to their dtype (float32 with out_float32). bias: N
    values added to every row (bias_mode "col") or M values to every column ("row")."""
    _check_half_pair("half_gemm", a, b, "a", "b")
    y = gemm_epilogue(_f32(a), _f32(b), _f32(bias), bias_mode, None, None, trans_a, trans_b)
    return y if out_float32 else y.astype(a.dtype)


# ==== fused epilogue ============================================================================
# What libmte does to each tile of a GEMM's (or conv's) result while it is still in cache:
#     out = act(a @ b + bias + residual)
# Here it is spelled out in separate numpy steps; the native twin does it in one pass. The
# activations (ACTIVATIONS, epilogue_activation) and the out= rule (check_out, result_into)
# live in epilogue.py, shared with the native modules (imported above).


def gemm_epilogue(a, b, bias=None, bias_mode="col", act=None, residual=None, trans_a=False,
                  trans_b=False, out=None):
    """act(op(a) @ op(b) + bias + residual), op(x) = x.T if trans_x else x; a, b 2-D.

    bias: (N,) added to every row (bias_mode="col", a Linear layer's bias) or (M,) added to
    every column (bias_mode="row", a conv's per-channel bias); residual: (M, N), added after
    bias and before the activation (see epilogue_activation). Not differentiable by itself:
    the ops that use it compose the gradient from the pieces. `out`: an (M, N) array of the
    result's dtype to write it into (returned; epilogue.check_out)."""
    a = a.T if trans_a else a
    b = b.T if trans_b else b
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"gemm_epilogue: shapes cannot be multiplied "
                         f"({'x'.join(map(str, a.shape))} and {'x'.join(map(str, b.shape))})")
    m, n = a.shape[0], b.shape[1]
    if bias_mode not in ("col", "row"):
        raise ValueError(f"gemm_epilogue: bias_mode must be 'col' or 'row', got {bias_mode!r}")
    if act not in ACTIVATIONS:
        epilogue_activation(a[:0, :0], act)  # raises the error
    y = np.matmul(a, b)
    if bias is not None:
        want = n if bias_mode == "col" else m
        if bias.shape != (want,):
            raise ValueError(f"gemm_epilogue: bias has shape {bias.shape}, expected ({want},) "
                             f"for bias_mode={bias_mode!r} and a {m}x{n} result")
        y = y + (bias if bias_mode == "col" else bias[:, None])
    if residual is not None:
        if residual.shape != (m, n):
            raise ValueError(f"gemm_epilogue: residual has shape {residual.shape}, expected "
                             f"({m}, {n}), the shape of the result")
        y = y + residual
    return result_into("gemm_epilogue", epilogue_activation(y, act), out, (a, b))


def linear(x, w, bias=None, act=None, out=None):
    """y = act(x @ w.T (+ bias)): x (rows, in), w (out, in), bias (out,) or None -> (rows, out);
    act as in epilogue_activation. One call for a Linear layer's forward, or a Linear and the
    activation after it (the native twin is one transposed-B GEMM with a fused epilogue).
    `out`: a (rows, out) array of the result's dtype to write it into (returned)."""
    if is_half_pair(x, w):  # in float32, bias and activation included; rounded once
        y = linear(_f32(x), _f32(w), _f32(bias), act)
        return result_into("linear", y.astype(x.dtype), out, (x,))
    y = np.matmul(x, w.T)
    if bias is not None:
        y += bias
    return result_into("linear", epilogue_activation(y, act, "linear"), out, (x,))


# ==== convolution ===============================================================================
# Conventions shared by the conv kernels (the native twins use the same ones):
#   x        (N, C, H, W) input;  w (O, C // groups, kh, kw) weight;  bias (O,) or None
#   stride   (sh, sw);  dilation (dh, dw)
#   padding  (top, bottom, left, right): zeros added around x (asymmetric allowed, >= 0)
#   groups   C and O split into `groups` equal blocks; block g of the output sees only block g
#            of the input (groups == C is a depthwise convolution)
# The output has  Ho = (H + top + bottom - dh*(kh-1) - 1) // sh + 1  rows (Wo alike).
from numpy.lib.stride_tricks import as_strided


def conv_output_size(size, kernel, stride, pad_before, pad_after, dilation):
    """Rows (or columns) a convolution produces along one dim."""
    return (size + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1


def _pad_zeros(x, top, bottom, left, right):
    """x (N, C, H, W) surrounded by zeros (x itself when nothing is added)."""
    if not (top or bottom or left or right):
        return x
    n, c, h, w = x.shape
    out = np.zeros((n, c, h + top + bottom, w + left + right), x.dtype)
    out[:, :, top:top + h, left:left + w] = x
    return out


def _windows(xp, kh, kw, ho, wo, stride, dilation):
    """A read-only view V of xp (N, C, Hp, Wp) with shape (N, C, kh, kw, ho, wo):
    V[n, c, i, j, r, s] = xp[n, c, r*sh + i*dh, s*sw + j*dw] (the im2col matrix, uncopied)."""
    (sh, sw), (dh, dw) = stride, dilation
    n, c = xp.shape[:2]
    s_n, s_c, s_h, s_w = xp.strides
    return as_strided(xp, (n, c, kh, kw, ho, wo),
                      (s_n, s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw), writeable=False)


def _im2col(x, kh, kw, ho, wo, stride, padding, dilation, groups):
    """cols (groups, C//groups * kh * kw, N * ho * wo): column (n, r, s) of group g holds the
    input patch that output pixel (n, r, s) of group g sees, flattened as (c, i, j)."""
    n, c = x.shape[:2]
    view = _windows(_pad_zeros(x, *padding), kh, kw, ho, wo, stride, dilation)
    cols = np.ascontiguousarray(view.transpose(1, 2, 3, 0, 4, 5))   # (C, kh, kw, N, ho, wo)
    return cols.reshape(groups, (c // groups) * kh * kw, n * ho * wo)


def _col2im(cols, x_shape, kh, kw, ho, wo, stride, padding, dilation):
    """The adjoint of _im2col: every column entry is added back to the input pixel it was read
    from. cols (C*kh*kw, N*ho*wo) in _im2col's layout -> (N, C, H, W). One strided add per
    kernel offset (i, j), so no scatter is needed."""
    n, c, h, w = x_shape
    (sh, sw), (dh, dw) = stride, dilation
    top, bottom, left, right = padding
    hp = max(h + top + bottom, (ho - 1) * sh + dh * (kh - 1) + 1)
    wp = max(w + left + right, (wo - 1) * sw + dw * (kw - 1) + 1)
    cols = cols.reshape(c, kh, kw, n, ho, wo)
    xp = np.zeros((c, n, hp, wp), cols.dtype)
    for i in range(kh):
        for j in range(kw):
            xp[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh,
               j * dw:j * dw + (wo - 1) * sw + 1:sw] += cols[:, i, j]
    return np.ascontiguousarray(xp[:, :, top:top + h, left:left + w].transpose(1, 0, 2, 3))


def _grad_rows(grad_y, groups):
    """grad_y (N, O, ho, wo) -> (groups, O // groups, N * ho * wo), the GEMM layout."""
    n, o, ho, wo = grad_y.shape
    return np.ascontiguousarray(grad_y.transpose(1, 0, 2, 3)).reshape(groups, o // groups,
                                                                      n * ho * wo)


def conv2d(x, w, bias, stride, padding, dilation, groups, act=None, residual=None,
           inference=False, out=None):
    """2-D cross-correlation (what deep learning calls convolution), with an optional epilogue:

        z[n, o, r, s] = bias[o] + sum_{c in group(o), i, j}
                        w[o, c, i, j] * xpad[n, c, r*sh + i*dh, s*sw + j*dw]
        y = act(z + residual)        (residual: None or shaped like y; act: epilogue_activation)

    computed as im2col + one GEMM per group: (O/g, K) @ (K, N*Ho*Wo) with K = C/g*kh*kw.
    Returns (N, O, Ho, Wo), C-contiguous, in x's dtype. `inference` (True when no gradient
    will be taken) lets the native twin take its inference-only paths; here it changes
    nothing. `out`: an array of the result's shape and dtype to write it into (returned;
    epilogue.check_out)."""
    if act not in ACTIVATIONS:
        epilogue_activation(x[:0], act, "conv2d")  # raises the error
    if is_half_pair(x, w):  # in float32 (half_conv2d's rule), rounded once
        y = conv2d(_f32(x), _f32(w), _f32(bias), stride, padding, dilation, groups, act,
                   _f32(residual), inference)
        return result_into("conv2d", y.astype(x.dtype), out, (x,))
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    ho = conv_output_size(h, kh, stride[0], padding[0], padding[1], dilation[0])
    wo = conv_output_size(wd, kw, stride[1], padding[2], padding[3], dilation[1])
    cols = _im2col(x, kh, kw, ho, wo, stride, padding, dilation, groups)
    y = np.matmul(w.reshape(groups, o // groups, -1), cols)          # (g, O/g, N*ho*wo)
    y = y.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    if bias is not None:
        y = y + bias.reshape(1, o, 1, 1)
    if residual is not None:
        if residual.shape != y.shape:
            raise ValueError(f"conv2d: residual has shape {residual.shape}, expected the "
                             f"output's shape {y.shape}")
        y = y + residual
    y = epilogue_activation(y, act, "conv2d")
    if out is None:
        return np.ascontiguousarray(y)
    return result_into("conv2d", y, out, (x,))


def conv2d_prepare(x_shape, w, bias, stride, padding, dilation, groups, act=None,
                   residual=False):
    """An inference conv2d for inputs of shape `x_shape` and this constant w, decided once:
    returns run(x, residual=None, out=None) = conv2d(x, w, bias, ...). Here it only binds the
    arguments; the native twin also picks its kernel and prepares the weights once."""
    def run(x, residual=None, out=None):
        return conv2d(x, w, bias, stride, padding, dilation, groups, act, residual, out=out)
    return run


def conv2d_backward_input(grad_y, w, x_shape, stride, padding, dilation, groups):
    """dL/dx of conv2d for dL/dy = grad_y (also the forward of a transposed convolution):
    cols = W^T @ grad_y per group, then col2im. Only the Ho x Wo outputs in grad_y are used, so
    x_shape may hold rows no window reaches (their gradient is 0). bfloat16 / float16: in
    float32, rounded once."""
    if is_half_pair(grad_y, w):
        return conv2d_backward_input(_f32(grad_y), _f32(w), x_shape, stride, padding, dilation,
                                     groups).astype(w.dtype)
    o, cg, kh, kw = w.shape
    ho, wo = grad_y.shape[2:]
    wt = w.reshape(groups, o // groups, cg * kh * kw).transpose(0, 2, 1)
    cols = np.matmul(wt, _grad_rows(grad_y, groups))                 # (g, K, N*ho*wo)
    return _col2im(cols, x_shape, kh, kw, ho, wo, stride, padding, dilation)


def conv2d_backward_weight(grad_y, x, w_shape, stride, padding, dilation, groups):
    """dL/dw of conv2d for dL/dy = grad_y: grad_y @ cols^T per group (one GEMM over the
    N*Ho*Wo output pixels). Returns w_shape. bfloat16 / float16: in float32, rounded once."""
    if is_half_pair(grad_y, x):
        return conv2d_backward_weight(_f32(grad_y), _f32(x), w_shape, stride, padding,
                                      dilation, groups).astype(x.dtype)
    _, _, kh, kw = w_shape
    ho, wo = grad_y.shape[2:]
    cols = _im2col(x, kh, kw, ho, wo, stride, padding, dilation, groups)
    gw = np.matmul(_grad_rows(grad_y, groups), cols.transpose(0, 2, 1))  # (g, O/g, K)
    return gw.reshape(w_shape)


# ==== pooling ===================================================================================
# Pooling kernels take symmetric padding (ph, pw) as PyTorch does; ceil_mode lets the last
# window hang over the bottom/right edge (it must still start inside the input or the top/left
# padding). Max-pool indices are flat positions h * W + w inside each (H, W) plane (int64), as
# PyTorch returns them.

def pool_output_size(size, kernel, stride, pad, dilation, ceil_mode):
    """Rows (or columns) a pooling window produces along one dim (PyTorch's rule)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool_pad(x, ph, pw, hp, wp, fill):
    """x (N, C, H, W) placed at (ph, pw) in an (hp, wp) plane of `fill` (x when no padding)."""
    n, c, h, w = x.shape
    hp, wp = max(hp, h + ph), max(wp, w + pw)
    if (hp, wp) == (h, w):
        return x
    out = np.full((n, c, hp, wp), fill, x.dtype)
    out[:, :, ph:ph + h, pw:pw + w] = x
    return out


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool_taps(x, kernel, stride, padding, dilation, ceil_mode):
    """The windows of max pooling as a view (N, C, kh, kw, ho, wo) of x padded with the
    lowest value (so padding never wins; see _windows)."""
    _, _, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    ho = pool_output_size(h, kh, sh, ph, dh, ceil_mode)
    wo = pool_output_size(w, kw, sw, pw, dw, ceil_mode)
    xp = _pool_pad(x, ph, pw, (ho - 1) * sh + dh * (kh - 1) + 1,
                   (wo - 1) * sw + dw * (kw - 1) + 1, _lowest(x.dtype))
    return _windows(xp, kh, kw, ho, wo, (sh, sw), (dh, dw))


def max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out=None):
    """y[n, c, r, s] = max_{i, j} x[n, c, r*sh + i*dh - ph, s*sw + j*dw - pw] (padding never
    wins) and the flat index h*W + w of the winner: the first one on ties; in a window with NaNs
    the output is NaN and the index that of the last NaN (as PyTorch). Returns (y, indices);
    indices is int64. `out`: an array of y's shape and dtype to write y into (returned as y).
    Inference, which needs no indices: max_pool2d_inference."""
    n, c, _, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    view = _max_pool_taps(x, kernel, stride, padding, dilation, ceil_mode)
    ho, wo = view.shape[4:]
    # one contiguous copy with the window offset k = i*kw + j first: every later pass is a
    # fast contiguous one
    win = np.ascontiguousarray(view.transpose(2, 3, 0, 1, 4, 5)).reshape(kh * kw, n, c, ho, wo)
    best = win.max(axis=0)                           # NaN propagates
    arg = np.zeros(best.shape, np.int32)             # winning offset k
    for k in range(kh * kw - 1, -1, -1):             # downwards: the first maximum wins
        arg = np.where(win[k] == best, np.int32(k), arg)
    if x.dtype.kind == "f":
        nan = np.isnan(best)
        if nan.any():
            for k in range(kh * kw):                 # upwards: the last NaN wins
                arg = np.where(nan & np.isnan(win[k]), np.int32(k), arg)
    # index = (r*sh - ph + i*dh) * W + (s*sw - pw + j*dw): a per-pixel base + a per-k offset
    base = (np.arange(ho) * sh - ph)[:, None] * w + (np.arange(wo) * sw - pw)
    offset = (np.arange(kh * kw) // kw) * dh * w + (np.arange(kh * kw) % kw) * dw
    return result_into("max_pool2d", best, out, (x,)), base + offset[arg]


def max_pool2d_inference(x, kernel, stride, padding, dilation, ceil_mode, out=None):
    """max_pool2d's y alone, without the indices (inference: no gradient will be scattered
    back): a running maximum over the window's taps (NaN propagates, as in max_pool2d),
    written into `out` when it is given (an array of y's shape and x's dtype; returned)."""
    view = _max_pool_taps(x, kernel, stride, padding, dilation, ceil_mode)
    n, c, kh, kw, ho, wo = view.shape
    if out is None:
        y = np.empty((n, c, ho, wo), x.dtype)
    else:
        y = check_out("max_pool2d_inference", out, (n, c, ho, wo), x.dtype, (x,))
    np.copyto(y, view[:, :, 0, 0])
    for k in range(1, kh * kw):
        np.maximum(y, view[:, :, k // kw, k % kw], out=y)
    return y


def max_pool2d_backward(grad_y, indices, x_shape):
    """dL/dx of max pooling: each grad_y element is added to the input element its window took
    (indices as max_pool2d returns them; overlapping windows accumulate)."""
    n, c, h, w = x_shape
    planes = n * c
    if planes == 0 or grad_y.size == 0:         # an empty batch (or no channels): no windows
        return np.zeros(x_shape, grad_y.dtype)
    flat = indices.reshape(planes, -1) + (np.arange(planes, dtype=np.int64) * (h * w))[:, None]
    gx = np.bincount(flat.ravel(), weights=grad_y.ravel(), minlength=planes * h * w)
    return gx.astype(grad_y.dtype, copy=False).reshape(x_shape)


def adaptive_max_pool2d(x, out_h, out_w):
    """Adaptive max pooling: output cell (r, s) takes the max over rows
    floor(r*H/Ho) .. ceil((r+1)*H/Ho) - 1 and the matching columns. Returns (y, int64 indices)
    in max_pool2d's convention."""
    n, c, h, w = x.shape
    r0, r1 = _adaptive_bounds(h, out_h)
    c0, c1 = _adaptive_bounds(w, out_w)
    kh, kw = int((r1 - r0).max(initial=1)), int((c1 - c0).max(initial=1))
    rows = r0[:, None] + np.arange(kh)                 # (Ho, kh); past r1 masked below
    cols = c0[:, None] + np.arange(kw)
    ok = (rows < r1[:, None])[:, None, :, None] & (cols < c1[:, None])[None, :, None, :]
    rows, cols = np.minimum(rows, h - 1), np.minimum(cols, w - 1)
    win = x[:, :, rows[:, None, :, None], cols[None, :, None, :]]     # (N, C, Ho, Wo, kh, kw)
    win = np.where(ok, win, _lowest(x.dtype)).reshape(n, c, out_h, out_w, kh * kw)
    if x.dtype.kind == "f":   # NaN wins, as in max_pool2d
        nan = np.isnan(win)                # (the last NaN, like PyTorch's scan)
        last_nan = kh * kw - 1 - nan[..., ::-1].argmax(-1)
        arg = np.where(nan.any(-1), last_nan, win.argmax(-1))
    else:
        arg = win.argmax(-1)
    y = np.take_along_axis(win, arg[..., None], -1)[..., 0]
    idx = (r0[:, None] + arg // kw) * w + c0[None, :] + arg % kw
    return np.ascontiguousarray(y), idx.astype(np.int64)


def _adaptive_bounds(size, out):
    """Start and end (exclusive) of each of the `out` adaptive windows over `size` elements."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _avg_divisor(size, kernel, stride, pad, out, count_include_pad):
    """Per output position along one dim: how many positions the window counts."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    if count_include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


def _avg_scale(x_shape, kernel, stride, padding, ho, wo, count_include_pad, divisor_override,
               dtype):
    """The (ho, wo) array of divisors of average pooling."""
    if divisor_override:
        return np.asarray(divisor_override, dtype)
    dh = _avg_divisor(x_shape[2], kernel[0], stride[0], padding[0], ho, count_include_pad)
    dw = _avg_divisor(x_shape[3], kernel[1], stride[1], padding[1], wo, count_include_pad)
    return np.maximum(dh[:, None] * dw[None, :], 1).astype(dtype)


def avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
               out=None):
    """y[n, c, r, s] = (sum of the kh x kw window of zero-padded x) / divisor, where divisor is
    divisor_override if given, else the window's size clipped to the padded input
    (count_include_pad) or the number of real input elements it covers. `out`: an array of
    y's shape and x's dtype to write y into (returned)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    ho = pool_output_size(h, kh, sh, ph, 1, ceil_mode)
    wo = pool_output_size(w, kw, sw, pw, 1, ceil_mode)
    xp = _pool_pad(x, ph, pw, (ho - 1) * sh + kh, (wo - 1) * sw + kw, 0)
    if out is None:
        total = np.zeros((n, c, ho, wo), x.dtype)
    else:
        total = check_out("avg_pool2d", out, (n, c, ho, wo), x.dtype, (x,))
        total[...] = 0
    for i in range(kh):
        for j in range(kw):
            total += xp[:, :, i:i + (ho - 1) * sh + 1:sh, j:j + (wo - 1) * sw + 1:sw]
    total /= _avg_scale(x.shape, kernel, stride, padding, ho, wo, count_include_pad,
                        divisor_override, x.dtype)
    return total


def avg_pool2d_backward(grad_y, x_shape, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """dL/dx of avg_pool2d: grad_y / divisor spread evenly over each window (the output size
    is grad_y's, so ceil_mode is not needed)."""
    n, c, h, w = x_shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    ho, wo = grad_y.shape[2:]
    g = grad_y / _avg_scale(x_shape, kernel, stride, padding, ho, wo, count_include_pad,
                            divisor_override, grad_y.dtype)
    gp = np.zeros((n, c, max(h + 2 * ph, (ho - 1) * sh + kh), max(w + 2 * pw, (wo - 1) * sw + kw)),
                  grad_y.dtype)
    for i in range(kh):
        for j in range(kw):
            gp[:, :, i:i + (ho - 1) * sh + 1:sh, j:j + (wo - 1) * sw + 1:sw] += g
    return np.ascontiguousarray(gp[:, :, ph:ph + h, pw:pw + w])


# ==== softmax, LayerNorm, GELU, attention ======================================================
# The non-GEMM kernels of a Transformer block live in numpy_transformer.py.
from .numpy_transformer import (  # noqa: F401
    attention,
    attention_backward,
    gelu,
    gelu_backward,
    layer_norm,
    layer_norm_backward,
    softmax,
    softmax_backward,
)

# ==== optimizer updates =========================================================================
# One parameter's update, in place: param and the state arrays are overwritten, grad is only
# read. The math is PyTorch's; the operation order below fixes the float32 rounding, and the
# native twins (native/src/optim.c) follow it. Scalars are Python floats (numpy rounds them to
# the arrays' dtype), so derived coefficients such as 1 - dampening are computed in double.

def sgd_step(param, grad, buf, lr, momentum, dampening, weight_decay, nesterov, maximize,
             first_step):
    """SGD (with momentum): d = -grad if maximize else grad; d = d + wd * p; then, with
    momentum, buf = d on the first step, else buf = momentum * buf + (1 - dampening) * d, and
    d = d + momentum * buf (nesterov) or d = buf; finally p -= lr * d.
    buf is the momentum buffer (param's shape; None when momentum == 0). At most one
    temporary array is made (two with maximize)."""
    d, owned = (np.negative(grad), True) if maximize else (grad, False)
    if weight_decay != 0:
        t = np.multiply(param, weight_decay)
        t += d
        d, owned = t, True
    if momentum != 0:
        if first_step:
            np.copyto(buf, d)
        else:
            buf *= momentum
            buf += d if dampening == 0 else (1 - dampening) * d
        if nesterov:
            t = np.multiply(buf, momentum)
            t += d
            d, owned = t, True
        else:
            d, owned = buf, False
    if owned:
        d *= lr
    else:
        d = lr * d
    param -= d


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
              weight_decay, decoupled_weight_decay, maximize):
    """Adam / AdamW at step count t = step (after incrementing):
    g = -grad if maximize; p *= 1 - lr wd (decoupled) or g = g + wd p;
    m = lerp(m, g, 1 - beta1); v = beta2 v + (1 - beta2) g^2;
    v_max = max(v_max, v) and v := v_max (AMSGrad: when max_exp_avg_sq is an array);
    p -= (lr / (1 - beta1^t)) m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
    lerp(a, b, w) is a + w (b - a) for w < 0.5 and b - (b - a)(1 - w) otherwise (PyTorch)."""
    g = np.negative(grad) if maximize else grad
    if weight_decay != 0:
        if decoupled_weight_decay:
            param *= 1 - lr * weight_decay
        else:
            t = np.multiply(param, weight_decay)
            t += g
            g = t
    w = 1 - beta1
    t = np.empty_like(exp_avg)                          # the one scratch array (0-d too)
    np.subtract(g, exp_avg, out=t)                      # t = g - m
    if w < 0.5:
        t *= w
        exp_avg += t
    else:
        t *= 1 - w
        np.subtract(g, t, out=exp_avg)
    exp_avg_sq *= beta2
    np.multiply(g, g, out=t)
    t *= 1 - beta2
    exp_avg_sq += t
    v = exp_avg_sq
    if max_exp_avg_sq is not None:
        np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        v = max_exp_avg_sq
    np.sqrt(v, out=t)                                   # t = denominator
    t /= (1 - beta2 ** step) ** 0.5
    t += eps
    s = np.multiply(exp_avg, lr / (1 - beta1 ** step))
    s /= t
    param -= s


# ==== int8 inference (TFLite's integer-only scheme): numpy_int8.py ============================
from .numpy_int8 import (  # noqa: F401
    dequantize,
    qadd,
    qadd_prepare,
    qavg_pool2d,
    qconv2d,
    qconv2d_prepare,
    qlinear,
    qlinear_prepare,
    qmax_pool2d,
    quantize,
    requantize,
)


def _pairs(op, name, v, n1, n2):
    t = (v,) * n1 if isinstance(v, (int, np.integer)) else tuple(v)
    if len(t) not in (n1, n2):
        raise ValueError(f"{op}: {name} must be an int or {n1} or {n2} ints, got {v!r}")
    return t


def half_conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, out_float32=False):
    """conv2d of bfloat16 / float16 x (N, C, H, W) and w (O, C/groups, kh, kw) of one dtype:
    float32 products and sums (im2col + GEMM), rounded once to their dtype (float32 with
    out_float32). padding: an int, (ph, pw) or (top, bottom, left, right); bias float32."""
    _check_half_pair("half_conv2d", x, w, "x", "w")
    stride = _pairs("half_conv2d", "stride", stride, 2, 2)
    dilation = _pairs("half_conv2d", "dilation", dilation, 2, 2)
    padding = _pairs("half_conv2d", "padding", padding, 2, 4)
    if len(padding) == 2:
        padding = (padding[0], padding[0], padding[1], padding[1])
    y = conv2d(_f32(x), _f32(w), _f32(bias), stride, padding, dilation, groups)
    return y if out_float32 else y.astype(x.dtype)
