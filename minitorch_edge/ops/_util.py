"""Helpers every op shares: dim normalisation, int arguments, operand promotion, undoing
broadcasting.

`sum_to` is the one place where broadcasting is undone in backward: every binary op reduces its
incoming gradient to each input's shape with it.
"""
import operator

import numpy as np

from .. import backend
from .. import dtypes as _dt
from ..tensor import Tensor

__all__ = ["sum_to", "norm_dim", "norm_dims", "int_tuple", "ntuple", "operands", "promote",
           "scalar_operand", "checked_scalar", "tensor_method", "shape_str", "as_tensor"]


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


# ---- operands of binary ops: PyTorch's promotion, then each operand converted by value ---------
# The result dtype comes from promotion (`dtypes.result_type`: 0-d tensors and Python numbers
# take part by category only). The op then computes in that dtype (`floating` ops, such as true
# division and atan2, in the default float dtype when it is integral), and every operand is
# converted to the compute dtype *from its own values*: a 0-d int64 tensor -5 divides a uint8
# tensor as -5.0, it is never first wrapped into uint8. Where the compute dtype is integral, a
# Python int that does not fit wraps (two's complement, as PyTorch's cast does: uint8 * -1
# multiplies by 255); one outside [-2**63, 2**64) raises OverflowError, as in PyTorch.

_NUMBER = (int, float, bool, np.number, np.bool_)
_INT_LIMITS = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
               for t in (np.uint8, np.int8, np.int16, np.int32, np.int64)}
_FLOAT_MAX = {np.dtype(t): float(np.finfo(t).max) for t in (np.float16, np.float32, np.float64)}
_BOOL = np.dtype(np.bool_)
_C_NAMES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
            "int32": "int", "int64": "int64_t", "float16": "c10::Half", "float32": "float",
            "float64": "double", "bfloat16": "c10::BFloat16"}


def is_float(np_dtype):
    """Whether numpy dtype `np_dtype` holds a floating-point type (bfloat16 included)."""
    return np_dtype.kind == "f" or np_dtype.name == "bfloat16"


def _too_big():
    return OverflowError("int too big to convert")


def scalar_operand(v, target):
    """Python/numpy number `v` as an operand of an op computing in numpy dtype `target`: a value
    numpy combines with a `target` array without changing the result dtype (PyTorch's cast of
    a wrapped number; see above)."""
    lim = _INT_LIMITS.get(target)
    if lim is not None:
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (float, np.floating)):     # not reached through promotion
            return target.type(v)
        v = int(v)
        if lim[0] <= v <= lim[1]:
            return v
        if not -2 ** 63 <= v < 2 ** 64:
            raise _too_big()
        return np.array(v % 2 ** 64, np.uint64).astype(target)[()]
    if target is _BOOL or target == _BOOL:
        return bool(v)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        v = int(v)
        if not -2 ** 63 <= v <= 2 ** 63:
            raise _too_big()
    v = float(v)
    big = _FLOAT_MAX.get(target)
    if big is None or -big <= v <= big or v != v:
        return v
    with np.errstate(over="ignore"):               # overflows to +-inf, silently (PyTorch)
        return target.type(v)


def _cast(arr, target):
    """arr.astype(target) without numpy's overflow warning (a float64 1e10 becomes float16
    inf, as PyTorch's cast)."""
    # backend.cast: libmte converts float32 <-> bfloat16 / float16 where built
    if is_float(target) and arr.dtype.itemsize >= target.itemsize:
        with np.errstate(over="ignore", invalid="ignore"):
            return backend.cast(arr, target)
    return backend.cast(arr, target)


def promote(a, b, op, floating=False):
    """(x, y, dtype): the numpy operands of binary op `op` on Tensors/numbers `a`, `b`, both
    converted to the numpy dtype the op computes in (see above; `floating`: an op with a
    floating-point result). At least one of a, b may be a number; if both are, both come back
    as 0-d arrays.

    Raises RuntimeError naming both shapes if they do not broadcast, TypeError for operands that
    are neither Tensors nor numbers."""
    a_t = a.__class__ is Tensor or isinstance(a, Tensor)
    b_t = b.__class__ is Tensor or isinstance(b, Tensor)
    if a_t and b_t:
        x, y = a._data, b._data
        t = x.dtype
        if t is not y.dtype:
            t = _dt.result_type(a, b).np
            if floating and not is_float(t):
                t = _dt.get_default_dtype().np
            if x.dtype is not t:
                x = _cast(x, t)
            if y.dtype is not t:
                y = _cast(y, t)
        elif floating and t.kind != "f" and not is_float(t):
            t = _dt.get_default_dtype().np
            x, y = x.astype(t), y.astype(t)
        if x.shape != y.shape:
            check_broadcast(x.shape, y.shape, op)
        return x, y, t
    if a_t or b_t:
        tensor, scalar = (a, b) if a_t else (b, a)
        if not isinstance(scalar, _NUMBER):
            raise TypeError(f"{op}(): unsupported operand type {type(scalar).__name__}; expected "
                            f"a Tensor or a number")
        arr = tensor._data
        t = arr.dtype
        if scalar.__class__ is float and t.kind == "f" and -3.0e38 < scalar < 3.0e38 and \
                t.itemsize > 2:
            return (arr, scalar, t) if a_t else (scalar, arr, t)      # the common fast path
        t = _dt.result_type(tensor, scalar).np
        if floating and not is_float(t):
            t = _dt.get_default_dtype().np
        if arr.dtype is not t:
            arr = _cast(arr, t)
        scalar = scalar_operand(scalar, t)
        return (arr, scalar, t) if a_t else (scalar, arr, t)
    for v in (a, b):
        if not isinstance(v, _NUMBER):
            raise TypeError(f"{op}(): unsupported operand type {type(v).__name__}; expected a "
                            f"Tensor or a number")
    t = _dt.result_type(a, b).np
    if floating and not is_float(t):
        t = _dt.get_default_dtype().np
    return np.asarray(scalar_operand(a, t), t), np.asarray(scalar_operand(b, t), t), t


