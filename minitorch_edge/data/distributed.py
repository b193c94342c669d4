"""DistributedSampler: each rank reads its own share of the dataset, all shares the same size.

As PyTorch's (``torch.utils.data.distributed.DistributedSampler``), index for index:

1. the order: ``randperm(len(dataset))`` from a generator seeded with ``seed + epoch`` (call
   `set_epoch` each epoch for a new order), or 0, 1, 2, ... without ``shuffle``;
2. the length made a multiple of the number of replicas: padded by repeating the first indices,
   or with ``drop_last`` cut to the largest multiple;
3. rank r takes every ``num_replicas``-th index starting at r.

PyTorch's randperm is a Fisher-Yates shuffle drawing 32-bit numbers from a Mersenne Twister
seeded with the seed; NumPy's ``RandomState(seed)`` is the same Mersenne Twister, so
`torch_randperm` reproduces torch's permutation exactly (tests compare them), and the same
``seed`` gives the same shards under both libraries.
"""
import math

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler", "torch_randperm"]


def torch_randperm(n, seed):
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed))``, as a list, for the
    sizes torch shuffles with 32-bit draws (n < 2**32 / 20)."""
    if n >= 2 ** 32 // 20:
        raise ValueError(f"torch_randperm: n={n} is too large (torch draws 64-bit numbers there)")
    draws = np.random.RandomState(int(seed) % 2 ** 32).randint(0, 2 ** 32, size=max(n - 1, 0),
                                                               dtype=np.uint64)
    order = list(range(n))
    for i, z in enumerate((draws % np.arange(n, 1, -1, dtype=np.uint64)).tolist()):
        order[i], order[i + z] = order[i + z], order[i]
    return order


class DistributedSampler(Sampler):
    """``DistributedSampler(dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
    drop_last=False)``; num_replicas and rank default to the process group's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from .. import distributed as dist
            if not dist.is_initialized():
                raise RuntimeError("DistributedSampler: num_replicas and rank default to the "
                                   "process group's, but none is initialized: call "
                                   "distributed.init_process_group() or pass both")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive int, got "
                             f"{num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """A new order for the next epoch (the generator is seeded with seed + epoch)."""
        self.epoch = epoch
