"""Lookups by integer index: ``embedding`` (rows of a weight matrix picked by token id) and
``one_hot``.

embedding is one Function, `Embedding`: the forward is a row gather, W[idx]; the
backward scatters each output gradient back onto the row it came from, adding up repeats,
which is its adjoint, `EmbeddingGrad`. Each is the other's backward, so gradients of gradients
work. The row `padding_idx` receives no gradient; scale_grad_by_freq divides each row's
gradient by how often the row occurs in the batch.
"""
import numpy as np

from ...autograd.function import Function
from ...backend.prepared import wrote as _wrote
from ...tensor import Tensor

__all__ = ["embedding", "one_hot"]


def _position_weights(idx, num, padding_idx, scale_grad_by_freq):
    """Per-position factor on the gradient (0 at padding_idx, 1/count with scale_grad_by_freq),
    or None when every factor is 1."""
    w = None
    if scale_grad_by_freq:
        counts = np.bincount(idx.reshape(-1), minlength=num)
        w = 1.0 / counts[idx]
    if padding_idx is not None:
        keep = idx != padding_idx
        w = keep.astype(np.float64) if w is None else w * keep
    return w


class Embedding(Function):
    """y[p, :] = W[idx[p], :] for every position p of idx (y has shape idx.shape + (D,)).
    dW[r, :] = sum over positions p with idx[p] = r of c[p] * dy[p, :], where c[p] is the
    position's factor (0 for padding_idx, 1/count(r) with scale_grad_by_freq, else 1)."""
    _builtin = True

    @staticmethod
    def forward(ctx, weight, idx, factors):
        if ctx.needs_input_grad:
            ctx.idx, ctx.factors, ctx.num = idx, factors, weight._data.shape[0]
        return np.take(weight._data, idx, axis=0)

    @staticmethod
    def backward(ctx, grad):
        return EmbeddingGrad.apply(grad, ctx.idx, ctx.factors, ctx.num), None, None


class EmbeddingGrad(Function):
    """dW = zeros(num, D); dW[idx[p]] += c[p] * g[p] (the adjoint of Embedding).
    Its own backward is the lookup: dg[p] = c[p] * ggW[idx[p]]."""
    _builtin = True

    @staticmethod
    def forward(ctx, g, idx, factors, num):
        if ctx.needs_input_grad:
            ctx.idx, ctx.factors = idx, factors
        gd = g._data
        D = gd.shape[-1]
        rows = gd.reshape(-1, D)
        if factors is not None:
            rows = rows * factors.reshape(-1, 1).astype(gd.dtype)
        out = np.zeros((num, D), gd.dtype)
        np.add.at(out, idx.reshape(-1), rows)
        return out

    @staticmethod
    def backward(ctx, gg):
        out = Embedding.apply(gg, ctx.idx, None)
        if ctx.factors is not None:
            out = out * Tensor._make(ctx.factors[..., None].astype(gg._data.dtype))
        return out, None, None, None


def check_indices(input, num, who):
    """IndexError unless every entry of the integer tensor `input` is in [0, num)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{who}: expected the indices as a Tensor, got {type(input).__name__}")
    idx = input._data
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{who}: expected an integer (int64 or int32) tensor of indices, got "
                        f"{input.dtype.name}; convert with .long()")
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= num:
            bad = lo if lo < 0 else hi
            raise IndexError(f"{who}: index {bad} is out of range [0, {num}) (the weight has "
                             f"{num} rows); valid indices are 0 to {num - 1}")
    return idx


def _renorm_rows(weight, idx, max_norm, norm_type):
    """Rescale, in place and outside autograd, the looked-up rows of weight whose p-norm
    exceeds max_norm to norm max_norm (scale = max_norm / (norm + 1e-7), as PyTorch)."""
    w = weight._data
    rows = np.unique(idx)
    if not rows.size:
        return
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        r = rows[big]
        w[r] = (w[r] * (max_norm / (norms[big] + 1e-7))[:, None]).astype(w.dtype)
        weight._vc[0] += 1
        _wrote(w)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` (num_embeddings, D) picked by the integer tensor `input`: output shape
    input.shape + (D,). padding_idx: that row gets no gradient (negative counts from the end).
    max_norm: looked-up rows with a larger norm are first rescaled in place (as PyTorch).
    sparse=True is accepted, but the gradient is a dense tensor."""
    if not isinstance(weight, Tensor) or weight._data.ndim != 2:
        raise RuntimeError("embedding(): weight must be a 2-D tensor (num_embeddings x "
                           "embedding_dim)")
    num = weight._data.shape[0]
    idx = check_indices(input, num, "embedding")
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(f"embedding(): padding_idx {padding_idx} must be within "
                             f"num_embeddings ({num})")
        padding_idx %= num
    if max_norm is not None:
        _renorm_rows(weight, idx, max_norm, norm_type)
    factors = _position_weights(idx, num, padding_idx, scale_grad_by_freq)
    return Embedding.apply(weight, idx, factors)


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape tensor.shape + (num_classes,) with a 1 at each index;
    num_classes=-1 uses max(tensor) + 1."""
    if not isinstance(tensor, Tensor) or tensor._data.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor "
                           "(int64); convert with .long()")
    idx = tensor._data
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("one_hot: can not infer total number of classes from empty "
                               "tensor; pass num_classes")
        num_classes = int(idx.max()) + 1
    if idx.size:
        if int(idx.min()) < 0:
            raise RuntimeError("one_hot: class values must be non-negative.")
        if int(idx.max()) >= num_classes:
            raise RuntimeError(f"one_hot: class values must be smaller than num_classes "
                               f"({num_classes}); got {int(idx.max())}.")
    out = np.zeros(idx.shape + (num_classes,), np.int64)
    np.put_along_axis(out, idx[..., None], 1, axis=-1)
    return Tensor._make(out)
