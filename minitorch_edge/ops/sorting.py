"""Indexing along one dim, and the ordering ops built on it.

gather/scatter, index_select/index_add and take_along_dim read or write with an integer index
tensor along a single dim; each read is the gradient of a write and back:

    y = gather(x, dim, index)      ->  dx = scatter_add(zeros, dim, index, dy)
    y = scatter_add(x, dim, i, s)  ->  ds = gather(dy, dim, i)
    y = index_select(x, dim, i)    ->  dx = index_add(zeros, dim, i, dy)

The ordering ops (sort, topk, kthvalue) first find *positions* with numpy (never
differentiated), then read the values with `gather`, so their gradient is gather's: each
incoming gradient goes back to the position it was read from, and double backward works.
nonzero and unique return positions/copies and are not differentiable.
"""
from collections import namedtuple

import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import check_broadcast, norm_dim, shape_str, tensor_method
from .index import IndexAccumulate, IndexSpec, _check_index

__all__ = ["gather", "scatter", "scatter_add", "index_select", "index_add", "take_along_dim",
           "sort", "argsort", "msort", "topk", "kthvalue", "nonzero", "argwhere", "unique",
           "SortResult", "TopkResult", "KthvalueResult"]


# ---- gather / scatter along one dim ------------------------------------------------------------
def _check_range(arr, size, dim, op):
    if arr.size:
        mn, mx = int(arr.min()), int(arr.max())
        if mn < 0 or mx >= size:
            raise RuntimeError(f"{op}(): index {mx if mx >= size else mn} is out of bounds for "
                               f"dimension {dim} with size {size}")


def _coords(index, dim):
    """Advanced-index tuple reading position (i, j, index[i, j, k], ...) for each element."""
    n = index.ndim
    return tuple(index if d == dim else
                 np.arange(s).reshape([-1 if k == d else 1 for k in range(n)])
                 for d, s in enumerate(index.shape))


def _gather_args(input, dim, index, op, src=None):
    """Validate (dim, index[, src]) for gather/scatter; return the normalised dim."""
    _check_index(index, op)
    x, i = input._data, index._data
    dim = norm_dim(dim, x.ndim, op)
    if i.ndim != x.ndim and not (max(i.ndim, x.ndim) <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                           f"input tensor (index {shape_str(i.shape)}, input "
                           f"{shape_str(x.shape)})")
    xs, is_ = x.shape or (1,), i.shape or (1,)
    ss = None if src is None else (src._data.shape or (1,))
    for d in range(len(is_)):
        if (d != dim and is_[d] > xs[d]) or (ss is not None and is_[d] > ss[d]):
            what = "" if ss is None else f" and to be no larger than src {list(ss)}"
            raise RuntimeError(f"{op}(): Size does not match at dimension {d}: expected index "
                               f"{list(is_)} to be no larger than self {list(xs)} apart from "
                               f"dimension {dim}{what}")
    if src is not None and src._data.dtype != x.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype (got "
                           f"{input.dtype} and {src.dtype})")
    _check_range(i, xs[dim], dim, op)
    return dim


def _pad_to(g, shape):
    """g placed at the leading corner of zeros(shape) (src may be larger than index)."""
    if g._data.shape == tuple(shape):
        return g
    corner = tuple(slice(0, s) for s in g._data.shape) + (Ellipsis,)
    return IndexAccumulate.apply(g, IndexSpec(corner, None, tuple(shape)))


class Gather(Function):
    """y[i][j][k] = x[i][index[i][j][k]][k]  (dim=1; likewise for any dim).
    dx = scatter_add(zeros(x.shape), dim, index, dy)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index):
        if ctx.needs_input_grad:
            ctx.save_for_backward(index)
            ctx.info = (dim, a._data.shape)
        x, i = np.atleast_1d(a._data), np.atleast_1d(index._data)
        return x[_coords(i, dim)].reshape(index._data.shape)

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensors
        dim, shape = ctx.info
        zeros = Tensor._make(np.zeros(shape, grad._data.dtype))
        return ScatterAdd.apply(zeros, dim, index, grad), None, None


class ScatterAdd(Function):
    """y = x; y[i][index[i][j][k]][k] += src[i][j][k]  (dim=1; repeats add up).
    dx = dy;  dsrc = gather(dy, dim, index) (zero where src is larger than index)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index, src):
        if ctx.needs_input_grad:
            ctx.save_for_backward(index)
            ctx.info = (dim, src._data.shape)
        out = np.array(a._data, copy=True, ndmin=1)
        i = np.atleast_1d(index._data)
        s = np.atleast_1d(src._data)[tuple(slice(0, n) for n in i.shape)]
        np.add.at(out, _coords(i, dim), s)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensors
        dim, src_shape = ctx.info
        g_src = None
        if ctx.needs_input_grad[3]:
            g_src = _pad_to(Gather.apply(grad, dim, index), src_shape)
        return grad, None, None, g_src


