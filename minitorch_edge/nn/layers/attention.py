"""Attention layers: MultiheadAttention (PyTorch's, same parameters and state_dict keys) and
AttentionLayer, a small pre-norm self-attention block with a residual connection.

MultiheadAttention holds the projections; the math is ``F.multi_head_attention_forward``:

    q = x_q W_q^T + b_q,  k = x_k W_k^T + b_k,  v = x_v W_v^T + b_v
    head_h = softmax(q_h k_h^T / sqrt(head_dim) + mask) v_h        h = 1..num_heads
    out = concat(head_1, ..., head_H) W_o^T + b_o                   (out_proj)

When kdim == vdim == embed_dim the three input weights are stacked in one ``in_proj_weight``
(3E, E); otherwise they are ``q_proj_weight`` (E, E), ``k_proj_weight`` (E, kdim) and
``v_proj_weight`` (E, vdim). ``in_proj_bias`` (3E,) is always stacked.
Initialisation as PyTorch: xavier_uniform_ on the input weights, zeros for in_proj_bias and
out_proj.bias, out_proj.weight as any Linear, xavier_normal_ for bias_k/bias_v.

The attention itself runs fused (nn/functional/attention.py): with need_weights=False, no
attention dropout in training, no bias_k/bias_v or add_zero_attn, it is one node whose kernel
reads the heads from the packed in-projection and writes them merged, in the module's own
layout (batch_first inputs are never transposed); otherwise the composed Tensor-op path of
``F.multi_head_attention_forward`` runs.

Difference from PyTorch: there is no separate inference "fast path" (PyTorch's fused kernel in
eval mode without grad): every call computes what PyTorch's training path computes, the
same up to rounding.
"""
import numpy as np

from ... import creation
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..functional.attention import _multi_head_attention
from ..module import Module
from ..init import xavier_normal_, xavier_uniform_
from ..parameter import Parameter
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "AttentionLayer"]


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's out_proj: a plain Linear under PyTorch's name (quantization tools
    leave it alone, since MultiheadAttention reads its weight directly)."""


class MultiheadAttention(Module):
    """Multi-head attention (PyTorch's nn.MultiheadAttention).

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (attn_output, attn_weights or None).

    Shapes: query (L, N, E) (``batch_first``: (N, L, E)) or unbatched (L, E); key (S, N, kdim),
    value (S, N, vdim). attn_output is shaped like query; attn_weights (N, L, S) averaged over
    heads or (N, num_heads, L, S) with ``average_attn_weights=False`` ((L, S) / (H, L, S)
    unbatched). Masks: bool True = that position may NOT be attended (the opposite of
    F.scaled_dot_product_attention's bool mask); float masks are added to the scores.
    ``attn_mask`` (L, S) or (N*num_heads, L, S); ``key_padding_mask`` (N, S) or (S,).

    Args:
        embed_dim: E, the model width (query size and output size).
        num_heads: the number of heads (must divide embed_dim; each head is E / num_heads wide).
        dropout: dropout on the attention weights (default 0).
        bias: learn the input and output projections' biases (default True).
        add_bias_kv: append a learnt bias row to key and value (along S).
        add_zero_attn: append a zero row to key and value (along S).
        kdim: key size (default E); vdim: value size (default E).
        batch_first: inputs and output are (N, L, E) instead of (L, N, E).

    Shape: (as above) query (L, N, E), key (S, N, kdim), value (S, N, vdim) -> output (L, N, E).
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be greater than "
                             f"0, got embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads})")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads

        def empty(*shape):
            return Parameter(creation.empty(*shape, dtype=dtype, device=device))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = empty(1, 1, embed_dim)
            self.bias_v = empty(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                xavier_uniform_(w)
        if self.in_proj_bias is not None:
            with no_grad():
                self.in_proj_bias.zero_()
                self.out_proj.bias.zero_()
        if self.bias_k is not None:
            xavier_normal_(self.bias_k)
            xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got "
                                f"{type(t).__name__}")
        batched = query.dim() == 3
        if self.batch_first and batched and (key.dim() != 3 or value.dim() != 3):
            raise ValueError(f"MultiheadAttention: for 3-D query of shape "
                             f"{tuple(query.shape)}, expected 3-D key and value, got key "
                             f"{tuple(key.shape)} and value {tuple(value.shape)}")
        # batch_first inputs go in as they are: the fused path works in (N, L, E) directly
        out, weights = _multi_head_attention(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, self.training, key_padding_mask,
            need_weights, attn_mask, not self._qkv_same_embed_dim, self.q_proj_weight,
            self.k_proj_weight, self.v_proj_weight, None, None, average_attn_weights,
            is_causal, batch_first=self.batch_first and batched)
        return out, weights


class AttentionLayer(Module):
    """Pre-norm multi-head self-attention with a residual connection (no PyTorch twin):

        y = x + Dropout(MultiheadAttention(LayerNorm(x)))      (query = key = value)

    A ready-made attention block for models built layer by layer (the "AttentionLayer" of the
    layers tier). Sub-modules: ``norm`` (LayerNorm(d_model)), ``attn`` (MultiheadAttention,
    need_weights=False) and ``dropout``.

    Args: d_model, num_heads, dropout (attention weights and residual branch), causal (each
    position attends only to itself and earlier ones), batch_first (default True: (N, L, E)),
    bias, layer_norm_eps.
    forward(x, key_padding_mask=None, attn_mask=None): masks as MultiheadAttention's (bool True
    = blocked). With ``causal`` the causal mask is combined with ``attn_mask`` if one is given.

    Shape:
        - x: (N, L, d_model) (batch_first, the default), (L, N, d_model), or (L, d_model).
        - Output: the same shape as x.

    Args: layer_norm_eps is the LayerNorm's eps (default 1e-5).
    """

    def __init__(self, d_model, num_heads, dropout=0.0, causal=False, batch_first=True,
                 bias=True, layer_norm_eps=1e-5, device=None, dtype=None):
        super().__init__()
        self.causal = causal
        self.norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                              dtype=dtype)
        self.attn = MultiheadAttention(d_model, num_heads, dropout=dropout, bias=bias,
                                       batch_first=batch_first, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)

    def forward(self, x, key_padding_mask=None, attn_mask=None):
        h = self.norm(x)
        mask = attn_mask
        if self.causal:
            L = x.shape[1 if (self.attn.batch_first and x.dim() == 3) else 0]
            causal = np.triu(np.ones((L, L), np.bool_), 1)       # True above the diagonal
            if attn_mask is None:
                mask = Tensor._make(causal)
            elif attn_mask.dtype.is_floating_point:
                mask = attn_mask + Tensor._make(np.where(causal, -np.inf, 0).astype(
                    attn_mask._data.dtype))
            else:
                mask = Tensor._make(attn_mask._data | causal)
        out = self.attn(h, h, h, key_padding_mask=key_padding_mask, attn_mask=mask,
                        need_weights=False, is_causal=self.causal and attn_mask is None)[0]
        return x + self.dropout(out)

    def extra_repr(self):
        return f"causal={self.causal}"
