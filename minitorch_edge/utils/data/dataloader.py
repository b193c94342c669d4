"""``torch.utils.data.dataloader``: the DataLoader and what PyTorch's module also exposes."""
from ...data.collate import default_collate, default_convert  # noqa: F401
from ...data.dataloader import DataLoader, get_worker_info  # noqa: F401
from ...data.dataset import Dataset, IterableDataset  # noqa: F401
from ...data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler  # noqa: F401

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]
