"""What runs inside a DataLoader worker process, and the pieces both sides share.

A worker is a child process that owns a copy of the dataset. Its loop (`worker_loop`):

1. seeds itself: Python's `random`, numpy's global RNG and minitorch_edge's default generator
   all get ``base_seed + worker_id``, so random transforms differ between workers yet repeat
   from run to run; sets ``get_worker_info()``; calls ``worker_init_fn(worker_id)``;
2. waits on its own index queue for ``(task_id, indices)``, fetches and collates those samples
   (a `Fetcher`), and puts ``(task_id, worker_id, pickled batch)`` on the shared result queue;
3. an exception becomes an `ExceptionWrapper` (its type, the worker id and the formatted
   traceback), sent instead of the batch and re-raised by the main process;
4. a stream (IterableDataset) that runs out sends `IterableDatasetStopIteration`;
5. ``None`` means exit; `ResumeIteration` (persistent workers) starts a new epoch.

The batch is pickled here, not by the queue's background thread, so a batch that cannot be
pickled becomes an error the main process sees, never a silently lost batch (and a hang).
"""
import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

__all__ = ["WorkerInfo", "get_worker_info"]

WORKER_POLL_S = 0.2         # how often an idle worker checks its parent and the done event
_worker_info = None


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed``, ``dataset``."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_keys", tuple(kwargs))

    def __setattr__(self, key, val):
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self):
        return f"WorkerInfo({', '.join(f'{k}={getattr(self, k)!r}' for k in self._keys)})"


def get_worker_info():
    """In a DataLoader worker process: its `WorkerInfo` (id, num_workers, seed, dataset — the
    worker's own copy). In the main process: None. Use it in ``IterableDataset.__iter__`` to
    give each worker its own share of the stream, or in ``worker_init_fn``."""
    return _worker_info


class IterableDatasetStopIteration:
    """Sent by a worker whose stream is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back as the ack."""


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as text (plus its type
    when that can travel), and raised there by `reraise`."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_type_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def __reduce__(self):
        exc_type = self.exc_type
        try:                                   # a locally defined class cannot be pickled
            pickle.loads(pickle.dumps(exc_type))
        except Exception:
            exc_type = None
        return (_rebuild_wrapper, (exc_type, self.exc_type_name, self.exc_msg, self.where))

    def message(self):
        return f"Caught {self.exc_type_name} {self.where}.\nOriginal {self.exc_msg}"

    def reraise(self):
        """Raise the worker's exception type with the message and original traceback text
        (as PyTorch); RuntimeError when that type cannot be built from one message."""
        msg = self.message()
        if self.exc_type is KeyError:            # KeyError would repr() the whole text
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg) if self.exc_type is not None else None
        except Exception:
            exc = None
        if exc is None or not isinstance(exc, BaseException):
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


def _rebuild_wrapper(exc_type, name, msg, where):
    w = object.__new__(ExceptionWrapper)
    w.exc_type, w.exc_type_name, w.exc_msg, w.where = exc_type, name, msg, where
    return w


# ---- fetching: indices -> samples -> one batch (used by workers and by num_workers=0) ------------
class MapFetcher:
    """Map-style: ``collate_fn([dataset[i] for i in indices])`` (or one ``dataset[i]``)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        many = getattr(dataset, "__getitems__", None)
        self.fetch_many = many if callable(many) else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.fetch_many is not None:
            data = self.fetch_many(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Stream: the next sample, or the next ``len(index)`` samples collated; StopIteration at
    the end (a short last batch is kept unless drop_last)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    kind = IterableFetcher if iterable else MapFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)


# ---- the worker process -----------------------------------------------------------------------
def seed_worker(seed):
    """Seed every RNG a dataset or transform may use in this process."""
    from ..random import manual_seed
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(seed % 2 ** 32)


def _send(data_queue, task_id, worker_id, data):
    if data is None or isinstance(data, ResumeIteration):
        data_queue.put((task_id, worker_id, None))
        return
    try:
        payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        payload = pickle.dumps(ExceptionWrapper(
            where=f"in DataLoader worker process {worker_id} while pickling the batch to send "
                  f"it to the main process"), protocol=pickle.HIGHEST_PROTOCOL)
    data_queue.put((task_id, worker_id, payload))


def worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    """The body of worker process `worker_id` (see the file header)."""
    global _worker_info
    try:
        seed = base_seed + worker_id
        seed_worker(seed)
        try:
            from ..backend import set_num_threads
            set_num_threads(1)        # one process per core already; no nested thread pools
        except Exception:
            pass
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_error, fetcher = None, None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=where)
        iteration_end = False
        parent = os.getppid()
        while True:
            try:
                r = index_queue.get(timeout=WORKER_POLL_S)
            except queue.Empty:
                # the main process is gone, or it is shutting down but its None did not arrive
                # (when the loader dies in a garbage cycle, the queue's feeder thread may be
                # stopped before the None is put)
                if os.getppid() != parent or done_event.is_set():
                    break
                continue
            if isinstance(r, ResumeIteration):
                _send(data_queue, r, worker_id, r)
                iteration_end = False
                if iterable and init_error is None:
                    try:
                        fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn,
                                               drop_last)
                    except Exception:
                        init_error = ExceptionWrapper(where=where)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue                            # drain what is left, send nothing
            task_id, index = r
            if init_error is not None:
                data = init_error
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if iterable and isinstance(e, StopIteration):
                        data = IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=where)
            _send(data_queue, task_id, worker_id, data)
            del data, index, r
    except KeyboardInterrupt:
        pass                                        # the main process gets it too
    if done_event.is_set():
        data_queue.cancel_join_thread()             # do not block exit on unread batches
    data_queue.close()
