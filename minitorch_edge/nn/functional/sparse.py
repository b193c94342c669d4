"""Lookups by integer index: ``embedding`` (rows of a weight matrix picked by token id),
``embedding_bag`` (the sum, mean or max of the rows of each bag of ids) and ``one_hot``.

embedding is one Function, `Embedding`: the forward is a row gather, W[idx]; the
backward scatters each output gradient back onto the row it came from, adding up repeats,
which is its adjoint, `EmbeddingGrad`. Each is the other's backward, so gradients of gradients
work. The row `padding_idx` receives no gradient; scale_grad_by_freq divides each row's
gradient by how often the row occurs in the batch.

embedding_bag is composed: the rows are looked up with `Embedding`, scaled by the per-sample
weights, then reduced per bag, as a product with a constant (bags x positions) matrix for sum and
mean, or a gather of each bag's maximum (per column) for max. Gradients come from those ops.
"""
import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...backend.prepared import wrote as _wrote
from ...ops.join import cat
from ...tensor import Tensor

__all__ = ["embedding", "embedding_bag", "one_hot"]


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


# ---- embedding_bag ------------------------------------------------------------------------------
def _bag_bounds(input, offsets, include_last_offset, who):
    """(flat int64 indices, per-bag (start, end) arrays) for embedding_bag's input forms: 2-D
    (B, N) = B bags of N ids (offsets must be None), or 1-D ids with 1-D `offsets` (bag b starts
    at offsets[b]; with include_last_offset the last offset is the end of the last bag)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{who}: expected the indices as a Tensor, got {type(input).__name__}")
    if input._data.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{who}: if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets).__name__}")
        b, n = input._data.shape
        starts = np.arange(b, dtype=np.int64) * n
        return input._data.reshape(-1), starts, starts + n
    if input._data.ndim != 1:
        raise ValueError(f"{who}: input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input._data.ndim} (shape {tuple(input._data.shape)})")
    if offsets is None or not isinstance(offsets, Tensor):
        raise ValueError(f"{who}: offsets has to be a 1D Tensor but got "
                         f"{'None' if offsets is None else type(offsets).__name__} (with 1-D "
                         f"input, pass the start of each bag)")
    o = offsets._data
    if o.ndim != 1:
        raise ValueError(f"{who}: offsets has to be a 1D Tensor, got shape {tuple(o.shape)}")
    if o.dtype.kind not in "iu":
        raise RuntimeError(f"{who}: expected offsets of an integer dtype (int64 or int32), got "
                           f"{offsets.dtype.name}")
    length = input._data.shape[0]
    o = o.astype(np.int64)
    if o.size and o[0] != 0:
        raise RuntimeError(f"{who}: offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got {int(o[0])}")
    if o.size and o[-1] > length:
        raise RuntimeError(f"{who}: offsets[-1] can not be greater than input's length {length} "
                           f"but got offsets[-1] of {int(o[-1])}")
    if o.size and (np.diff(o) < 0).any():
        raise RuntimeError(f"{who}: offsets must be non-decreasing (each bag starts where or "
                           f"after the previous one does), got {o.tolist()}")
    if include_last_offset:
        return input._data, o[:-1], o[1:]
    return input._data, o, np.append(o[1:], length)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """out[b] = reduce over the ids i of bag b of w_i * weight[i] (B, D), where the bags are the
    rows of a 2-D input or the slices input[offsets[b]:offsets[b+1]] of a 1-D one. mode: 'sum',
    'mean' (sum / number of ids) or 'max' (per column); w_i = per_sample_weights (mode 'sum'
    only, same shape as input), else 1. Ids equal to padding_idx are left out (not counted by
    'mean'); an empty bag gives zeros. max_norm renormalises the looked-up rows in place, as
    embedding does. sparse=True is accepted; the gradient is dense. Gradients: dweight[i] +=
    w_i * dy[b] (sum), dy[b] / count_b (mean), or dy[b, d] at the row that won column d (max);
    dw_i = weight[i] . dy[b]; scale_grad_by_freq divides row i's gradient by how often i occurs
    in the input."""
    who = "embedding_bag"
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{who}: mode has to be one of sum, mean or max, got {mode!r}")
    if not isinstance(weight, Tensor) or weight._data.ndim != 2 or \
            not _dt.is_float_dtype(weight._data.dtype):
        what = (f"{weight.dtype.name} tensor of shape {tuple(weight.shape)}"
                if isinstance(weight, Tensor) else type(weight).__name__)
        raise RuntimeError(f"{who}: weight must be a 2-D floating point tensor (num_embeddings x "
                           f"embedding_dim), got {what}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"{who}: per_sample_weights was not None. "
                                      f"per_sample_weights is only supported for mode='sum' (got "
                                      f"mode='{mode}').")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"{who}: If per_sample_weights ({tuple(per_sample_weights.shape)}) "
                             f"is not None, then it must have the same shape as the input "
                             f"({tuple(input.shape)})")
        if per_sample_weights._data.dtype != weight._data.dtype:
            raise RuntimeError(f"{who}: per_sample_weights ({per_sample_weights.dtype.name}) must "
                               f"have the dtype of weight ({weight.dtype.name})")
    if scale_grad_by_freq and mode == "max":
        raise ValueError(f"{who}: max mode does not support scaling the gradient by the "
                         f"frequency")
    idx, starts, ends = _bag_bounds(input, offsets, include_last_offset, who)
    num, dim = weight._data.shape
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{who}: expected the indices to have an integer dtype (int64 or "
                           f"int32), but got {input.dtype.name}; convert with .long()")
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        k = int(np.argmax((idx < 0) | (idx >= num)))
        raise RuntimeError(f"{who}: Index {k} of input takes value {int(idx[k])} which is not in "
                           f"the valid range [0, {num})")
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"{who}: padding_idx must be within the number of embeddings, "
                               f"{-num} through {num - 1}, but got {padding_idx}")
        padding_idx %= num
    idx = idx.astype(np.int64)
    if max_norm is not None:
        _renorm_rows(weight, idx, max_norm, norm_type)
    rows = Embedding.apply(weight, idx, _position_weights(idx, num, None, scale_grad_by_freq))
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape((-1, 1))
    keep = np.ones(idx.shape, bool) if padding_idx is None else idx != padding_idx
    bag_of = np.repeat(np.arange(len(starts)), ends - starts)       # the bag of each position
    pos = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)] or [np.zeros(0, int)])
    pos, bag_of = pos[keep[pos]], bag_of[keep[pos]]
    if mode == "max":
        return _bag_max(rows, pos, bag_of, len(starts), dim)
    select = np.zeros((len(starts), idx.size), weight._data.dtype)
    if mode == "sum":
        select[bag_of, pos] = 1
    else:
        counts = np.bincount(bag_of, minlength=len(starts))
        select[bag_of, pos] = 1.0 / counts[bag_of]
    return Tensor._make(select).matmul(rows)


def _bag_max(rows, pos, bag_of, bags, dim):
    """Per bag and column, the maximum of the bag's rows (the first one on ties), as a gather
    from rows with a zero row appended for empty bags."""
    r = rows._data
    winner = np.full((bags, dim), r.shape[0], np.int64)       # row r.shape[0]: the zero row
    for b in range(bags):
        p = pos[bag_of == b]
        if p.size:
            winner[b] = p[np.argmax(r[p], axis=0)]
    padded = cat([rows, Tensor._make(np.zeros((1, dim), r.dtype))], 0)
    return padded.gather(0, Tensor._make(winner))


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