class Scatter(Function):
    """y = x; y[i][index[i][j][k]][k] = src[i][j][k] (or a scalar value); reduce="add" or
    "multiply" combines instead of overwriting (no gradient, as in PyTorch).
    dx = dy with the written positions zeroed;  dsrc = gather(dy, dim, index)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index, src, reduce):
        i = np.atleast_1d(index._data)
        out = np.array(a._data, copy=True, ndmin=1)
        if isinstance(src, Tensor):
            v = np.atleast_1d(src._data)[tuple(slice(0, n) for n in i.shape)]
        else:
            v = np.asarray(src).astype(out.dtype)
        where = _coords(i, dim)
        if reduce is None:
            out[where] = v
        else:
            (np.add if reduce == "add" else np.multiply).at(out, where, v)
        if ctx.needs_input_grad:
            ctx.save_for_backward(index)
            ctx.info = (dim, np.shape(src._data) if isinstance(src, Tensor) else None, reduce)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensors
        dim, src_shape, reduce = ctx.info
        if reduce is not None:
            raise RuntimeError("the derivative for scatter with reduce is not implemented "
                               "(as in PyTorch); use scatter_add for a differentiable sum")
        need = ctx.needs_input_grad
        g_in = Scatter.apply(grad, dim, index, 0.0, None) if need[0] else None
        g_src = _pad_to(Gather.apply(grad, dim, index), src_shape) if need[3] else None
        return g_in, None, None, g_src, None


@tensor_method("gather")
def gather(input, dim, index, sparse_grad=False):
    """out[i][j][k] = input[i][index[i][j][k]][k] for dim=1; out has index's shape."""
    dim = _gather_args(input, dim, index, "gather")
    return Gather.apply(input, dim, index)


@tensor_method("scatter")
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """Out of place: a copy of input with out[i][index[i][j][k]][k] = src[i][j][k] (dim=1).
    `src` may be a number (or pass value=); reduce="add"/"multiply" combines instead."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter(): expected a src tensor or a value")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got "
                           f"{reduce!r}")
    dim = _gather_args(input, dim, index, "scatter", src if isinstance(src, Tensor) else None)
    return Scatter.apply(input, dim, index, src, reduce)


@tensor_method("scatter_add")
def scatter_add(input, dim, index, src):
    """Out of place: a copy of input with out[i][index[i][j][k]][k] += src[i][j][k] (dim=1)."""
    dim = _gather_args(input, dim, index, "scatter_add", src)
    return ScatterAdd.apply(input, dim, index, src)


# ---- index_select / index_add --------------------------------------------------------------
def _select_args(input, dim, index, op):
    _check_index(index, op)
    if index._data.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got shape "
                         f"{shape_str(index._data.shape)}")
    dim = norm_dim(dim, input._data.ndim, op)
    if input._data.ndim == 0 and index._data.size != 1 and op == "index_select":
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index._data.size} value(s)")
    _check_range(index._data, (input._data.shape or (1,))[dim], dim, op)
    return dim


class IndexSelect(Function):
    """y = x with dim `dim` replaced by x[..., index[k], ...] for each k.
    dx = index_add(zeros(x.shape), dim, index, dy)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index):
        if ctx.needs_input_grad:
            ctx.save_for_backward(index)
            ctx.info = (dim, a._data.shape)
        out = np.take(np.atleast_1d(a._data), index._data.reshape(-1), axis=dim)
        return out.reshape(()) if a._data.ndim == 0 else out

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensors
        dim, shape = ctx.info
        zeros = Tensor._make(np.zeros(shape, grad._data.dtype))
        return IndexAdd.apply(zeros, dim, index, grad, 1), None, None


