"""DistributedDataParallel: one model replica per process, gradients averaged over processes.

Each process (rank) runs the same model on its own share of the batch; after ``backward`` every
rank holds the average of all ranks' gradients, so every optimizer step is the same everywhere
and the replicas never drift apart. How:

1. Construction broadcasts rank 0's parameters and buffers, so all replicas start equal.
2. The parameters are split into buckets of about ``bucket_cap_mb`` MiB, in reverse parameter
   order (the order backward produces gradients in).
3. A post-accumulate-grad hook on each parameter marks it ready; when every parameter of a bucket
   is ready, the bucket's gradients are copied into one flat buffer and a non-blocking all-reduce
   (or a communication hook, `register_comm_hook`) starts, while backward goes on. Buckets start
   in index order on every rank, so the ranks' collectives match.
4. At the end of the pass (an autograd-engine callback, `queue_callback`) DDP waits for every
   bucket and writes the averages back into ``.grad``.

``no_sync()`` skips steps 3-4 (gradients accumulate locally; the next synced backward averages
the sum). With ``broadcast_buffers`` rank 0's buffers (BatchNorm statistics) are broadcast at
every forward, as in PyTorch. ``comm_stats()`` reports the bytes each step sent.
"""
from contextlib import contextmanager

import numpy as np

from ...tensor import Tensor
from ..module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    """Parameters reduced together: their place in one flat buffer, and this pass's state."""

    def __init__(self, index, params):
        self.index, self.params = index, params
        self.shapes = [tuple(p._data.shape) for p in params]
        sizes = [p._data.size for p in params]
        self.offsets = list(np.cumsum([0] + sizes[:-1]).astype(int))
        self.size = int(sum(sizes))
        self.dtype = params[0]._data.dtype
        self.ready = set()
        self.future = None


