"""The Transformer (Vaswani et al., 2017) as PyTorch builds it: encoder and decoder layers, their
stacks, and the whole encoder-decoder model, with PyTorch's names, signatures and state_dict
keys (``layers.0.self_attn.in_proj_weight``, ``layers.0.linear1.weight``, ``norm1.weight``, ...).

An encoder layer is two residual blocks, self-attention then a feed-forward network::

    post-norm (norm_first=False, the paper's):  x = norm1(x + SA(x));  x = norm2(x + FF(x))
    pre-norm  (norm_first=True):                x = x + SA(norm1(x));  x = x + FF(norm2(x))
    SA(x) = dropout1(self_attn(x, x, x)),  FF(x) = dropout2(linear2(dropout(act(linear1(x)))))

A decoder layer adds a cross-attention block between the two (queries from the target, keys and
values from the encoder's output ``memory``), with norm2/dropout2; its feed-forward block uses
norm3/dropout3.

A stack (TransformerEncoder / TransformerDecoder) holds ``num_layers`` deep copies of the layer
it is given (independent weights, all starting equal, as in PyTorch) and an optional final norm.
The feed-forward block runs ``activation(linear1(x))`` through nn/functional/fused.py's
``pair_forward``: one GEMM with the activation in its epilogue (ReLU in training too, GELU when
nothing is recorded), the same result as the two steps.

Differences from PyTorch: no fused inference fast path and no nested tensors (in PyTorch's eval
mode without grad, TransformerEncoder may return zeros at padded positions of
src_key_padding_mask; we return the values computed there).
"""
import copy

import numpy as np

from ... import dtypes as _dt
from ...ops.activation import gelu, relu
from ...tensor import Tensor
from ..containers import ModuleList
from ..functional.attention import _additive
from ..functional.fused import pair_forward
from ..module import Module
from ..init import xavier_uniform_
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerDecoder", "Transformer"]


def _activation(activation, layer):
    if isinstance(activation, str):
        if activation == "relu":
            return relu
        if activation == "gelu":
            return gelu
        raise RuntimeError(f"{layer}: activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise TypeError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got "
                        f"{type(activation).__name__}")
    return activation


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above (position i sees 0..i)."""
    np_dtype = _dt.to_dtype(dtype).np if dtype is not None else _dt.get_default_dtype().np
    return Tensor._make(np.triu(np.full((sz, sz), -np.inf), 1).astype(np_dtype))


def _canonical(mask, dtype):
    """bool mask (True = blocked) -> float mask (-inf / 0); float masks stay as they are."""
    if mask is None or not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        return mask
    return _additive(mask, dtype, -np.inf, 0.0)


def _detect_is_causal_mask(mask, is_causal, size):
    """is_causal=None: True when `mask` equals the causal mask of that size."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    m = mask._data
    if m.shape != (size, size):
        return False
    if m.dtype == np.bool_:
        return bool(np.array_equal(m, np.triu(np.ones((size, size), np.bool_), 1)))
    return bool(np.array_equal(m, np.triu(np.full((size, size), -np.inf), 1).astype(m.dtype)))


def _seq_len(x, batch_first):
    return x.shape[0] if x.dim() == 2 else x.shape[1 if batch_first else 0]


