"""TransformerClassifier: classify a sequence of tokens with a small Transformer encoder.

    tokens (N, L) int64
      -> embed (Embedding vocab_size x d_model)
      -> [cls pooling: prepend the learned cls_token]
      -> + pos_embed[:, :L]  (learned positions, one row per position, at most max_len tokens)
      -> dropout -> encoder (nn.TransformerEncoder, num_layers x TransformerEncoderLayer,
                             batch_first=True, pre-norm by default)
      -> norm (final LayerNorm)
      -> pool: "mean" over the non-padded positions, or "cls": the cls position
      -> head (Linear d_model -> num_classes)

With ``pad_idx`` set, positions holding that token are masked out of attention (the encoder's
``src_key_padding_mask``), out of the mean, and the Embedding keeps that row at zero
(``padding_idx``). ``forward(tokens, padding_mask=None)`` also takes an explicit bool mask
(N, L), True = padding, which overrides the one derived from ``pad_idx``.

Keys: ``embed.weight, pos_embed, [cls_token], encoder.layers.{i}.self_attn.in_proj_weight, ...,
norm.weight, head.weight`` -- the same module built with torch.nn has the same state_dict.
Initialisation: pos_embed and cls_token from a truncated N(0, 0.02) (as ViT/BERT), the rest
PyTorch's layer defaults.

Attention costs O(L^2 * d_model) per layer; for the long sequences keep max_len small.
"""
from .. import creation, nn
from ..autograd.grad_mode import no_grad
from ..ops.join import cat

__all__ = ["TransformerClassifier"]


class TransformerClassifier(nn.Module):
    """Embedding + learned positions + Transformer encoder + LayerNorm + pooled Linear head.

    Args: ``vocab_size``, ``num_classes``, ``d_model``, ``nhead``, ``num_layers``,
    ``dim_feedforward``, ``max_len`` (longest sequence accepted), ``dropout``, ``pooling``
    ("mean" or "cls"), ``pad_idx`` (padding token or None), ``norm_first`` (pre-norm layers,
    default True), ``activation`` ("relu" or "gelu").
    """

    def __init__(self, vocab_size, num_classes, d_model=64, nhead=4, num_layers=2,
                 dim_feedforward=128, max_len=128, dropout=0.1, pooling="mean", pad_idx=None,
                 norm_first=True, activation="relu"):
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise ValueError(f"TransformerClassifier: pooling must be 'mean' or 'cls', got "
                             f"{pooling!r}")
        self.pooling, self.pad_idx, self.max_len = pooling, pad_idx, max_len
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_idx)
        n_pos = max_len + (1 if pooling == "cls" else 0)
        self.pos_embed = nn.Parameter(creation.zeros(1, n_pos, d_model))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        if pooling == "cls":
            self.cls_token = nn.Parameter(creation.zeros(1, 1, d_model))
            nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                           activation=activation, batch_first=True,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens, padding_mask=None):
        if tokens.dim() != 2 or tokens.dtype.is_floating_point:
            raise ValueError(f"TransformerClassifier: expected integer tokens of shape (N, L), "
                             f"got {tokens.dtype} of shape {tuple(tokens.shape)}")
        n, length = tokens.shape
        if length > self.max_len:
            raise ValueError(f"TransformerClassifier: sequence length {length} exceeds max_len="
                             f"{self.max_len}")
        if padding_mask is None and self.pad_idx is not None:
            padding_mask = tokens == self.pad_idx
        if padding_mask is not None and tuple(padding_mask.shape) != (n, length):
            raise ValueError(f"TransformerClassifier: padding_mask must have shape {(n, length)}, "
                             f"got {tuple(padding_mask.shape)}")
        x = self.embed(tokens)
        if self.pooling == "cls":
            x = cat([self.cls_token.expand(n, 1, x.shape[-1]), x], 1)
            if padding_mask is not None:
                padding_mask = cat([creation.zeros(n, 1, dtype=padding_mask.dtype),
                                    padding_mask], 1)
        x = self.dropout(x + self.pos_embed[:, :x.shape[1]])
        x = self.norm(self.encoder(x, src_key_padding_mask=padding_mask))
        if self.pooling == "cls":
            pooled = x[:, 0]
        elif padding_mask is None:
            pooled = x.mean(1)
        else:
            with no_grad():
                keep = padding_mask.logical_not().to(x.dtype).unsqueeze(-1)   # (N, L, 1)
                count = keep.sum(1).clamp(min=1.0)
            pooled = (x * keep).sum(1) / count
        return self.head(pooled)