class IndexAdd(Function):
    """y = x; y[..., index[k], ...] += alpha * src[..., k, ...] along dim (repeats add up).
    dx = dy;  dsrc = alpha * index_select(dy, dim, index)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index, src, alpha):
        if ctx.needs_input_grad:
            ctx.save_for_backward(index)
            ctx.info = (dim, alpha)
        out = np.array(a._data, copy=True, ndmin=1)
        s = np.atleast_1d(src._data)
        np.add.at(out, (slice(None),) * dim + (index._data.reshape(-1),),
                  s if alpha == 1 else s * alpha)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx, grad):
        index, = ctx.saved_tensors
        dim, alpha = ctx.info
        g_src = None
        if ctx.needs_input_grad[3]:
            g_src = IndexSelect.apply(grad, dim, index)
            g_src = g_src if alpha == 1 else g_src * alpha
        return grad, None, None, g_src, None


@tensor_method("index_select")
def index_select(input, dim, index):
    """Entries of input at positions `index` (1-D, int64/int32) along `dim`."""
    dim = _select_args(input, dim, index, "index_select")
    return IndexSelect.apply(input, dim, index)


@tensor_method("index_add")
def index_add(input, dim, index, source, *, alpha=1):
    """Out of place: input with alpha * source[..., k, ...] added at index[k] along dim."""
    dim = _select_args(input, dim, index, "index_add")
    want = list(input._data.shape or (1,))
    want[dim] = index._data.size
    if list(source._data.shape or (1,)) != want:
        raise RuntimeError(f"index_add(): source has shape {shape_str(source._data.shape)}; "
                           f"expected {shape_str(want)} (input's shape with dim {dim} = "
                           f"number of indices)")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"index_add(): self ({input.dtype}) and source ({source.dtype}) must "
                           f"have the same scalar type")
    return IndexAdd.apply(input, dim, index, source, alpha)


@tensor_method("take_along_dim")
def take_along_dim(input, indices, dim=None):
    """gather(input, dim, indices) after broadcasting the two over all dims but `dim`
    (dim=None: over the flattened input). Negative indices count from the end."""
    _check_index(indices, "take_along_dim", (np.int64,))
    x, i = input._data, indices._data
    if dim is None:
        input, i, dim = input.reshape(-1), i.reshape(-1), 0
    else:
        dim = norm_dim(dim, x.ndim, "take_along_dim")
        if i.ndim != x.ndim:
            raise RuntimeError(f"take_along_dim(): input and indices should have the same number "
                               f"of dimensions, but got {x.ndim} dimensions for input, and "
                               f"{i.ndim} dimensions for indices")
        xs, is_ = list(x.shape or (1,)), list(i.shape or (1,))
        xs[dim] = is_[dim]
        b = list(check_broadcast(tuple(xs), tuple(is_), "take_along_dim"))
        i = np.broadcast_to(i, b) if x.ndim else i
        b[dim] = x.shape[dim] if x.ndim else 1
        if x.ndim and tuple(b) != x.shape:
            input = input.expand(tuple(b))
    size = (input._data.shape or (1,))[dim]
    if i.size and (int(i.max()) >= size or int(i.min()) < -size):
        bad = int(i.max()) if int(i.max()) >= size else int(i.min())
        raise IndexError(f"take_along_dim(): index {bad} is out of bounds for dimension {dim} "
                         f"with size {size}")
    i = np.where(i < 0, i + size, i)
    return Gather.apply(input, dim, Tensor._make(i))


# ---- ordering ------------------------------------------------------------------------------
def _result_type(name):
    """A (values, indices) named tuple, like torch.return_types.<name>."""
    base = namedtuple(name, ["values", "indices"])

    def __repr__(self):
        return f"minitorch_edge.return_types.{name}(\nvalues={self.values!r},\nindices=" \
               f"{self.indices!r})"
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__module__": "minitorch_edge.return_types"})


SortResult = _result_type("sort")
TopkResult = _result_type("topk")
KthvalueResult = _result_type("kthvalue")


def _order(x, axis, descending):
    """Stable argsort along axis. Descending keeps equal elements in their original order
    (sort the reversed array ascending, then reverse the result); NaN counts as the largest."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return n - 1 - np.flip(rev, axis)


