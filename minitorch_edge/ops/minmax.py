"""Reductions that pick elements: max/min, amax/amin, argmax/argmin, median.

The result is one of the input's elements, so the gradient goes back to where that element came
from. Two conventions, both PyTorch's:

* ops that return an index (``x.max(dim)``, ``x.median(dim)``) send the whole gradient to that
  index, even when other elements tie with it;
* ops that return only a value (``x.max()``, ``amax``, ``x.median()``) split the gradient evenly
  among all the elements equal to the result.

In both cases the mask is a constant built with numpy, and the backward is ``grad * mask``, so
it can be differentiated again. NaN propagates: a slice holding NaN gives NaN and the index of
its first NaN. Reducing over an empty dim is an error (there is no identity element).

max, min and median are two Functions each (the whole tensor, along a dim), both named after
the op: PyTorch records both overloads under one name (``x.max().grad_fn`` is MaxBackward1,
``x.max(0).values.grad_fn`` MaxBackward0), and a Node's name is its Function's class name.
"""
import collections

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import norm_dim, norm_dims, tensor_method
from .elementwise import maximum, minimum
from .reduce import _const, _grad_back

__all__ = ["max", "min", "amax", "amin", "argmax", "argmin", "median"]

# what x.max(dim) returns: a tuple with .values and .indices (torch.return_types.max)
MaxResult = collections.namedtuple("max", ["values", "indices"])
MinResult = collections.namedtuple("min", ["values", "indices"])
MedianResult = collections.namedtuple("median", ["values", "indices"])


def _check_nonempty(x, dims, op, whole):
    """PyTorch's errors for reducing nothing: no dim given on an empty tensor, or an empty dim."""
    if whole and x.size == 0:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == "
                           f"0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _same(x, y):
    """Where x equals the (broadcast) result y; NaN counts as equal to NaN."""
    return (x == y) | (np.isnan(x) & np.isnan(y)) if _dt.is_float_dtype(x.dtype) else x == y


# ---- whole-tensor and multi-dim values: amax/amin, max()/min() ---------------------------------
class Amax(Function):
    """y = max of x over dims.  dy/dx = 1/k at each of the k elements equal to y, else 0
    (for amax a NaN result gives NaN gradients, as PyTorch; max() splits among the NaNs)."""
    _builtin = True
    _np = staticmethod(np.amax)
    nan_ties = False      # max()/min() (whole tensor) treat NaN == NaN when splitting

    @classmethod
    def forward(cls, ctx, a, dims, keepdim):
        x = a._data
        out = np.asarray(cls._np(x, axis=dims, keepdims=keepdim))
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.info = (x.shape, dims, keepdim)
            ctx.result = out
        return out

    @classmethod
    def backward(cls, ctx, grad):
        x, = ctx.saved_tensors
        shape, dims, keepdim = ctx.info
        xd = x._data
        y = np.asarray(ctx.result)
        if not keepdim:
            y = np.expand_dims(y, dims)
        hit = _same(xd, y) if cls.nan_ties else xd == y
        with np.errstate(invalid="ignore", divide="ignore"):
            w = hit / hit.sum(axis=dims, keepdims=True)
        return _grad_back(grad, shape, dims, keepdim) * _const(w, grad), None, None


class Amin(Amax):
    _np = staticmethod(np.amin)


class MaxAll(Amax):
    nan_ties = True


class MinAll(Amin):
    nan_ties = True


def _amax_dims(op, input, dim):
    x = input._data
    whole = dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)
    dims = tuple(range(x.ndim)) if whole else norm_dims(dim, x.ndim, op)
    _check_nonempty(x, dims, op, whole)
    return dims


@tensor_method("amax")
def amax(input, dim=(), keepdim=False):
    """Largest value over `dim` (int or tuple; () or None -> all). Ties share the gradient."""
    return Amax.apply(input, _amax_dims("amax", input, dim), keepdim)


@tensor_method("amin")
def amin(input, dim=(), keepdim=False):
    """Smallest value over `dim` (int or tuple; () or None -> all). Ties share the gradient."""
    return Amin.apply(input, _amax_dims("amin", input, dim), keepdim)


# ---- along one dim, with the index: max(dim)/min(dim)/median(dim) ----------------------------
class _PickDim(Function):
    """(values, indices) along `dim`; dvalues/dx = 1 at the returned index, else 0."""
    _builtin = True

    @classmethod
    def forward(cls, ctx, a, dim, keepdim):
        x = a._data
        xx = x.reshape(1) if x.ndim == 0 else x
        idx = cls._index(xx, dim)                       # keepdims=True, int64
        vals = np.take_along_axis(xx, idx, axis=dim)
        if ctx.needs_input_grad:
            ctx.info = (x.shape, dim, keepdim, idx)
        if x.ndim == 0:
            return vals.reshape(()), idx.reshape(())
        if not keepdim:
            vals, idx = np.squeeze(vals, dim), np.squeeze(idx, dim)
        return vals, idx

    @staticmethod
    def backward(ctx, grad, grad_indices):
        shape, dim, keepdim, idx = ctx.info
        if not shape:
            return grad, None, None
        pos = np.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))])
        onehot = _const(pos == idx, grad)
        return _grad_back(grad, shape, (dim,), keepdim) * onehot, None, None


