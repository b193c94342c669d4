"""Embedding: a lookup table of learnable vectors, one row per token id; EmbeddingBag: the same
table, reduced (sum, mean or max) over each bag of ids.

``Embedding(num_embeddings, embedding_dim)`` holds ``weight`` (num_embeddings, embedding_dim),
initialised from N(0, 1) as in PyTorch; the row `padding_idx` (if given) starts at zero and
never receives a gradient. Calling it with an integer tensor of ids returns their rows.
``EmbeddingBag`` holds the same ``weight`` and returns one vector per bag (see
F.embedding_bag for the bag forms: a 2-D batch of fixed-length bags, or 1-D ids with offsets).
"""
from ... import creation
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..functional.sparse import check_indices, embedding, embedding_bag
from ..module import Module
from ..parameter import Parameter

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """A lookup table: row i of ``weight`` (num_embeddings, embedding_dim) for each
    integer index i of the input, y = weight[input]. The weight starts as N(0, 1) samples (its
    padding_idx row zero).

    Args:
        num_embeddings: the number of rows (valid indices are 0 .. num_embeddings - 1).
        embedding_dim: the size of each row.
        padding_idx: a row that stays zero and gets no gradient (e.g. the padding token).
        max_norm: rows looked up are first renormalized in place to at most this norm.
        norm_type: the p of that norm (default 2).
        scale_grad_by_freq: divide each row's gradient by its index's count in the batch.
        sparse: accepted; the gradient is a dense tensor.
        _weight: a Tensor (num_embeddings, embedding_dim) to use as the weight.
        _freeze: whether that weight is frozen (requires_grad False), as from_pretrained does.

    Shape:
        - Input: (*), an integer tensor of any shape.
        - Output: (*, embedding_dim).
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx ({padding_idx}) must be within "
                                 f"num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype,
                                                   device=device), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight has shape {tuple(_weight.shape)}, expected "
                                 f"({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        with no_grad():
            self.weight.normal_(0.0, 1.0)
            self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input):
        check_indices(input, self.num_embeddings, "Embedding")
        return embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        if self.sparse:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is `embeddings` (2-D); freeze=True stops its training."""
        if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, _weight=embeddings, _freeze=freeze, padding_idx=padding_idx,
                   max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


class EmbeddingBag(Module):
    """One reduced vector per bag of indices, without forming the (bag, dim)
    embeddings: the sum, mean (the default) or max of the rows of ``weight`` picked by each bag,
    optionally weighted (``per_sample_weights``, sum mode). ``forward(input, offsets=None,
    per_sample_weights=None)``: a 2-D input is B bags of equal length; a 1-D input is cut into
    bags at `offsets` (the start of each bag).

    Args:
        num_embeddings: the number of rows of ``weight``.
        embedding_dim: the size of each row.
        max_norm: rows looked up are first renormalized in place to at most this norm.
        norm_type: the p of that norm (default 2).
        scale_grad_by_freq: divide each row's gradient by its index's count in the batch.
        mode: "sum", "mean" or "max".
        sparse: accepted; the gradient is a dense tensor.
        _weight: a Tensor (num_embeddings, embedding_dim) to use as the weight.
        include_last_offset: `offsets` has one more entry, the end of the last bag (CSR style).
        padding_idx: an index left out of every bag's reduction (its row stays zero).

    Shape:
        - Input: (B, L) with offsets None, or (T,) with offsets (B,) (or (B + 1,)).
        - Output: (B, embedding_dim).
    """

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"EmbeddingBag: padding_idx ({padding_idx}) must be within "
                                 f"num_embeddings ({num_embeddings})")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype,
                                                   device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"EmbeddingBag: _weight has shape {tuple(_weight.shape)}, "
                                 f"expected ({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight)
        self.mode, self.sparse = mode, sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self):
        with no_grad():
            self.weight.normal_(0.0, 1.0)
            if self.padding_idx is not None:
                self.weight[self.padding_idx] = 0.0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                             self.scale_grad_by_freq, self.mode, self.sparse,
                             per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose weight is `embeddings` (2-D); freeze=True stops its training."""
        if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, _weight=embeddings, max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
