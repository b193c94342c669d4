"""``minitorch_edge.utils.data``: PyTorch's ``torch.utils.data`` module path.

The code lives in :mod:`minitorch_edge.data`; this package re-exports it under the names and
submodules PyTorch scripts import (``from torch.utils.data import DataLoader, TensorDataset``,
``torch.utils.data.dataloader.DataLoader``, ``torch.utils.data.sampler.RandomSampler``).
The classes are the same objects as ``minitorch_edge.data.*``.
"""
from ...data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,  # noqa: F401
                     IterableDataset, RandomSampler, Sampler, SequentialSampler, Subset,
                     SubsetRandomSampler, TensorDataset, WeightedRandomSampler, WorkerInfo,
                     collate, default_collate, default_collate_fn_map, default_convert,
                     get_worker_info, random_split)
from . import _utils, dataloader, dataset, sampler  # noqa: F401,E402

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "get_worker_info"]
