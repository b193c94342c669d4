"""``scatter_reduce`` (and ``scatter_reduce_``): scatter with a reduction.

For dim=1, every source element ``src[i][j][k]`` joins the *group* of output position
``(i, index[i][j][k], k)``; with ``include_self=True`` the original ``x`` value at that position
is a member too. Each output is its group reduced by `reduce`:

    sum   y_p = sum of the group            prod  y_p = product of the group
    mean  y_p = sum / (number of members)   (integers: floor division, as PyTorch)
    amax  y_p = max of the group            amin  y_p = min (NaN propagates)

Positions no source element reaches keep x. Gradients (member v of the group of p):

    sum    dv = dy_p
    mean   dv = dy_p / n_p
    prod   dv = dy_p * (product of the other members)   (y_p / v when v != 0; with zeros the
           product of the others is formed from the non-zero product and the zero count)
    amax/amin  dv = dy_p / (number of members equal to y_p) if v == y_p, else 0

so ``dsrc = gather(dy * w, dim, index)`` and ``dx = dy * w_self`` with per-position weights w.
All but prod-with-zeros are written with Tensor ops (double backward works); prod's zero case
uses constant weights.
"""
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import tensor_method
from .inplace import apply_inplace
from .sorting import Gather, _coords, _gather_args

__all__ = ["scatter_reduce"]

_REDUCE = ("sum", "prod", "mean", "amax", "amin")
_ALIASES = {"max": "amax", "min": "amin"}      # accepted by PyTorch too (undocumented)


def _identity(reduce, dtype):
    """The neutral start value of `reduce` in numpy `dtype` (include_self=False)."""
    if reduce in ("sum", "mean"):
        return np.zeros((), dtype)[()]
    if reduce == "prod":
        return np.ones((), dtype)[()]
    if dtype == np.bool_:
        return np.bool_(reduce == "amin")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if reduce == "amax" else info.max)
    return dtype.type(-np.inf if reduce == "amax" else np.inf)


def _groups(shape, dim, index):
    """(coords of each source element's target, scattered mask of the output positions,
    number of source elements per position)."""
    where = _coords(index, dim)
    count = np.zeros(shape, np.int64)
    np.add.at(count, where, 1)
    return where, count > 0, count


class ScatterReduce(Function):
    """y = scatter_reduce(x, dim, index, src, reduce, include_self); see the module docstring
    for y and its gradients."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, dim, index, src, reduce, include_self):
        x = np.atleast_1d(a._data)
        i = np.atleast_1d(index._data)
        s = np.atleast_1d(src._data)[tuple(slice(0, n) for n in i.shape)]
        where, hit, count = _groups(x.shape, dim, i)
        out = x.copy()
        if not include_self:
            out[hit] = _identity(reduce, out.dtype)
        if reduce in ("sum", "mean"):
            np.add.at(out, where, s)
        elif reduce == "prod":
            np.multiply.at(out, where, s)
        elif reduce == "amax":
            np.maximum.at(out, where, s)
        else:
            np.minimum.at(out, where, s)
        if reduce == "mean":
            n = np.maximum(count + (1 if include_self else 0), 1)
            if out.dtype.kind in "iu":
                out = np.floor_divide(out, n.astype(out.dtype)).astype(out.dtype)
            else:
                out = (out / n).astype(out.dtype)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, index, src)
            ctx.info = (dim, reduce, include_self, hit, count)
        return out.reshape(a._data.shape)

    @staticmethod
    def backward(ctx, grad):
        x, index, src, y = ctx.saved_tensors
        dim, reduce, include_self, hit, count = ctx.info
        shape = x._data.shape
        g = grad if grad._data.ndim else grad.reshape(1)
        src_full = src._data.shape
        i = index if index._data.ndim else index.reshape(1)
        s_t = src if src._data.ndim else src.reshape(1)
        s_t = s_t[tuple(slice(0, n) for n in i._data.shape)]
        keep_self = None if include_self else Tensor._make(~hit)   # positions x still counts
        dtype = g._data.dtype
        if reduce == "sum":
            g_self, g_each = g, g
        elif reduce == "mean":
            n = Tensor._make(np.maximum(count + (1 if include_self else 0), 1).astype(dtype))
            g_self, g_each = g / n, g / n
        elif reduce in ("amax", "amin"):
            yv = y if y._data.ndim else y.reshape(1)
            xv = x._data if x._data.ndim else x._data.reshape(1)
            self_hit = xv == yv._data
            if not include_self:
                self_hit &= ~hit
            src_hit = s_t._data == yv._data[_coords(i._data, dim)]
            ties = self_hit.astype(np.int64)
            np.add.at(ties, _coords(i._data, dim), src_hit.astype(np.int64))
            share = g / Tensor._make(np.maximum(ties, 1).astype(dtype))
            g_self = share * Tensor._make(self_hit.astype(dtype))
            g_src = Gather.apply(share, dim, i) * Tensor._make(src_hit.astype(dtype))
            return _finish(ctx, g_self, g_src, shape, src_full, None)
        else:
            return _prod_backward(ctx, g, x, i, s_t, y, dim, include_self, hit, shape, src_full)
        g_src = Gather.apply(g_each, dim, i)
        return _finish(ctx, g_self, g_src, shape, src_full, keep_self)


def _finish(ctx, g_self, g_src, shape, src_full, keep_self):
    """The gradient tuple: g_self masked/reshaped to x, g_src padded to src's full shape."""
    from .sorting import _pad_to
    need = ctx.needs_input_grad
    gx = gs = None
    if need[0]:
        gx = g_self if keep_self is None else g_self * keep_self.to(g_self.dtype)
        gx = gx.reshape(shape)
    if need[3]:
        gs = _pad_to(g_src, src_full or (1,)).reshape(src_full)
    return gx, None, None, gs, None, None


