"""``minitorch_edge.distributed``: PyTorch's ``torch.distributed`` names over MPI.

* process_group.py — init_process_group(backend="mpi"), ranks, and the collectives on Tensors
  (all_reduce, broadcast, all_gather, reduce_scatter, reduce, gather, scatter, barrier), each
  non-blocking underneath and waited for with a timeout;
* compression.py — gradient compressors with error feedback (quantization, sign, top-k), shared by
  the DDP communication hooks and the parameter server;
* algorithms/ddp_comm_hooks — ``DistributedDataParallel.register_comm_hook`` hooks;
* parameter_server.py — asynchronous training with a parameter server on rank 0 (a teaching
  implementation over MPI point-to-point messages).

``nn.parallel.DistributedDataParallel`` and ``data.DistributedSampler`` build on this package.
mpi4py is imported only by init_process_group.
"""
import importlib

from .process_group import (DistributedError, Future, GroupMember, ReduceOp, Work,  # noqa: F401
                            all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast,
                            broadcast_object_list,
                            destroy_process_group, gather, get_backend, get_rank, get_world_size,
                            group, init_process_group, is_available, is_initialized,
                            is_mpi_available, new_group, reduce, reduce_scatter,
                            reduce_scatter_tensor, scatter)

__all__ = ["ReduceOp", "DistributedError", "Work", "Future", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast",
           "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "reduce", "gather", "scatter", "broadcast_object_list", "new_group", "group", "GroupMember",
           "algorithms", "compression", "parameter_server"]


def __getattr__(name):
    if name in ("algorithms", "compression", "parameter_server"):
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
