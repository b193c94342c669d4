"""``torch.utils.data.sampler``: the samplers."""
from ...data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                             SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]
