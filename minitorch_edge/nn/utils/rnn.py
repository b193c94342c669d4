"""Variable-length sequences for the recurrent layers: padding and packing.

A batch of sequences of different lengths is stored one of two ways:

* padded: one (T, B, *) tensor ((B, T, *) with ``batch_first``), T the longest length, the
  tail of each shorter sequence filled with ``padding_value`` (`pad_sequence`);
* packed: a `PackedSequence`, the sequences sorted by decreasing length and their elements
  laid out time step by time step, so that step t holds only the ``batch_sizes[t]`` sequences
  still running:

      lengths (3, 2, 1):  a1 a2 a3 / b1 b2 / c1   ->   data = a1 b1 c1 a2 b2 a3,
                                                       batch_sizes = (3, 2, 1)

  An RNN given a PackedSequence runs step t on ``batch_sizes[t]`` rows only: no work is spent
  on padding, and each sequence's final hidden state is the one after its own last element.
  ``sorted_indices`` (sorted position -> original batch index) and ``unsorted_indices`` (its
  inverse) remember the order the batch came in, when it had to be sorted
  (``enforce_sorted=False``).

Every conversion here is one gather of rows (``index_select``) with indices computed in numpy,
so it is differentiable: the gradient of packing is the scatter back into the padded layout
(zeros at the padding), the gradient of padding is the gather of the packed rows, and the
padding value gets no gradient.
"""
import collections

import numpy as np

from ... import creation
from ... import dtypes as _dt
from ...ops.join import cat
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


def _long(values):
    return Tensor._make(np.ascontiguousarray(values, dtype=np.int64))


