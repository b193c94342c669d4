"""DataLoader: batches from a dataset, in the main process or in worker processes.

``DataLoader(dataset, batch_size=32, shuffle=True)`` picks indices with a sampler (Sequential,
or Random when shuffling), groups them with a `BatchSampler`, fetches the samples and merges
them with `collate_fn` (`default_collate`). With ``num_workers=0`` all of that happens inside
``next()``. With ``num_workers=N`` it happens in N child processes, N * prefetch_factor batches
ahead of the training loop:

    main process                                      worker i (see _worker.py)
    sampler -> (task_id, indices) -> index_queue[i] -> fetch + collate
    reorder by task_id  <-  result_queue  <----------  (task_id, i, pickled batch)

Tasks go to the workers round-robin; results are put back in task order, so the batches come
out exactly as with ``num_workers=0``. A worker's exception is re-raised here with the worker id
and its original traceback; a worker that dies (killed, out of memory) is noticed within a
fraction of a second (the main process never waits on the queue for long without checking that
every worker is alive); ``timeout=`` bounds the wait for one batch. Workers exit at the end of
an epoch, when the iterator is deleted, or on a fatal error — or, with
``persistent_workers=True``, stay for the next epoch.

Differences from PyTorch: ``pin_memory`` is accepted and ignored (CPU only); a worker that dies
is found by polling (every 0.1 s), not by a SIGCHLD handler.
"""
import itertools
import multiprocessing
import pickle
import queue
import signal
import sys
import time

from ..autograd.function import _Recording
from ..random import np_rng
from . import _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]

get_worker_info = _worker.get_worker_info
POLL_S = 0.1            # longest wait on the result queue before checking the workers
JOIN_S = 2.0            # how long shutdown waits for all workers before terminating them


class _InfiniteConstantSampler(Sampler):
    """For a stream: endless ``None`` indices (the stream decides where to stop)."""

    def __iter__(self):
        while True:
            yield None


def _default_context():
    return "fork" if sys.platform.startswith("linux") else "spawn"