class DistributedDataParallel(Module):
    """``DistributedDataParallel(module, bucket_cap_mb=25, broadcast_buffers=True,
    find_unused_parameters=False)``; needs ``distributed.init_process_group`` first (ValueError
    otherwise, as in PyTorch). The wrapped model is ``.module``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
                 **kwargs):
        from ... import distributed as dist
        if process_group is None and not dist.is_initialized():
            raise ValueError("Default process group has not been initialized, please make sure to "
                             "call init_process_group. (minitorch_edge: "
                             "minitorch_edge.distributed.init_process_group(backend='mpi'), "
                             "launched with mpiexec -n N)")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got "
                            f"{type(module).__name__}")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if not isinstance(bucket_cap_mb, (int, float)) or bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be a positive number "
                             f"of MiB, got {bucket_cap_mb!r}")
        super().__init__()
        self.module = module
        self.process_group = process_group if process_group is not None else \
            dist.process_group._World.group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = bucket_cap_mb
        self.device_ids, self.output_device, self.dim = [], None, dim
        self.require_backward_grad_sync = True
        self._comm_state, self._comm_hook = None, None
        self._stats = {"steps": 0, "bytes_total": 0, "bytes_per_step": 0}
        seen, params = set(), []
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        self._params = params
        self._sync_module_states()
        self._buckets = self._make_buckets(params, int(bucket_cap_mb * 2 ** 20))
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in params]
        self._reset_pass()

    # ---- construction ---------------------------------------------------------------------------
    def _sync_module_states(self):
        """Rank 0's parameters and buffers, everywhere."""
        tensors = list(self.module.parameters()) + list(self.module.buffers())
        if self.process_group.size() > 1 and tensors:
            _broadcast_coalesced(tensors, self.process_group)

    @staticmethod
    def _make_buckets(params, cap_bytes):
        """Reverse parameter order, one dtype per bucket, each up to cap_bytes (at least one)."""
        buckets, current, size = [], [], 0
        for p in reversed(params):
            nbytes = p._data.nbytes
            if current and (size + nbytes > cap_bytes or p._data.dtype != current[0]._data.dtype):
                buckets.append(_Bucket(len(buckets), current))
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            buckets.append(_Bucket(len(buckets), current))
        return buckets

    # ---- forward --------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and self.process_group.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                _broadcast_coalesced(buffers, self.process_group)
        self._reset_pass()
        return self.module(*inputs, **kwargs)

    @contextmanager
    def no_sync(self):
        """Inside: backward accumulates gradients locally, without communication."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        """``hook(state, bucket) -> Future`` replaces the all-reduce of each bucket (see
        distributed.algorithms.ddp_comm_hooks); the Future's value is the averaged flat buffer."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook can only be called once")
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        self._comm_state, self._comm_hook = state, hook

    def comm_stats(self):
        """Bytes this rank sent: ``bytes_per_step`` (the last synced backward), ``bytes_total``,
        ``steps``, ``buckets``."""
        return dict(self._stats, buckets=len(self._buckets))

    # ---- backward -------------------------------------------------------------------------------
    def _reset_pass(self):
        self._pass_started = False
        self._next_bucket = 0
        self._pass_bytes = 0
        for b in self._buckets:
            b.ready.clear()
            b.future = None

    def _grad_ready(self, p):
        """A post-accumulate-grad hook: p.grad is final for this pass."""
        if not self.require_backward_grad_sync:
            return
        if not self._pass_started:
            from ...autograd.engine import queue_callback
            self._pass_started = True
            self._state_bytes0 = getattr(self._comm_state, "bytes_sent", None)
            queue_callback(self._finish_pass)
        bucket = self._bucket_of[id(p)]
        bucket.ready.add(id(p))
        while self._next_bucket < len(self._buckets):          # start buckets in index order
            b = self._buckets[self._next_bucket]
            if len(b.ready) < len(b.params):
                break
            self._launch(b)

    def _launch(self, b):
        from ...distributed.algorithms.ddp_comm_hooks import GradBucket, allreduce_hook
        flat = np.empty(b.size, b.dtype)
        for p, off in zip(b.params, b.offsets):
            n = p._data.size
            flat[off:off + n] = 0 if p._grad is None else p._grad._data.ravel()
        grad_bucket = GradBucket(b.index, Tensor._make(flat), b.params, b.offsets, b.shapes,
                                 b.index == len(self._buckets) - 1)
        if self._comm_hook is None:
            self._pass_bytes += flat.nbytes
            b.future = allreduce_hook(self.process_group, grad_bucket)
        else:
            b.future = self._comm_hook(self._comm_state, grad_bucket)
        self._next_bucket += 1

    def _finish_pass(self):
        """End of backward: start what is left, wait for every bucket, write the averages."""
        try:
            if self._next_bucket < len(self._buckets) and not self.find_unused_parameters:
                missing = [i for b in self._buckets[self._next_bucket:] for i, p in
                           enumerate(self._params) if id(p) in {id(q) for q in b.params}
                           and id(p) not in b.ready]
                raise RuntimeError(
                    f"DistributedDataParallel: parameters {missing[:10]} (indices in "
                    f"module.parameters()) received no gradient in this backward, so their "
                    f"buckets cannot be reduced. Pass find_unused_parameters=True if the model "
                    f"does not use every parameter in every forward")
            while self._next_bucket < len(self._buckets):
                self._launch(self._buckets[self._next_bucket])
            for b in self._buckets:
                out = b.future.wait()
                flat = out._data if isinstance(out, Tensor) else np.asarray(out)
                for p, off, shape in zip(b.params, b.offsets, b.shapes):
                    values = flat[off:off + p._data.size].reshape(shape)
                    if p._grad is None:
                        p._grad = Tensor._make(values.astype(p._data.dtype, copy=True))
                    else:
                        p._grad._data[...] = values
                        p._grad._vc[0] += 1
            if self._comm_hook is not None and self._state_bytes0 is not None:
                self._pass_bytes = self._comm_state.bytes_sent - self._state_bytes0
            self._stats["steps"] += 1
            self._stats["bytes_per_step"] = int(self._pass_bytes)
            self._stats["bytes_total"] += int(self._pass_bytes)
        finally:
            self._reset_pass()


def _broadcast_coalesced(tensors, pg, src=0):
    """Broadcast tensors from rank `src`, one message per dtype."""
    from ...distributed import process_group as pgm
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t._data.dtype, []).append(t)
    for dtype, group in by_dtype.items():
        flat = Tensor._make(np.concatenate([t._data.ravel() for t in group]))
        pgm.broadcast(flat, src=src, group=pg)
        at = 0
        for t in group:
            n = t._data.size
            t._data[...] = flat._data[at:at + n].reshape(t._data.shape)
            t._vc[0] += 1
            at += n
