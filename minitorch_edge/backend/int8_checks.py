"""The argument checks of the int8 twins (numpy_int8.py, int8_fixed_point.py), in one place:
the C bindings (native_int8.py through _C) mirror them. A wrong type is a TypeError, a wrong
dtype, shape or value a ValueError, each message starting with the kernel's name (op) and
saying what was given and what is allowed.
"""
import numpy as np

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
MAX_REDUCTION = 65536   # K * 255 * 127 < 2**31 for K up to this: an int32 dot never wraps
MAX_LEFT_SHIFT = 23     # 255 << 23 < 2**31: qadd's (a - a_zp) << left_shift fits int32


def _int32_values(op, name, v, lo=INT32_MIN, hi=INT32_MAX):
    """v (an integer or an array of integers) as int64, every value in [lo, hi]."""
    a = np.asarray(v)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: {name} must be integers (int32 values), got dtype {a.dtype}")
    if a.size and (a.min() < lo or a.max() > hi):
        raise ValueError(f"{op}: {name} must lie in [{lo}, {hi}], got values in "
                         f"[{a.min()}, {a.max()}]")
    return a.astype(np.int64)


def _int_arg(op, name, v, lo=None, hi=None):
    """A Python or numpy integer (not bool) in [lo, hi], as int."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{op}: {name} must be an int, got {type(v).__name__}")
    v = int(v)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{op}: {name} must lie in [{lo}, {'inf' if hi is None else hi}], "
                         f"got {v}")
    return v


def _zero_point(op, name, v):
    return _int_arg(op, name, v, -128, 127)


def _act_range(op, act_min, act_max):
    act_min = _int_arg(op, "act_min", act_min, -128, 127)
    act_max = _int_arg(op, "act_max", act_max, -128, 127)
    if act_min > act_max:
        raise ValueError(f"{op}: act_min ({act_min}) > act_max ({act_max}); pass "
                         f"-128 <= act_min <= act_max <= 127 (-128, 127: no activation)")
    return act_min, act_max


def _scale(op, name, s, dtype=np.float32):
    """A finite scale > 0 (in `dtype`, float32 for the kernels)."""
    if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a float, got {type(s).__name__}")
    with np.errstate(over="ignore"):
        f = dtype(s)
    if not (np.isfinite(f) and f > 0):
        raise ValueError(f"{op}: {name} must be finite and > 0 (as {np.dtype(dtype)}), got {s!r}")
    return f


def _array(op, name, a, dtype, ndim=None, layout=""):
    """a itself: an ndarray of `dtype` (and `ndim` dims)."""
    dtype = np.dtype(dtype)
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{op}: {name} must be a numpy.ndarray of dtype {dtype}, got "
                        f"{type(a).__name__}")
    if a.dtype != dtype:
        fix = {"int8": "; quantize it first (quantize)", "float32": "; pass x.astype(np.float32)",
               "int32": f"; pass np.asarray({name}, np.int32)"}[dtype.name]
        raise ValueError(f"{op}: {name} has dtype {a.dtype} (shape {a.shape}), expected "
                         f"{dtype}{fix}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{op}: {name} has shape {a.shape}, expected {ndim} dims {layout}")
    return a


def _weights(op, w, ndim, layout):
    w = _array(op, "w", w, np.int8, ndim, layout)
    if w.size and w.min() == -128:
        raise ValueError(f"{op}: w (shape {w.shape}) holds -128; int8 weights must lie in "
                         f"[-127, 127] (TFLite's symmetric range): quantize them with "
                         f"scale max|w| / 127, or clip them with np.maximum(w, -127)")
    return w


def _channel_params(op, bias, multiplier, shift, channels):
    """bias (int64, zeros for None), multiplier, shift (int64): int32 arrays of shape
    (channels,), one per output channel, multiplier in [0, 2**31 - 1], shift in [-31, 30]."""
    arrays = {"bias": bias, "multiplier": multiplier, "shift": shift}
    if bias is None:
        arrays["bias"] = np.zeros(channels, np.int32)
    for name, a in arrays.items():
        _array(op, name, a, np.int32)
        if a.shape != (channels,):
            raise ValueError(f"{op}: {name} has shape {a.shape}, expected ({channels},): one "
                             f"int32 per output channel")
    multiplier = _int32_values(op, "multiplier", arrays["multiplier"], 0, INT32_MAX)
    shift = _int32_values(op, "shift", arrays["shift"], -31, 30)
    return arrays["bias"].astype(np.int64), multiplier, shift


def _ints(op, name, v, n, lo):
    """A tuple (or list) of n ints >= lo, as a tuple."""
    if not isinstance(v, (tuple, list)) or len(v) != n:
        raise TypeError(f"{op}: {name} must be a tuple of {n} ints, got {v!r}")
    return tuple(_int_arg(op, name, e, lo) for e in v)


def _reduction(op, k):
    if k > MAX_REDUCTION:
        raise ValueError(f"{op}: the reduction length K = {k} exceeds {MAX_REDUCTION}, beyond "
                         f"which an int32 accumulator could wrap; split the layer")


def _output_size(op, ho, wo, x_shape):
    if ho < 1 or wo < 1:
        raise ValueError(f"{op}: the window does not fit the (padded) input of shape "
                         f"{x_shape}: the output would be {ho}x{wo}")
