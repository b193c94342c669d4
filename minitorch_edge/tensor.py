"""Tensor: a numpy array plus what autograd needs to know about it.

A Tensor holds
  * ``_data``: the numpy array with the values (C order or any strides numpy allows);
  * ``requires_grad`` / ``grad``: whether gradients flow to it, and where they accumulate;
  * ``grad_fn`` and ``_nr``: the Node that produced it and which of that node's outputs it is
    (None for leaves: tensors made by the user rather than by a recorded op);
  * ``_vc``: a version counter ``[version, last in-place op]`` shared with its views, bumped by
    every in-place op, so backward can tell when a saved value was overwritten.

This file keeps the class itself: construction, attributes, conversions, printing and
``backward``. The ops (``+``, ``exp``, ``sum``, ``reshape``, ...) live in ``ops/`` and attach
themselves to Tensor as methods when the package is imported.
"""
import numpy as np

from . import dtypes as _dt

__all__ = ["Tensor", "Size", "device"]


class Size(tuple):
    """A shape, as PyTorch's torch.Size: a tuple that prints as ``Size([2, 3])``."""

    def __repr__(self):
        return f"minitorch_edge.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


class device:
    """Where a tensor lives. Only "cpu" exists so far (a cuda backend may follow)."""

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type = type.type
        kind = str(type).split(":")[0]
        if kind != "cpu":
            raise RuntimeError(f"device {type!r} is not available: minitorch_edge runs on 'cpu' "
                               f"only")
        self.type, self.index = kind, index

    def __eq__(self, other):
        return str(self) == str(other if not isinstance(other, device) else other.type)

    def __hash__(self):
        return hash(self.type)

    def __str__(self):
        return self.type

    def __repr__(self):
        return f"device(type='{self.type}')"


_CPU = device("cpu")


def describe(x):
    """A short text for error messages: 'float32 tensor of shape (2, 3)'."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    return f"{data.dtype.name} tensor of shape {tuple(data.shape)}"


class Tensor:
    __slots__ = ("_data", "_rg", "_grad", "_fn", "_nr", "_vc", "_hooks", "_retains", "_base",
                 "__weakref__")
    __array_priority__ = 1000  # numpy defers `ndarray op Tensor` to our reflected operators

    def __init__(self, data, requires_grad=False, dtype=None):
        from .creation import _to_array
        self._data = _to_array(data, dtype if dtype is not None else _dt.get_default_dtype())
        self._grad = self._fn = self._hooks = self._retains = self._base = None
        self._nr = 0
        self._vc = [0, None]
        self._rg = False
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _make(cls, array, fn=None, nr=0, vc=None, requires_grad=False):
        """Fast internal constructor: wraps `array` (an ndarray) without copying."""
        t = object.__new__(Tensor)
        t._data = array if array.__class__ is np.ndarray else np.asarray(array)
        t._grad = t._hooks = t._retains = t._base = None
        t._fn = fn
        t._nr = nr
        t._vc = vc if vc is not None else [0, None]
        t._rg = requires_grad or fn is not None
        return t

    # ---- autograd attributes ------------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        value = bool(value)
        if self._fn is not None and not value:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if value and self._data.dtype.kind != "f":
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients "
                               f"(got {self.dtype})")
        self._rg = value

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        return self._fn

    @property
    def is_leaf(self):
        return self._fn is None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"{type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size: "
                                   f"{tuple(value.shape)} vs the tensor's {tuple(self.shape)}")
        self._grad = value

    @property
    def output_nr(self):
        return self._nr

    @property
    def _version(self):
        return self._vc[0]

    def retain_grad(self):
        """Keep ``.grad`` on a non-leaf tensor after backward (leaves always keep theirs)."""
        if self._fn is None:
            if not self._rg:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        import weakref
        node = self._fn
        if node._retain is None:
            node._retain = {}
        node._retain[self._nr] = weakref.ref(self)
        self._retains = True

    @property
    def retains_grad(self):
        return bool(self._retains)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a non-None return value
        replaces the gradient. Returns a handle with ``remove()``."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            node = self._fn
            if node._pre_hooks is None:
                node._pre_hooks = {}
            hooks = node._pre_hooks.setdefault(self._nr, [])
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (see autograd/engine.py)."""
        from .autograd.engine import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self):
        """The same values (shared memory and version counter), cut off from the graph."""
        return Tensor._make(self._data, vc=self._vc)

    def detach_(self):
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._fn = None
        self._rg = False
        return self

    @property
    def data(self):
        """A detached Tensor sharing this tensor's memory (as ``torch.Tensor.data``)."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        value = value._data if isinstance(value, Tensor) else np.asarray(value)
        self._data = value

    # ---- shape and type attributes ------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        from .ops._util import norm_dim
        return self._data.shape[norm_dim(dim, self._data.ndim, "size")]

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return self._data.size

    nelement = numel

    @property
    def dtype(self):
        return _dt._FROM_NP[self._data.dtype]

    @property
    def device(self):
        return _CPU

    @property
    def is_cuda(self):
        return False

    def is_floating_point(self):
        return self._data.dtype.kind == "f"

    def element_size(self):
        return self._data.itemsize

    def stride(self, dim=None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[dim]

    def is_contiguous(self):
        return self._data.flags.c_contiguous

    def data_ptr(self):
        return self._data.__array_interface__["data"][0]

    # ---- conversions --------------------------------------------------------------------------
    def numpy(self, force=False):
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._rg:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._data if dtype is None else self._data.astype(dtype)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to "
                               f"Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                               f"(shape {tuple(self._data.shape)}); use .any() or .all()")
        return bool(self._data.reshape(()).item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, protocol):
        # lets multiprocessing (DataLoader workers) move tensors between processes; the file
        # formats never pickle (see utils/serialization)
        return (_rebuild, (self._data, self._rg))

    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``, ``to(other_tensor)``; keyword
        ``dtype=``, ``device=``, ``copy=``. Returns self when nothing changes."""
        target, copy = None, kwargs.pop("copy", False)
        for a in list(args) + [kwargs.pop("dtype", None), kwargs.pop("device", None)]:
            if a is None or a.__class__ is bool:
                continue
            if isinstance(a, Tensor):
                target = a.dtype
            elif isinstance(a, (str, device)) and str(a).split(":")[0] in ("cpu", "cuda", "mps"):
                device(a)
            else:
                target = _dt.to_dtype(a)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        if target is None or target.np == self._data.dtype:
            return self.clone() if copy else self
        from .ops.elementwise import ToCopy
        return ToCopy.apply(self, target)

    def type(self, dtype=None):
        if dtype is None:
            return f"minitorch_edge.{self.dtype.name}"
        return self.to(dtype)

    def float(self):
        return self.to(_dt.float32)

    def double(self):
        return self.to(_dt.float64)

    def half(self):
        return self.to(_dt.float16)

    def long(self):
        return self.to(_dt.int64)

    def int(self):
        return self.to(_dt.int32)

    def short(self):
        return self.to(_dt.int16)

    def char(self):
        return self.to(_dt.int8)

    def byte(self):
        return self.to(_dt.uint8)

    def bool(self):
        return self.to(_dt.bool_)

    def cpu(self):
        return self

    def __repr__(self):
        from ._format import format_tensor
        return format_tensor(self)

    def __str__(self):
        return self.__repr__()


def _rebuild(array, requires_grad):
    return Tensor._make(array, requires_grad=requires_grad)


class _HookHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)
