"""Creating tensors: from data (tensor, as_tensor, from_numpy), filled (zeros, ones, full,
empty, eye), ranges (arange, linspace) and random (rand, randn, randint, randperm), plus the
``*_like`` forms. All take ``dtype=`` and ``requires_grad=``; ``device`` may only be "cpu".
Sampling from distributions given by tensors (normal, bernoulli, poisson, multinomial and the
in-place fills) is in sampling.py.
"""
import numbers

import numpy as np

from . import dtypes as _dt
from .random import np_rng
from .tensor import Tensor, check_device

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "eye",
           "arange", "linspace", "logspace", "rand", "randn", "randint", "randperm",
           "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
           "randint_like", "scalar_tensor"]


def _infer_dtype(data):
    """PyTorch's inference for Python data: bool -> bool, int -> int64, float -> default."""
    if isinstance(data, np.ndarray):
        return _dt.from_numpy_dtype(data.dtype) or _unsupported(data.dtype)
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, np.generic):
        return _dt.from_numpy_dtype(data.dtype) or _unsupported(data.dtype)
    kinds = set()
    _scan(data, kinds)
    if "f" in kinds:
        return _dt.get_default_dtype()
    if "i" in kinds:
        return _dt.int64
    if "b" in kinds:
        return _dt.bool_
    return _dt.get_default_dtype()  # empty lists


def _scan(x, kinds):
    if isinstance(x, (list, tuple)):
        for v in x:
            _scan(v, kinds)
    elif isinstance(x, Tensor):
        kinds.add("f" if x.is_floating_point() else ("b" if x._data.dtype == bool else "i"))
    elif isinstance(x, (bool, np.bool_)):
        kinds.add("b")
    elif isinstance(x, numbers.Integral):
        kinds.add("i")
    elif isinstance(x, numbers.Real):
        kinds.add("f")
    elif isinstance(x, np.ndarray):
        kinds.add(x.dtype.kind if x.dtype.kind in "bif" else "f")
    else:
        raise TypeError(f"tensor(): could not infer dtype of {type(x).__name__}")


def _unsupported(np_dtype):
    raise TypeError(f"can't convert np.ndarray of type numpy.{np_dtype}. The only supported types "
                    f"are: " + ", ".join(d.name for d in _dt.ALL))


def _plain(data):
    """Replace Tensors inside nested lists by their values (PyTorch accepts 1-element ones)."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_plain(v) for v in data]
    return data


def _to_array(data, dtype, copy=True):
    """A numpy array of `dtype` (ours) holding `data`; raises TypeError/ValueError clearly."""
    np_dtype = _dt.to_dtype(dtype).np
    if isinstance(data, Tensor):
        data = data._data
    try:
        arr = np.array(_plain(data), dtype=np_dtype, copy=copy)
    except (ValueError, TypeError) as e:
        raise ValueError(f"tensor(): could not build a {dtype!r} tensor from the given data "
                         f"({e})") from None
    return arr if copy else np.asarray(arr)


def _finish(arr, requires_grad, device=None):
    if device is not None:
        check_device(device)
    t = Tensor._make(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, numpy arrays, tensors)."""
    if dtype is None:
        dtype = _infer_dtype(data)
    return _finish(_to_array(data, dtype), requires_grad, device)


