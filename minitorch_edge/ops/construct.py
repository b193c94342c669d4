"""Tensors made *from* a tensor: the ``new_*`` constructors, and the dtype conversions that are
named after a tensor or a type (``type_as``, ``type``), with ``can_cast``, PyTorch's casting rule.

``x.new_zeros(2, 3)`` and friends make a fresh tensor with x's dtype (and device) unless
``dtype=`` says otherwise; nothing of x's values or history is kept, so none of them is
differentiable. ``type_as`` and ``type(dtype)`` are ``to(dtype)``: differentiable casts.
"""
import warnings

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor, check_device
from ._util import checked_scalar, tensor_method

__all__ = ["can_cast"]


# ---- new_* -------------------------------------------------------------------------------------
def _size(size, op):
    """``new_zeros(2, 3)`` / ``new_zeros((2, 3))`` / ``new_zeros([2, 3])`` -> (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):      # (a Size is a tuple)
        size = tuple(size[0])
    bad = [s for s in size if not hasattr(s, "__index__")]
    if bad:
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found element of "
                        f"type {bad[0].__class__.__name__}")
    out = tuple(int(s.__index__()) for s in size)
    for s in out:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: "
                               f"{list(out)}")
    return out


def _target(self, dtype):
    return self.dtype if dtype is None else _dt.to_dtype(dtype)


def _finish(arr, requires_grad, device, op):
    if device is not None:
        check_device(device)
    t = Tensor._make(arr)
    if requires_grad:
        if not _dt.is_float_array(arr):
            raise RuntimeError(f"{op}(): only Tensors of floating point dtype can require "
                               f"gradients (got {t.dtype.name}); pass a floating dtype=")
        t._rg = True
    return t


def _new(op, fill):
    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
        d = _target(self, dtype)
        return _finish(fill(_size(size, op), d.np), requires_grad, device, op)
    method.__name__ = op
    return method


Tensor.new_zeros = _new("new_zeros", np.zeros)
Tensor.new_ones = _new("new_ones", np.ones)
Tensor.new_empty = _new("new_empty", np.empty)
Tensor.new_zeros.__doc__ = "A tensor of zeros of shape `size` with self's dtype (or `dtype`)."
Tensor.new_ones.__doc__ = "A tensor of ones of shape `size` with self's dtype (or `dtype`)."
Tensor.new_empty.__doc__ = ("An uninitialised tensor of shape `size` with self's dtype (or "
                            "`dtype`).")


@tensor_method("new_full")
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False):
    """A tensor of shape `size` (a tuple or list) filled with `fill_value`, with self's dtype (or
    `dtype`). The value is converted as a Scalar argument: a float into an int dtype is
    truncated, a value the dtype cannot hold raises."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    d = _target(self, dtype)
    if isinstance(fill_value, Tensor):
        if fill_value._data.ndim:
            raise RuntimeError(f"new_full(): fill_value must be a number or a 0-dim tensor, got "
                               f"a tensor of shape {tuple(fill_value.shape)}")
        fill_value = fill_value._data.item()
    value = checked_scalar(fill_value, d.np)
    return _finish(np.full(_size((size,), "new_full"), value, d.np), requires_grad, device,
                   "new_full")


@tensor_method("new_tensor")
def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False):
    """A new tensor holding a copy of `data` (lists, numbers, arrays, tensors) with self's dtype
    (or `dtype`), never sharing memory or history with `data`. Copying a Tensor warns, as in
    PyTorch (use ``data.detach().clone()``)."""
    from ..creation import _to_array
    d = _target(self, dtype)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        arr = data._data.astype(d.np, copy=True)
    else:
        arr = np.array(_to_array(data, d), copy=True)
    return _finish(arr, requires_grad, device, "new_tensor")


# ---- named conversions ---------------------------------------------------------------------
@tensor_method("type_as")
def type_as(self, other):
    """self converted to other's dtype (``self.to(other.dtype)``; self itself if equal)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    return self.to(other.dtype)


# PyTorch's legacy tensor-type names, which user code compares as strings
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor"}
_FROM_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}


def type_string(dtype):
    """'torch.FloatTensor' for float32, ... (PyTorch's spelling: code compares it)."""
    return "torch." + _TYPE_NAMES[dtype.name]


def _parse_type(name):
    for prefix in ("torch.", "minitorch_edge."):
        if name.startswith(prefix) and name[len(prefix):] in _FROM_TYPE_NAME:
            return _dt._NAMES[_FROM_TYPE_NAME[name[len(prefix):]]]
    if name.startswith(("torch.cuda.", "minitorch_edge.cuda.")):
        check_device("cuda")
    raise ValueError(f"invalid type: {name!r}")


@tensor_method("type")
def type_(self, dtype=None, non_blocking=False, **kwargs):
    """Without an argument: the type string PyTorch gives, e.g. ``'torch.FloatTensor'``.
    With a dtype or a type string (``'torch.DoubleTensor'``): self converted to it (self itself
    when it already has that dtype), as ``to(dtype)``."""
    if dtype is None:
        return type_string(self.dtype)
    if isinstance(dtype, str):
        dtype = _parse_type(dtype)
    return self.to(_dt.to_dtype(dtype))


def can_cast(from_, to):
    """Whether PyTorch's casting rule lets a value of dtype `from_` be written into a tensor of
    dtype `to` (the rule in-place ops and ``out=`` follow): a floating dtype cannot go to an
    integral or bool dtype, and a non-bool dtype cannot go to bool; everything else can
    (narrowing within a category, such as int64 -> int8, is allowed)."""
    for name, pos, d in (("from_", 1, from_), ("to", 2, to)):
        if not isinstance(d, _dt.dtype):
            raise TypeError(f"can_cast(): argument '{name}' (position {pos}) must be "
                            f"minitorch_edge.dtype, not {d.__class__.__name__}")
    if from_.is_floating_point and not to.is_floating_point:
        return False
    if from_ is not _dt.bool_ and to is _dt.bool_:
        return False
    return True
