"""Datasets: the two kinds of data source a DataLoader reads, and ways to combine them.

A map-style `Dataset` answers ``dataset[i]`` and ``len(dataset)``; an `IterableDataset` is a
stream (``iter(dataset)``), for data that cannot be indexed (a file read line by line). The
helpers wrap one or more datasets: `TensorDataset` (rows of tensors), `Subset` (some indices of
another dataset), `ConcatDataset` / `ChainDataset` (one after another) and `random_split`
(a seeded, non-overlapping split, by counts or by fractions), all as in ``torch.utils.data``.
"""
import bisect
import itertools
import math
import numbers
import warnings

from ..random import default_generator, np_rng
from ..tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and usually ``__len__``.

    ``a + b`` concatenates two datasets (a `ConcatDataset`). A subclass may also define
    ``__getitems__(indices)`` returning a list of samples, which the DataLoader then calls once
    per batch instead of ``__getitem__`` once per sample.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index)")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker process gets its own copy of the dataset and iterates
    it in full, so a stream must split itself between workers (or each sample is seen once per
    worker): inside ``__iter__``, ``get_worker_info()`` gives ``id`` and ``num_workers``.
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__()")

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate it, it cannot be "
                        f"indexed")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Rows of tensors: sample i is ``tuple(t[i] for t in tensors)``; all share dim 0's size."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}, expected "
                                f"a Tensor (wrap numpy arrays with minitorch_edge.from_numpy)")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: tensor {i} is 0-d; every tensor needs a first "
                                 f"dimension that indexes the samples")
        sizes = [t.shape[0] for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"TensorDataset: size mismatch between tensors: their first "
                             f"dimensions are {sizes}, they must all be equal")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order (``Subset(ds, [3, 1])[0] == ds[3]``)."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        fetch_many = getattr(self.dataset, "__getitems__", None)
        if callable(fetch_many):
            return fetch_many([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after another: index ``len(a) + i`` is ``b[i]``."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset does not support IterableDataset (got "
                                f"{type(d).__name__}); use ChainDataset for streams")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"ConcatDataset: absolute value of index {idx} should not "
                                 f"exceed dataset length {n}")
            idx += n
        if idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset of "
                             f"length {n}")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Streams one after another (the IterableDataset counterpart of ConcatDataset)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def _fractions_to_lengths(n, fractions):
    """PyTorch's rule: floor(n * frac) each, then the remainder one by one from the first."""
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"random_split: fraction at index {i} is {frac}, not between 0 "
                             f"and 1")
        lengths.append(int(math.floor(n * frac)))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"random_split: length of split at index {i} is 0; this might "
                          f"result in an empty dataset", stacklevel=3)
    return lengths


def random_split(dataset, lengths, generator=default_generator):
    """Split `dataset` into non-overlapping `Subset`s of the given lengths, in a random order
    drawn from `generator` (``Generator().manual_seed(42)`` for a reproducible split).

    `lengths` are counts that sum to ``len(dataset)``, or fractions that sum to 1
    (``[0.8, 0.2]``): each split gets ``floor(n * frac)`` and the remainder goes one sample at
    a time to the first splits, as PyTorch. Our permutations come from numpy's PCG64, so the
    same seed gives a different (but equally reproducible) split than PyTorch's.
    """
    lengths = list(lengths)
    n = len(dataset)
    if not lengths or not all(isinstance(x, numbers.Real) and not isinstance(x, bool)
                              for x in lengths):
        raise TypeError(f"random_split: lengths must be a non-empty list of counts or "
                        f"fractions, got {lengths!r}")
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        lengths = _fractions_to_lengths(n, lengths)
    if any(not float(x).is_integer() or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative whole counts or fractions "
                         f"summing to 1, got {lengths!r}")
    lengths = [int(x) for x in lengths]
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal "
                         f"the length of the input dataset ({n})")
    order = np_rng(generator).permutation(n).tolist()
    return [Subset(dataset, order[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
