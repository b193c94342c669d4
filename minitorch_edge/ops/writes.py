"""Writing values at positions: ``index_copy``, ``masked_scatter``, ``put`` (each also in place,
with a trailing ``_``) and ``index_put_``.

Each is a *scatter* whose gradient is the matching *gather* (see index.py): for
``y = x with y[positions] = src``

    dx   = dy with the written positions zeroed     (the overwritten values had no effect)
    dsrc = dy read at the written positions         (index_select / masked_select / take)

With ``accumulate=True`` (put, index_put) the values are added instead, so dx = dy. Where a
position is written twice without accumulating, which value lands is unspecified in PyTorch
(numpy keeps the last); both give every source element the gradient at its target.

The in-place forms go through inplace.py's `apply_inplace` (leaf checks, snapshot, version
bump), like every other in-place op.
"""
from .._autocast import autocast_op
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import check_broadcast, norm_dim, shape_str, sum_to, tensor_method
from .index import IndexAccumulate, IndexSpec, MaskedSelect, index_fill, index_put, take
from .inplace import apply_inplace

__all__ = ["index_copy", "masked_scatter", "put", "index_put_"]


def _long_index(index, op):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype != np.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{index.dtype.name}; convert it with index.long()")


def _same_dtype(input, source, op):
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"(self) {input.dtype.name} and (source) {source.dtype.name}; "
                           f"convert source with .to({input.dtype.name})")


# ---- index_copy --------------------------------------------------------------------------------
class IndexCopy(Function):
    """y = x;  y[..., index[k], ...] = src[..., k, ...] along dim.
    dx = dy with the slices at index zeroed (index_fill);  dsrc = index_select(dy, dim, index)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index, src):
        out = np.array(a._data, copy=True, ndmin=1)
        want = list(out.shape)
        want[dim] = index._data.size
        out[(slice(None),) * dim + (index._data.reshape(-1),)] = src._data.reshape(want)
        if ctx.needs_input_grad:
            ctx.save_for_backward(index)
            ctx.info = (dim, src._data.shape)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensors
        dim, src_shape = ctx.info
        need = ctx.needs_input_grad
        g_in = index_fill(grad, dim, index, 0.0) if need[0] else None
        g_src = grad.index_select(dim, index.reshape(-1)).reshape(src_shape) if need[3] \
            else None
        return g_in, None, None, g_src


@tensor_method("index_copy")
@autocast_op("index_copy")
def index_copy(input, dim, index, source):
    """Out of place: input with the slices ``source[..., k, ...]`` copied to position index[k]
    along dim. index: 1-D (or 0-d) int64; source: input's dtype and shape with dim of size
    len(index) (0-d input/source count as 1-D). Gradient: dx = dy with those slices zeroed,
    dsource = dy.index_select(dim, index)."""
    op = "index_copy"
    _long_index(index, op)
    _same_dtype(input, source, op)
    i, x, s = index._data, input._data, source._data
    if i.ndim > 1:
        raise IndexError(f"{op}(): Index should have dimension 1 or 0 (got {i.ndim})")
    d = norm_dim(dim, x.ndim, op)
    if x.ndim and s.ndim and x.ndim != s.ndim:
        raise IndexError(f"{op}(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({s.ndim}), "
                         f"destination dimensionality ({x.ndim})")
    xs, ss = x.shape or (1,), s.shape or (1,)
    if i.size != (ss[d] if len(ss) > d else 1):
        raise IndexError(f"{op}(): Number of indices ({i.size}) should be equal to "
                         f"source.size(dim) ({ss[d] if len(ss) > d else 1})")
    for k in range(len(xs)):
        if k != d and len(ss) == len(xs) and xs[k] != ss[k]:
            raise RuntimeError(f"{op}(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {shape_str(xs[:d] + xs[d + 1:])}"
                               f" at dimension {d} and source slice shape: "
                               f"{shape_str(ss[:d] + ss[d + 1:])} at dimension {d}.")
    if i.size and (int(i.min()) < 0 or int(i.max()) >= xs[d]):
        bad = int(i.min()) if int(i.min()) < 0 else int(i.max())
        raise IndexError(f"{op}(): index {bad} is out of bounds for dimension {d} with size "
                         f"{xs[d]}")
    return IndexCopy.apply(input, d, index, source)


# ---- masked_scatter ----------------------------------------------------------------------------
class MaskedScatter(Function):
    """y = x (broadcast with mask) with the positions where mask is True filled, in row-major
    order, by the first mask.sum() elements of src.
    dx = dy where not mask (summed to x's shape);  dsrc = dy[mask] in the first mask.sum()
    places of src's shape, zeros after."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, mask, src, shape):
        m = np.broadcast_to(mask._data, shape)
        out = np.array(np.broadcast_to(a._data, shape), copy=True)
        k = int(m.sum())
        out[m] = src._data.reshape(-1)[:k]
        if ctx.needs_input_grad:
            ctx.save_for_backward(mask)
            ctx.info = (a._data.shape, src._data.shape, shape, k)
        return out

    @staticmethod
    def backward(ctx, grad):
        mask, = ctx.saved_tensors
        in_shape, src_shape, shape, k = ctx.info
        need = ctx.needs_input_grad
        g_in = g_src = None
        if need[0]:
            g_in = sum_to(grad.masked_fill(mask, 0.0), in_shape)
        if need[2]:
            m = np.broadcast_to(mask._data, shape)
            picked = MaskedSelect.apply(grad, Tensor._make(m), shape)
            n = int(np.prod(src_shape, dtype=np.int64))
            spec = IndexSpec((Ellipsis,), (np.arange(k, dtype=np.intp),), (n,))
            g_src = IndexAccumulate.apply(picked, spec).reshape(src_shape)
        return g_in, None, g_src, None


@tensor_method("masked_scatter")
def masked_scatter(input, mask, source):
    """Out of place: input (broadcast with the bool `mask`) with the True positions filled, in
    row-major order, from source's elements (source needs at least mask.sum() elements and
    input's dtype). Gradient: dx = dy where not mask; dsource = dy[mask], then zeros."""
    op = "masked_scatter"
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {got}")
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"{op}: expected self and source to have same dtypes but got "
                           f"{input.dtype.name} and {source.dtype.name}")
    shape = tuple(check_broadcast(input._data.shape, mask._data.shape, op))
    if int(np.broadcast_to(mask._data, shape).sum()) > source._data.size:
        raise RuntimeError(f"{op}: Number of elements of source < number of ones in mask "
                           f"({source._data.size} < "
                           f"{int(np.broadcast_to(mask._data, shape).sum())})")
    return MaskedScatter.apply(input, mask, source, shape)