class MaxDim(_PickDim):
    @staticmethod
    def _index(x, dim):
        return np.argmax(x, axis=dim, keepdims=True).astype(np.int64)


class MinDim(_PickDim):
    @staticmethod
    def _index(x, dim):
        return np.argmin(x, axis=dim, keepdims=True).astype(np.int64)


class MedianDim(_PickDim):
    """The lower median: the element of rank (n-1)//2 in sorted order (ties: the stable sort's
    choice). A slice holding NaN gives NaN and the index of its first NaN."""

    @staticmethod
    def _index(x, dim):
        n = x.shape[dim]
        order = np.argsort(x, axis=dim, kind="stable")
        idx = np.take(order, [(n - 1) // 2], axis=dim)
        if _dt.is_float_dtype(x.dtype):
            nan = np.isnan(x)
            idx = np.where(nan.any(axis=dim, keepdims=True),
                           np.argmax(nan, axis=dim, keepdims=True), idx)
        return idx.astype(np.int64)


def _extreme(op, whole_cls, dim_cls, result, other_fn, input, dim, keepdim, other):
    if other is not None:
        dim = other
    if isinstance(dim, Tensor):          # max(a, b): the elementwise maximum
        return other_fn(input, dim)
    x = input._data
    if dim is None:
        _check_nonempty(x, (), op, True)
        return whole_cls.apply(input, tuple(range(x.ndim)), False)
    d = norm_dim(dim, x.ndim, op)
    _check_nonempty(x, (d,) if x.ndim else (), op, False)
    return result(*dim_cls.apply(input, d, keepdim))


@tensor_method("max")
def max(input, dim=None, keepdim=False, *, other=None):
    """max(x): the largest element (ties share the gradient). max(x, dim, keepdim=False):
    (values, indices) along dim, the gradient going to the index. max(x, other_tensor): the
    elementwise maximum()."""
    return _extreme("max", MaxAll, MaxDim, MaxResult, maximum, input, dim, keepdim, other)


@tensor_method("min")
def min(input, dim=None, keepdim=False, *, other=None):
    """min(x), min(x, dim, keepdim=False) -> (values, indices), min(x, other): as max()."""
    return _extreme("min", MinAll, MinDim, MinResult, minimum, input, dim, keepdim, other)


# ---- indices only -----------------------------------------------------------------------------
def _arg(op, np_fn, input, dim, keepdim):
    x = input._data
    if x.dtype == np.bool_:
        raise RuntimeError(f"{op}(): does not support bool input; convert with .int() first")
    if dim is None:
        if x.size == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                             f"== 0.")
        out = np.asarray(np_fn(x.reshape(-1))).astype(np.int64)
        return Tensor._make(out.reshape((1,) * x.ndim) if keepdim else out)
    d = norm_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return Tensor._make(np.zeros((), np.int64))
    _check_nonempty(x, (d,), op, False)
    return Tensor._make(np.asarray(np_fn(x, axis=d, keepdims=keepdim)).astype(np.int64))


@tensor_method("argmax")
def argmax(input, dim=None, keepdim=False):
    """Index of the largest element along `dim` (dim=None: of the flattened tensor). int64."""
    return _arg("argmax", np.argmax, input, dim, keepdim)


@tensor_method("argmin")
def argmin(input, dim=None, keepdim=False):
    """Index of the smallest element along `dim` (dim=None: of the flattened tensor). int64."""
    return _arg("argmin", np.argmin, input, dim, keepdim)


# ---- median -----------------------------------------------------------------------------------
class MedianAll(Function):
    """y = the lower median of all elements (NaN if any is NaN; NaN for an empty tensor).
    dy/dx = 1/k at each of the k elements equal to y (as PyTorch's median())."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        x = a._data.reshape(-1)
        if x.size == 0:
            out = np.asarray(np.nan, a._data.dtype)
        elif _dt.is_float_dtype(x.dtype) and np.isnan(x).any():
            out = np.asarray(np.nan, x.dtype)
        else:
            out = np.asarray(np.sort(x, kind="stable")[(x.size - 1) // 2])
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.result = out
        return out

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        hit = _same(x._data, ctx.result)
        with np.errstate(invalid="ignore", divide="ignore"):
            w = hit / hit.sum()
        return grad.expand(x._data.shape) * _const(w, grad)


for _fn, _name in ((MaxAll, "Max"), (MaxDim, "Max"), (MinAll, "Min"), (MinDim, "Min"),
                   (MedianAll, "Median"), (MedianDim, "Median")):
    _fn.__name__ = _fn.__qualname__ = _name   # the grad_fn names (see the module docstring)


@tensor_method("median")
def median(input, dim=None, keepdim=False):
    """median(x): the lower median of all elements. median(x, dim, keepdim=False):
    (values, indices) along dim, the gradient going to the index."""
    x = input._data
    if dim is None:
        return MedianAll.apply(input)
    d = norm_dim(dim, x.ndim, "median")
    _check_nonempty(x, (d,) if x.ndim else (), "median", False)
    return MedianResult(*MedianDim.apply(input, d, keepdim))

