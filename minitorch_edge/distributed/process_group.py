"""The process group: PyTorch's ``torch.distributed`` names over MPI (mpi4py), with a deadline
on every collective.

One idea runs through the file: every collective is started non-blocking (``Iallreduce``,
``Ibcast``, ...) and handed back as a `Work`; waiting on a Work polls ``Test()`` until the
request completes or the group's timeout passes, and then raises `DistributedError` naming the
operation, the rank and the timeout. So a rank that raised, died, or called a different
collective makes the others fail with a message instead of hanging. A blocking call is the
non-blocking one followed by ``wait()``.

An unhandled exception on any rank prints ``rank N: <traceback>`` and calls ``MPI Abort`` (an
excepthook installed by `init_process_group` when there is more than one process): mpiexec then
stops every rank with a non-zero exit status.

mpi4py is imported only when `init_process_group` runs, so ``import minitorch_edge`` does not
need it. Launch with ``mpiexec -n N python train.py``; a plain ``python train.py`` is a group of
one (MPI's singleton start).
"""
import os
import sys
import time
from datetime import timedelta
from enum import Enum

import numpy as np

from ..tensor import Tensor

__all__ = ["ReduceOp", "DistributedError", "Work", "Future", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast",
           "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "reduce", "gather", "scatter", "broadcast_object_list", "new_group", "group",
           "GroupMember"]

DEFAULT_TIMEOUT = timedelta(minutes=5)


class DistributedError(RuntimeError):
    """A collective that did not finish in time, or a process group used wrongly."""


