"""dtypes: the element types a Tensor can hold, and PyTorch's type-promotion rules.

A `dtype` wraps a numpy dtype and carries PyTorch's name for it (`minitorch_edge.float32`).
Mixed operands follow PyTorch, not numpy:

* categories rank bool < integer < floating;
* dimensioned tensors decide the result; 0-dim tensors and Python scalars only raise the result
  when they belong to a higher category (``int_tensor + 2.5`` -> float32, the default dtype;
  ``float16_tensor + 2.5`` -> float16; ``float32_tensor + float64_0dim`` -> float32).

bfloat16 is stored through the optional ``ml_dtypes`` package (``pip install ml_dtypes``;
without it the dtype exists but making a bfloat16 tensor raises, naming that fix). It promotes
as in PyTorch: bfloat16 + float16 -> float32, bfloat16 + float32 -> float32, int + bfloat16 ->
bfloat16. Arithmetic on it runs through ml_dtypes, which computes each element in float32 and
rounds back to bfloat16; ops numpy has no bfloat16 loop for (matmul, exp, softmax, norms,
reductions, layers) widen to float32 with `compute_array` and round back once with
`result_array`, as PyTorch's CPU kernels do. bfloat16 saves memory, not time.
numpy reports its kind as 'V', not 'f': test floating arrays with `is_float_array` (numpy
dtypes with `is_float_dtype`).
"""
import numpy as np

try:            # bfloat16 is stored through the optional ml_dtypes package
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    _ml_dtypes = None

__all__ = ["dtype", "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32",
           "int64", "uint8", "bool", "float", "double", "half", "long", "int", "short",
           "get_default_dtype", "set_default_dtype", "promote_types", "result_type"]

BF16_MISSING = ("bfloat16 needs the ml_dtypes package, which is not installed: "
                "pip install ml_dtypes")


class dtype:
    """One element type. ``dtype.np`` is the numpy dtype it stores."""
    __slots__ = ("name", "_np", "is_floating_point", "is_signed", "itemsize", "_rank")

    def __init__(self, name, np_dtype, rank, floating=None, itemsize=None):
        self.name = name
        self._np = None if np_dtype is None else np.dtype(np_dtype)
        kind = self._np.kind if self._np is not None else "f"
        self.is_floating_point = kind == "f" if floating is None else floating
        self.is_signed = self.is_floating_point or kind == "i"
        self.itemsize = self._np.itemsize if self._np is not None else itemsize
        self._rank = rank

    @property
    def np(self):
        """The numpy dtype of the arrays (bfloat16's comes from ml_dtypes)."""
        if self._np is None:
            raise RuntimeError(BF16_MISSING)
        return self._np

    @property
    def is_complex(self):
        return False

    def to_real(self):
        return self

    def __repr__(self):
        return "minitorch_edge." + self.name

    def __reduce__(self):  # copies and multiprocessing get the same singleton back
        return (_by_name, (self.name,))


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 2)
int32 = dtype("int32", np.int32, 3)
int64 = dtype("int64", np.int64, 4)
float16 = dtype("float16", np.float16, 5)
# bfloat16 ranks with float16 (neither holds the other: bf16 + f16 -> f32, see promote_types).
# Without ml_dtypes the dtype still exists, and using its storage raises BF16_MISSING.
bfloat16 = dtype("bfloat16", _ml_dtypes.bfloat16 if _ml_dtypes is not None else None, 5,
                 floating=True, itemsize=2)
float32 = dtype("float32", np.float32, 6)
float64 = dtype("float64", np.float64, 7)

# PyTorch's aliases
float, double, half = float32, float64, float16
long, int, short = int64, int32, int16
bool = bool_  # noqa: A001  (mirrors torch.bool)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_FROM_NP = {d._np: d for d in ALL if d._np is not None}
_NAMES = {d.name: d for d in ALL}
FLOATING = tuple(d for d in ALL if d.is_floating_point)
# the numpy dtypes of floating tensors (is_float_array): bfloat16's numpy kind is 'V', not 'f'
_FLOAT_NP = frozenset(d._np for d in FLOATING if d._np is not None)


def is_float_array(array):
    """Whether a numpy array holds one of our floating dtypes (bfloat16 included)."""
    return array.dtype.kind == "f" or array.dtype in _FLOAT_NP


def is_float_dtype(np_dtype):
    """Whether a numpy dtype is one of our floating dtypes (bfloat16 included)."""
    return np_dtype.kind == "f" or np_dtype in _FLOAT_NP


def bf16_available():
    return bfloat16._np is not None


# ---- computing on bfloat16: widen to float32, round back once (as PyTorch's CPU kernels) -----
_BF16_NP = bfloat16._np
_F32_NP = np.dtype(np.float32)


def is_bf16(np_dtype):
    """Whether numpy dtype `np_dtype` is bfloat16 (cheap for every other dtype)."""
    return np_dtype.kind == "V" and np_dtype == _BF16_NP


def compute_array(x):
    """The array a floating op computes on: a bfloat16 array widened to float32, any other as
    it is. Pair with `result_array` to round the result back once."""
    if x.dtype.kind == "V" and x.dtype == _BF16_NP:
        from .backend import cast   # libmte's conversion where built (ml_dtypes' is slow)
        return cast(x, _F32_NP)
    return x


