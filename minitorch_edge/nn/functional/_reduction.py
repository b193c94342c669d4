"""The helpers every loss shares: the `reduction` argument, argument checks, and the name that
error messages give (the function's, or the layer's inside `loss_name`).

loss.py, loss_regression.py and loss_margin.py all import from here, and this module imports
none of them, so the three loss files never import each other's names back.
"""
import contextlib
import contextvars
import warnings

import numpy as np

from ...tensor import Tensor

__all__ = []

_NAME = contextvars.ContextVar("loss_name", default=None)   # set by loss_name()


@contextlib.contextmanager
def loss_name(name):
    """Inside this block, loss errors name `name` (e.g. 'CrossEntropyLoss') instead of the
    function ('cross_entropy')."""
    token = _NAME.set(name)
    try:
        yield
    finally:
        _NAME.reset(token)


def op_name(default):
    return _NAME.get() or default


def shape_text(x):
    return "(" + ", ".join(str(s) for s in x._data.shape) + ("," if x._data.ndim == 1 else "") + ")"


def legacy_reduction(size_average, reduce, reduction):
    """Map the deprecated size_average/reduce flags to a reduction string (as PyTorch)."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='mean'/'sum'/'none' instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def check_reduction(reduction, op, allowed=("none", "mean", "sum")):
    if reduction not in allowed:
        raise ValueError(f"{op_name(op)}: {reduction!r} is not a valid value for reduction "
                         f"(expected one of {', '.join(repr(a) for a in allowed)})")


def check_tensor(x, op, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op_name(op)}(): argument '{what}' must be a Tensor, not "
                        f"{type(x).__name__}")


def apply_reduction(loss, reduction):
    """Apply 'none' / 'mean' / 'sum' to a per-element loss."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def const(array, like):
    """A constant (non-differentiable) tensor in the dtype of `like`."""
    return Tensor._make(np.asarray(array, dtype=like._data.dtype))