def _prod_backward(ctx, g, x, i, s_t, y, dim, include_self, hit, shape, src_full):
    xv = x if x._data.ndim else x.reshape(1)
    yv = y if y._data.ndim else y.reshape(1)
    where = _coords(i._data, dim)
    sd, xd = s_t._data, xv._data
    zeros = np.zeros(xd.shape, np.int64)
    np.add.at(zeros, where, (sd == 0).astype(np.int64))
    if include_self:
        zeros += xd == 0
    keep_self = None if include_self else Tensor._make(~hit)
    if not zeros.any():                       # the plain formula, differentiable again
        g_self = g * yv / xv if include_self else g
        g_src = Gather.apply(g * yv, dim, i) / s_t
        return _finish(ctx, g_self, g_src, shape, src_full, keep_self)
    # with zeros: the product of the others from the non-zero product and the zero count
    nz = np.where(xd == 0, 1, xd) if include_self else np.ones_like(xd)
    np.multiply.at(nz, where, np.where(sd == 0, 1, sd))

    def others(v, z, p):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v == 0, np.where(z == 1, p, 0),
                            np.where(z == 0, p / np.where(v == 0, 1, v), 0))
    w_self = others(xd, zeros, nz) if include_self else np.where(hit, 0, 1).astype(xd.dtype)
    w_src = others(sd, zeros[where], nz[where])
    g_self = g * Tensor._make(np.asarray(w_self, xd.dtype))
    g_src = Gather.apply(g, dim, i) * Tensor._make(np.asarray(w_src, sd.dtype))
    return _finish(ctx, g_self, g_src, shape, src_full, None)


@tensor_method("scatter_reduce")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Out of place: input with each src element reduced into position index along dim by
    `reduce` ('sum', 'prod', 'mean', 'amax', 'amin'); include_self=False leaves the original
    values out of the groups that receive elements. index and src as in scatter (index no
    larger than src, and than input apart from dim; src with input's dtype)."""
    reduce = _ALIASES.get(reduce, reduce)
    if reduce not in _REDUCE:
        raise RuntimeError(f"scatter_reduce(): reduce argument must be either sum, prod, mean, "
                           f"amax or amin, got {reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not "
                        f"{type(src).__name__}")
    if reduce == "mean" and input._data.dtype == np.bool_:
        raise NotImplementedError("scatter_reduce(): reduce='mean' is not implemented for bool "
                                  "tensors (as in PyTorch); convert with .int() or .float()")
    d = _gather_args(input, dim, index, "scatter_reduce", src)
    return ScatterReduce.apply(input, d, index, src, reduce, bool(include_self))


def _scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place scatter_reduce (see scatter_reduce)."""
    return apply_inplace(self, "scatter_reduce",
                         lambda t, s: scatter_reduce(t, dim, index, s, reduce,
                                                     include_self=include_self), (src,))


Tensor.scatter_reduce_ = _scatter_reduce_
