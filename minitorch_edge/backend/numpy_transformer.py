"""The numpy twins of the Transformer block's non-GEMM kernels: softmax (and log-softmax),
LayerNorm, GELU and attention, forward and backward (re-exported by numpy_backend.py, where
the dispatch table finds them; native_transformer.py holds their libmte versions).

Row kernels work along the last axis (softmax along any `dim`); every kernel keeps its input's
float dtype (float64 included: gradcheck runs through these twins), and float16 is computed in
float32 and cast back.
"""
import math

import numpy as np

from .._special import erf

__all__ = ["softmax", "softmax_backward", "layer_norm", "layer_norm_backward", "gelu",
           "gelu_backward", "attention", "attention_backward"]


def _work_dtype(x):
    return np.float32 if x.dtype == np.float16 else x.dtype


def softmax(x, dim=-1, log=False, safe=False):
    """Softmax (log=True: log-softmax) of x along dim, stably:

        m = max(x), e = exp(x - m)        (safe: m = 0 on a slice of only -inf, so it gives 0)
        softmax = e / sum(e),   log_softmax = (x - m) - log(sum(e))

    A NaN in a slice makes the slice NaN. Gradient: softmax_backward."""
    out_dtype = x.dtype
    x = x.astype(_work_dtype(x), copy=False)
    if x.ndim == 0:
        x = x.reshape(1)
    if x.size == 0:
        return np.zeros(x.shape, out_dtype) if out_dtype.kind == "f" else x
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.amax(x, axis=dim, keepdims=True)
        if safe:
            m = np.where(m == -np.inf, 0, m).astype(x.dtype, copy=False)
        z = x - m
        if log:
            y = z - np.log(np.sum(np.exp(z), axis=dim, keepdims=True))
        else:
            e = np.exp(z)
            s = np.sum(e, axis=dim, keepdims=True)
            y = np.divide(e, s, out=np.zeros_like(e), where=s != 0) if safe else e / s
    return y.astype(out_dtype, copy=False)


def softmax_backward(y, dy, dim=-1, log=False):
    """dL/dx of softmax from its output y and dL/dy:
        softmax      dx = y (dy - sum(dy y))
        log_softmax  dx = dy - exp(y) sum(dy)          (sums along dim)"""
    if log:
        return dy - np.exp(y) * dy.sum(axis=dim, keepdims=True)
    return y * (dy - (dy * y).sum(axis=dim, keepdims=True))


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Normalize each row (the last axis, n values) of x:

        mean = sum(x) / n,  var = sum((x - mean)^2) / n,  rstd = 1 / sqrt(var + eps)
        y = (x - mean) * rstd * weight + bias                (weight, bias: (n,) or None)

    Returns (y, mean, rstd); mean and rstd have x's shape without its last axis (what
    layer_norm_backward reads). (y takes the dtype numpy promotes x, weight and bias to.)"""
    mean = x.mean(axis=-1, keepdims=True)
    xc = x - mean
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(var + x.dtype.type(eps))
    y = xc
    y *= rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y, mean[..., 0], rstd[..., 0]


def layer_norm_backward(dy, x, mean, rstd, weight=None, need_input=True, need_weight=True,
                        need_bias=True):
    """The gradients of layer_norm, with xhat = (x - mean) rstd and g = dy * weight:

        dx = rstd * (g - mean(g) - xhat * mean(g * xhat))      (means along the last axis)
        dweight = sum of dy * xhat over the rows,   dbias = sum of dy over the rows

    Returns (dx, dweight, dbias), each None unless asked for."""
    n = x.shape[-1]
    mean, rstd = mean[..., None], rstd[..., None]
    xhat = (x - mean) * rstd
    rows = (-1, n)
    dw = (dy * xhat).reshape(rows).sum(0) if need_weight else None
    db = dy.reshape(rows).sum(0) if need_bias else None
    dx = None
    if need_input:
        g = dy * weight if weight is not None else dy
        s1 = g.sum(axis=-1, keepdims=True)
        s2 = (g * xhat).sum(axis=-1, keepdims=True)
        dx = (rstd * (g - (s1 + xhat * s2) / n)).astype(x.dtype, copy=False)
    return dx, dw, db


_GELU_CLIP = 40.0    # beyond it e^(-x^2/2) and 1 - tanh^2 u are 0, and x^3 could overflow
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x, approximate="none"):
    """y = x Phi(x) = x/2 (1 + erf(x / sqrt 2)) (Phi: the standard normal CDF), or with
    approximate='tanh' y = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
    Computed in x's dtype (erf: _special.erf). Gradient: gelu_backward."""
    f = x.dtype.type
    if approximate == "tanh":
        xc = np.clip(x, -_GELU_CLIP, _GELU_CLIP)  # tanh u is exactly +-1 beyond: no x^3
        u = f(_SQRT_2_OVER_PI) * (xc + f(0.044715) * xc * xc * xc)
        return f(0.5) * x * (1 + np.tanh(u))
    return f(0.5) * x * (1 + erf(x * f(1 / math.sqrt(2.0))))


