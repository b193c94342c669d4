"""Joining and splitting: cat/stack (many tensors -> one), split/chunk/unbind (one -> many),
repeat/tile (one -> a bigger one made of copies).

Joining and splitting are each other's gradient: the gradient of cat is the incoming gradient
cut into the inputs' slices, and the gradient of split is the pieces' gradients joined back with
cat. split/chunk/unbind are single multi-output Functions whose outputs are views of the input
(the engine hands zeros to backward for the pieces that got no gradient).
"""
from .._autocast import autocast_op
import operator

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import int_tuple, norm_dim, shape_str, tensor_method
from ._views import Embed, Slice, View
from .shape import _shape_args, unsqueeze

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
           "column_stack", "atleast_1d", "atleast_2d", "atleast_3d", "split", "tensor_split",
           "chunk", "unbind", "repeat", "tile"]


def _along(dim, start, stop):
    """The basic index selecting start:stop along dim."""
    return (slice(None),) * dim + (slice(start, stop),)


# ---- many -> one --------------------------------------------------------------------------------
class Cat(Function):
    """y = x_0, x_1, ... joined along `dim` (all cast to the promoted dtype `dtype`).
    dx_i = dy[..., start_i:stop_i, ...], the slice where x_i went."""
    _builtin = True

    @staticmethod
    def forward(ctx, dim, dtype, *tensors):
        arrays, where, pos = [], [], 0
        for t in tensors:
            x = t._data
            if _skip(x):
                where.append(None)
                continue
            where.append((pos, pos + x.shape[dim]))
            arrays.append(x.astype(dtype, copy=False))
            pos += x.shape[dim]
        if ctx.needs_input_grad:
            ctx.info = (dim, where)
        if not arrays:                       # only legacy empty 1-D tensors
            return np.zeros((0,), dtype)
        return np.concatenate(arrays, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        dim, where = ctx.info
        grads = [None, None]
        for need, w in zip(ctx.needs_input_grad[2:], where):
            if not need:
                grads.append(None)
            elif w is None:
                grads.append(Tensor._make(np.zeros((0,), grad._data.dtype)))
            else:
                grads.append(Slice.apply(grad, _along(dim, *w)))
        return tuple(grads)


class Stack(Cat):
    """Cat of the inputs, each unsqueezed at `dim` first (stack())."""


def _skip(x):
    """PyTorch's legacy rule: a 1-D tensor with no elements is left out of cat."""
    return x.ndim == 1 and x.size == 0


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise ValueError(f"{op}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected a list of Tensors, but element {i} is of type "
                            f"{type(t).__name__}")
    return list(tensors)


@autocast_op("cat")
def cat(tensors, dim=0, *, out=None):
    """Join tensors along an existing dim; dtypes promote as PyTorch's (e.g. int32 with float32
    gives float32). As PyTorch, 1-D tensors with no elements are skipped whatever their shape."""
    return _cat(_tensor_list(tensors, "cat"), dim, Cat)


def _cat(tensors, dim, fn):
    """cat's checks and dtype promotion, then the Function `fn` (Cat, or Stack for stack())."""
    dtype = tensors[0].dtype
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"cat(): zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated; use stack() or unsqueeze() it first")
        dtype = _dt.promote_types(dtype, t.dtype)
    kept = [(i, t._data.shape) for i, t in enumerate(tensors) if not _skip(t._data)]
    ref_i, ref = kept[0] if kept else (0, (0,))
    d = norm_dim(dim, len(ref), "cat")
    for i, shape in kept:
        if len(shape) != len(ref):
            raise RuntimeError(f"cat(): tensors must have the same number of dimensions: tensor "
                               f"{ref_i} has shape {tuple(ref)} ({len(ref)} dims) but tensor {i} "
                               f"has shape {tuple(shape)} ({len(shape)} dims)")
        for k in range(len(ref)):
            if k != d and shape[k] != ref[k]:
                raise RuntimeError(
                    f"cat(): sizes of tensors must match except in dimension {d}: tensor "
                    f"{ref_i} has shape {tuple(ref)} but tensor {i} has shape {tuple(shape)} "
                    f"(expected size {ref[k]} but got size {shape[k]} in dimension {k})")
    return fn.apply(d, dtype.np, *tensors)


concat = concatenate = cat


@autocast_op("stack")
def stack(tensors, dim=0, *, out=None):
    """Join same-shaped tensors along a new dim `dim` (in -ndim-1 .. ndim)."""
    tensors = _tensor_list(tensors, "stack")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(f"stack(): expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._data.shape)} at entry {i}")
    d = norm_dim(dim, len(shape) + 1, "stack")
    return _cat([unsqueeze(t, d) for t in tensors], d, Stack)