def operands(a, b, op, floating=False):
    """`promote` without the compute dtype: the numpy operands (x, y)."""
    x, y, _ = promote(a, b, op, floating)
    return x, y


def dtype_name(np_dtype):
    d = _dt.from_numpy_dtype(np_dtype)
    return d.name if d is not None else str(np_dtype)


def checked_scalar(value, np_dtype, op=None):
    """A number given as a *Scalar argument* (fill_, masked_fill, index_fill, clamp bounds, a
    number in where, alpha) converted to numpy dtype `np_dtype` the way PyTorch's
    checked_convert does: a value the dtype cannot hold raises RuntimeError ("value cannot be
    converted to type int8_t without overflow"); unsigned dtypes also take -max..-1, which wrap
    (uint8 -1 -> 255); a float going to an integer dtype is truncated; inf and nan are fine for
    floating dtypes; any value converts to bool. Returns a numpy scalar of `np_dtype`."""
    t = np.dtype(np_dtype)
    if isinstance(value, Tensor):
        value = value._data.item()
    elif isinstance(value, np.generic):
        value = value.item()
    if t == _BOOL:
        return np.bool_(bool(value))
    if isinstance(value, bool):
        return t.type(value)
    if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 64:
        raise _too_big()
    fail = RuntimeError(f"value cannot be converted to type {_C_NAMES.get(t.name, t.name)} "
                        f"without overflow")
    lim = _INT_LIMITS.get(t)
    if lim is not None:
        lo, hi = lim
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise fail
        if lo == 0:
            lo = -hi
        if not lo <= value <= hi:
            raise fail
        return np.array(int(value) % (2 ** 64), np.uint64).astype(t)[()] if value < 0 and \
            lim[0] == 0 else t.type(int(value))
    big = _FLOAT_MAX.get(t)
    v = float(value)
    if big is not None and v == v and abs(v) != float("inf") and abs(v) > big:
        raise fail
    with np.errstate(over="ignore"):
        return t.type(v)


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


def write_out(result, out, op):
    """PyTorch's ``out=`` argument: `result` (a Tensor, or a tuple of them with `out` a tuple of
    the same length) copied into `out`, which is returned. `out` needs the result's dtype; one
    of another shape is resized (with PyTorch's warning when it was not empty). As in PyTorch,
    out= cannot be combined with autograd: a result that requires grad raises."""
    if out is None:
        return result
    from ..autograd.grad_mode import _State
    results = result if isinstance(result, tuple) else (result,)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(results):
        raise TypeError(f"{op}(): out must be a tuple of {len(results)} tensors, got "
                        f"{len(outs)}")
    for r, o in zip(results, outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(o).__name__}")
        if _State.enabled and (r._rg or o._rg):
            raise RuntimeError(f"{op}(): functions with out=... arguments don't support "
                               f"automatic differentiation, but one of the arguments requires "
                               f"grad.")
        if o._data.dtype != r._data.dtype:
            raise RuntimeError(f"{op}: Expected out tensor to have dtype {r.dtype.name}, but got "
                               f"{o.dtype.name} instead (pass an out tensor of that dtype)")
    import warnings
    for r, o in zip(results, outs):
        if o._data.shape != r._data.shape:
            if o._data.size:
                warnings.warn(f"An output with one or more elements was resized since it had "
                              f"shape {list(o._data.shape)}, which does not match the required "
                              f"output shape {list(r._data.shape)}. This behavior is "
                              f"deprecated, and in a future PyTorch release outputs will not be "
                              f"resized unless they have zero elements. You can explicitly "
                              f"reuse an out tensor t by resizing it, inplace, to zero elements "
                              f"with t.resize_(0).", UserWarning, stacklevel=3)
            o.resize_(*r._data.shape)
        np.copyto(o._data, r._data)
        o._vc[0] += 1
        o._vc[1] = op
    return out if isinstance(result, tuple) else outs[0]


def accepts_out(op):
    """Decorator: give a function PyTorch's keyword ``out=`` (see `write_out`); a named-tuple
    result keeps its type."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def with_out(*args, out=None, **kwargs):
            result = fn(*args, **kwargs)
            if out is None:
                return result
            if isinstance(result, tuple):
                written = write_out(tuple(result), out, op)
                return type(result)(*written) if hasattr(result, "_fields") else written
            return write_out(result, out, op)
        return with_out
    return wrap