class ReduceOp(Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


# ---- the group ----------------------------------------------------------------------------------
class ProcessGroup:
    """A communicator (a duplicate of COMM_WORLD, or a subset for `new_group`) and its timeout."""

    def __init__(self, comm, timeout_s, backend="mpi"):
        self.comm = comm
        self.timeout_s = float(timeout_s)
        self.backend = backend
        self.pids = None            # rank -> (host, pid), to name a rank that died

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def gone_ranks(self):
        """Ranks on this host whose process no longer runs (exited, killed, or a zombie)."""
        if self.pids is None:
            return []
        import socket
        host, gone = socket.gethostname(), []
        for r, (h, pid) in enumerate(self.pids):
            if h == host and not _process_alive(pid):
                gone.append(r)
        return gone


def _process_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        return True


class _World:
    group = None            # the default ProcessGroup, once init_process_group ran
    MPI = None              # the mpi4py.MPI module
    old_excepthook = None


class group:                # torch.distributed.group.WORLD
    WORLD = None


GroupMember = group


def is_available():
    """True: the package exists; whether MPI is installed is `is_mpi_available`."""
    return True


def is_mpi_available():
    """True when mpi4py (and an MPI library under it) can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_initialized():
    return _World.group is not None


def _timeout_seconds(timeout):
    """A timeout given as timedelta or seconds; None: $MTE_DIST_TIMEOUT or 5 minutes."""
    if timeout is None:
        env = os.environ.get("MTE_DIST_TIMEOUT")
        if env:
            try:
                return float(env)
            except ValueError:
                raise ValueError(f"init_process_group: MTE_DIST_TIMEOUT={env!r} is not a number of "
                                 f"seconds; set it like MTE_DIST_TIMEOUT=60") from None
        return DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"init_process_group: timeout must be a positive timedelta or number of "
                         f"seconds, got {timeout!r}")
    return float(timeout)


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the processes started by mpiexec into the default group (a duplicate of MPI's
    COMM_WORLD). ``backend`` must be ``"mpi"`` (None means it too); ``world_size``/``rank``, when
    given, must agree with what mpiexec started. ``timeout`` (timedelta or seconds; default
    $MTE_DIST_TIMEOUT or 5 minutes) bounds every collective's wait."""
    if backend is None:
        backend = "mpi"
    backend = str(backend).lower()
    if backend != "mpi":
        raise ValueError(f"init_process_group: backend {backend!r} is not available in "
                         f"minitorch_edge; use backend='mpi' (launch with mpiexec -n N)")
    if _World.group is not None:
        raise DistributedError("init_process_group: trying to initialize the default process "
                               "group twice (call destroy_process_group first)")
    timeout_s = _timeout_seconds(timeout)
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("init_process_group(backend='mpi') needs mpi4py and an MPI library: "
                          "pip install 'minitorch_edge[distributed]' (mpi4py, mpich)") from e
    comm = MPI.COMM_WORLD.Dup()
    if world_size not in (-1, None) and world_size != comm.Get_size():
        raise ValueError(f"init_process_group: world_size={world_size} but mpiexec started "
                         f"{comm.Get_size()} processes; pass world_size=-1 or launch with "
                         f"mpiexec -n {world_size}")
    if rank not in (-1, None) and rank != comm.Get_rank():
        raise ValueError(f"init_process_group: rank={rank} but MPI gave this process rank "
                         f"{comm.Get_rank()}; pass rank=-1 (MPI assigns ranks)")
    _World.MPI = MPI
    _World.group = group.WORLD = pg = ProcessGroup(comm, timeout_s)
    if comm.Get_size() > 1:
        import socket
        mine = np.zeros(72, np.uint8)           # hostname (64 bytes) and pid, as bytes
        mine[:64] = np.frombuffer(socket.gethostname().encode()[:64].ljust(64, b"\0"), np.uint8)
        mine[64:] = np.array([os.getpid()], np.int64).view(np.uint8)
        table = np.empty((comm.Get_size(), 72), np.uint8)
        comm.Allgather(mine, table)
        pg.pids = [(bytes(row[:64]).rstrip(b"\0").decode(), int(row[64:].view(np.int64)[0]))
                   for row in table]
        if pg.rank() == 0:
            from .launch import write_ranks_file
            write_ranks_file(pg.pids)
        _install_excepthook()


def destroy_process_group(group=None):
    """Free the default group (or `group`) and restore the excepthook."""
    pg = group or _World.group
    if pg is None:
        return
    if pg is _World.group:
        _World.group = globals()["group"].WORLD = None
        if _World.old_excepthook is not None:
            sys.excepthook = _World.old_excepthook
            _World.old_excepthook = None
    pg.comm.Free()


def _install_excepthook():
    """An unhandled exception on this rank: print it named by rank, then abort every rank."""
    old = sys.excepthook
    _World.old_excepthook = old

    def abort_all(exc_type, exc, tb):
        import traceback
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        rank = _World.group.rank() if _World.group is not None else "?"
        sys.stderr.write(f"rank {rank}: {exc_type.__name__}: {exc}\n"
                         + "".join(f"rank {rank}: {line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        time.sleep(0.2)             # let mpiexec forward the message before it stops the job
        _World.MPI.COMM_WORLD.Abort(1)

    sys.excepthook = abort_all


def _group(group, op_name):
    pg = group if group is not None else _World.group
    if pg is None:
        raise ValueError(f"{op_name}: Default process group has not been initialized, please "
                         f"make sure to call init_process_group.")
    return pg


def get_rank(group=None):
    return _group(group, "get_rank").rank()


def get_world_size(group=None):
    return _group(group, "get_world_size").size()


def get_backend(group=None):
    return _group(group, "get_backend").backend


def new_group(ranks=None, timeout=None, backend=None):
    """A group of some ranks (all when None); every rank of the default group must call it."""
    pg = _group(None, "new_group")
    if ranks is None:
        comm = pg.comm.Dup()
    else:
        comm = pg.comm.Create(pg.comm.Get_group().Incl(sorted(ranks)))
        if comm == _World.MPI.COMM_NULL:
            return None         # this rank is not in the group (torch returns a non-member)
    return ProcessGroup(comm, _timeout_seconds(timeout) if timeout else pg.timeout_s)


# ---- waiting with a deadline --------------------------------------------------------------------
def wait_for(test, pg, what, limit=None):
    """Call ``test()`` until it returns True (MPI progresses only inside such calls): yielding
    the CPU between calls for the first 50 ms, then sleeping up to 1 ms. Raises
    DistributedError naming `what` after `limit` seconds (the group's timeout by default), or
    at once when a rank of the group on this host is seen to be gone (checked every second)."""
    if test():
        return
    limit = pg.timeout_s if limit is None else limit
    start = time.monotonic()
    deadline, next_check, busy_until, pause = start + limit, start + 1.0, start + 0.05, 0.0
    while not test():
        now = time.monotonic()
        if now < busy_until:
            os.sched_yield()
            continue
        gone = []
        if now > next_check:
            gone, next_check = pg.gone_ranks(), now + 1.0
        if gone or now > deadline:
            why = (f"rank {', '.join(map(str, gone))} is no longer running" if gone else
                   f"timed out after {limit:g} s: some rank did not join (it raised, died, or "
                   f"called a different collective); set the timeout with "
                   f"init_process_group(timeout=...) or MTE_DIST_TIMEOUT")
            raise DistributedError(f"{what} failed on rank {pg.rank()} of {pg.size()}: {why}")
        pause = min(pause * 2 or 1e-5, 1e-3)
        time.sleep(pause)


class Work:
    """A started collective: ``wait()`` (with the group's timeout), ``is_completed()``,
    ``get_future()``. `finish` runs once, after the requests complete (copy back, divide)."""

    def __init__(self, requests, pg, op_name, finish=None, result=None):
        self._requests = list(requests)
        self._pg, self._op_name = pg, op_name
        self._finish, self._result = finish, result
        self._done = False

    def is_completed(self):
        if not self._done and all(r.Test() for r in self._requests):
            self._complete()
        return self._done

    def _complete(self):
        self._done = True
        self._requests = []
        if self._finish is not None:
            self._finish()
            self._finish = None

    def wait(self, timeout=None):
        """Block until done; raise DistributedError after the group's timeout (or `timeout`),
        or as soon as a rank of the group is seen to have died."""
        if self._done:
            return True
        limit = self._pg.timeout_s if timeout is None else _timeout_seconds(timeout)
        for r in self._requests:
            wait_for(r.Test, self._pg, self._op_name, limit)
        self._complete()
        return True

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        return Future(self, lambda: self._result)


class Future:
    """torch.futures.Future's shape for communication hooks: ``wait()`` → the value (after the
    Work behind it completes), ``value()``, ``then(fn)`` → a Future of ``fn(self)``, ``done()``."""

    def __init__(self, work=None, value_fn=None, value=None):
        self._work, self._value_fn = work, value_fn
        self._value, self._has_value = value, work is None and value_fn is None

    @classmethod
    def completed(cls, value):
        return cls(value=value)

    def done(self):
        return self._has_value or self._work is None or self._work.is_completed()

    def wait(self):
        if not self._has_value:
            if self._work is not None:
                self._work.wait()
            self._value = self._value_fn() if self._value_fn is not None else None
            self._has_value = True
        return self._value

    def value(self):
        return self.wait()

    def then(self, callback):
        return Future(self, lambda: callback(self))

    def set_result(self, value):
        self._value, self._has_value = value, True


# ---- tensors as MPI buffers ---------------------------------------------------------------------
_MPI_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32,
                                     np.int64, np.uint8, np.int64, np.uint16, np.uint32,
                                     np.uint64)}


def _check_tensor(t, op_name, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op_name}: {name} must be a minitorch_edge Tensor, got "
                        f"{type(t).__name__}")


