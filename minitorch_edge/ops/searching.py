"""Finding places in sorted data and counting: ``searchsorted``, ``bucketize``, ``bincount``,
``unique_consecutive``. They return positions or counts, so none is differentiable.

searchsorted runs the same binary search as PyTorch's CPU kernel, vectorised over all values
at once: for side='left' it finds the first position ``i`` with ``not (b[i] < v)`` (written
``!(b[i] >= v)`` moves right), for 'right' the first with ``b[i] > v``. Written with negated
comparisons, a NaN anywhere compares as "move right", so NaN values land at the end and NaN
boundaries behave as PyTorch's do (numpy's searchsorted orders NaN differently).
"""
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import accepts_out, norm_dim, tensor_method

__all__ = ["searchsorted", "bucketize", "bincount", "unique_consecutive"]

_SS = "torch.searchsorted()"


def _binary_search(bd, vals, right, sorter=None):
    """Positions (int64, vals' shape) of vals (B, M) in the rows of bd (B, N)."""
    n = bd.shape[1]
    lo = np.zeros(vals.shape, np.int64)
    hi = np.full(vals.shape, n, np.int64)
    if n == 0:
        return lo
    rows = np.arange(bd.shape[0])[:, None]
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) >> 1
        col = np.minimum(mid, n - 1)
        if sorter is not None:
            col = sorter[rows, col]
        mv = bd[rows, col]
        go = ~(mv > vals) if right else ~(mv >= vals)
        lo = np.where(active & go, mid + 1, lo)
        hi = np.where(active & ~go, mid, hi)


def _values(v, op):
    if isinstance(v, Tensor):
        return v._data
    if isinstance(v, (bool, int, float, np.number, np.bool_)):
        return np.asarray(v)
    raise TypeError(f"{op}: input must be a Tensor or a number, got {type(v).__name__}")


@accepts_out("searchsorted")
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Indices where the values of `input` would be inserted into the innermost dim of
    `sorted_sequence` to keep it sorted: side='left' (right=False) gives the first such place,
    side='right' the last. A 1-D sequence serves every value; an N-D one needs input's leading
    N-1 dims to equal its own (one sorted row per batch). `sorter` (int64, the sequence's shape)
    gives the order of an unsorted sequence (e.g. argsort). int64 result (int32 with
    out_int32=True) of input's shape."""
    if not isinstance(sorted_sequence, Tensor):
        raise TypeError(f"searchsorted(): argument 'sorted_sequence' must be Tensor, not "
                        f"{type(sorted_sequence).__name__}")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{_SS}: side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(f"{_SS}: side and right can't be set to opposites, got side of "
                               f"left while right was True")
        right = side == "right"
    bd = sorted_sequence._data
    vals = _values(input, "searchsorted()")
    if bd.ndim == 0:
        raise RuntimeError(f"{_SS}: boundaries tensor should have positive dimension, but got 0 "
                           f"dimension")
    if bd.ndim > 1:
        if vals.ndim == 0:
            raise RuntimeError(f"{_SS}: input value can be a scalar only when boundaries tensor "
                               f"dimension is 1, but we got boundaries tensor dim({bd.ndim}) and "
                               f"input value's dim(0) numel(1)")
        if vals.ndim != bd.ndim or vals.shape[:-1] != bd.shape[:-1]:
            raise RuntimeError(f"{_SS}: boundaries tensor should be 1 dimension or the first "
                               f"N-1 dimensions of boundaries tensor and input value tensor "
                               f"must match, but we got boundaries tensor {list(bd.shape)} and "
                               f"input value tensor {list(vals.shape)}")
    order = None
    if sorter is not None:
        if not isinstance(sorter, Tensor) or sorter._data.dtype != np.int64:
            got = sorter.dtype.name if isinstance(sorter, Tensor) else type(sorter).__name__
            raise RuntimeError(f"{_SS}: sorter must be a tensor of long dtype but got dtype "
                               f"{got}")
        if sorter._data.shape != bd.shape:
            raise RuntimeError(f"{_SS}: boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(bd.shape)} and got sorter tensor "
                               f"{list(sorter._data.shape)}")
        order = sorter._data.reshape(int(np.prod(bd.shape[:-1], dtype=np.int64)), bd.shape[-1])
        if order.size and (order.min() < 0 or order.max() >= bd.shape[-1]):
            raise RuntimeError(f"{_SS}: sorter index out of range")
    n = bd.shape[-1]
    batch = int(np.prod(bd.shape[:-1], dtype=np.int64))
    b2 = bd.reshape(batch, n)
    v2 = vals.reshape(batch, vals.shape[-1]) if bd.ndim > 1 else vals.reshape(1, vals.size)
    pos = _binary_search(b2, v2, right, order).reshape(vals.shape)
    return Tensor._make(pos.astype(np.int32 if out_int32 else np.int64))


@accepts_out("bucketize")
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """Index of the bucket of each value: with 1-D increasing `boundaries`, i such that
    boundaries[i-1] < x <= boundaries[i] (right=False) or boundaries[i-1] <= x < boundaries[i]
    (right=True); 0 below the first boundary, len(boundaries) above the last. The same search
    as searchsorted(boundaries, input, right=right)."""
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"bucketize(): argument 'boundaries' must be Tensor, not "
                        f"{type(boundaries).__name__}")
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