def gelu_backward(dy, x, approximate="none"):
    """dL/dx of gelu:  exact  dy (Phi(x) + x phi(x)),  phi(x) = exp(-x^2/2) / sqrt(2 pi);
    tanh  dy ((1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)),  t = tanh(u)."""
    f = x.dtype.type
    xc = np.clip(x, -_GELU_CLIP, _GELU_CLIP)
    if approximate == "tanh":
        t = np.tanh(f(_SQRT_2_OVER_PI) * (xc + f(0.044715) * xc * xc * xc))
        du = f(_SQRT_2_OVER_PI) * (1 + f(3 * 0.044715) * xc * xc)
        return dy * ((1 + t) * f(0.5) + x * f(0.5) * (1 - t * t) * du)
    cdf = (erf(x * f(1 / math.sqrt(2.0))) + 1) * f(0.5)
    pdf = np.exp(xc * xc * f(-0.5)) * f(1 / math.sqrt(2.0 * math.pi))
    return dy * (cdf + x * pdf)


def _is_half(a):
    """A bfloat16 / float16 array (2-byte floats: numpy's float16, ml_dtypes' bfloat16)."""
    return isinstance(a, np.ndarray) and a.dtype.itemsize == 2 and a.dtype.kind in "fV"


def _widen(a):
    """A half-precision array as float32 (exact); any other as it is."""
    return a.astype(np.float32) if _is_half(a) else a


def _put(g, dst):
    """g, or g written into the caller's array dst (returned) when one is given."""
    if dst is None:
        return g
    dst[...] = g
    return dst


def attention(q, k, v, mask=None, scale=1.0, causal=False, out=None):
    """Scaled dot-product attention on (B, H, rows, cols) arrays (any strides):

        scores = scale q k^T + mask      (B, H, L, S); causal: -inf where key j > query i
        p      = softmax(scores) over the keys, safe (a row of only -inf gives 0)
        out    = p v                     (B, H, L, Dv)

    q (B, H, L, D), k (B, H, S, D), v (B, H, S, Dv), mask None or broadcastable to
    (B, H, L, S). Returns (out, p); out, when given, is a (B, H, L, Dv) array written in
    place (a view into the caller's layout). Gradient: attention_backward.
    bfloat16 / float16 q, k, v: computed in float32 on the widened values (exact), out
    rounded once to their dtype; p float32 (as the native kernel)."""
    if _is_half(q):
        o, p = attention(*(_widen(a) for a in (q, k, v, mask)), scale, causal)
        return _put(o.astype(q.dtype), out), p
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    scores *= scores.dtype.type(scale)
    if mask is not None:
        scores += mask
    if causal:
        L, S = scores.shape[-2:]
        scores[..., ~np.tril(np.ones((L, S), np.bool_))] = -np.inf
    p = softmax(scores, -1, safe=True)
    o = np.matmul(p, v)
    if out is None:
        return o, p
    out[...] = o
    return out, p


def attention_backward(q, k, v, p, dout, scale, dq=None, dk=None, dv=None):
    """The gradients of attention from its weights p and dL/dout:

        dv = p^T dout,  dp = dout v^T,  ds = p (dp - rowsum(dp p)),
        dq = scale ds k,  dk = scale ds^T q

    Returns (dq, dk, dv); any of dq, dk, dv given (views into the caller's arrays) is
    written in place. bfloat16 / float16 q, k, v, dout: in float32 on the widened values,
    each gradient rounded once to their dtype."""
    if _is_half(q):
        grads = attention_backward(*(_widen(a) for a in (q, k, v, p, dout)), scale)
        return tuple(_put(g.astype(q.dtype), dst) for g, dst in zip(grads, (dq, dk, dv)))
    f = p.dtype.type(scale)
    ds = softmax_backward(p, np.matmul(dout, np.swapaxes(v, -1, -2)))
    grads = (np.matmul(ds, k) * f, np.matmul(np.swapaxes(ds, -1, -2), q) * f,
             np.matmul(np.swapaxes(p, -1, -2), dout))
    out = []
    for g, dst in zip(grads, (dq, dk, dv)):
        if dst is not None:
            dst[...] = g
            g = dst
        out.append(g)
    return tuple(out)