class DataLoader:
    """Iterate over `dataset` in batches (see the file header, and ``torch.utils.data``).

    Arguments as PyTorch: ``batch_size`` (None: no batching, samples one by one),
    ``shuffle``, ``sampler`` / ``batch_sampler`` (own index order / own batches),
    ``num_workers``, ``collate_fn``, ``pin_memory`` (ignored), ``drop_last``, ``timeout``
    (seconds to wait for one batch from the workers, 0 = forever), ``worker_init_fn``,
    ``multiprocessing_context`` ("fork" on Linux, else "spawn"), ``generator`` (drives the
    shuffle and the workers' seeds), ``prefetch_factor`` (batches in flight per worker,
    default 2), ``persistent_workers``, ``in_order`` (False: batches as they arrive).
    """

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
               "persistent_workers")

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        object.__setattr__(self, "_initialized", False)
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be a non-negative integer, "
                             f"got {num_workers!r}; use num_workers=0 to disable "
                             f"multiprocessing")
        if timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                             "multiprocessing; let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int)
                                            or prefetch_factor < 1):
            raise ValueError(f"DataLoader: prefetch_factor option should be a positive integer, "
                             f"got {prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            if num_workers == 0:
                raise ValueError("DataLoader: multiprocessing_context can only be used with "
                                 "multi-process loading (num_workers > 0)")
            if isinstance(multiprocessing_context, str):
                methods = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in methods:
                    raise ValueError(f"DataLoader: multiprocessing_context should be one of "
                                     f"{methods}, got {multiprocessing_context!r}")
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is "
                             "mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._initialized = True

    def __setattr__(self, name, value):
        if self.__dict__.get("_initialized") and name in self._FROZEN:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized; build a new DataLoader")
        object.__setattr__(self, name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            it = self._iterator
            if it is None or it._shutdown:
                self._iterator = _MultiProcessIter(self)
            else:
                it._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._iterable:
            length = len(self.dataset)      # TypeError when the stream has no __len__
            if self.batch_size is not None:
                length = (length // self.batch_size if self.drop_last
                          else -(-length // self.batch_size))
            return length
        return len(self._index_sampler)

    def __del__(self):
        it = self.__dict__.get("_iterator")
        if it is not None:
            it._shutdown_workers()


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent = loader.persistent_workers
        self._sampler_iter = iter(self._index_sampler)
        # drawn for every iterator (workers or not), so the default generator advances the same
        # way whatever num_workers is, and shuffles agree between num_workers=0 and N
        self._base_seed = int(np_rng(loader.generator).integers(0, 2 ** 63))
        self._num_yielded = 0

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __next__(self):
        if _Recording.profile is not None:      # a profiler records the wait, as torch names it
            return _Recording.profile.call(self._range_name, "user_annotation", self._next)
        return self._next()

    def _next(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessIter(_BaseIter):
    _range_name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = None

    def _next_data(self):
        index = next(self._sampler_iter)        # StopIteration ends the epoch
        if self._fetcher is None:
            self._fetcher = _worker.make_fetcher(self._iterable, self._dataset,
                                                 self._auto_collation, self._collate_fn,
                                                 self._drop_last)
        return self._fetcher.fetch(index)


class _MultiProcessIter(_BaseIter):
    """Worker processes, their queues and the bookkeeping that keeps batches in order."""
    _range_name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or multiprocessing.get_context(_default_context())
        self._shutdown = True                   # nothing to shut down until workers exist
        self._workers, self._index_queues = [], []
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._workers_status = []
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()
                w = ctx.Process(target=_worker.worker_loop, daemon=True,
                                args=(self._iterable, self._dataset, index_queue,
                                      self._result_queue, self._done_event,
                                      self._auto_collation, self._collate_fn, self._drop_last,
                                      self._base_seed, loader.worker_init_fn, i,
                                      self._num_workers))
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
                self._workers_status.append(True)
                self._shutdown = False
        except BaseException:
            self._shutdown_workers()
            raise
        self._shutdown = False
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader)
        self._send_idx = 0                      # next task id to send
        self._rcvd_idx = 0                      # next task id to yield
        self._task_info = {}                    # task id -> (worker,) or (worker, data)
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:                      # persistent workers: start a new epoch
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            waiting = self._num_workers
            while waiting > 0:                  # results of the last epoch are dropped
                task_id, _ = self._get_data()
                if isinstance(task_id, _worker.ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        if self._tasks_outstanding >= self._prefetch * self._num_workers:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                break
        else:
            return                              # every stream has ended
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _next_data(self):
        if self._shutdown:
            raise StopIteration
        while True:
            # skip the tasks that will never come back (sent to a stream that has ended)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:      # arrived earlier, out of order
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)
            task_id, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker.IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                if not self._persistent:
                    self._index_queues[data.worker_id].put(None)    # let that worker exit
                self._try_put_index()
                continue
            if task_id == self._rcvd_idx:
                del self._task_info[task_id]
                self._rcvd_idx += 1
                return self._process_data(data)
            if not self._in_order:
                del self._task_info[task_id]
                return self._process_data(data)
            self._task_info[task_id] += (data,)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _get_data(self):
        """The next (task_id, data) from any worker; raises when a worker has died or when
        `timeout` seconds pass without one."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = POLL_S if deadline is None else max(0.0, min(POLL_S,
                                                                deadline - time.monotonic()))
            try:
                task_id, wid, payload = self._result_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers_alive()
                if deadline is not None and time.monotonic() >= deadline:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds "
                                       f"waiting for a batch from its workers") from None
                continue
            except (OSError, EOFError) as e:
                self._check_workers_alive()
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader: the result queue from the workers broke "
                                   f"({type(e).__name__}: {e})") from e
            if payload is None:
                return task_id, None
            try:
                return task_id, pickle.loads(payload)
            except Exception as e:
                raise RuntimeError(f"DataLoader: could not unpickle the batch sent by worker "
                                   f"{wid} ({type(e).__name__}: {e}); with the spawn context, "
                                   f"every class in a sample must be importable") from e

    def _check_workers_alive(self):
        for wid, w in enumerate(self._workers):
            if self._workers_status[wid] and not w.is_alive():
                code = w.exitcode
                how = ""
                if code is not None and code < 0:
                    try:
                        how = f", killed by signal {signal.Signals(-code).name}"
                    except ValueError:
                        how = f", killed by signal {-code}"
                self._shutdown_workers()
                raise RuntimeError(
                    f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code} "
                    f"(worker {wid}{how}). A killed worker is often out of memory: try fewer "
                    f"workers or a smaller batch_size; num_workers=0 runs the dataset code in "
                    f"this process, where its error is easier to see.")

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for q in self._index_queues:
                try:
                    q.put(None)
                except Exception:
                    pass
            deadline = time.monotonic() + JOIN_S
            for w in self._workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
        finally:
            for w in self._workers:                 # stragglers: SIGTERM, then SIGKILL
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
                    if w.is_alive():
                        w.kill()
                        w.join(timeout=1.0)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