class _Buffer:
    """A tensor's array as MPI can send it: the array itself when contiguous and of an MPI type,
    else a contiguous (possibly float64) copy written back by `commit`."""

    def __init__(self, t):
        self.tensor = t
        a = t._data
        self.direct = a.flags.c_contiguous and a.flags.writeable and a.dtype in _MPI_DTYPES
        if self.direct:
            self.array = a
        elif a.dtype == np.bool_:
            self.array = np.ascontiguousarray(a, dtype=np.uint8)
        else:
            self.array = np.ascontiguousarray(
                a, dtype=a.dtype if a.dtype in _MPI_DTYPES else np.float64)

    def commit(self, values=None):
        values = self.array if values is None else values
        if not (self.direct and values is self.array):
            self.tensor._data[...] = values.reshape(self.tensor._data.shape).astype(
                self.tensor._data.dtype, copy=False)
        self.tensor._vc[0] += 1


def _mpi_op(op, op_name):
    MPI = _World.MPI
    if isinstance(op, str):
        op = ReduceOp(op.lower())
    table = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
             ReduceOp.MAX: MPI.MAX, ReduceOp.MIN: MPI.MIN}
    if op not in table:
        raise ValueError(f"{op_name}: op must be a ReduceOp (SUM, AVG, PRODUCT, MAX, MIN), "
                         f"got {op!r}")
    return op, table[op]


