"""In-place ops (``add_``, ``mul_``, ``zero_``, ``x[idx] = v``, ``x += y``, ...) and the version
counter that keeps them honest.

Every in-place op is its out-of-place twin plus a write-back:

1. refuse what PyTorch refuses: changing a leaf that requires grad while grad mode is on, and a
   result dtype that cannot be cast back (``int_tensor.add_(0.5)``);
2. compute the out-of-place result. When autograd records, the op reads a *snapshot* of the
   tensor (a copy that sits at the same place in the graph), so what the op saves for backward
   cannot be overwritten by the write-back;
3. write the result into the tensor's own memory (views of it see the change), bump the shared
   version counter, and, when recorded, make the result's node the tensor's ``grad_fn``.

A node that saved the tensor before the change notices the version bump when backward unpacks
it and raises an error naming the in-place op. Differs from PyTorch: an in-place op on a *view*
while recording (``y = x[0]; y.mul_(2)`` with x requiring grad) raises instead of rewriting the
base's history; use ``x[0] = x[0] * 2`` (index assignment on the base) instead.
"""
import numpy as np

from .. import dtypes as _dt
from ..autograd.function import _Recording
from ..autograd.grad_mode import _State
from ..backend.prepared import wrote as _wrote
from ..tensor import Tensor
from . import compare as C
from . import elementwise as E
from ._util import checked_scalar, is_float, scalar_operand

__all__ = []

LEAF_MSG = ("a leaf Variable that requires grad is being used in an in-place operation. "
            "(Wrap the update in `with minitorch_edge.no_grad():` or use the out-of-place op.)")


def _category(np_dtype):
    """0 bool, 1 integer, 2 floating (bfloat16, numpy kind 'V', included)."""
    return 2 if is_float(np_dtype) else {"b": 0, "u": 1, "i": 1}[np_dtype.kind]


def _recording(self, args):
    if not _State.enabled:
        return False
    return self._rg or any(isinstance(a, Tensor) and a._rg for a in args)


def _snapshot(self):
    """A copy of `self` standing at the same place in the graph (same grad_fn and output)."""
    return Tensor._make(self._data.copy(), self._fn, self._nr)


def apply_inplace(self, name, compute, args=(), cast=False):
    """Run ``compute(source, *args)`` (an out-of-place op) and store its result into `self`."""
    recording = _recording(self, args)
    if recording:
        if self._fn is None and self._rg:
            raise RuntimeError(LEAF_MSG)
        base = self._base
        if base is not None:
            if base._fn is None and base._rg:
                raise RuntimeError("a view of a leaf Variable that requires grad is being used "
                                   "in an in-place operation.")
            raise RuntimeError(f"{name}_: in-place operation on a view while autograd records is "
                               f"not supported; assign through the base tensor instead "
                               f"(base[index] = new_value) or use the out-of-place {name}()")
        source = _snapshot(self)
    else:
        source = self
    if recording:
        result = compute(source, *args)
    else:
        prev = _State.enabled
        _State.enabled = False
        try:
            result = compute(source, *args)
        finally:
            _State.enabled = prev
    out = result._data
    dst = self._data
    if out.shape != dst.shape:
        raise RuntimeError(f"{name}_: output with shape {list(dst.shape)} doesn't match the "
                           f"broadcast shape {list(out.shape)}")
    if out.dtype != dst.dtype and not cast and \
            _category(out.dtype) > _category(dst.dtype):
        raise RuntimeError(f"{name}_: result type {_dt._FROM_NP[out.dtype].name} can't be cast to "
                           f"the desired output type {_dt._FROM_NP[dst.dtype].name}; use the "
                           f"out-of-place {name}() or convert the tensor first")
    if not dst.flags.writeable:
        raise RuntimeError(f"{name}_: unsupported operation: more than one element of the "
                           f"written-to tensor refers to a single memory location (it is an "
                           f"expanded view). Please clone() the tensor before performing the "
                           f"operation.")
    if out is not dst:
        np.copyto(dst, out, casting="unsafe")
    self._vc[0] += 1
    self._vc[1] = name
    _wrote(dst)
    if recording and result._fn is not None:
        self._fn, self._nr, self._rg = result._fn, result._nr, True
    if _Recording.trace is not None:       # graph.trace: self now holds what result is
        _Recording.trace.rebind(self, result)
    return self


def _inplace_method(name, fn, cast=False):
    def method(self, *args, **kwargs):
        return apply_inplace(self, name, lambda src, *a: fn(src, *a, **kwargs), args, cast)
    method.__name__ = name + "_"
    method.__doc__ = f"In-place {name}: the result of ``{name}(self, ...)`` written into self."
    return method


def _fill(src, value):
    # a number is checked against the dtype (uint8 fill_(300) raises, fill_(-1) gives 255); a
    # 0-d tensor is cast (wraps), as in PyTorch
    v = value if isinstance(value, Tensor) else \
        Tensor._make(np.array(checked_scalar(value, src._data.dtype)))
    if v._data.ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{v._data.ndim} dimensions.")
    return v.to(src.dtype).expand(src._data.shape)


def _zero(src):
    return Tensor._make(np.zeros_like(src._data))


