"""Communication hooks for ``DistributedDataParallel.register_comm_hook(state, hook)``.

A hook has PyTorch's shape: ``hook(state, bucket) -> Future``, where `bucket` (a `GradBucket`)
holds one flat gradient buffer of several parameters, and the Future's value is the flat buffer
DDP writes back into the parameters' ``.grad``: the average over ranks (or its approximation).

* `allreduce_hook` — what DDP does without a hook: divide by the world size, all-reduce;
* `compressed_hook` with a `CompressionState` — each rank compresses its bucket (a compressor
  from distributed/compression.py: 8/4-bit quantization, 1-bit sign, top-k; each with error
  feedback), the payloads are all-gathered, and every rank decodes and averages them;
* `powerSGD_hook` with a `PowerSGDState` — PowerSGD (Vogels et al. 2019): each gradient matrix
  M is approximated by P Q^T of rank r with one power-iteration step per training step (P = M Q,
  all-reduced and orthonormalised, then Q = M^T P, all-reduced), warm-started from last step's Q;
  vectors (biases) are all-reduced as they are; error feedback keeps M - P Q^T.

Every state counts ``bytes_sent`` (payload bytes this rank put on the wire); `make_hook(name)`
builds (state, hook) for 'allreduce', 'int8', 'int4', 'sign', 'topk', 'powersgd'.
"""
import numpy as np

from ...tensor import Tensor
from .. import process_group as pgm

__all__ = ["GradBucket", "allreduce_hook", "CompressionState", "compressed_hook",
           "PowerSGDState", "powerSGD_hook", "make_hook", "HOOK_NAMES"]


class GradBucket:
    """One bucket of a backward pass: ``buffer()`` (the flat gradients, a Tensor), ``index()``,
    ``parameters()``, ``gradients()`` (views of the buffer shaped like the parameters),
    ``is_last()`` and the per-parameter ``offsets``/``shapes``."""

    def __init__(self, index, buffer, params, offsets, shapes, is_last):
        self._index, self._buffer, self._params = index, buffer, params
        self.offsets, self.shapes, self._is_last = offsets, shapes, is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def parameters(self):
        return list(self._params)

    def gradients(self):
        flat = self._buffer._data
        return [Tensor._make(flat[o:o + int(np.prod(s, dtype=np.int64))].reshape(s))
                for o, s in zip(self.offsets, self.shapes)]

    def is_last(self):
        return self._is_last


def _group_of(state):
    pg = getattr(state, "process_group", state)
    return pg if isinstance(pg, pgm.ProcessGroup) else pgm._group(None, "comm hook")