def _ints(t):
    """A Tensor, array or sequence of ints -> a 1-D int64 numpy array."""
    if isinstance(t, Tensor):
        t = t._data
    return np.asarray(t).astype(np.int64, copy=False).reshape(-1)


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None stays None): out[permutation[i]] = i."""
    if permutation is None:
        return None
    p = _ints(permutation)
    out = np.empty_like(p)
    out[p] = np.arange(p.size, dtype=np.int64)
    return _long(out)


_Fields = collections.namedtuple("PackedSequence_",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_Fields):
    """A packed batch of variable-length sequences (a named tuple, as PyTorch's):

    * ``data`` (sum of lengths, *): the elements, time step by time step;
    * ``batch_sizes`` (int64, max length): how many sequences run at each step (non-increasing);
    * ``sorted_indices`` (int64, B) or None: sorted position -> original batch index;
    * ``unsorted_indices`` (int64, B) or None: the inverse permutation.

    Make one with `pack_padded_sequence` or `pack_sequence`, not by hand. As in PyTorch,
    ``PackedSequence(data, batch_sizes, sorted_indices)`` computes unsorted_indices, and
    ``PackedSequence((data, batch_sizes))`` is accepted too.
    """
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise ValueError("PackedSequence: expected data and batch_sizes, or one "
                                 "(data, batch_sizes) pair")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """A PackedSequence whose data is ``data.to(*args, **kwargs)`` (the index tensors stay
        int64); self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self, *args, **kwargs):
        return self

    def double(self):
        return self.to(dtype=_dt.float64)

    def float(self):
        return self.to(dtype=_dt.float32)

    def half(self):
        return self.to(dtype=_dt.float16)

    def long(self):
        return self.to(dtype=_dt.int64)

    def int(self):
        return self.to(dtype=_dt.int32)

    def short(self):
        return self.to(dtype=_dt.int16)

    def char(self):
        return self.to(dtype=_dt.int8)

    def byte(self):
        return self.to(dtype=_dt.uint8)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _batch_sizes(sorted_lengths):
    """batch_sizes[t] = how many of the (decreasing) lengths exceed t."""
    steps = np.arange(int(sorted_lengths[0]) if sorted_lengths.size else 0)
    return (sorted_lengths[None, :] > steps[:, None]).sum(1).astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) with ``batch_first``) of sequences with the
    given lengths (a list or a 1-D tensor, each in 1..T) into a PackedSequence.

    With ``enforce_sorted`` (the default) the lengths must already be decreasing; otherwise
    the batch is sorted by decreasing length first (a stable sort: equal lengths keep their
    order) and the permutation is kept in ``sorted_indices`` / ``unsorted_indices``.
    Differentiable in ``input`` (one index_select; padding positions get zero gradient)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pack_padded_sequence: input must be a Tensor, got "
                        f"{type(input).__name__}")
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise ValueError(f"pack_padded_sequence: input must have at least 2 dims (T, B, *) or "
                         f"(B, T, *), got shape {shape}")
    lens = _ints(lengths)
    T, B = (shape[1], shape[0]) if batch_first else (shape[0], shape[1])
    if lens.size != B:
        raise RuntimeError(f"pack_padded_sequence: expected `len(lengths)` to be equal to "
                           f"batch_size, but got {lens.size} (batch_size={B}, input of shape "
                           f"{shape})")
    if B and lens.min() <= 0:
        raise RuntimeError("pack_padded_sequence: length of all samples has to be greater than "
                           f"0, but found an element in 'lengths' that is <= 0: {lens.tolist()}")
    if B and lens.max() > T:
        raise RuntimeError(f"pack_padded_sequence: a length ({int(lens.max())}) exceeds the "
                           f"padded sequence length {T} (input of shape {shape}, batch_first="
                           f"{batch_first})")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                f"exportability. (got lengths {lens.tolist()})")
        order, sorted_indices = np.arange(B), None
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _long(order)
    sorted_lens = lens[order]
    steps, cols = np.nonzero(np.arange(T)[:, None] < sorted_lens[None, :])  # step-major
    b = order[cols]
    flat = b * T + steps if batch_first else steps * B + b
    data = input.reshape((T * B,) + shape[2:]).index_select(0, _long(flat))
    return PackedSequence(data, _long(_batch_sizes(sorted_lens)), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of `pack_padded_sequence`: (padded, lengths), padded (T, B, *) ((B, T, *)
    with ``batch_first``) in the batch's original order, T = the longest length or
    ``total_length`` (which may not be shorter), lengths an int64 tensor (B,).
    Differentiable in ``sequence.data``."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: expected a PackedSequence, got "
                        f"{type(sequence).__name__}")
    data = sequence.data
    bs = _ints(sequence.batch_sizes)
    T = bs.size
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
        T = int(total_length)
    B = int(bs[0]) if bs.size else 0
    N = int(data.shape[0])
    sorted_lens = (bs[None, :] > np.arange(B)[:, None]).sum(1).astype(np.int64)
    col = np.arange(B) if sequence.unsorted_indices is None else \
        _ints(sequence.unsorted_indices)                  # output column k <- sorted column
    offsets = np.zeros(T, np.int64)
    offsets[:bs.size] = np.cumsum(bs) - bs              # first row of each step in data
    bs_t = np.zeros(T, np.int64)                         # steps past the longest: none
    bs_t[:bs.size] = bs
    idx = np.where(col[None, :] < bs_t[:, None], offsets[:, None] + col[None, :], N)  # (T, B)
    if batch_first:
        idx = idx.T
    trail = tuple(data.shape[1:])
    pad = creation.full((1,) + trail, padding_value, dtype=data.dtype)
    padded = cat([data, pad], 0).index_select(0, _long(idx.reshape(-1)))
    return padded.reshape(idx.shape + trail), _long(sorted_lens[col])


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into one (T, B, *) tensor ((B, T, *) with
    ``batch_first``), T = max L_i, filling the rest with ``padding_value`` after each sequence
    (``padding_side="right"``) or before it ("left"). Differentiable in every sequence."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    try:
        seqs = list(sequences)
    except TypeError:
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}") from None
    if not seqs:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    for i, s in enumerate(seqs):
        if not isinstance(s, Tensor):
            raise TypeError(f"pad_sequence: sequence {i} is a {type(s).__name__}, not a Tensor")
        if s.dim() == 0:
            raise RuntimeError(f"pad_sequence: sequence {i} is 0-d; each sequence must be "
                               f"(L, *) with at least one dim")
        if tuple(s.shape[1:]) != tuple(seqs[0].shape[1:]):
            raise RuntimeError(f"pad_sequence: all sequences must have the same trailing dims, "
                               f"but sequence 0 has shape {tuple(seqs[0].shape)} and sequence "
                               f"{i} has shape {tuple(s.shape)}")
    lens = np.array([s.shape[0] for s in seqs], np.int64)
    T, trail = int(lens.max()), tuple(seqs[0].shape[1:])
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    N = int(lens.sum())
    pos = np.arange(T)[None, :] - (T - lens[:, None] if padding_side == "left" else 0)
    idx = np.where((pos >= 0) & (pos < lens[:, None]), starts[:, None] + pos, N)   # (B, T)
    if not batch_first:
        idx = idx.T
    pad = creation.full((1,) + trail, padding_value, dtype=seqs[0].dtype)
    padded = cat(seqs + [pad], 0).index_select(0, _long(idx.reshape(-1)))
    return padded.reshape(idx.shape + trail)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of `pad_sequence` (right padding): the list of sequences (L_i, *)."""
    lens = _ints(lengths)
    x = padded_sequences
    return [x[b, :int(n)] if batch_first else x[:int(n), b] for b, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences (L_i, *): `pad_sequence` then `pack_padded_sequence`."""
    seqs = list(sequences)
    lengths = [int(s.shape[0]) for s in seqs]
    return pack_padded_sequence(pad_sequence(seqs), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The inverse of `pack_sequence`: the list of sequences (L_i, *) in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