def _average(buf, n):
    a = buf.array
    if a.dtype.kind == "f":
        a /= n
    else:
        np.floor_divide(a, n, out=a)


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


# ---- collectives --------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over all ranks, in place on every rank."""
    _check_tensor(tensor, "all_reduce")
    pg = _group(group, "all_reduce")
    op, mpi_op = _mpi_op(op, "all_reduce")
    buf = _Buffer(tensor)
    req = pg.comm.Iallreduce(_World.MPI.IN_PLACE, buf.array, mpi_op)

    def finish():
        if op is ReduceOp.AVG:
            _average(buf, pg.size())
        buf.commit()
    return _run(Work([req], pg, "all_reduce", finish, [tensor]), async_op)


def broadcast(tensor, src=0, group=None, async_op=False):
    """Copy rank `src`'s `tensor` into `tensor` on every rank."""
    _check_tensor(tensor, "broadcast")
    pg = _group(group, "broadcast")
    _check_rank(src, pg, "broadcast", "src")
    buf = _Buffer(tensor)
    req = pg.comm.Ibcast(buf.array, root=src)
    return _run(Work([req], pg, "broadcast", buf.commit, [tensor]), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` = rank r's `tensor`, on every rank."""
    _check_tensor(tensor, "all_gather")
    pg = _group(group, "all_gather")
    _check_list(tensor_list, pg, "all_gather", "tensor_list", tensor)
    send = _Buffer(tensor).array
    recv = np.empty((pg.size(),) + send.shape, send.dtype)
    req = pg.comm.Iallgather(send, recv)

    def finish():
        for r, t in enumerate(tensor_list):
            t._data[...] = recv[r].reshape(t._data.shape).astype(t._data.dtype, copy=False)
            t._vc[0] += 1
    return _run(Work([req], pg, "all_gather", finish, tensor_list), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """The ranks' `input_tensor` stacked along dim 0 into `output_tensor`."""
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    pg = _group(group, "all_gather_into_tensor")
    _check_size(output_tensor, input_tensor._data.size * pg.size(), "all_gather_into_tensor")
    send, out = _Buffer(input_tensor).array, _Buffer(output_tensor)
    req = pg.comm.Iallgather(send, out.array)
    return _run(Work([req], pg, "all_gather_into_tensor", out.commit, [output_tensor]), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank r = the reduction over ranks of their ``input_list[r]``."""
    _check_tensor(output, "reduce_scatter", "output")
    pg = _group(group, "reduce_scatter")
    _check_list(input_list, pg, "reduce_scatter", "input_list", output)
    op, mpi_op = _mpi_op(op, "reduce_scatter")
    out = _Buffer(output)
    send = np.concatenate([np.asarray(t._data, out.array.dtype).ravel() for t in input_list])
    return _reduce_scatter(send, out, op, mpi_op, pg, "reduce_scatter", async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """`input` (world_size × output's size, dim 0 split by rank) reduced and scattered."""
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    pg = _group(group, "reduce_scatter_tensor")
    _check_size(input, output._data.size * pg.size(), "reduce_scatter_tensor")
    op, mpi_op = _mpi_op(op, "reduce_scatter_tensor")
    out = _Buffer(output)
    send = np.ascontiguousarray(input._data, out.array.dtype).ravel()
    return _reduce_scatter(send, out, op, mpi_op, pg, "reduce_scatter_tensor", async_op)


def _reduce_scatter(send, out, op, mpi_op, pg, op_name, async_op):
    req = pg.comm.Ireduce_scatter_block(send, out.array, mpi_op)

    def finish():
        send.size                       # keep the send buffer alive until done
        if op is ReduceOp.AVG:
            _average(out, pg.size())
        out.commit()
    return _run(Work([req], pg, op_name, finish, [out.tensor]), async_op)


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    """The reduction over ranks into `tensor` on rank `dst` (the others keep theirs)."""
    _check_tensor(tensor, "reduce")
    pg = _group(group, "reduce")
    _check_rank(dst, pg, "reduce", "dst")
    op, mpi_op = _mpi_op(op, "reduce")
    buf = _Buffer(tensor)
    is_root = pg.rank() == dst
    if is_root:
        req = pg.comm.Ireduce(_World.MPI.IN_PLACE, buf.array, mpi_op, root=dst)
    else:
        req = pg.comm.Ireduce(buf.array, None, mpi_op, root=dst)

    def finish():
        if is_root:
            if op is ReduceOp.AVG:
                _average(buf, pg.size())
            buf.commit()
    return _run(Work([req], pg, "reduce", finish, [tensor]), async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """``gather_list[r]`` on rank `dst` = rank r's `tensor`."""
    _check_tensor(tensor, "gather")
    pg = _group(group, "gather")
    _check_rank(dst, pg, "gather", "dst")
    send = _Buffer(tensor).array
    is_root = pg.rank() == dst
    recv = np.empty((pg.size(),) + send.shape, send.dtype) if is_root else None
    if is_root:
        _check_list(gather_list, pg, "gather", "gather_list", tensor)
    req = pg.comm.Igather(send, recv, root=dst)

    def finish():
        if is_root:
            for r, t in enumerate(gather_list):
                t._data[...] = recv[r].reshape(t._data.shape).astype(t._data.dtype, copy=False)
                t._vc[0] += 1
    return _run(Work([req], pg, "gather", finish, gather_list), async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """`tensor` on rank r = ``scatter_list[r]`` of rank `src`."""
    _check_tensor(tensor, "scatter")
    pg = _group(group, "scatter")
    _check_rank(src, pg, "scatter", "src")
    out = _Buffer(tensor)
    send = None
    if pg.rank() == src:
        _check_list(scatter_list, pg, "scatter", "scatter_list", tensor)
        send = np.concatenate([np.asarray(t._data, out.array.dtype).ravel()
                               for t in scatter_list])
    req = pg.comm.Iscatter(send, out.array, root=src)
    return _run(Work([req], pg, "scatter", out.commit, [tensor]), async_op)


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Rank `src`'s list items, in place in `object_list` on every rank. The objects travel as
    JSON (no pickling): numbers, strings, None, lists and dicts of them."""
    import json
    pg = _group(group, "broadcast_object_list")
    _check_rank(src, pg, "broadcast_object_list", "src")
    data = np.zeros(0, np.uint8)
    if pg.rank() == src:
        try:
            data = np.frombuffer(json.dumps(list(object_list)).encode(), np.uint8)
        except TypeError as e:
            raise TypeError(f"broadcast_object_list: the objects must be JSON values (numbers, "
                            f"strings, None, lists, dicts); {e}") from None
    size = Tensor._make(np.array([data.size], np.int64))
    broadcast(size, src, group=pg)
    buf = Tensor._make(data.copy() if pg.rank() == src else np.empty(int(size.item()), np.uint8))
    broadcast(buf, src, group=pg)
    object_list[:] = json.loads(buf._data.tobytes().decode())


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached its barrier (with the group's timeout)."""
    pg = _group(group, "barrier")
    return _run(Work([pg.comm.Ibarrier()], pg, "barrier"), async_op)


def _check_rank(r, pg, op_name, name):
    if not isinstance(r, (int, np.integer)) or not 0 <= r < pg.size():
        raise ValueError(f"{op_name}: {name}={r!r} is not a rank of this group "
                         f"(0..{pg.size() - 1})")


def _check_list(tensors, pg, op_name, name, like):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != pg.size():
        raise ValueError(f"{op_name}: {name} must be a list of {pg.size()} tensors (one per rank), "
                         f"got {tensors!r:.80}")
    for t in tensors:
        _check_tensor(t, op_name, name + " element")
        if t._data.size != like._data.size:
            raise ValueError(f"{op_name}: every tensor in {name} must have {like._data.size} "
                             f"elements like the tensor, got shape {tuple(t._data.shape)}")


def _check_size(t, n, op_name):
    if t._data.size != n:
        raise ValueError(f"{op_name}: expected a tensor of {n} elements (world size × the other's "
                         f"size), got shape {tuple(t._data.shape)}")