def hstack(tensors):
    """Join along dim 1 (dim 0 for 1-D tensors)."""
    tensors = _atleast(1, _tensor_list(tensors, "hstack"))
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


def vstack(tensors):
    """Join along dim 0 after making every tensor at least 2-D (1-D -> one row)."""
    return cat(_atleast(2, _tensor_list(tensors, "vstack")), 0)


row_stack = vstack


def dstack(tensors):
    """Join along dim 2 after making every tensor at least 3-D."""
    return cat(_atleast(3, _tensor_list(tensors, "dstack")), 2)


def column_stack(tensors):
    """Join along dim 1, 0-d and 1-D tensors becoming columns."""
    tensors = _tensor_list(tensors, "column_stack")
    cols = [View.apply(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in tensors]
    return cat(cols, 1)


def _atleast(n, tensors):
    """Each tensor reshaped to at least n dims (a list)."""
    out = []
    for x in tensors:
        shape = x._data.shape
        if len(shape) >= n:
            out.append(x)
        elif len(shape) == 0:
            out.append(View.apply(x, (1,) * n))
        elif len(shape) == 1:
            out.append(View.apply(x, ((1,) + shape + (1,))[:n]))
        else:                                # 2-D to 3-D
            out.append(View.apply(x, shape + (1,)))
    return out


def _atleast_api(n, tensors):
    """One Tensor argument -> a Tensor; several, or a list -> a tuple (as PyTorch)."""
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return _atleast(n, tensors)[0]
    return tuple(_atleast(n, _shape_args(tensors)))


def atleast_1d(*tensors):
    """0-d tensors become shape (1,); others come back as they are."""
    return _atleast_api(1, tensors)


def atleast_2d(*tensors):
    """0-d -> (1, 1), (n,) -> (1, n); others come back as they are."""
    return _atleast_api(2, tensors)


def atleast_3d(*tensors):
    """0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    return _atleast_api(3, tensors)


# ---- one -> many --------------------------------------------------------------------------------
class Split(Function):
    """(y_0, y_1, ...) = x[..., a_k:b_k, ...] along `dim` for each (a_k, b_k) in `bounds` (views).
    dx = cat of the pieces' gradients when the pieces tile the dim in order, otherwise each
    piece's gradient embedded at its place in zeros and summed."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, dim, bounds):
        if ctx.needs_input_grad:
            ctx.info = (a._data.shape, dim, bounds)
        x = a._data
        return tuple(x[_along(dim, s, e)] for s, e in bounds)

    @staticmethod
    def backward(ctx, *grads):
        shape, dim, bounds = ctx.info
        ends = [0] + [e for _, e in bounds]
        if all(s == ends[k] for k, (s, _) in enumerate(bounds)) and ends[-1] == shape[dim]:
            return cat(list(grads), dim), None, None
        total = None
        for g, (s, e) in zip(grads, bounds):
            part = Embed.apply(g, shape, _along(dim, s, e))
            total = part if total is None else total + part
        return total, None, None


class SplitWithSizes(Split):
    """Split into pieces of the given sizes (split() with a list)."""


class Unbind(Function):
    """(y_0, y_1, ...) = x[..., i, ...] for each i along `dim` (views, one dim fewer).
    dx = stack of the gradients along `dim`."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, dim):
        if ctx.needs_input_grad:
            ctx.dim = dim
        x = a._data
        pre = (slice(None),) * dim
        return tuple(x[pre + (i, Ellipsis)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(list(grads), ctx.dim), None


def _consecutive(sizes):
    """Sizes -> the (start, stop) bounds of consecutive pieces."""
    bounds, pos = [], 0
    for s in sizes:
        bounds.append((pos, pos + s))
        pos += s
    return tuple(bounds)


def _dim_of_1d_or_more(shape, dim, op):
    if not shape:
        raise RuntimeError(f"{op}(): expects at least a 1-dimensional tensor, got a 0-d one")
    return norm_dim(dim, len(shape), op)


@tensor_method("split")
def split(tensor, split_size_or_sections, dim=0):
    """Cut `tensor` along `dim` into pieces of split_size (the last may be smaller) or of the
    given list of sizes. Returns a tuple of views."""
    shape = tensor._data.shape
    d = _dim_of_1d_or_more(shape, dim, "split")
    n = shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = int_tuple(split_size_or_sections, "split", "split_sizes")
        if any(s < 0 for s in sizes) or sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes(): expects split_sizes to be non-negative and to "
                               f"sum exactly to {n} (the input's size at dim {d}, shape "
                               f"{shape_str(shape)}), but got split_sizes={list(sizes)}")
        bounds, fn = _consecutive(sizes), SplitWithSizes
    else:
        size = operator.index(split_size_or_sections)
        if size < 0 or (size == 0 and n > 0):
            raise RuntimeError(f"split(): split_size can only be 0 if dimension size is 0, and "
                               f"never negative; got split_size={size} for dim {d} of size {n}")
        bounds = tuple((s, min(s + size, n)) for s in range(0, n, size)) if n else ((0, 0),)
        fn = Split
    return fn.apply(tensor, d, bounds)


@tensor_method("tensor_split")
def tensor_split(input, indices_or_sections, dim=0):
    """Cut along `dim` into `sections` nearly equal pieces (the first n % sections one longer),
    or at the given indices (python slice rules: x[:i0], x[i0:i1], ..., x[ik:])."""
    shape = input._data.shape
    d = _dim_of_1d_or_more(shape, dim, "tensor_split")
    n = shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        spec = spec._data.item() if spec._data.ndim == 0 else spec._data.tolist()
    if isinstance(spec, (list, tuple)):
        cuts = [0] + list(int_tuple(spec, "tensor_split", "indices")) + [n]
        bounds = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            s, e, _ = slice(a, b).indices(n)
            bounds.append((s, max(s, e)))
    else:
        k = operator.index(spec)
        if k <= 0:
            raise RuntimeError(f"tensor_split(): number of sections must be larger than 0, got "
                               f"{k}")
        q, r = divmod(n, k)
        bounds = _consecutive([q + 1] * r + [q] * (k - r))
    return Split.apply(input, d, tuple(bounds))


@tensor_method("chunk")
def chunk(input, chunks, dim=0):
    """Cut along `dim` into pieces of size ceil(n / chunks) (so maybe fewer than `chunks`)."""
    chunks = operator.index(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk(): expects `chunks` to be greater than 0, got: {chunks}")
    shape = input._data.shape
    d = _dim_of_1d_or_more(shape, dim, "chunk")
    n = shape[d]
    if n == 0:
        return Split.apply(input, d, ((0, 0),) * chunks)
    return split(input, -(-n // chunks), d)


@tensor_method("unbind")
def unbind(input, dim=0):
    """The slices along `dim`, each one dim fewer (a tuple of views)."""
    if input._data.ndim == 0:
        raise IndexError("unbind(): dimension specified as 0 but tensor has no dimensions")
    d = norm_dim(dim, input._data.ndim, "unbind")
    return Unbind.apply(input, d)


# ---- one -> a bigger one ------------------------------------------------------------------------
class Repeat(Function):
    """y = x tiled reps[i] times along dim i (x first gets leading size-1 dims up to len(reps)).
    dx = dy viewed as (r_0, s_0, r_1, s_1, ...) and summed over the r axes."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, reps):
        x = a._data
        x = x.reshape((1,) * (len(reps) - x.ndim) + x.shape)
        if ctx.needs_input_grad:
            ctx.info = (a._data.shape, x.shape, reps)
        return np.tile(x, reps) if x.ndim else x.copy()

    @staticmethod
    def backward(ctx, grad):
        in_shape, shape, reps = ctx.info
        pairs = tuple(v for r, s in zip(reps, shape) for v in (r, s))
        g = grad.reshape(pairs).sum(dim=tuple(range(0, len(pairs), 2)))
        return g.reshape(in_shape), None


@tensor_method("repeat")
def repeat(input, *sizes):
    """Tile `input` sizes[i] times along dim i (PyTorch's repeat, numpy's tile: elements are
    not interleaved); len(sizes) >= input.ndim, extra sizes add leading dims."""
    sizes = int_tuple(_shape_args(sizes), "repeat", "sizes")
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"repeat(): number of dimensions of repeat dims ({len(sizes)}) can not "
                           f"be smaller than number of dimensions of tensor ({len(shape)}, shape "
                           f"{shape_str(shape)})")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"repeat(): repeats must be non-negative, got {list(sizes)}")
    return Repeat.apply(input, sizes)


@tensor_method("tile")
def tile(input, *dims):
    """repeat() where missing leading repeats count as 1 (dims may be shorter than ndim)."""
    dims = int_tuple(_shape_args(dims), "tile", "dims")
    return repeat(input, (1,) * (input._data.ndim - len(dims)) + dims)