# ---- put ----------------------------------------------------------------------------------------
class Put(Function):
    """y = x;  y.flat[index[k]] = src.flat[k]  (+= when accumulate).
    dx = dy with the written positions zeroed (dy when accumulate);
    dsrc = dy.flat[index] in src's shape (take)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, index, src, accumulate):
        out = np.array(a._data, copy=True, order="C")
        flat = out.reshape(-1)
        pos = index._data.reshape(-1)
        values = src._data.reshape(-1)
        if accumulate:
            np.add.at(flat, pos, values)
        else:
            flat[pos] = values
        if ctx.needs_input_grad:
            ctx.save_for_backward(index)
            ctx.info = (src._data.shape, accumulate)
        return out

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensors
        src_shape, accumulate = ctx.info
        need = ctx.needs_input_grad
        g_in = g_src = None
        if need[0]:
            g_in = grad if accumulate else \
                Put.apply(grad, index, Tensor._make(np.zeros(src_shape, grad._data.dtype)), False)
        if need[2]:
            g_src = take(grad, index).reshape(src_shape)
        return g_in, None, g_src, None


@tensor_method("put")
def put(input, index, source, accumulate=False):
    """Out of place: input treated as 1-D (row-major) with ``flat[index[k]] = source.flat[k]``
    (added when accumulate; repeats then add up). index: int64, negative counts from the end;
    source: input's dtype with as many elements as index. Gradient: dx = dy with the written
    positions zeroed (dy when accumulating); dsource = dy.flat[index]."""
    op = "put_"
    _long_index(index, op)
    if not isinstance(source, Tensor):
        raise TypeError(f"put(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype.name} and source.dtype = "
                           f"{source.dtype.name}")
    if source._data.size != index._data.size:
        raise IndexError(f"{op}(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source._data.size}, "
                         f"index.numel() = {index._data.size}")
    n = input._data.size
    i = index._data
    if i.size and (int(i.max()) >= n or int(i.min()) < -n):
        bad = int(i.max()) if int(i.max()) >= n else int(i.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         f"elements.")
    if i.size and int(i.min()) < 0:
        index = Tensor._make(np.where(i < 0, i + n, i))
    return Put.apply(input, index, source, bool(accumulate))


# ---- in place -----------------------------------------------------------------------------------
def _index_put_(self, indices, values, accumulate=False):
    """In-place index_put: ``self[indices] = values`` (``+=`` when accumulate). `indices` is a
    tuple of index tensors (None stands for a whole dim, as ``:``)."""
    if isinstance(indices, (tuple, list)):
        indices = tuple(slice(None) if i is None else i for i in indices)
    args = (values,) if isinstance(values, Tensor) else ()
    return apply_inplace(self, "index_put",
                         lambda src, *v: index_put(src, indices, values if not v else v[0],
                                                   accumulate), args)


def _index_copy_(self, dim, index, source):
    return apply_inplace(self, "index_copy", lambda src, s: index_copy(src, dim, index, s),
                         (source,))


def _masked_scatter_(self, mask, source):
    return apply_inplace(self, "masked_scatter", lambda src, s: masked_scatter(src, mask, s),
                         (source,))


def _put_(self, index, source, accumulate=False):
    return apply_inplace(self, "put", lambda src, s: put(src, index, s, accumulate), (source,))


_index_copy_.__doc__ = "In-place index_copy (see index_copy)."
_masked_scatter_.__doc__ = "In-place masked_scatter (see masked_scatter); mask broadcasts to self."
_put_.__doc__ = "In-place put (see put)."
Tensor.index_put_ = index_put_ = _index_put_
Tensor.index_copy_ = _index_copy_
Tensor.masked_scatter_ = _masked_scatter_
Tensor.put_ = _put_
