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
import builtins as _b

import numpy as np

from . import dtypes as _dt

__all__ = ["Tensor", "Size", "device", "memory_format", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d"]


class Size(tuple):
    """A shape, as PyTorch's torch.Size: a tuple that prints as ``Size([2, 3])``."""

    def __repr__(self):
        return f"minitorch_edge.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


class device:
    """Where a tensor lives, as ``torch.device``: ``device("cpu")``, ``device("cuda:1")``,
    ``device("cuda", 0)``. Any device type PyTorch knows can be *named*; only "cpu" can hold
    tensors (minitorch_edge is a CPU library), so using another one raises as a CPU-only PyTorch
    build does (``Torch not compiled with CUDA enabled`` for cuda)."""
    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): an index cannot be passed with a device object")
            type, index = type.type, type.index
        elif isinstance(type, _b.int) and not isinstance(type, _b.bool):
            raise RuntimeError(_NO_ACCELERATOR)      # device(0): the current accelerator
        elif not isinstance(type, str):
            raise TypeError(f"device(): expected a device string like 'cpu' or 'cuda:0', or a "
                            f"device, got {_b.type(type).__name__}")
        else:
            kind, sep, idx = type.partition(":")
            if sep:
                if index is not None:
                    raise RuntimeError(f"type (string) must not include an index because index "
                                       f"was passed explicitly: {type}")
                if not idx.isdigit() or (idx != "0" and idx.startswith("0")):
                    raise RuntimeError(f"Invalid device string: {type!r}")
                index = _b.int(idx)
            if kind not in _DEVICE_TYPES:
                if kind.strip() in _DEVICE_TYPES:
                    raise RuntimeError(f"Invalid device string: {type!r}")
                raise RuntimeError("Expected one of " + ", ".join(_DEVICE_TYPES) +
                                   f" device type at start of device string: {type}")
            type = kind
        if index is not None:
            if not isinstance(index, _b.int) or isinstance(index, _b.bool):
                raise TypeError(f"device(): argument 'index' must be int, not "
                                f"{_b.type(index).__name__}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError(f"device.{name} is read-only")

    def __eq__(self, other):
        # a device also equals its string form (x.device == "cpu"), which torch does not
        if isinstance(other, (device, str)):
            return str(self) == str(other)
        return NotImplemented

    def __hash__(self):
        return hash(str(self))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))


def check_device(d):
    """The device `d` names (a string, a device or an int) if tensors can live there, which is
    only "cpu"; otherwise the error a CPU-only PyTorch build gives."""
    if d is None:
        return _CPU
    d = d if isinstance(d, device) else device(d)
    if d.type == "cpu":
        return d
    if d.type in ("cuda", "xpu"):
        name = "CUDA" if d.type == "cuda" else "XPU"
        raise AssertionError(f"Torch not compiled with {name} enabled (minitorch_edge runs on "
                             f"the CPU only: {d.type} devices are not available)")
    raise RuntimeError(f"PyTorch is not linked with support for {d.type} devices "
                       f"(minitorch_edge runs on the CPU only: {d.type!r} is not available)")


class memory_format:
    """A tensor layout tag, as ``torch.channels_last``. Accepted wherever PyTorch takes one;
    minitorch_edge keeps its arrays in its own (row-major) layout whatever the tag says."""
    __slots__ = ("name", "rank")

    def __init__(self, name, rank=None):
        self.name, self.rank = name, rank

    def __repr__(self):
        return "minitorch_edge." + self.name

    def __reduce__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last", 4)
channels_last_3d = memory_format("channels_last_3d", 5)


def check_memory_format(fmt, ndim=None):
    if fmt is None:
        return None
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be a memory format such as "
                        f"minitorch_edge.channels_last, got {_b.type(fmt).__name__}")
    if ndim is not None and fmt.rank is not None and ndim != fmt.rank:
        raise RuntimeError(f"required rank {fmt.rank} tensor to use {fmt.name} format")
    return fmt


_TO_SIGNATURES = (" * (device device = None, dtype dtype = None, bool non_blocking = False, "
                  "bool copy = False, *, memory_format memory_format = None)\n"
                  " * (dtype dtype, bool non_blocking = False, bool copy = False, *, "
                  "memory_format memory_format = None)\n"
                  " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
                  "memory_format memory_format = None)")


