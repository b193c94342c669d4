"""Helpers every op shares: dim normalisation, int arguments, operand promotion, undoing
broadcasting.

`sum_to` is the one place where broadcasting is undone in backward: every binary op reduces its
incoming gradient to each input's shape with it.
"""
import operator

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor

__all__ = ["sum_to", "norm_dim", "norm_dims", "int_tuple", "ntuple", "operands", "tensor_method",
           "shape_str", "as_tensor"]


def tensor_method(*names):
    """Decorator: also make the function a Tensor method under each of `names`."""
    def attach(fn):
        for name in names:
            setattr(Tensor, name, fn)
        return fn
    return attach


def shape_str(shape):
    return "x".join(str(s) for s in shape) if len(shape) else "()"


def norm_dim(dim, ndim, op="op"):
    """Turn a possibly negative dim into 0..ndim-1 (a 0-d tensor accepts -1 and 0)."""
    n = max(ndim, 1)
    try:
        d = dim.__index__()
    except AttributeError:
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}") from None
    if not -n <= d < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return d % n if ndim else 0


def norm_dims(dim, ndim, op="op"):
    """dim=None -> all dims; int or tuple -> sorted tuple of non-negative dims (no repeats)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        dims = tuple(norm_dim(d, ndim, op) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op}(): dim {dims} appears multiple times in the list of dims")
        return tuple(sorted(dims)) if ndim else ()
    return (norm_dim(dim, ndim, op),) if ndim else ()


def int_tuple(values, op, what="shape"):
    """A sequence of ints (anything with __index__) -> a tuple of ints; TypeError otherwise."""
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{op}(): {what} must be a sequence of ints, got "
                        f"{tuple(values)!r}") from None


def ntuple(value, n, what, op):
    """An int, or a sequence of 1 or n ints -> a tuple of n ints (kernel_size=3 -> (3, 3))."""
    try:
        vals = [operator.index(value)] if not isinstance(value, (tuple, list)) else \
            [operator.index(v) for v in value]
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int or a tuple of {n} ints, got "
                        f"{value!r}") from None
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise RuntimeError(f"{op}: expected {what} to be a single int or a tuple of {n} ints, "
                           f"got {tuple(vals)}")
    return tuple(vals)


def as_tensor(x, like=None):
    """Wrap a Python scalar / array as a Tensor (dtype by PyTorch's rules)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._make(x)
    d = _dt.scalar_dtype(x)
    return Tensor._make(np.array(x, d.np))


def operands(a, b, op):
    """numpy operands for a binary op on Tensor/scalar `a`, `b`, cast to PyTorch's result dtype.

    Raises RuntimeError naming both shapes if they do not broadcast, TypeError for operands that
    are neither Tensors nor numbers."""
    a_t = a.__class__ is Tensor or isinstance(a, Tensor)
    b_t = b.__class__ is Tensor or isinstance(b, Tensor)
    if a_t and b_t:
        x, y = a._data, b._data
        if x.dtype is not y.dtype:
            target = _dt.result_type(a, b).np
            x, y = x.astype(target, copy=False), y.astype(target, copy=False)
        if x.shape != y.shape:
            check_broadcast(x.shape, y.shape, op)
        return x, y
    x = a._data if a_t else a
    y = b._data if b_t else b
    scalar = y if a_t else x
    arr = x if a_t else y
    if not isinstance(scalar, (int, float, bool, np.number, np.bool_)):
        raise TypeError(f"{op}(): unsupported operand type {type(scalar).__name__}; expected a "
                        f"Tensor or a number")
    target = _dt.result_type(a if a_t else b, scalar).np
    if arr.dtype != target:
        arr = arr.astype(target)
    if target.kind != "f" and isinstance(scalar, (float, np.floating)):
        scalar = target.type(scalar)
    return (arr, scalar) if a_t else (scalar, arr)


def check_broadcast(sa, sb, op):
    try:
        return np.broadcast_shapes(sa, sb)
    except ValueError:
        la, lb = len(sa), len(sb)
        n = max(la, lb)
        for i in range(1, n + 1):
            da = sa[-i] if i <= la else 1
            db = sb[-i] if i <= lb else 1
            if da != db and da != 1 and db != 1:
                raise RuntimeError(
                    f"{op}: shapes {tuple(sa)} and {tuple(sb)} cannot be broadcast: the size of "
                    f"tensor a ({da}) must match the size of tensor b ({db}) at non-singleton "
                    f"dimension {n - i}") from None
        raise


def sum_to(grad, shape):
    """Sum `grad` down to `shape` (the inverse of broadcasting `shape` up to grad.shape)."""
    gshape = grad._data.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and gshape[i + lead] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    if lead or grad._data.shape != shape:
        grad = grad.reshape(shape)
    return grad
