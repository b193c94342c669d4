"""Data loading (PyTorch's ``torch.utils.data``): datasets, samplers, collation, DataLoader.

Read in this order: dataset.py (what a dataset is), sampler.py (which indices, in which order;
distributed.py: each rank's share),
collate.py (samples -> batch), dataloader.py (the loop, and its worker processes), _worker.py
(what a worker does), transforms.py (image augmentation). ``data.datasets`` holds ready-made
datasets (Digits, MNIST, ...); it is imported on first use (``data.datasets.Digits``).
"""
import importlib

from . import transforms  # noqa: F401
from ._worker import WorkerInfo, get_worker_info  # noqa: F401
from .collate import collate, default_collate, default_collate_fn_map, default_convert  # noqa: F401
from .dataloader import DataLoader  # noqa: F401
from .distributed import DistributedSampler  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset,  # noqa: F401
                      TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "DataLoader",
           "default_collate", "default_convert", "collate", "default_collate_fn_map",
           "get_worker_info", "WorkerInfo", "transforms", "datasets"]


def __getattr__(name):
    # `datasets` is imported on first access (PEP 562): importing minitorch_edge.data stays
    # light, and a missing or broken datasets package raises its real ImportError here
    if name == "datasets":
        module = importlib.import_module(".datasets", __name__)
        globals()["datasets"] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
