"""Asynchronous training with a parameter server: a teaching implementation over MPI
point-to-point messages (the seed article's parameter-server topology, not a production system).

Rank 0 is the server: it holds the parameters and an optimizer, and applies each worker's push
as it arrives (one optimizer step per push, on the pushed gradient divided by the number of
workers: each push is one worker's share of an averaged gradient). Ranks 1..N-1 are workers:
``pull()`` (copy the server's current parameters into the local model), compute a gradient on
local data, ``push()`` (send ``.grad``), repeat; ``close()`` when done.

Bounded staleness (stale-synchronous parallel): each worker's clock is the number of pushes it
has made; the server answers a worker's pull only when that worker is at most ``staleness``
pushes ahead of the slowest worker still running. A worker's step-c push is applied as soon as
every running worker has pulled its step-c parameters (at once, except when a worker is still
starting that step), so no worker computes on updates from its own future. ``staleness=0`` is
synchronous SGD: every worker computes its step-t gradient on the same parameters (those after
all step t-1 pushes), so with plain SGD the server's parameters equal one process's on the whole
batch. Larger values let fast workers run ahead on older parameters (``max_staleness`` records
how many versions behind a push was computed).

Pushes may be compressed with a compressor of distributed/compression.py (``compression="int8"``,
"int4", "sign", "topk"), with error feedback on the worker; the server decodes.

The messages (numpy buffers, no pickling): a worker sends a control header int64[kind,
version it computed on, payload bytes] (kind PULL, PUSH or DONE); a PUSH is followed by the
payload; the server answers a PULL with int64[version] and the flat parameters.
"""
import numpy as np

from ..tensor import Tensor
from . import process_group as pgm

__all__ = ["ParameterServer"]

PULL, PUSH, DONE = 1, 2, 3
TAG_CTRL, TAG_PAYLOAD, TAG_VERSION, TAG_PARAMS = 701, 702, 703, 704