def _copy(src, other, non_blocking=False):
    if not isinstance(other, Tensor):
        other = Tensor._make(np.asarray(other))
    try:
        np.broadcast_shapes(other._data.shape, src._data.shape)
    except ValueError:
        raise RuntimeError(f"copy_: the source of shape {list(other.shape)} cannot be "
                           f"broadcast to the destination of shape {list(src.shape)}") from None
    return other.to(src.dtype).expand(src._data.shape)


def _addcmul(src, t1, t2, value=1):
    return src + value * t1 * t2


def _addcdiv(src, t1, t2, value=1):
    return src + value * t1 / t2


_OUT_OF_PLACE = {
    "add": E.add, "sub": E.sub, "mul": E.mul, "div": E.div, "pow": E.pow,
    "remainder": E.remainder, "fmod": E.fmod, "floor_divide": E.floor_divide,
    "lerp": E.lerp, "addcmul": _addcmul, "addcdiv": _addcdiv,
    "maximum": E.maximum, "minimum": E.minimum,
    "logical_and": C.logical_and, "logical_or": C.logical_or,
}
# unary ops and activations come from the other op modules by name (bound at first use)
_BY_NAME = ["neg", "abs", "exp", "log", "sqrt", "sigmoid", "tanh", "relu", "clamp", "clip",
            "floor", "ceil", "round", "trunc", "sin", "cos", "reciprocal", "square", "sign",
            "masked_fill", "clamp_min", "clamp_max", "exp2", "log1p", "expm1", "rsqrt",
            "index_fill", "scatter", "scatter_add", "index_add", "tril", "triu", "tan", "atan",
            "sinh", "cosh", "asin", "acos", "erf", "frac", "log2", "log10", "nan_to_num", "sgn",
            "xlogy"]

for _name, _fn in _OUT_OF_PLACE.items():
    setattr(Tensor, _name + "_", _inplace_method(_name, _fn))
for _name in _BY_NAME:
    def _late(src, *a, _n=_name, **k):
        return getattr(Tensor, _n)(src, *a, **k)
    setattr(Tensor, _name + "_", _inplace_method(_name, _late))

Tensor.fill_ = _inplace_method("fill", _fill, cast=True)
Tensor.zero_ = _inplace_method("zero", _zero, cast=True)
Tensor.copy_ = _inplace_method("copy", _copy, cast=True)
Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_
Tensor.__ipow__ = Tensor.pow_
Tensor.__imod__ = Tensor.remainder_
Tensor.__ifloordiv__ = Tensor.floor_divide_


# ---- random fills (used by nn.init; never recorded) ---------------------------------------------
def _random_fill(name, draw):
    def method(self, *args, generator=None, **kwargs):
        from ..random import np_rng
        if _State.enabled and self._rg and self._fn is None:
            raise RuntimeError(LEAF_MSG)
        values = draw(np_rng(generator), self._data.shape, *args, **kwargs)
        np.copyto(self._data, values, casting="unsafe")
        self._vc[0] += 1
        _wrote(self._data)
        self._vc[1] = name
        return self
    method.__name__ = name + "_"
    return method


Tensor.uniform_ = _random_fill("uniform", lambda rng, shape, a=0.0, b=1.0: rng.uniform(a, b, shape))
Tensor.normal_ = _random_fill("normal",
                              lambda rng, shape, mean=0.0, std=1.0: rng.normal(mean, std, shape))
Tensor.bernoulli_ = _random_fill("bernoulli", lambda rng, shape, p=0.5: rng.random(shape) < p)
Tensor.exponential_ = _random_fill("exponential",
                                   lambda rng, shape, lambd=1.0: rng.exponential(1 / lambd, shape))
Tensor.random_ = _random_fill("random", lambda rng, shape, low=0, high=None:
                              rng.integers(low, high if high is not None else 2 ** 24, shape)
                              if high is not None or low else rng.integers(0, 2 ** 24, shape))


# ---- index assignment --------------------------------------------------------------------------
def _setitem(self, index, value):
    """``x[index] = value``: a plain numpy assignment when autograd does not record; otherwise
    the differentiable ``index_put`` written back through `apply_inplace`."""
    from .index import index_put, normalize_index
    if not isinstance(value, Tensor):
        value = Tensor._make(_setitem_value(value, self._data.dtype))
    if _recording(self, (value,)):
        apply_inplace(self, "index_put", lambda src, v: index_put(src, index, v.to(src.dtype)),
                      (value,), cast=True)
        return
    idx = normalize_index(self._data.shape, index)          # validates before any write
    if not self._data.flags.writeable:
        raise RuntimeError("index_put_: unsupported operation: the written-to tensor is an "
                           "expanded (read-only) view; clone() it first")
    try:
        np.broadcast_shapes(value._data.shape, idx.shape)
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(idx.shape)}") from None
    idx.put(self._data, value._data)
    self._vc[0] += 1
    _wrote(self._data)
    self._vc[1] = "index_put"


def _setitem_value(value, dtype):
    """A non-Tensor value of ``x[index] = value`` as an array of x's dtype: a number is checked
    as PyTorch checks it for integer dtypes (int8 x[0] = 300 raises) and cast for floating ones
    (float16 x[0] = 1e10 stores inf)."""
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        if is_float(dtype):
            return np.array(scalar_operand(value, dtype), dtype=dtype)
        return np.array(checked_scalar(value, dtype))
    return np.asarray(value, dtype=dtype)


Tensor.__setitem__ = _setitem
