"""Attention as functions: scaled dot-product attention and the multi-head attention forward.

Scaled dot-product attention (Vaswani et al., 2017) mixes the values V by how well each query
matches each key::

    scores  = Q K^T * scale + bias          (..., L, S)   scale defaults to 1/sqrt(E)
    weights = softmax(scores, dim=-1)       each query's weights over the S keys sum to 1
    output  = weights V                     (..., L, Ev)

A mask says which (query, key) pairs take part: a bool mask keeps the True pairs (the others
get bias -inf, so their weight is exactly 0); a float mask is added to the scores as it is.

The fused path. Written as Tensor ops, attention is a dozen nodes (two batched matmuls, a
scale, a mask add, a softmax, and for multi-head attention the reshapes and transposes that
split and merge heads, each a copy), with the (..., L, S) scores and weights materialised
several times. Instead, `ScaledDotProductAttention` and `MultiheadSelfAttention` below are one
node each: their forward is one backend call, ``backend.attention`` (numpy_backend.py spells
it out; libmte runs every (batch, head) pair as a few register-tiled products and a softmax
per query, reading q, k, v and writing the output through strided views, so heads are split
and merged without copying), and their backward one ``backend.attention_backward`` from the
saved weights p:

    dv = p^T dO,   ds = p * (dO v^T - rowsum(dO v^T * p)),   dq = scale ds k,   dk = scale ds^T q

Under create_graph their backward is written with Tensor ops (p recomputed), so gradients of
gradients work. The composed Tensor-op path remains for what the fused one does not cover:
attention-weight dropout, a float mask that requires grad, and in multi-head attention
need_weights=True (the averaged weights are an output), bias_k/bias_v, add_zero_attn and
static keys/values.

Fully masked rows. When every key of a query is masked, softmax sees a row of -inf. PyTorch
2.13's ``scaled_dot_product_attention`` returns 0 for such a row (and a zero gradient), and so
does ours. ``multi_head_attention_forward`` with ``need_weights=True`` uses a plain softmax,
exactly like PyTorch's, and returns nan there (in the output and in the weights); with
``need_weights=False`` it goes through scaled_dot_product_attention and returns 0.

``multi_head_attention_forward`` is the math of ``nn.MultiheadAttention`` (PyTorch's signature):
project Q, K, V, split ``embed_dim`` into ``num_heads`` heads of ``head_dim``, attend per head,
join the heads and project back with ``out_proj``. We keep the heads as a separate dim
(N, H, L, head_dim) instead of PyTorch's (N*H, L, head_dim); the results are the same. For
self-attention the fused path reads the heads straight out of the packed (L, N, 3E) projection
(batch_first: (N, L, 3E), nn.MultiheadAttention never transposes its input).
"""
from ..._autocast import autocast_op
import math
import warnings

import numpy as np

from ... import backend
from ... import dtypes as _dt
from ...autograd.engine import mark_fresh
from ...autograd.function import Function
from ...autograd.grad_mode import _State
from ...ops._util import sum_to
from ...tensor import Tensor
from ...ops.join import cat
from ...ops.rearrange import pad
from ...ops.softmax import SafeSoftmax
from .dropout import dropout
from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_c = _dt.compute_array   # the array to compute on: bfloat16 widened to float32


def _dropout(x, p):
    """Dropout that always applies (SDPA's dropout_p does not look at a training flag)."""
    return dropout(x, p=p, training=True)


def _shape(t):
    return tuple(t._data.shape)


# ---- the fused path ------------------------------------------------------------------------------
def _as4(a, batch):
    """An array (*batch', rows, cols), its batch dims broadcast to `batch`, as the 4-D
    (B, H, rows, cols) the attention kernels take (a view; a copy only for 3+ batch dims)."""
    a = np.broadcast_to(a, batch + a.shape[-2:])
    if len(batch) == 2:
        return a
    if len(batch) < 2:
        return a.reshape((1,) * (2 - len(batch)) + a.shape)
    return a.reshape((-1, batch[-1]) + a.shape[-2:])


def _sum_to_np(a, shape):
    """a summed down to `shape` (undoing a broadcast), as ops._util.sum_to on arrays."""
    if a.shape == tuple(shape):
        return a
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and a.shape[lead + i] != 1)
    return a.sum(axis=axes).reshape(shape) if axes else a.reshape(shape)