def _positions(input, dim, descending, op):
    """(normalised dim, int64 order of input along dim) for a tensor of any rank."""
    x = input._data
    dim = norm_dim(dim, x.ndim, op)
    order = _order(np.atleast_1d(x), dim, descending).astype(np.int64)
    return dim, order.reshape(x.shape)


class Sort(Gather):
    """Gather at the sorted positions (sort()'s values)."""


class Topk(Gather):
    """Gather at the positions of the k largest or smallest (topk()'s values)."""


@tensor_method("sort")
def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) with input sorted along dim. Ties keep their original order (always
    stable here; stable=False in PyTorch leaves the order of ties unspecified). NaN sorts as the
    largest value. values are differentiable: the gradient goes back to the source positions."""
    dim, order = _positions(input, dim, descending, "sort")
    idx = Tensor._make(order)
    return SortResult(Sort.apply(input, dim, idx), idx)


@tensor_method("argsort")
def argsort(input, dim=-1, descending=False, stable=False):
    """The int64 indices that sort input along dim (= sort(...).indices)."""
    return Tensor._make(_positions(input, dim, descending, "argsort")[1])


@tensor_method("msort")
def msort(input):
    """input sorted along dim 0 (values only)."""
    return sort(input, 0).values


@tensor_method("topk")
def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (largest=False: smallest) entries along dim, in sorted
    order (also for sorted=False, where PyTorch leaves the order unspecified)."""
    x = input._data
    d = norm_dim(dim, x.ndim, "topk")
    size = x.shape[d] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk(): selected index k out of range: k={k} but dimension {d} has "
                           f"size {size}")
    d, order = _positions(input, d, largest, "topk")
    order = np.take(np.atleast_1d(order), np.arange(k), axis=d)
    idx = Tensor._make(order.reshape(x.shape) if x.ndim == 0 else order)
    return TopkResult(Topk.apply(input, d, idx), idx)


@tensor_method("kthvalue")
def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest entry (k counts from 1) along dim."""
    x = input._data
    d = norm_dim(dim, x.ndim, "kthvalue")
    size = x.shape[d] if x.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k={k} out of range for dimension {d} "
                           f"of size {size}")
    d, order = _positions(input, d, False, "kthvalue")
    pick = np.take(np.atleast_1d(order), [k - 1], axis=d)
    idx = Tensor._make(pick.reshape(x.shape) if x.ndim == 0 else pick)
    values = Gather.apply(input, d, idx)
    if not keepdim and x.ndim:
        shape = x.shape[:d] + x.shape[d + 1:]
        values, idx = values.reshape(shape), Tensor._make(idx._data.reshape(shape))
    return KthvalueResult(values, idx)


@tensor_method("nonzero")
def nonzero(input, *, as_tuple=False):
    """Positions of the non-zero entries: an int64 (n, ndim) tensor, or (as_tuple=True) one 1-D
    int64 tensor per dim (a 0-d input counts as 1-D). Not differentiable."""
    x = input._data
    if as_tuple:
        return tuple(Tensor._make(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(x)))
    return Tensor._make(np.argwhere(x).astype(np.int64))


@tensor_method("argwhere")
def argwhere(input):
    """Same as nonzero(input): an int64 (n, ndim) tensor of positions."""
    return nonzero(input)


@tensor_method("unique")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of input (sorted), flattened or (dim given) as distinct slices along
    dim. Optionally also `inverse` (where each entry went; input's shape when dim is None) and
    `counts`. Not differentiable."""
    x = input._data
    axis = None if dim is None else norm_dim(dim, x.ndim, "unique")
    vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True, axis=axis)
    out = [Tensor._make(vals)]
    if return_inverse:
        inv = inv.reshape(x.shape if axis is None else (-1,))
        out.append(Tensor._make(inv.astype(np.int64)))
    if return_counts:
        out.append(Tensor._make(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)
