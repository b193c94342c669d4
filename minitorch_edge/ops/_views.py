"""The view Functions behind ops/shape.py (and join.py, rearrange.py): autograd ops that move
or repeat elements without changing them. Each backward is the inverse movement: reshape back,
sum over the expanded dims, the inverse permutation; `Slice`/`Embed` and
`Diagonal`/`DiagEmbed` are pairs of adjoint linear maps, each one's backward the other, so
double backward needs nothing more. The argument checking lives in the public functions in
shape.py.

Class names are PyTorch's grad_fn names (``x.view(6).grad_fn`` is ViewBackward0 in both), so
one Function can appear under several names: `Squeeze`, `Unsqueeze` are `View`s, `Transpose`
a `Permute`.
"""
import numpy as np

from ..autograd.function import Function
from ._util import sum_to

__all__ = []


class View(Function):
    """y = x with a new shape (same C-order element sequence).  dx = dy reshaped back.
    A view when numpy can keep the strides, otherwise a fresh copy (for reshape() of a
    non-contiguous tensor, where PyTorch's grad_fn is UnsafeViewBackward0)."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        if ctx.needs_input_grad:
            ctx.in_shape = a._data.shape
        x = a._data
        try:
            return np.reshape(x, shape, copy=False)
        except ValueError:                    # needs a copy: make one that owns its memory,
            out = np.empty(shape, x.dtype)    # so it is not mistaken for a view of x
            out.reshape(x.shape)[...] = x
            return out

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape), None


class Squeeze(View):
    """View without some size-1 dims (squeeze())."""


class Unsqueeze(View):
    """View with a new size-1 dim (unsqueeze())."""


class Expand(Function):
    """y = x broadcast to `shape` (a view, read-only where elements repeat).
    dx = dy summed over the expanded dims."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, shape):
        if ctx.needs_input_grad:
            ctx.in_shape = a._data.shape
        if shape == a._data.shape:        # nothing to repeat: a plain (writable) view
            return a._data.view()
        return np.broadcast_to(a._data, shape)

    @staticmethod
    def backward(ctx, grad):
        return sum_to(grad, ctx.in_shape), None


class Permute(Function):
    """y = x with its dims reordered: y.shape[i] = x.shape[perm[i]].  dx = dy permuted by the
    inverse permutation."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, perm):
        if ctx.needs_input_grad:
            ctx.inverse = tuple(int(i) for i in np.argsort(perm))
        return np.transpose(a._data, perm)

    @staticmethod
    def backward(ctx, grad):
        return Permute.apply(grad, ctx.inverse), None


class Transpose(Permute):
    """Permute that swaps two dims (transpose(), swapaxes(), mT)."""


class Slice(Function):
    """y = x[index] for a tuple of slices (basic indexing: a view).  dx = dy placed at `index`
    in zeros of x's shape (Embed)."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, index):
        if ctx.needs_input_grad:
            ctx.info = (a._data.shape, index)
        return a._data[index]

    @staticmethod
    def backward(ctx, grad):
        shape, index = ctx.info
        return Embed.apply(grad, shape, index), None


class Embed(Function):
    """y = zeros(shape) with y[index] = x.  dx = dy[index] (Slice)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, shape, index):
        if ctx.needs_input_grad:
            ctx.index = index
        out = np.zeros(shape, a._data.dtype)
        out[index] = a._data
        return out

    @staticmethod
    def backward(ctx, grad):
        return Slice.apply(grad, ctx.index), None, None


class Diagonal(Function):
    """y[..., i] = x[..., i, i + offset] over dims (dim1, dim2), which move to the end (a view).
    dx = dy written onto that diagonal of zeros (DiagEmbed)."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, offset, dim1, dim2):
        if ctx.needs_input_grad:
            ctx.info = (a._data.shape, offset, dim1, dim2)
        return _diag_view(a._data, offset, dim1, dim2)

    @staticmethod
    def backward(ctx, grad):
        shape, offset, dim1, dim2 = ctx.info
        return DiagEmbed.apply(grad, shape, offset, dim1, dim2), None, None, None


class DiagEmbed(Function):
    """y = zeros(shape) with diagonal(y, offset, dim1, dim2) = x (diag_embed(), diag() of a
    vector).  dx = diagonal(dy, ...)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, shape, offset, dim1, dim2):
        if ctx.needs_input_grad:
            ctx.info = (offset, dim1, dim2)
        out = np.zeros(shape, a._data.dtype)
        _diag_view(out, offset, dim1, dim2)[...] = a._data
        return out

    @staticmethod
    def backward(ctx, grad):
        offset, dim1, dim2 = ctx.info
        return Diagonal.apply(grad, offset, dim1, dim2), None, None, None, None


def _diag_view(x, offset, dim1, dim2):
    """numpy's diagonal, writable when x is (numpy returns it read-only)."""
    d = np.diagonal(x, offset, dim1, dim2)
    if x.flags.writeable:
        d.flags.writeable = True
    return d
