"""In-place *shape* ops: ``t_``, ``transpose_`` (``swapdims_``, ``swapaxes_``), ``squeeze_``,
``unsqueeze_``, ``resize_``, ``resize_as_``.

They change how a tensor looks at its memory, never the values in it, so they cannot go through
inplace.py's copy-back (``apply_inplace`` writes a same-shaped result into the tensor's memory).
Instead the tensor *becomes* the out-of-place view of itself:

1. refuse what PyTorch refuses (a leaf that requires grad, or a view of one, while grad mode is
   on; ``resize_`` of any tensor that requires grad);
2. run the out-of-place view op (``transpose``, ...): recorded like any op when autograd records,
   so its node (TransposeBackward0, ...) has the tensor's old node as its input;
3. give the tensor that view's array and node, and bump the version counter, so a node that
   saved the tensor before the change raises in backward (it would see the new shape), as in
   PyTorch.

Views taken of the tensor earlier keep the shape they had; they share the memory as before.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..autograd.grad_mode import _State
from ..backend.prepared import wrote as _wrote
from ..tensor import Tensor
from . import shape as S
from .inplace import LEAF_MSG

__all__ = []


def _become(self, name, op, *args):
    """Make `self` the result of the view op ``op(self, *args)`` (see the module docstring)."""
    if _State.enabled and self._rg:
        if self._fn is None:
            raise RuntimeError(LEAF_MSG)
        base = self._base
        if base is not None and base._fn is None and base._rg:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    result = op(self, *args)
    self._data = result._data
    if result._fn is not None:
        self._fn, self._nr = result._fn, result._nr
    self._vc[0] += 1
    self._vc[1] = name
    return self


def _method(name, op, doc):
    def method(self, *args, **kwargs):
        return _become(self, name, lambda t, *a: op(t, *a, **kwargs), *args)
    method.__name__ = name + "_"
    method.__doc__ = doc
    return method


Tensor.t_ = _method("t", S.t, "In-place t(): self becomes its transpose (<= 2-D).")
Tensor.transpose_ = _method("transpose", S.transpose,
                            "In-place transpose(dim0, dim1): self becomes the swapped view.")
Tensor.swapdims_ = _method("swapdims", S.transpose, "In-place swapdims (= transpose_).")
Tensor.swapaxes_ = _method("swapaxes", S.transpose, "In-place swapaxes (= transpose_).")
Tensor.squeeze_ = _method("squeeze", S.squeeze,
                          "In-place squeeze(dim=None): self loses size-1 dims.")
Tensor.unsqueeze_ = _method("unsqueeze", S.unsqueeze,
                            "In-place unsqueeze(dim): self gains a size-1 dim.")


# ---- resize_ -----------------------------------------------------------------------------------
def _byte_bounds(a):
    try:
        from numpy.lib.array_utils import byte_bounds
    except ImportError:                       # numpy < 2
        byte_bounds = np.byte_bounds
    return byte_bounds(a)


def _storage(arr):
    """A 1-D view of the memory from arr's first element to the end of the buffer it lives in
    (PyTorch's storage seen from the tensor's offset)."""
    if arr.size == 0:
        return np.empty(0, arr.dtype)
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    _, hi = _byte_bounds(root)
    start = arr.__array_interface__["data"][0]
    n = max((hi - start) // arr.itemsize, 0)
    return as_strided(arr, shape=(n,), strides=(arr.itemsize,))


def _resize_sizes(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        out = tuple(int(s.__index__()) for s in size)
    except (AttributeError, TypeError):
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, got {size!r}") from None
    if any(s < 0 for s in out):
        raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension: "
                           f"{list(out)}")
    return out


def _resize(self, shape, op):
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")
    arr = self._data
    if shape != arr.shape:
        n = int(np.prod(shape, dtype=np.int64))
        store = _storage(arr)
        if n <= store.size:
            new = store[:n].reshape(shape)
        else:                                   # a bigger storage: old contents, then zeros
            new = np.zeros(n, arr.dtype)
            new[:store.size] = store
            new = new.reshape(shape)
        self._data = new
    self._vc[0] += 1
    self._vc[1] = op[:-1]
    _wrote(self._data)
    return self


def resize_(self, *size, memory_format=None):
    """Give self the shape `size`, row-major over its memory from its first element: a
    smaller (or equal-sized) tensor reuses that memory (views of the old tensor see writes), a
    bigger one gets new memory holding the old elements first (the rest is zeros here,
    uninitialised in PyTorch). The same shape leaves self (and its strides) as it is.
    Not differentiable: raises for a tensor that requires grad, as in PyTorch."""
    return _resize(self, _resize_sizes(size, "resize_"), "resize_")


def resize_as_(self, the_template, memory_format=None):
    """resize_(the_template.shape)."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' must be Tensor, not "
                        f"{type(the_template).__name__}")
    return _resize(self, tuple(the_template._data.shape), "resize_as_")


Tensor.resize_ = resize_
Tensor.resize_as_ = resize_as_
