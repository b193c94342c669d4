"""Linear (and Linear + ReLU / ReLU6) under autocast as one op whose casts happen inside it.

PyTorch's CPU autocast runs ``linear(x, W, b)`` as three casts to the lower dtype (each a
ToCopy node), one addmm, and in backward a cast of each float32 parameter's gradient back
from the lower dtype. Here `AutocastLinear` is the whole of that, one node:

    forward   x and W to the lower dtype (W's cast kept for the autocast region, as
              autocast's cast cache), b rounded to it and added in float32 inside the GEMM,
              act (ReLU / ReLU6) applied to the float32 sums, one rounding of the output
    backward  dz = dy * mask (the activation's 0/1 derivative, read from the output as in
              fused.py); dx, dW, db from half-precision GEMMs straight into the inputs' own
              dtypes: a float32 parameter's gradient comes out of the GEMM's float32 sums,
              with no rounding to the lower dtype and no cast back

Output dtype and values are autocast's (the lower dtype; the same roundings of x, W, b and
of the result). The gradients are in the inputs' dtypes, as in PyTorch, and closer to the
exact ones: PyTorch rounds dW and db to the lower dtype before casting them back.
Recorded as one node, ``AutocastLinearBackward0`` (PyTorch: AddmmBackward0 after
ToCopyBackward0 nodes); a create_graph backward is written with Tensor ops (casts included),
so gradients of gradients work.
"""
import math

import numpy as np

from ... import _autocast, backend
from ... import dtypes as _dt
from ...autograd.engine import mark_fresh
from ...autograd.function import Function
from ...autograd.grad_mode import _State
from ...tensor import Tensor

__all__ = ["AutocastLinear", "autocast_linear"]

_F32 = np.dtype(np.float32)
_ACTS = (None, "relu", "relu6")
_SIX_BITS = {}    # np dtype -> bit pattern of 6.0 in it (relu6's mask on the bits)


def _as(a, np_dtype):
    return a if a.dtype == np_dtype else backend.cast(a, np_dtype)


def _weight_cast(w, np_dtype):
    """W's array in the lower dtype; a float32 leaf that requires grad is cast once per
    autocast region when the cache is on (PyTorch's cached_cast conditions). The entry
    shares _autocast.State.cache with the Tensor casts of other ops (see _autocast._cast)."""
    wd = w._data
    if wd.dtype == np_dtype:
        return wd
    if not (_autocast.State.cache_enabled and wd.dtype == _F32 and w._rg and w._fn is None
            and w._base is None):
        return backend.cast(wd, np_dtype)
    hit = _autocast.State.cache.get(id(w))
    if hit is not None and hit[0] is w and hit[2].dtype == np_dtype:
        return hit[2]
    arr = backend.cast(wd, np_dtype)
    if hit is None or hit[0] is not w:
        _autocast.State.cache[id(w)] = (w, None, arr)   # keeps w alive: its id stays unique
    return arr


def _mask(y, act):
    """The activation's derivative as a bool array, from the half-precision output y, on its
    bits (y >= +0 or nan after the activation): relu 0 < y <= inf, relu6 0 < y < 6."""
    bits = y.view(np.int16)
    if act == "relu":
        return np.greater(bits, 0) & np.less_equal(bits, _dt.half_inf_bits(y.dtype))
    six = _SIX_BITS.get(y.dtype)
    if six is None:
        six = _SIX_BITS[y.dtype] = int(np.array(6.0, y.dtype).view(np.int16))
    return np.greater(bits, 0) & np.less(bits, six)


class AutocastLinear(Function):
    """act(x W^T + b) computed in the autocast dtype `lower`, for x (*, in), W (out, in),
    b (out,) or None of any eligible float dtypes; act None, "relu" or "relu6"."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, w, b, lower, act):
        low = lower.np
        xd = x._data
        lead = xd.shape[:-1]
        rows = math.prod(lead)
        xh = _as(xd, low).reshape(rows, xd.shape[-1])
        wh = _weight_cast(w, low)
        bias = None if b is None else _as(_as(b._data, low), _F32)   # b as autocast rounds it
        out = backend.linear(xh, wh, bias, act=act)
        needs = ctx.needs_input_grad
        if needs:
            ctx.save_for_backward(x if needs[1] else None, w if needs[0] else None)
            ctx.xh, ctx.wh = (xh if needs[1] else None), (wh if needs[0] else None)
            ctx.dtypes = (xd.dtype, w._data.dtype, None if b is None else b._data.dtype)
            ctx.lower, ctx.mask = lower, None if act is None else _mask(out, act)
        return out.reshape(lead + (wh.shape[0],))

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        if _State.enabled:
            return _recorded_backward(ctx, grad) + (None, None)
        low = ctx.lower.np
        n_out = grad._data.shape[-1]
        lead = grad._data.shape[:-1]
        rows = math.prod(lead)
        g = _as(grad._data, low).reshape(rows, n_out)
        if ctx.mask is not None:   # on the bits: exact, and no widening of g
            g = np.multiply(g.view(np.int16), ctx.mask.reshape(rows, n_out)).view(low)
        x_dt, w_dt, b_dt = ctx.dtypes
        dx = dw = db = None
        if needs[0]:
            y = backend.half_gemm(g, ctx.wh, out_float32=x_dt != low)
            dx = _fresh(y.reshape(lead + ctx.wh.shape[1:]), x_dt)
        if needs[1]:
            dw = _fresh(backend.half_gemm(g, ctx.xh, trans_a=True, out_float32=w_dt != low), w_dt)
        if needs[2]:   # column sums as a GEMM with a row of ones: float32 sums, no widened g
            s = backend.half_gemm(np.ones((1, rows), low), g, out_float32=True).reshape(n_out)
            db = _fresh(s, b_dt)
        return dx, dw, db, None, None


def _fresh(a, np_dtype):
    return Tensor._make(mark_fresh(_as(a, np_dtype)))


def _recorded_backward(ctx, grad):
    """The backward as Tensor ops (create_graph=True): the casts, then linear's gradients."""
    from .linear import linear_grads
    x, w = ctx.saved_tensors
    lower = ctx.lower
    dz = grad.to(lower)
    if ctx.mask is not None:
        dz = dz * Tensor._make(ctx.mask.astype(dz._data.dtype))
    needs = ctx.needs_input_grad
    dx, dw, db = linear_grads(dz, None if x is None else x.to(lower),
                              None if w is None else w.to(lower), needs[:3])
    x_dt, w_dt, b_dt = ctx.dtypes
    back = [(dx, x_dt), (dw, w_dt), (db, b_dt)]
    return tuple(None if t is None else t.to(_dt._FROM_NP[d]) for t, d in back)


def _eligible(t):
    return isinstance(t, Tensor) and _autocast._eligible(t)


def autocast_linear(lower, input, weight, bias=None, act=None):
    """act(linear(input, weight, bias)) under autocast to `lower` as one AutocastLinear, or
    None when the case is not covered (a 1-D weight, a broadcast bias, float64, non-Tensor
    arguments, shapes that do not fit: the caller then runs linear's usual autocast path,
    whose checks raise the errors)."""
    if act not in _ACTS or not (_eligible(input) and _eligible(weight)
                                and (bias is None or _eligible(bias))):
        return None
    ws, xs = weight._data.shape, input._data.shape
    if (len(ws) != 2 or not xs or xs[-1] != ws[1]
            or (bias is not None and bias._data.shape != ws[:1])):
        return None
    return AutocastLinear.apply(input, weight, bias, lower, act)