def allreduce_hook(process_group, bucket):
    """The average over ranks by one all-reduce (DDP's default)."""
    pg = _group_of(process_group)
    buf = bucket.buffer()
    buf._data /= pg.size()
    work = pgm.all_reduce(buf, group=pg, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


class CompressionState:
    """The state of `compressed_hook`: the compressor (its residual per bucket and its byte
    count) and the process group (None: the default one)."""

    def __init__(self, compressor, process_group=None):
        from ..compression import make_compressor
        self.compressor = make_compressor(compressor)
        self.process_group = process_group

    @property
    def bytes_sent(self):
        return self.compressor.bytes_sent


def compressed_hook(state, bucket):
    """Compress this rank's bucket (with error feedback), all-gather the payloads, decode each
    and average."""
    pg = _group_of(state)
    flat = bucket.buffer()._data
    payload, _ = state.compressor.compress(bucket.index(), flat)
    n = pg.size()
    gathered = Tensor._make(np.empty(n * payload.size, np.uint8))
    work = pgm.all_gather_into_tensor(gathered, Tensor._make(payload), group=pg, async_op=True)

    def average(_fut):
        parts = gathered._data.reshape(n, payload.size)
        total = np.zeros(flat.size, flat.dtype)
        for r in range(n):
            total += state.compressor.decode(parts[r], flat.size, flat.dtype)
        return Tensor._make(total / n)
    return work.get_future().then(average)


class PowerSGDState:
    """PowerSGD's state: rank r (``matrix_approximation_rank``), each matrix's Q (warm start),
    the residual per bucket (error feedback), ``bytes_sent``, ``last_sent`` per bucket."""

    def __init__(self, process_group=None, matrix_approximation_rank=1, seed=0,
                 error_feedback=True):
        if not isinstance(matrix_approximation_rank, int) or matrix_approximation_rank < 1:
            raise ValueError(f"PowerSGDState: matrix_approximation_rank must be a positive int, "
                             f"got {matrix_approximation_rank!r}")
        self.process_group = process_group
        self.rank = matrix_approximation_rank
        self.seed = seed
        self.error_feedback = error_feedback
        self.residuals, self.qs, self.last_sent = {}, {}, {}
        self.bytes_sent = 0


def _matrix_shape(shape, r):
    """(rows, cols) when a parameter of `shape` is worth compressing at rank r, else None."""
    if len(shape) < 2:
        return None
    rows = shape[0]
    cols = int(np.prod(shape[1:], dtype=np.int64))
    return (rows, cols) if min(rows, cols) > r else None


def _orthonormalise(p):
    q, _ = np.linalg.qr(p)
    return q


def powerSGD_hook(state, bucket):
    """One PowerSGD step on the bucket: matrices as P Q^T of rank r, vectors all-reduced."""
    pg = _group_of(state)
    n, r, key = pg.size(), state.rank, bucket.index()
    flat = bucket.buffer()._data
    wanted = flat + state.residuals[key] if key in state.residuals else flat.copy()
    pieces = []                                   # (offset, size, (rows, cols) or None)
    for off, shape in zip(bucket.offsets, bucket.shapes):
        size = int(np.prod(shape, dtype=np.int64))
        pieces.append((off, size, _matrix_shape(shape, r)))
    matrices = [(o, s, m) for o, s, m in pieces if m is not None]
    plain_idx = np.concatenate([np.arange(o, o + s) for o, s, m in pieces if m is None]
                               or [np.zeros(0, np.int64)])
    plain = Tensor._make(wanted[plain_idx] / n)
    plain_work = pgm.all_reduce(plain, group=pg, async_op=True)
    Ms = [wanted[o:o + s].reshape(m) for o, s, m in matrices]
    Qs = []
    for i, (M, (_o, _s, (rows, cols))) in enumerate(zip(Ms, matrices)):
        q = state.qs.get((key, i))
        if q is None or q.shape != (cols, r):     # the same start on every rank
            q = np.random.default_rng([state.seed, key, i]).standard_normal((cols, r))
            q = _orthonormalise(q).astype(flat.dtype)
        Qs.append(q)
    P = Tensor._make(np.concatenate([(M @ q).ravel() for M, q in zip(Ms, Qs)]
                                    or [np.zeros(0, flat.dtype)]))
    pgm.all_reduce(P, group=pg)                   # sum of M_r Q over ranks
    Ps, at = [], 0
    for o, s, (rows, cols) in matrices:
        Ps.append(_orthonormalise(P._data[at:at + rows * r].reshape(rows, r) / n))
        at += rows * r
    Qt = Tensor._make(np.concatenate([(M.T @ p).ravel() / n for M, p in zip(Ms, Ps)]
                                     or [np.zeros(0, flat.dtype)]))
    q_work = pgm.all_reduce(Qt, group=pg, async_op=True)
    state.bytes_sent += plain._data.nbytes + P._data.nbytes + Qt._data.nbytes

    def assemble(_fut):
        plain_work.wait()
        out = np.empty_like(flat)
        out[plain_idx] = plain._data
        at = 0
        for i, ((o, s, (rows, cols)), p) in enumerate(zip(matrices, Ps)):
            q = Qt._data[at:at + cols * r].reshape(cols, r)
            at += cols * r
            state.qs[(key, i)] = q.copy()
            out[o:o + s] = (p @ q.T).ravel()
        sent = out.copy()                         # what this rank's part decodes to
        sent[plain_idx] = wanted[plain_idx]
        state.last_sent[key] = sent
        if state.error_feedback:
            state.residuals[key] = wanted - sent
        return Tensor._make(out)
    return q_work.get_future().then(assemble)


HOOK_NAMES = ("allreduce", "int8", "int4", "sign", "topk", "powersgd")


def make_hook(name, process_group=None, **options):
    """(state, hook) for a name in HOOK_NAMES: 'allreduce' (no compression), 'int8'/'int4'
    (quantization), 'sign' (1-bit SGD), 'topk' (options: ratio=0.01), 'powersgd' (rank=1)."""
    from ..compression import TopK
    if name == "allreduce":
        return _AllreduceState(process_group), counting_allreduce_hook
    if name == "powersgd":
        return PowerSGDState(process_group, options.get("rank", 1)), powerSGD_hook
    if name == "topk":
        return CompressionState(TopK(options.get("ratio", 0.01)), process_group), compressed_hook
    if name in ("int8", "int4", "sign"):
        return CompressionState(name, process_group), compressed_hook
    raise ValueError(f"make_hook: unknown hook {name!r}; use one of {', '.join(HOOK_NAMES)}")


class _AllreduceState:
    def __init__(self, process_group=None):
        self.process_group = process_group
        self.bytes_sent = 0


def counting_allreduce_hook(state, bucket):
    """`allreduce_hook` that also counts ``state.bytes_sent``."""
    state.bytes_sent += bucket.buffer()._data.nbytes
    return allreduce_hook(state.process_group, bucket)