def compute_dtype(np_dtype):
    """The numpy dtype an op on `np_dtype` computes in: float32 for bfloat16, else itself."""
    return _F32_NP if np_dtype.kind == "V" and np_dtype == _BF16_NP else np_dtype


def finfo(np_dtype):
    """numpy's finfo of a floating numpy dtype; ml_dtypes' for bfloat16 (numpy's does not
    know it)."""
    return _ml_dtypes.finfo(np_dtype) if is_bf16(np_dtype) else np.finfo(np_dtype)


def result_array(y, np_dtype):
    """`y`, computed on `compute_array` input, as the op's result dtype `np_dtype`: a bfloat16
    result is rounded from float32 once; for any other dtype `y` comes back untouched."""
    if np_dtype.kind == "V" and np_dtype == _BF16_NP and y.dtype != np_dtype:
        from .backend import cast
        return cast(np.asarray(y), np_dtype)
    return y


# ---- half precision on the bit patterns: sign tests and 0/1 masks need no widening --------------
# A bfloat16 / float16 value's bits read as int16 order like the value for non-negative
# numbers, and a negative number has its sign bit set, so "x > 0", "keep x or make it +0" and
# "pass the gradient where the mask holds" are exact int16 operations (PyTorch's CPU kernels
# widen to float32 for these; the result is the same bits, at a fraction of the memory traffic).
_INF_BITS = {np.dtype(np.float16): 0x7C00}
if _BF16_NP is not None:
    _INF_BITS[_BF16_NP] = 0x7F80


def half_inf_bits(np_dtype):
    """The bit pattern of +inf for a bfloat16 / float16 numpy dtype, None for any other."""
    return _INF_BITS.get(np_dtype) if np_dtype.itemsize == 2 else None


def half_relu(x, want_mask):
    """(max(x, 0), x > 0 or None) for a bfloat16 / float16 array `x`, on its bits: positive
    values and nan (either sign) stay, everything else becomes +0; the mask is False at nan."""
    inf = _INF_BITS[x.dtype]
    v = x.view(np.int16)
    pos = np.greater(v, 0)                             # +0 < x, +nan included
    keep = np.greater(x.view(np.uint16), 0x8000 | inf)  # -nan (np.maximum keeps nan)
    np.logical_or(keep, pos, out=keep)
    y = np.multiply(v, keep).view(x.dtype)
    if not want_mask:
        return y, None
    np.less_equal(v, inf, out=keep)                   # (fresh arrays are page faults: reuse)
    return y, np.logical_and(pos, keep, out=pos)


def half_masked(g, mask):
    """g where the bool array `mask` holds, else +0, for a bfloat16 / float16 array `g` (same
    shape as mask or broadcastable to it): exact, with no widening."""
    return np.multiply(g.view(np.int16), mask).view(g.dtype)


def _by_name(name):
    return _NAMES[name]


_default = [float32]


def get_default_dtype():
    return _default[0]


def set_default_dtype(d):
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating-point types are supported, got {d}")
    _default[0] = d


def to_dtype(d):
    """Accept our dtype, a numpy dtype/type, or a name; return our dtype (TypeError otherwise)."""
    if d.__class__ is dtype:
        return d
    if isinstance(d, str) and d in _NAMES:
        return _NAMES[d]
    try:
        return _FROM_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"unsupported dtype {d!r}; use one of "
                        + ", ".join(x.name for x in ALL)) from None


def from_numpy_dtype(np_dtype):
    """Our dtype for a numpy dtype, or None if we do not support it."""
    return _FROM_NP.get(np_dtype)


def promote_types(a, b):
    """The smallest dtype both `a` and `b` convert to without losing their category."""
    if a is b:
        return a
    if a.is_floating_point or b.is_floating_point:
        if a.is_floating_point and b.is_floating_point:
            if a._rank == b._rank:               # float16 with bfloat16
                return float32
            return a if a._rank > b._rank else b
        return a if a.is_floating_point else b
    if a is bool_:
        return b
    if b is bool_:
        return a
    if {a, b} == {uint8, int8}:
        return int16
    if uint8 in (a, b):  # uint8 with a wider signed int
        return a if a is not uint8 else b
    return a if a._rank > b._rank else b


def _category(d):
    return 2 if d.is_floating_point else (0 if d is bool_ else 1)


def _combine(higher, lower):
    # PyTorch's combine_categories: the higher-priority group wins unless it is of a lower category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(x):
    """The dtype PyTorch gives a Python scalar used as an operand."""
    if isinstance(x, (builtins_bool, np.bool_)):
        return bool_
    if isinstance(x, (builtins_int, np.integer)):
        return int64
    if isinstance(x, (builtins_float, np.floating)):
        return _default[0]
    raise TypeError(f"unsupported operand type {type(x).__name__}")


import builtins as _b  # noqa: E402

builtins_bool, builtins_int, builtins_float = _b.bool, _b.int, _b.float


def result_type(*operands):
    """PyTorch's result_type over Tensors (dimensioned or 0-dim) and Python scalars."""
    dim = zero = wrapped = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if d is not None and d.__class__ is dtype:
            if x._data.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        else:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))
