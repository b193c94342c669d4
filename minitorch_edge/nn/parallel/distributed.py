"""DistributedDataParallel: needs a process group, which minitorch_edge cannot create."""
from ..module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Raises ValueError on construction, as PyTorch does before ``init_process_group``:
    minitorch_edge has no ``torch.distributed``. Train with the plain module instead."""

    def __init__(self, module, *args, **kwargs):
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group. (minitorch_edge has no torch.distributed: "
                         "train the module itself, without DistributedDataParallel)")