class Bincount(Function):
    """y[k] = number (or weighted sum) of the entries equal to k. PyTorch defines no derivative
    for it; backward raises (for a differentiable weighted count use
    ``zeros(n).index_add(0, input, weights)``)."""
    _builtin = True

    @staticmethod
    def forward(ctx, input, weights, minlength, out_dtype):
        w = None if weights is None else weights._data.astype(np.float64)
        return np.bincount(input._data.astype(np.int64), w, minlength).astype(out_dtype)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the derivative for 'bincount' is not implemented (as in PyTorch); "
                           "for a differentiable weighted count use "
                           "zeros(n).index_add(0, input, weights)")


@tensor_method("bincount")
def bincount(input, weights=None, minlength=0):
    """Count of each value 0..max(input) in the 1-D non-negative integer tensor `input` (at
    least `minlength` bins). With `weights` (1-D, input's length) each occurrence adds its
    weight: float32 weights give float32, any other dtype float64, as in PyTorch."""
    x = input._data
    if x.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                  f"'{input.dtype.name}' (bincount counts integers; convert "
                                  f"with .long())")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    out_dtype = np.int64
    if weights is not None:
        if not isinstance(weights, Tensor):
            raise TypeError(f"bincount(): argument 'weights' must be Tensor, not "
                            f"{type(weights).__name__}")
        if weights._data.ndim != 1 or weights._data.shape[0] != x.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        out_dtype = np.float32 if weights._data.dtype == np.float32 else np.float64
    return Bincount.apply(input, weights, int(minlength), out_dtype)


@tensor_method("unique_consecutive")
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive elements (dim=None: of the flattened input) or
    of equal consecutive slices along `dim` into one. Optionally also `inverse` (the output
    position of each element/slice: input's shape when dim is None) and `counts` (run lengths,
    int64). NaN never equals itself, so each NaN is a run of its own. Not differentiable."""
    x = input._data
    if dim is None:
        flat = x.reshape(-1)
        if flat.size:
            new = np.concatenate([[True], flat[1:] != flat[:-1]])
        else:
            new = np.zeros(0, bool)
        vals = flat[new]
        inv_shape = x.shape
    else:
        if x.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = norm_dim(dim, x.ndim, "unique_consecutive")
        if any(s == 0 for k, s in enumerate(x.shape) if k != d):
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        moved = np.moveaxis(x, d, 0).reshape(x.shape[d], x.size // max(x.shape[d], 1))
        if moved.shape[0]:
            new = np.concatenate([[True], (moved[1:] != moved[:-1]).any(axis=1)])
        else:
            new = np.zeros(0, bool)
        vals = np.compress(new, x, axis=d)
        inv_shape = (x.shape[d],)
    out = [Tensor._make(np.ascontiguousarray(vals))]
    if return_inverse:
        out.append(Tensor._make((np.cumsum(new) - 1).astype(np.int64).reshape(inv_shape)))
    if return_counts:
        starts = np.flatnonzero(new)
        out.append(Tensor._make(np.diff(np.append(starts, new.size)).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)