class ParameterServer:
    """``ParameterServer(model, optimizer=None, staleness=0, compression=None)``, constructed on
    every rank with the same model architecture. On rank 0 pass the optimizer (over
    ``model.parameters()``) and call `serve()`; on the other ranks call `pull`/`push`/`close`."""

    def __init__(self, model, optimizer=None, staleness=0, compression=None, group=None):
        self.pg = pgm._group(group, "ParameterServer")
        if self.pg.size() < 2:
            raise ValueError("ParameterServer: needs at least 2 processes (rank 0 serves, the "
                             "others work); launch with mpiexec -n 3 or more")
        if not isinstance(staleness, int) or staleness < 0:
            raise ValueError(f"ParameterServer: staleness must be an int >= 0, got {staleness!r}")
        self.model, self.optimizer, self.staleness = model, optimizer, staleness
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.dtype = np.result_type(*[p._data.dtype for p in self.params])
        self.size = int(sum(p._data.size for p in self.params))
        self.rank = self.pg.rank()
        self.is_server = self.rank == 0
        if self.is_server and optimizer is None:
            raise ValueError("ParameterServer: rank 0 applies the updates and needs optimizer=")
        from .compression import make_compressor
        self.compressor = make_compressor(compression) if compression else None
        self.version = 0              # updates applied (server) / version last pulled (worker)
        self.bytes_pushed = 0
        self.max_staleness = 0
        self.pushes = 0

    # ---- flat views of the parameters ---------------------------------------------------------
    def _flat_params(self):
        return np.concatenate([p._data.ravel().astype(self.dtype, copy=False)
                               for p in self.params])

    def _set_params(self, flat):
        at = 0
        for p in self.params:
            n = p._data.size
            p._data[...] = flat[at:at + n].reshape(p._data.shape)
            p._vc[0] += 1
            at += n

    def _flat_grads(self):
        return np.concatenate([(np.zeros(p._data.size, self.dtype) if p._grad is None else
                                p._grad._data.ravel().astype(self.dtype, copy=False))
                               for p in self.params])

    def _wait(self, req, what, status=None):
        test = (lambda: req.Test(status)) if status is not None else req.Test
        pgm.wait_for(test, self.pg, f"ParameterServer: {what}")

    def _send(self, array, dest, tag, what):
        self._wait(self.pg.comm.Isend(np.ascontiguousarray(array), dest=dest, tag=tag), what)

    def _recv(self, array, source, tag, what, status=None):
        self._wait(self.pg.comm.Irecv(array, source=source, tag=tag), what, status)
        return array

    # ---- worker side --------------------------------------------------------------------------
    def pull(self):
        """Wait until the staleness bound allows, then copy the server's parameters into the
        model; returns their version."""
        self._check_worker("pull")
        self._send(np.array([PULL, 0, 0], np.int64), 0, TAG_CTRL, "pull request")
        version = self._recv(np.empty(1, np.int64), 0, TAG_VERSION, "pull (version)")
        flat = self._recv(np.empty(self.size, self.dtype), 0, TAG_PARAMS, "pull (parameters)")
        self._set_params(flat)
        self.version = int(version[0])
        return self.version

    def push(self):
        """Send the model's ``.grad`` (compressed when asked) to the server."""
        self._check_worker("push")
        flat = self._flat_grads()
        if self.compressor is None:
            payload = flat.view(np.uint8)
        else:
            payload, _ = self.compressor.compress("push", flat)
        self._send(np.array([PUSH, self.version, payload.nbytes], np.int64), 0, TAG_CTRL, "push")
        self._send(payload, 0, TAG_PAYLOAD, "push (payload)")
        self.bytes_pushed += payload.nbytes
        self.pushes += 1

    def close(self):
        """This worker is done."""
        self._check_worker("close")
        self._send(np.array([DONE, self.version, 0], np.int64), 0, TAG_CTRL, "close")

    def _check_worker(self, what):
        if self.is_server:
            raise RuntimeError(f"ParameterServer.{what}: rank 0 is the server; call serve() "
                               f"there and {what}() on the worker ranks")

    # ---- server side --------------------------------------------------------------------------
    def serve(self):
        """Rank 0: apply pushes as they arrive and answer pulls within the staleness bound,
        until every worker has closed. Returns a summary dict."""
        if not self.is_server:
            raise RuntimeError("ParameterServer.serve: only rank 0 serves; workers call pull, "
                               "push and close")
        MPI = pgm._World.MPI
        workers = range(1, self.pg.size())
        clocks = {w: 0 for w in workers}        # pushes received from each worker
        pulled = {w: 0 for w in workers}        # pulls answered for each worker
        running, waiting, pushes = set(workers), [], []
        n_workers = len(clocks)
        while running or waiting:
            status = MPI.Status()
            header = self._recv(np.empty(3, np.int64), MPI.ANY_SOURCE, TAG_CTRL,
                                "waiting for workers", status)
            src, kind = status.Get_source(), int(header[0])
            if kind == PUSH:
                payload = self._recv(np.empty(int(header[2]), np.uint8), src, TAG_PAYLOAD,
                                     f"push from rank {src}")
                pushes.append((clocks[src], int(header[1]), payload))
                clocks[src] += 1
            elif kind == PULL:
                waiting.append(src)
            elif kind == DONE:
                running.discard(src)
            else:
                raise pgm.DistributedError(f"ParameterServer: rank {src} sent an unknown message "
                                           f"kind {kind}")
            progress = True
            while progress:
                progress = False
                # a step-c push is applied once every running worker has its step-c parameters
                started = min((pulled[w] for w in running), default=float("inf"))
                for item in [p for p in pushes if p[0] < started]:
                    pushes.remove(item)
                    self._apply(item[2], n_workers)
                    self.max_staleness = max(self.max_staleness, self.version - 1 - item[1])
                # a pull is answered while the worker is at most `staleness` steps ahead
                slowest = min((clocks[w] for w in running), default=None)
                for w in list(waiting):
                    if slowest is None or clocks[w] - slowest <= self.staleness:
                        waiting.remove(w)
                        pulled[w] += 1
                        progress = True
                        self._send(np.array([self.version], np.int64), w, TAG_VERSION,
                                   "pull reply")
                        self._send(self._flat_params(), w, TAG_PARAMS, "pull reply")
        for item in pushes:                     # pushes of steps no running worker started
            self._apply(item[2], n_workers)
        return {"version": self.version, "pushes": self.pushes,
                "max_staleness": self.max_staleness}

    def _apply(self, payload, n_workers):
        if self.compressor is None:
            flat = payload.view(self.dtype)
        else:
            flat = self.compressor.decode(payload, self.size, np.dtype(self.dtype))
        at = 0
        for p in self.params:
            n = p._data.size
            p._grad = Tensor._make((flat[at:at + n].reshape(p._data.shape) / n_workers)
                                   .astype(p._data.dtype))
            at += n
        self.optimizer.step()
        self.version += 1
        self.pushes += 1