def as_tensor(data, dtype=None, device=None):
    """Like tensor() but shares memory with a numpy array / tensor when the dtype allows."""
    if isinstance(data, Tensor) and (dtype is None or _dt.to_dtype(dtype) == data.dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or _dt.to_dtype(dtype).np == data.dtype) \
            and _dt.from_numpy_dtype(data.dtype) is not None:
        return _finish(data, False, device)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A tensor sharing memory with `array` (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    if _dt.from_numpy_dtype(array.dtype) is None:
        _unsupported(array.dtype)
    return Tensor._make(array)


def _size(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        size = tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}(): size must be ints or a tuple of ints, got {size!r}") from None
    if any(s < 0 for s in size):
        raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension: {size}")
    return size


def _dtype_or_default(dtype):
    return _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    return _finish(np.zeros(_size(size, "zeros"), _dtype_or_default(dtype).np), requires_grad,
                   device)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _finish(np.ones(_size(size, "ones"), _dtype_or_default(dtype).np), requires_grad,
                   device)


def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _finish(np.empty(_size(size, "empty"), _dtype_or_default(dtype).np), requires_grad,
                   device)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is None:
        dtype = _infer_dtype(fill_value if not isinstance(fill_value, Tensor) else
                             fill_value.item())
    return _finish(np.full(_size((size,), "full"), fill_value, _dt.to_dtype(dtype).np),
                   requires_grad, device)


def scalar_tensor(value, dtype=None, device=None, requires_grad=False):
    return _finish(np.array(value, _dtype_or_default(dtype).np), requires_grad, device)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return _finish(np.eye(n, m, dtype=_dtype_or_default(dtype).np), requires_grad, device)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values start, start+step, ... below end. Integer arguments give int64 (as PyTorch)."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if vals[2] == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if dtype is None:
        dtype = _dt.get_default_dtype() if any(isinstance(v, float) for v in vals) else _dt.int64
    dtype = _dt.to_dtype(dtype)
    # computed in float64/int64 then cast, so float32 ranges have the right length
    arr = np.arange(*vals, dtype=np.float64 if dtype.is_floating_point else np.int64)
    return _finish(arr.astype(dtype.np), requires_grad, device)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    arr = np.linspace(float(start), float(end), int(steps))
    return _finish(arr.astype(_dtype_or_default(dtype).np), requires_grad, device)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    arr = np.logspace(float(start), float(end), int(steps), base=base)
    return _finish(arr.astype(_dtype_or_default(dtype).np), requires_grad, device)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1)."""
    d = _dtype_or_default(dtype)
    arr = np_rng(generator).random(_size(size, "rand"), dtype=np.float64).astype(d.np)
    return _finish(arr, requires_grad, device)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal."""
    d = _dtype_or_default(dtype)
    arr = np_rng(generator).standard_normal(_size(size, "randn")).astype(d.np)
    return _finish(arr, requires_grad, device)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers uniform on [low, high); ``randint(high, size)`` as in PyTorch."""
    if size is None:
        if isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint(): missing required argument 'size'")
    if high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"randint(): expected low < high, got low={low}, high={high}")
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    arr = np_rng(generator).integers(low, high, _size((size,), "randint")).astype(d.np)
    return _finish(arr, requires_grad, device)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    d = _dt.to_dtype(dtype) if dtype is not None else _dt.int64
    return _finish(np_rng(generator).permutation(int(n)).astype(d.np), requires_grad, device)


def _like(t, dtype):
    return (_dt.to_dtype(dtype) if dtype is not None else t.dtype).np, t._data.shape


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.zeros(s, d), requires_grad, device)


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.ones(s, d), requires_grad, device)


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.empty(s, d), requires_grad, device)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    d, s = _like(t, dtype)
    return _finish(np.full(s, fill_value, d), requires_grad, device)


def rand_like(t, dtype=None, generator=None, requires_grad=False, device=None):
    d, s = _like(t, dtype)
    return _finish(np_rng(generator).random(s).astype(d), requires_grad, device)


def randn_like(t, dtype=None, generator=None, requires_grad=False, device=None):
    d, s = _like(t, dtype)
    return _finish(np_rng(generator).standard_normal(s).astype(d), requires_grad, device)


def randint_like(t, low, high=None, dtype=None, generator=None, requires_grad=False,
                 device=None):
    if high is None:
        low, high = 0, low
    d, s = _like(t, dtype)
    return _finish(np_rng(generator).integers(low, high, s).astype(d), requires_grad, device)


# ================================ sampling from distributions ==================================
# PyTorch's names for the dtypes in "not implemented for 'Long'"-style messages
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double"}