def _causal_bias(L, S, dtype):
    """(L, S): 0 where key j <= query i, -inf above (top-left aligned)."""
    return np.where(np.tril(np.ones((L, S), np.bool_)), 0, -np.inf).astype(dtype)


def _attention_grads(q, k, v, grad, mask, scale, causal):
    """dq, dk, dv of softmax(q k^T scale + mask) v in Tensor ops, p recomputed (the backward
    of the fused Functions when it is itself recorded, create_graph=True); mask: an array or
    None. Batch dims broadcast, the gradients are summed back to each input's shape."""
    scores = q.matmul(k.mT) * scale
    L, S = scores._data.shape[-2:]
    if causal:
        scores = scores + Tensor._make(_causal_bias(L, S, scores._data.dtype))
    if mask is not None:
        scores = scores + Tensor._make(mask)
    p = SafeSoftmax.apply(scores, -1)
    dp = grad.matmul(v.mT)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    return (sum_to(ds.matmul(k) * scale, q._data.shape),
            sum_to(ds.mT.matmul(q) * scale, k._data.shape),
            sum_to(p.mT.matmul(grad), v._data.shape))


class ScaledDotProductAttention(Function):
    """out = softmax(q k^T * scale + mask) v for q (..., L, E), k (..., S, E), v (..., S, Ev),
    batch dims broadcast; mask: an additive float array broadcastable to (..., L, S) or None;
    causal: key j > query i is masked; a query whose keys are all masked gets 0.

    One backend.attention call; the weights p (B, H, L, S) are kept for the backward, one
    backend.attention_backward call (gradients summed back over broadcast dims)."""
    _builtin = True

    @staticmethod
    def forward(ctx, q, k, v, mask, scale, causal):
        qd, kd, vd = _c(q._data), _c(k._data), _c(v._data)   # bfloat16: in float32
        mask = _c(mask._data) if isinstance(mask, Tensor) else mask
        batch = np.broadcast_shapes(qd.shape[:-2], kd.shape[:-2], vd.shape[:-2])
        L, S = qd.shape[-2], kd.shape[-2]
        m4 = None if mask is None else _as4(np.broadcast_to(mask, batch + (L, S)), batch)
        out, p = backend.attention(_as4(qd, batch), _as4(kd, batch), _as4(vd, batch), m4,
                                   scale, causal)
        if ctx.needs_input_grad:
            ctx.save_for_backward(q, k, v)
            ctx.p, ctx.mask, ctx.scale, ctx.causal, ctx.batch = p, mask, scale, causal, batch
        return _dt.result_array(out.reshape(batch + out.shape[-2:]), q._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        q, k, v = ctx.saved_tensors
        if _State.enabled:
            return _attention_grads(q, k, v, grad, ctx.mask, ctx.scale, ctx.causal) + \
                (None, None, None)
        batch = ctx.batch
        grads = backend.attention_backward(
            _as4(_c(q._data), batch), _as4(_c(k._data), batch), _as4(_c(v._data), batch),
            ctx.p, _as4(_c(grad._data), batch), ctx.scale)
        out = []
        for g, t, need in zip(grads, (q, k, v), ctx.needs_input_grad):
            shape = t._data.shape
            out.append(Tensor._make(mark_fresh(_dt.result_array(_sum_to_np(
                g.reshape(batch + g.shape[-2:]), shape), t._data.dtype))) if need else None)
        return tuple(out) + (None, None, None)


def _heads(a, num_heads, batch_first, part=None, parts=1):
    """The (N, H, len, head_dim) view of a (len, N, parts*E) array (batch_first: (N, len,
    parts*E)) whose last dim holds `parts` blocks of E = H * head_dim columns side by side
    (q, k, v of the packed projection: parts = 3); `part` picks one block."""
    lead = a.shape[:-1]
    hd = a.shape[-1] // (parts * num_heads)
    r = a.reshape(lead + (parts, num_heads, hd))[..., 0 if part is None else part, :, :]
    return r.transpose(0, 2, 1, 3) if batch_first else r.transpose(1, 2, 0, 3)


class MultiheadSelfAttention(Function):
    """The attention step of self-attention, on the packed projection qkv = x W_in^T + b_in:
    qkv (L, N, 3E) (batch_first: (N, L, 3E)) holds q, k, v side by side, head h using
    columns h*hd .. (h+1)*hd of each (hd = E / num_heads). Returns o (L, N, E) (batch_first:
    (N, L, E)) with o[..., h*hd:(h+1)*hd] = softmax(q_h k_h^T * scale + mask) v_h, the heads
    already merged: the kernel reads q, k, v and writes o through head views, so nothing is
    reshaped, transposed or copied. mask: an additive float array broadcastable to
    (N, H, L, L) or None; causal as in ScaledDotProductAttention.

    Backward: one backend.attention_backward writing dq, dk, dv into the matching column
    blocks of d(qkv)."""
    _builtin = True

    @staticmethod
    def forward(ctx, qkv, num_heads, mask, scale, causal, batch_first):
        a = qkv._data     # bfloat16 / float16 as they are: the kernel widens pair by pair
        mask = _c(mask._data) if isinstance(mask, Tensor) else mask
        q4, k4, v4 = (_heads(a, num_heads, batch_first, i, 3) for i in range(3))
        out = np.empty(a.shape[:-1] + (a.shape[-1] // 3,), a.dtype)
        m4 = None if mask is None else np.broadcast_to(mask, q4.shape[:3] + k4.shape[2:3])
        _, p = backend.attention(q4, k4, v4, m4, scale, causal,
                                 out=_heads(out, num_heads, batch_first))
        if ctx.needs_input_grad:
            ctx.save_for_backward(qkv)
            ctx.p, ctx.mask, ctx.scale, ctx.causal = p, m4, scale, causal
            ctx.num_heads, ctx.batch_first = num_heads, batch_first
        return out

    @staticmethod
    def backward(ctx, grad):
        qkv, = ctx.saved_tensors
        H, bf = ctx.num_heads, ctx.batch_first
        if _State.enabled:
            E = qkv._data.shape[-1] // 3
            views = []
            for i in range(3):
                t = qkv.narrow(-1, i * E, E)
                t = t.reshape(*t._data.shape[:-1], H, E // H)
                views.append(t.permute(0, 2, 1, 3) if bf else t.permute(1, 2, 0, 3))
            g = grad.reshape(*grad._data.shape[:-1], H, E // H)
            g = g.permute(0, 2, 1, 3) if bf else g.permute(1, 2, 0, 3)
            back = (0, 2, 1, 3) if bf else (2, 0, 1, 3)
            parts = [d.permute(*back).reshape(*qkv._data.shape[:-1], E) for d in
                     _attention_grads(*views, g, ctx.mask, ctx.scale, ctx.causal)]
            return (cat(parts, -1),) + (None,) * 5
        a, g = qkv._data, grad._data
        if g.dtype != a.dtype:          # (mixed: both in float32, d rounded to qkv's dtype)
            a, g = _c(a).astype(np.float32), _c(g).astype(np.float32)
        d = np.empty(a.shape, a.dtype)
        backend.attention_backward(*(_heads(a, H, bf, i, 3) for i in range(3)), ctx.p,
                                   _heads(g, H, bf), ctx.scale,
                                   *(_heads(d, H, bf, i, 3) for i in range(3)))
        want = qkv._data.dtype
        return (Tensor._make(mark_fresh(d if d.dtype == want else backend.cast(d, want))),) + \
            (None,) * 5


# ---- scaled dot-product attention --------------------------------------------------------------
def _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, got {type(t).__name__}")
    dims = [t._data.ndim for t in (query, key, value)]
    if min(dims) < 2:
        raise RuntimeError(f"{op}(): expected query, key and value to be at least 2-D, got "
                           f"query {_shape(query)}, key {_shape(key)}, value {_shape(value)}")
    dts = {t._data.dtype for t in (query, key, value)}
    if len(dts) != 1 or not _dt.is_float_dtype(query._data.dtype):
        raise RuntimeError(f"{op}(): expected query, key and value to have the same floating "
                           f"dtype, got {query.dtype}, {key.dtype} and {value.dtype}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}(): dropout probability has to be between 0 and 1, but got "
                         f"{dropout_p}")
    E, L, S = query._data.shape[-1], query._data.shape[-2], key._data.shape[-2]
    if key._data.shape[-1] != E:
        raise RuntimeError(f"{op}(): query and key must have the same last dim (embedding "
                           f"size), got query {_shape(query)} and key {_shape(key)}")
    if value._data.shape[-2] != S:
        raise RuntimeError(f"{op}(): key and value must have the same sequence length (dim -2), "
                           f"got key {_shape(key)} and value {_shape(value)}")
    if enable_gqa:
        hq, hk, hv = (t._data.shape[-3] if t._data.ndim >= 3 else 1 for t in (query, key, value))
        if hk != hv or hq % hk:
            raise RuntimeError(f"{op}(): with enable_gqa the number of query heads ({hq}) must "
                               f"be a multiple of the key/value heads ({hk}, {hv})")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError(f"{op}(): explicit attn_mask should not be set when "
                               f"is_causal=True (pass one or the other)")
        if not isinstance(attn_mask, Tensor):
            raise TypeError(f"{op}(): attn_mask must be a Tensor, got "
                            f"{type(attn_mask).__name__}")
        md = attn_mask._data.dtype
        if md != np.bool_ and md != query._data.dtype:
            raise RuntimeError(f"{op}(): expected attn_mask dtype to be bool or to match query "
                               f"dtype {query.dtype}, got {attn_mask.dtype}")
    return L, S, E


def _repeat_heads(t, n):
    """(..., Hk, S, E) -> (..., Hk * n, S, E), each head repeated n times in a row."""
    if n == 1:
        return t
    s = t.shape
    return t.unsqueeze(-3).expand(*s[:-3], s[-3], n, s[-2], s[-1]).reshape(
        *s[:-3], s[-3] * n, s[-2], s[-1])


@autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + bias) V over the last two dims; batch dims broadcast.

    query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev).
    ``attn_mask``: bool (True = the pair takes part) or float (added to the scores), broadcast
    to (..., L, S). ``is_causal``: query i sees keys 0..i (top-left aligned; not together with
    attn_mask). ``scale`` defaults to 1/sqrt(E). ``dropout_p`` drops attention weights (always,
    whatever the module's mode: callers pass 0 in eval). ``enable_gqa``: key/value may have fewer
    heads (dim -3) than query; each is shared by a group of query heads.
    A query whose keys are all masked gets output 0 (as PyTorch 2.13 returns).
    """
    L, S, E = _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if enable_gqa and query._data.ndim >= 3 and key._data.ndim >= 3:
        n = query._data.shape[-3] // key._data.shape[-3]
        key, value = _repeat_heads(key, n), _repeat_heads(value, n)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    bias = None
    if attn_mask is not None and not is_causal:
        scores_shape = tuple(np.broadcast_shapes(query._data.shape[:-2],
                                                 key._data.shape[:-2])) + (L, S)
        try:
            full = np.broadcast_shapes(attn_mask._data.shape, scores_shape)
        except ValueError:
            full = None
        if full != scores_shape:
            raise RuntimeError(f"scaled_dot_product_attention(): attn_mask of shape "
                               f"{_shape(attn_mask)} does not broadcast to the attention "
                               f"scores' shape {scores_shape} (..., L, S)")
        if attn_mask._data.dtype == np.bool_:
            bias = _additive(attn_mask, query._data.dtype, 0.0, -np.inf)
        elif not (attn_mask.requires_grad and _State.enabled):
            bias = attn_mask
    if dropout_p == 0.0 and (attn_mask is None or bias is not None):
        return ScaledDotProductAttention.apply(query, key, value, bias, scale, is_causal)
    # the composed path: dropout on the weights, or a float mask that takes a gradient
    scores = query.matmul(key.mT) * scale
    if is_causal:
        scores = scores + Tensor._make(_causal_bias(L, S, scores._data.dtype))
    elif attn_mask is not None:
        scores = scores + (Tensor._make(bias) if bias is not None else attn_mask)
    weights = SafeSoftmax.apply(scores, -1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p)
    return weights.matmul(value)


# ---- multi-head attention ------------------------------------------------------------------------
def _err(msg):
    return RuntimeError(f"MultiheadAttention: {msg}")


def _canonical_mask(mask, name, other, other_name, dtype):
    """None, or a float mask: bool True -> -inf (that key is ignored), False -> 0."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got "
                        f"{type(mask).__name__}")
    kind = mask._data.dtype.kind
    if kind not in "bf":
        raise _err(f"only bool and floating types of {name} are supported, got {mask.dtype}")
    if other is not None and other._data.dtype != mask._data.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      f"type for both instead.", stacklevel=3)
    if kind == "b":
        return _additive(mask, dtype, -np.inf, 0.0)
    return mask


def _additive(mask, dtype, if_true, if_false):
    """A bool mask as an additive float mask, ``where(mask, if_true, if_false)`` in `dtype`,
    computed with Tensor ops so that graph.trace records it (a padding mask comes from the
    input tokens: as a constant it would be frozen to the example's)."""
    from ...ops.elementwise import where
    return where(mask, Tensor._make(np.array(if_true, dtype)),
                 Tensor._make(np.array(if_false, dtype)))


def _check_mha(query, key, value, key_padding_mask, attn_mask, num_heads, embed_dim, separate,
               static_k, static_v, batch_first=False):
    """Shape checks (before any work); batch_first: batched inputs are (N, len, E). Returns
    is_batched."""
    qd, kd, vd = (t._data.ndim for t in (query, key, value))
    if qd not in (2, 3):
        raise ValueError(f"MultiheadAttention: query should be unbatched 2-D (L, E) or batched "
                         f"3-D, got query of shape {_shape(query)}")
    batched = qd == 3
    if kd != qd or vd != qd:
        raise ValueError(f"MultiheadAttention: for {qd}-D query of shape {_shape(query)}, "
                         f"expected {qd}-D key and value, got key {_shape(key)} and value "
                         f"{_shape(value)}")
    q, k, v = (t._data.shape if batched else t._data.shape[:1] + (1,) + t._data.shape[1:]
               for t in (query, key, value))
    if batched and batch_first:
        q, k, v = ((t[1], t[0]) + t[2:] for t in (q, k, v))
    L, N, E = q
    S = k[0]
    if E != embed_dim:
        raise ValueError(f"MultiheadAttention: expected query with embedding dim {embed_dim} "
                         f"(last dim), got query of shape {_shape(query)}")
    if separate:
        if k[:2] != v[:2]:
            raise ValueError(f"MultiheadAttention: key's sequence and batch dims {k[:2]} do not "
                             f"match value's {v[:2]} (key {_shape(key)}, value {_shape(value)})")
    elif k != v:
        raise ValueError(f"MultiheadAttention: key shape {_shape(key)} does not match value "
                         f"shape {_shape(value)}")
    if k[1] != N:
        raise ValueError(f"MultiheadAttention: query and key have different batch sizes: query "
                         f"{_shape(query)}, key {_shape(key)}")
    if key_padding_mask is not None:
        S_kpm = static_k._data.shape[1] if static_k is not None else S
        want = (N, S_kpm) if batched else (S_kpm,)
        if tuple(key_padding_mask._data.shape) != want:
            raise _err(f"key_padding_mask should have shape {want}, got "
                       f"{_shape(key_padding_mask)}")
    if attn_mask is not None:
        head_rows = N * num_heads
        if attn_mask._data.ndim not in (2, 3) or (
                attn_mask._data.shape != (L, S) and attn_mask._data.shape != (head_rows, L, S)):
            raise _err(f"attn_mask should have shape {(L, S)} or {(head_rows, L, S)}, got "
                       f"{_shape(attn_mask)}")
    head_dim = embed_dim // num_heads
    for name, t in (("static_k", static_k), ("static_v", static_v)):
        if t is not None and (t._data.ndim != 3 or t._data.shape[0] != N * num_heads or
                              t._data.shape[2] != head_dim):
            raise _err(f"{name} should have shape ({N * num_heads}, S, {head_dim}), got "
                       f"{_shape(t)}")
    return batched


def _project(query, key, value, w, b, separate, q_w, k_w, v_w):
    """The input projections q = query W_q^T + b_q, k = ..., v = ... (one matmul for
    self-attention, two when key is value)."""
    E = query._data.shape[-1]
    if separate:
        bq, bk, bv = (None, None, None) if b is None else b.chunk(3)
        return linear(query, q_w, bq), linear(key, k_w, bk), linear(value, v_w, bv)
    if key is value and query is key:
        return linear(query, w, b).chunk(3, -1)
    if key is value:
        wq, wkv = w.split([E, 2 * E])
        bq, bkv = (None, None) if b is None else b.split([E, 2 * E])
        return (linear(query, wq, bq),) + tuple(linear(key, wkv, bkv).chunk(2, -1))
    ws = w.chunk(3)
    bs = (None, None, None) if b is None else b.chunk(3)
    return tuple(linear(x, wi, bi) for x, wi, bi in zip((query, key, value), ws, bs))


def _mha_fused(query, key, value, num_heads, w, b, separate, q_w, k_w, v_w, w_out, b_out,
               attn_mask, key_padding_mask, is_causal, batched, batch_first):
    """The fused path of multi-head attention: input projections, one attention node, out_proj.
    Self-attention (query is key is value, one stacked in_proj_weight) projects once and runs
    MultiheadSelfAttention on the packed result; otherwise the projections are viewed as
    (N, H, len, head_dim) heads for ScaledDotProductAttention. Masks (float, canonical) are
    folded into one additive array broadcastable to (N, H, L, S)."""
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    seq = 1 if batch_first else 0
    L, S, E = query._data.shape[seq], key._data.shape[seq], query._data.shape[-1]
    N, H = query._data.shape[1 - seq], num_heads
    hd = E // H
    mask = None                       # Tensor ops, so that graph.trace sees the masks
    if attn_mask is not None:
        mask = attn_mask.reshape(N, H, L, S) if attn_mask._data.ndim == 3 else attn_mask
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(N, 1, 1, S)
        mask = kpm if mask is None else mask + kpm
    scale = 1.0 / math.sqrt(hd)
    if not separate and query is key and key is value:
        o = MultiheadSelfAttention.apply(linear(query, w, b), H, mask, scale, is_causal,
                                         batch_first)
    else:
        order = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
        heads = [t.reshape(*t._data.shape[:2], H, hd).permute(*order) for t in
                 _project(query, key, value, w, b, separate, q_w, k_w, v_w)]
        o = ScaledDotProductAttention.apply(*heads, mask, scale, is_causal)
        o = o.permute(*((0, 2, 1, 3) if batch_first else (2, 0, 1, 3))).reshape(
            *query._data.shape[:2], E)
    out = linear(o, w_out, b_out)
    return (out if batched else out.squeeze(1)), None


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention on sequence-first inputs: query (L, N, E), key (S, N, Ek), value
    (S, N, Ev), or unbatched (L, E), (S, Ek), (S, Ev).

    q = query W_q^T + b_q (likewise k, v); per head h (head_dim = E / num_heads):
    o_h = softmax(q_h k_h^T / sqrt(head_dim) + mask) v_h; output = concat_h(o_h) W_o^T + b_o.
    Masks follow nn.MultiheadAttention: bool True = NOT allowed (-inf), float = added.
    ``attn_mask`` (L, S) or (N*num_heads, L, S); ``key_padding_mask`` (N, S) or (S,).
    Returns (output (L, N, E), weights (N, L, S) averaged over heads, (N, H, L, S) per head, or
    None when need_weights is False). ``is_causal`` is a hint that attn_mask is causal: an
    attn_mask is required; without key_padding_mask and need_weights it is replaced by a
    causal SDPA.
    """
    return _multi_head_attention(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
        key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
        k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal)


def _multi_head_attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                          in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                          out_proj_weight, out_proj_bias, training, key_padding_mask,
                          need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
                          k_proj_weight, v_proj_weight, static_k, static_v,
                          average_attn_weights, is_causal, batch_first=False):
    """multi_head_attention_forward, with batched inputs (N, len, E) when batch_first (what
    nn.MultiheadAttention(batch_first=True) passes: the fused path works in either layout, so
    its input is never transposed; the composed path transposes to (len, N, E) and back)."""
    # the fused path covers everything but weight outputs, dropout, the extra keys and values,
    # and masks that take a gradient
    fused = (not need_weights and (dropout_p == 0.0 or not training) and bias_k is None
             and bias_v is None and not add_zero_attn and static_k is None and static_v is None
             and not any(isinstance(m, Tensor) and m.requires_grad and _State.enabled
                         for m in (attn_mask, key_padding_mask)))
    transposed = batch_first and not fused and isinstance(query, Tensor) and query.dim() == 3
    if transposed:      # the composed path is sequence-first
        q2 = query.transpose(0, 1)
        k2 = q2 if key is query else key.transpose(0, 1)
        v2 = k2 if value is key else (q2 if value is query else value.transpose(0, 1))
        query, key, value, batch_first = q2, k2, v2, False
    kpm_in, mask_in = key_padding_mask, attn_mask
    dtype = query._data.dtype
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", mask_in,
                                       "attn_mask", dtype)
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", dtype)
    if embed_dim_to_check <= 0 or num_heads <= 0 or embed_dim_to_check % num_heads:
        raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim_to_check}) must be "
                         f"divisible by num_heads ({num_heads})")
    batched = _check_mha(query, key, value, kpm_in, mask_in, num_heads, embed_dim_to_check,
                         use_separate_proj_weight, static_k, static_v, batch_first)
    batch_first = batch_first and batched
    if is_causal and attn_mask is None:
        raise RuntimeError("MultiheadAttention: need attn_mask if specifying the is_causal "
                           "hint. You may use nn.Transformer.generate_square_subsequent_mask "
                           "to create this mask.")
    if (bias_k is None) != (bias_v is None):
        raise ValueError("MultiheadAttention: bias_k and bias_v must both be set or both None")
    if bias_k is not None and (static_k is not None or static_v is not None):
        raise ValueError("MultiheadAttention: bias_k/bias_v cannot be added to static_k/static_v")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None                    # the hint: SDPA builds the causal mask itself
    elif key_padding_mask is not None:
        is_causal = False
    if not training:
        dropout_p = 0.0
    if fused:
        return _mha_fused(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                          use_separate_proj_weight, q_proj_weight, k_proj_weight,
                          v_proj_weight, out_proj_weight, out_proj_bias, attn_mask,
                          key_padding_mask, is_causal, batched, batch_first)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query._data.shape
    H = num_heads
    hd = E // H

    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias,
                       use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight)
    if bias_k is not None:                  # one extra learned key/value at the end
        k = cat([k, bias_k.expand(1, N, E)])
        v = cat([v, bias_v.expand(1, N, E)])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))

    # (len, N, E) -> (N, H, len, head_dim)
    q = q.reshape(L, N, H, hd).permute(1, 2, 0, 3)
    k = static_k.reshape(N, H, -1, hd) if static_k is not None else \
        k.reshape(k.shape[0], N, H, hd).permute(1, 2, 0, 3)
    v = static_v.reshape(N, H, -1, hd) if static_v is not None else \
        v.reshape(v.shape[0], N, H, hd).permute(1, 2, 0, 3)
    if add_zero_attn:                       # one extra all-zero key/value at the end
        z = Tensor._make(np.zeros((N, H, 1, hd), k._data.dtype))
        k, v = cat([k, z], dim=2), cat([v, z], dim=2)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    S = k._data.shape[2]
    if key_padding_mask is not None and key_padding_mask._data.shape[-1] != S:
        raise _err(f"key_padding_mask should cover {S} keys, got {_shape(key_padding_mask)}")

    # one additive mask, broadcastable to (N, H, L, S)
    mask = None
    if attn_mask is not None:
        if attn_mask._data.ndim == 3:
            mask = attn_mask.reshape(N, H, L, S)
        else:
            mask = attn_mask
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(N, 1, 1, S)
        mask = kpm if mask is None else mask + kpm

    if need_weights:
        scores = (q * math.sqrt(1.0 / hd)).matmul(k.mT)
        if mask is not None:
            scores = scores + mask
        weights = scores.softmax(-1)        # plain softmax: nan for a fully masked row
        if dropout_p > 0.0:
            weights = _dropout(weights, dropout_p)
        out = weights.matmul(v)
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        if mask is not None and mask._data.ndim == 2:
            mask = mask.reshape(1, 1, L, S)
        out = scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal)
        weights = None
    out = out.permute(2, 0, 1, 3).reshape(L, N, E)
    out = linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return (out.transpose(0, 1) if transposed else out), weights
