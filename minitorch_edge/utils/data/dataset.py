"""``torch.utils.data.dataset``: the dataset classes and random_split."""
from ...data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset,  # noqa: F401
                             Subset, TensorDataset, random_split)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "random_split"]
