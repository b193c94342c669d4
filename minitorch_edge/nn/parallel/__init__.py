"""``nn.parallel``: DataParallel (as it behaves without GPUs) and DistributedDataParallel.

* ``DataParallel(module)`` does what PyTorch's does when no GPU is available: it keeps
  ``module`` as its child ``.module`` (so state_dict keys gain the ``module.`` prefix, as in
  PyTorch) and forwards every call to it unchanged; ``device_ids`` is ``[]``.
* ``data_parallel(module, inputs)`` likewise calls ``module(*inputs)``.
* ``DistributedDataParallel(module)`` is data-parallel training over MPI processes
  (distributed.py; ``minitorch_edge.distributed.init_process_group`` first, else ValueError as
  in PyTorch).
"""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
