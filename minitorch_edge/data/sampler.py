"""Samplers: which indices a DataLoader reads, and in which order.

A sampler is an iterable of dataset indices (`SequentialSampler`: 0, 1, 2, ...;
`RandomSampler`: a shuffle; `SubsetRandomSampler`: a shuffle of given indices;
`WeightedRandomSampler`: draws with given probabilities). `BatchSampler` groups any sampler's
indices into lists of `batch_size`; the DataLoader builds one for you from ``batch_size=``.

Randomness comes from a `minitorch_edge.Generator` (``generator=``) or, when none is given,
from the default generator, so ``manual_seed(0)`` makes every epoch's order reproducible.
"""
import numpy as np

from ..random import Generator, np_rng
from ..tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_positive_int(owner, name, value):
    if not _is_int(value) or value <= 0:
        raise ValueError(f"{owner}: {name} should be a positive integer value, but got "
                         f"{name}={value!r}")


def _check_bool(owner, name, value):
    if not isinstance(value, bool):
        raise ValueError(f"{owner}: {name} should be a boolean value, but got {name}={value!r}")


class Sampler:
    """Base class: subclasses define ``__iter__`` (yielding indices) and usually ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__()")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices: a fresh permutation each epoch, or with
    ``replacement=True`` `num_samples` independent uniform draws.

    ``num_samples`` (default ``len(data_source)``) may exceed the dataset's length without
    replacement: then whole permutations follow each other, the last one cut short. With no
    `generator`, each ``iter()`` seeds a private generator from the default one (as PyTorch).
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _check_bool("RandomSampler", "replacement", replacement)
        if num_samples is not None:
            _check_positive_int("RandomSampler", "num_samples", num_samples)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def _rng(self):
        if self.generator is not None:
            return np_rng(self.generator)
        seed = int(np_rng(None).integers(0, 2 ** 63))
        return np_rng(Generator().manual_seed(seed))

    def __iter__(self):
        n, total = len(self.data_source), self.num_samples
        rng = self._rng()
        if self.replacement:
            if n == 0 and total:
                raise ValueError("RandomSampler: cannot draw samples with replacement from an "
                                 "empty dataset")
            for _ in range(total // 32):
                yield from rng.integers(0, n, 32).tolist()
            yield from rng.integers(0, n, total % 32).tolist()
        elif n:
            for _ in range(total // n):
                yield from rng.permutation(n).tolist()
            yield from rng.permutation(n)[:total % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new order each epoch)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in np_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices in ``[0, len(weights))``, index i with probability proportional to
    ``weights[i]`` (the weights need not sum to 1). ``replacement=False`` never repeats an index
    (so `num_samples` is at most the number of non-zero weights).

    Example, balancing two classes: ``weights = 1 / class_count[labels]``.
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_positive_int("WeightedRandomSampler", "num_samples", num_samples)
        _check_bool("WeightedRandomSampler", "replacement", replacement)
        w = np.asarray(weights._data if isinstance(weights, Tensor) else weights,
                       dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1d sequence but given "
                             f"weights have shape {tuple(w.shape)}")
        if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and "
                             "not all zero (they are relative probabilities)")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"WeightedRandomSampler: cannot draw num_samples={num_samples} "
                             f"without replacement from {np.count_nonzero(w)} non-zero weights; "
                             f"use replacement=True or fewer samples")
        self.weights = Tensor._make(w)
        self.num_samples = int(num_samples)
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        w = self.weights._data
        picks = np_rng(self.generator).choice(w.size, self.num_samples,
                                              replace=self.replacement, p=w / w.sum())
        return iter(picks.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of `batch_size`; the last, shorter list is
    dropped with ``drop_last=True``.

    >>> list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        _check_positive_int("BatchSampler", "batch_size", batch_size)
        _check_bool("BatchSampler", "drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