def parse_to(args, kwargs):
    """The arguments of ``Tensor.to`` / ``Module.to`` as PyTorch parses them:
    ``(device, dtype, non_blocking, copy, memory_format)`` (copy is None when not given). The
    three forms are
    ``to(device=None, dtype=None, non_blocking=False, copy=False)``,
    ``to(dtype, non_blocking=False, copy=False)`` and ``to(tensor, non_blocking=False,
    copy=False)``, each with keyword ``memory_format``. A non-cpu device raises (see
    check_device); the device/dtype come back checked."""
    kwargs = dict(kwargs)
    dev = dt = None
    flags = {}
    rest = list(args)

    def bad():
        got = ", ".join([_b.type(a).__name__ for a in args] +
                        [f"{k}={_b.type(v).__name__}" for k, v in kwargs.items()])
        return TypeError(f"to() received an invalid combination of arguments - got ({got}), but "
                         f"expected one of:\n" + _TO_SIGNATURES)

    first = rest[0] if rest else None
    if isinstance(first, str) and first.split(":")[0] not in _DEVICE_TYPES:
        first = rest[0] = _string_dtype(first)       # to("float64"): a dtype name (lenient)
    if isinstance(first, Tensor):
        rest.pop(0)
        dt, dev = first.dtype, first.device
        if "dtype" in kwargs or "device" in kwargs:
            raise bad()
    elif rest and (first.__class__ is _dt.dtype or _is_dtype_like(first)):
        dt = _dt.to_dtype(rest.pop(0))
        if "dtype" in kwargs or "device" in kwargs:
            raise bad()
    elif rest and (first is None or isinstance(first, (str, device, _b.int))) \
            and first.__class__ is not _b.bool:
        dev = rest.pop(0)
        if "device" in kwargs:
            raise bad()
        if rest and (rest[0] is None or rest[0].__class__ is _dt.dtype):
            dt = rest.pop(0)
            if "dtype" in kwargs:
                raise bad()
    dev = kwargs.pop("device", dev)
    dt = kwargs.pop("dtype", dt)
    for name in ("non_blocking", "copy"):
        if rest:
            value = rest.pop(0)
            if name in kwargs or value.__class__ is not _b.bool:
                raise bad()
            flags[name] = value
    if rest:
        raise bad()
    for name in ("non_blocking", "copy"):
        if name in kwargs:
            flags[name] = kwargs.pop(name)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise bad()
    if dt is not None and dt.__class__ is not _dt.dtype:
        if not isinstance(dt, str) and not _is_dtype_like(dt):
            raise bad()
        dt = _dt.to_dtype(dt)
    if dev is not None:
        dev = check_device(dev)
    return dev, dt, _b.bool(flags.get("non_blocking", False)), flags.get("copy"), \
        check_memory_format(fmt)


def _string_dtype(name):
    """to("float64"): PyTorch reads a string as a device; a dtype name is accepted too."""
    if name in _dt._NAMES:
        return _dt._NAMES[name]
    raise TypeError(f"to(): {name!r} is neither a device type (" + ", ".join(_DEVICE_TYPES[:3]) +
                    ", ...) nor a dtype (" + ", ".join(d.name for d in _dt.ALL) + ")")


def _is_dtype_like(x):
    """A numpy dtype or scalar type (np.float32), which to() accepts as a dtype."""
    if isinstance(x, np.dtype):
        return True
    return isinstance(x, _b.type) and issubclass(x, np.generic)


_CPU = device("cpu")
device_type = device  # (Tensor.cuda's parameter is called device)


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
        if value and not _dt.is_float_array(self._data):
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

    is_xpu = is_mps = is_meta = is_sparse = is_quantized = is_mkldnn = is_cuda

    @property
    def is_cpu(self):
        return True

    def is_floating_point(self):
        return _dt.is_float_array(self._data)

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
        """``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``, ``to(other_tensor)``, each with
        optional ``non_blocking``, ``copy`` and keyword ``memory_format`` (as PyTorch; the
        layout tag is checked, not applied). Returns self when nothing changes."""
        if not kwargs and len(args) == 1 and args[0].__class__ is _dt.dtype:   # to(dtype)
            target, copy = args[0], False
        else:
            _, target, _, copy, fmt = parse_to(args, kwargs)
            check_memory_format(fmt, self._data.ndim)
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

    def bfloat16(self):
        return self.to(_dt.bfloat16)

    def cpu(self, memory_format=None):
        check_memory_format(memory_format, self._data.ndim)
        return self

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """Always raises, as a CPU-only PyTorch build does: there is no CUDA device."""
        check_device(device if isinstance(device, (str, device_type)) else "cuda")

    def pin_memory(self, device=None):
        raise RuntimeError(_NO_ACCELERATOR)

    def is_pinned(self, device=None):
        return False

    def get_device(self):
        return -1

    def __format__(self, format_spec):
        # as torch: a 0-dim tensor formats as its Python number (f"{loss:.4f}"); any other
        # tensor only with an empty spec (its str), else TypeError
        if self._data.ndim == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __repr__(self):
        from ._format import format_tensor
        if self._data.dtype.kind == "V" and self._data.dtype in _dt._FLOAT_NP:
            return _format_bfloat16(self, format_tensor)
        return format_tensor(self)

    def __str__(self):
        return self.__repr__()


def _format_bfloat16(t, format_tensor):
    """bfloat16 prints as PyTorch prints it: the values as floats (numpy's printer does not
    know ml_dtypes' type, so they are shown through float32), then ``dtype=...bfloat16``."""
    wide = _dt.float64 if _dt.get_default_dtype() is _dt.float64 else _dt.float32
    text = format_tensor(Tensor._make(t._data.astype(wide.np)))
    text = text[:-1] + f", dtype={_dt.bfloat16!r}"
    if t._fn is not None:
        text += f", grad_fn=<{t._fn.name()}>"
    elif t._rg:
        text += ", requires_grad=True"
    return text + ")"


def _rebuild(array, requires_grad):
    return Tensor._make(array, requires_grad=requires_grad)


class _HookHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)