def _check_input(layer, x, d_model, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{layer}: {name} must be a Tensor, got {type(x).__name__}")
    if x.dim() not in (2, 3) or x.shape[-1] != d_model:
        raise RuntimeError(f"{layer}: expected {name} of shape (L, N, {d_model}), (N, L, "
                           f"{d_model}) or (L, {d_model}) (d_model={d_model}), got "
                           f"{tuple(x.shape)}")


class TransformerEncoderLayer(Module):
    """Self-attention + feed-forward, each with a residual connection and LayerNorm
    (see the file header for the two orders). src (L, N, E), (N, L, E) with batch_first, or
    (L, E). forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False).

    Post-norm (default): x = norm1(x + SA(x)); x = norm2(x + FF(x));
    pre-norm (norm_first): x = x + SA(norm1(x)); x = x + FF(norm2(x)), with
    FF(x) = linear2(dropout(activation(linear1(x)))).

    Args:
        d_model: E, the model width.
        nhead: the number of attention heads (must divide d_model).
        dim_feedforward: the hidden width of the feed-forward block (default 2048).
        dropout: dropout on the attention weights, the feed-forward and the residual branches.
        activation: the feed-forward's activation: "relu" (default), "gelu" or a callable.
        layer_norm_eps: the LayerNorms' eps (default 1e-5).
        batch_first: tensors are (N, L, E) instead of (L, N, E).
        norm_first: LayerNorm before each block (pre-norm) instead of after (post-norm).
        bias: learn the linear layers' and LayerNorms' biases (default True).

    Shape:
        - src: (L, N, E), (N, L, E) with batch_first, or (L, E); src_mask (L, L) or
          (N * nhead, L, L); src_key_padding_mask (N, L).
        - Output: the same shape as src.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerEncoderLayer")
        self.activation_relu_or_gelu = {relu: 1, gelu: 2}.get(self.activation, 0) \
            if not isinstance(self.activation, Module) else 0

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        _check_input("TransformerEncoderLayer", src, self.self_attn.embed_dim, "src")
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        h = pair_forward(self.linear1, self.activation, x)  # activation(linear1(x)), fused
        x = self.linear2(self.dropout(h))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention on the target, cross-attention to ``memory``, feed-forward; each with a
    residual connection and LayerNorm. forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=False,
    memory_is_causal=False).

    Post-norm (default): x = norm1(x + SA(x)); x = norm2(x + CA(x,
    memory)); x = norm3(x + FF(x)); pre-norm (norm_first) normalizes each block's input instead.

    Args:
        d_model: E, the model width.
        nhead: the number of attention heads (must divide d_model).
        dim_feedforward: the hidden width of the feed-forward block (default 2048).
        dropout: dropout on the attention weights, the feed-forward and the residual branches.
        activation: the feed-forward's activation: "relu" (default), "gelu" or a callable.
        layer_norm_eps: the LayerNorms' eps (default 1e-5).
        batch_first: tensors are (N, L, E) instead of (L, N, E).
        norm_first: LayerNorm before each block (pre-norm) instead of after (post-norm).
        bias: learn the linear layers' and LayerNorms' biases (default True).

    Shape:
        - tgt: (T, N, E) ((N, T, E) with batch_first, or (T, E)); memory: (S, N, E); tgt_mask
          (T, T); memory_mask (T, S); key padding masks (N, T) and (N, S).
        - Output: the same shape as tgt.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        E = self.self_attn.embed_dim
        _check_input("TransformerDecoderLayer", tgt, E, "tgt")
        _check_input("TransformerDecoderLayer", memory, E, "memory")
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        h = pair_forward(self.linear1, self.activation, x)  # activation(linear1(x)), fused
        x = self.linear2(self.dropout(h))
        return self.dropout3(x)


def _clones(module, n, stack):
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"{stack}: num_layers must be a positive int, got {n!r}")
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm`` if given.
    forward(src, mask=None, src_key_padding_mask=None, is_causal=None): is_causal=None detects
    a causal ``mask``. ``enable_nested_tensor`` and ``mask_check`` are accepted and ignored.

    Args:
        encoder_layer: a TransformerEncoderLayer, copied num_layers times (the copies do not share
            parameters).
        num_layers: the number of layers.
        norm: a module applied to the last layer's output (e.g. a LayerNorm), or None.
        enable_nested_tensor: accepted and ignored (PyTorch's fast path).
        mask_check: accepted and ignored.

    Shape: src as TransformerEncoderLayer's; the output has the shape of src.
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        dtype = src._data.dtype if isinstance(src, Tensor) else np.float32
        src_key_padding_mask = _canonical(src_key_padding_mask, dtype)
        mask = _canonical(mask, dtype)
        first = self.layers[0]
        batch_first = getattr(getattr(first, "self_attn", None), "batch_first", False)
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, is_causal=is_causal,
                        src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn (each attending to the
    same ``memory``), then ``norm`` if given. tgt_is_causal=None detects a causal tgt_mask.

    Args:
        decoder_layer: a TransformerDecoderLayer, copied num_layers times.
        num_layers: the number of layers.
        norm: a module applied to the last layer's output (e.g. a LayerNorm), or None.

    Shape: tgt and memory as TransformerDecoderLayer's; the output has the shape of tgt.
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        first = self.layers[0]
        batch_first = getattr(getattr(first, "self_attn", None), "batch_first", False)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                               _seq_len(tgt, batch_first))
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """The encoder-decoder Transformer: ``encoder`` (num_encoder_layers layers + LayerNorm) and
    ``decoder`` (num_decoder_layers layers + LayerNorm). Every parameter with more than one dim
    is re-initialised with xavier_uniform_ (as PyTorch does). forward(src, tgt, src_mask=None,
    tgt_mask=None, memory_mask=None, src_key_padding_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
    memory_is_causal=False) -> (T, N, E) decoder output.

    Args:
        d_model: E, the model width (default 512).
        nhead: the number of attention heads (default 8).
        num_encoder_layers: encoder depth (default 6).
        num_decoder_layers: decoder depth (default 6).
        dim_feedforward: the feed-forward width (default 2048).
        dropout: dropout everywhere (default 0.1).
        activation: "relu" (default), "gelu" or a callable.
        custom_encoder: a module used instead of the built encoder.
        custom_decoder: a module used instead of the built decoder.
        layer_norm_eps: the LayerNorms' eps (default 1e-5).
        batch_first: tensors are (N, S/T, E) instead of (S/T, N, E).
        norm_first: pre-norm layers.
        bias: learn the linear layers' and LayerNorms' biases (default True).

    Shape:
        - src: (S, N, E); tgt: (T, N, E) (batch_first: (N, S, E), (N, T, E); unbatched: (S, E),
          (T, E)); src_mask (S, S), tgt_mask (T, T), memory_mask (T, S); key padding masks
          (N, S), (N, T), (N, S).
        - Output: (T, N, E), the shape of tgt.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias)
        kw = dict(device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for p in self.parameters():
            if p.dim() > 1:
                xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batched = src.dim() == 3
        b = 0 if self.batch_first else 1
        if batched and (tgt.dim() != 3 or src.shape[b] != tgt.shape[b]):
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal, "
                               f"got src {tuple(src.shape)} and tgt {tuple(tgt.shape)} "
                               f"(batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must be equal "
                               f"to d_model={self.d_model}, got src {tuple(src.shape)} and tgt "
                               f"{tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask with -inf above the diagonal and 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)
