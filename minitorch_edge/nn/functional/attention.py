"""Attention as functions: scaled dot-product attention and the multi-head attention forward.

Scaled dot-product attention (Vaswani et al., 2017) mixes the values V by how well each query
matches each key::

    scores  = Q K^T * scale + bias          (..., L, S)   scale defaults to 1/sqrt(E)
    weights = softmax(scores, dim=-1)       each query's weights over the S keys sum to 1
    output  = weights V                     (..., L, Ev)

A mask says which (query, key) pairs take part: a bool mask keeps the True pairs (the others
get bias -inf, so their weight is exactly 0); a float mask is added to the scores as it is.
Gradients flow through ordinary Tensor ops (matmul, add, softmax), so no custom backward is
needed except the "safe" softmax (ops/softmax.py).

Fully masked rows. When every key of a query is masked, softmax sees a row of -inf. PyTorch
2.13's ``scaled_dot_product_attention`` returns 0 for such a row (and a zero gradient), and so
does ours. ``multi_head_attention_forward`` with ``need_weights=True`` uses a plain softmax,
exactly like PyTorch's, and returns nan there (in the output and in the weights); with
``need_weights=False`` it goes through scaled_dot_product_attention and returns 0.

``multi_head_attention_forward`` is the math of ``nn.MultiheadAttention`` (PyTorch's signature):
project Q, K, V, split ``embed_dim`` into ``num_heads`` heads of ``head_dim``, attend per head,
join the heads and project back with ``out_proj``. We keep the heads as a separate dim
(N, H, L, head_dim) instead of PyTorch's (N*H, L, head_dim); the results are the same.
"""
import math
import warnings

import numpy as np

from ...tensor import Tensor
from ...ops.join import cat
from ...ops.rearrange import pad
from ...ops.softmax import SafeSoftmax
from .dropout import dropout
from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _dropout(x, p):
    """Dropout that always applies (SDPA's dropout_p does not look at a training flag)."""
    return dropout(x, p=p, training=True)


def _shape(t):
    return tuple(t._data.shape)


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
    if len(dts) != 1 or query._data.dtype.kind != "f":
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
    scores = query.matmul(key.mT) * scale
    if is_causal:
        keep = np.tril(np.ones((L, S), np.bool_))
        scores = scores + Tensor._make(np.where(keep, 0, -np.inf).astype(scores._data.dtype))
    elif attn_mask is not None:
        try:
            full = np.broadcast_shapes(attn_mask._data.shape, scores._data.shape)
        except ValueError:
            full = None
        if full != scores._data.shape:
            raise RuntimeError(f"scaled_dot_product_attention(): attn_mask of shape "
                               f"{_shape(attn_mask)} does not broadcast to the attention "
                               f"scores' shape {tuple(scores._data.shape)} (..., L, S)")
        if attn_mask._data.dtype == np.bool_:
            bias = np.where(attn_mask._data, 0, -np.inf).astype(scores._data.dtype)
            scores = scores + Tensor._make(bias)
        else:
            scores = scores + attn_mask
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
        return Tensor._make(np.where(mask._data, -np.inf, 0).astype(dtype))
    return mask


def _check_mha(query, key, value, key_padding_mask, attn_mask, num_heads, embed_dim, separate,
               static_k, static_v):
    """Shape checks (before any work). Returns is_batched."""
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
    kpm_in, mask_in = key_padding_mask, attn_mask
    dtype = query._data.dtype
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", mask_in,
                                       "attn_mask", dtype)
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", dtype)
    if embed_dim_to_check <= 0 or num_heads <= 0 or embed_dim_to_check % num_heads:
        raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim_to_check}) must be "
                         f"divisible by num_heads ({num_heads})")
    batched = _check_mha(query, key, value, kpm_in, mask_in, num_heads, embed_dim_to_check,
                         use_separate_proj_weight, static_k, static_v)
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
    if not training:
        dropout_p = 0.0

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
    return out, weights
