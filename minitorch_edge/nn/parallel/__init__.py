"""``nn.parallel``: DataParallel and DistributedDataParallel as they behave without GPUs.

minitorch_edge runs on one CPU process, so:

* ``DataParallel(module)`` does what PyTorch's does when no GPU is available: it keeps
  ``module`` as its child ``.module`` (so state_dict keys gain the ``module.`` prefix, as in
  PyTorch) and forwards every call to it unchanged; ``device_ids`` is ``[]``.
* ``data_parallel(module, inputs)`` likewise calls ``module(*inputs)``.
* ``DistributedDataParallel(module)`` raises as PyTorch does without an initialised process
  group (ValueError): there is no ``torch.distributed`` here to initialise one.
"""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
