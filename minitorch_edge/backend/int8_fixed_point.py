"""TFLite's int8 fixed-point arithmetic in numpy: the real multiplier M of a layer as an int32
m and a shift (quantize_multiplier), and M * acc computed with integers only (mbqm), bit for
bit as TFLite's reference kernels and our C kernels compute it.

    M = m * 2**(shift - 31),  m in [2**30, 2**31) (or 0),  shift in [-31, 30]

    srdhm   SaturatingRoundingDoublingHighMul: round(acc * m / 2**31), the high half of the
            doubled 64-bit product, rounded (ties upwards: 2.5 -> 3, -2.5 -> -2), saturated
            in the one case that overflows (INT32_MIN * INT32_MIN)
    rdbpot  RoundingDivideByPOT: round(x / 2**e) for the negative part of shift (ties away
            from zero), with shifts and masks only
    mbqm    MultiplyByQuantizedMultiplier: x << max(shift, 0), then srdhm by m, then rdbpot by
            max(-shift, 0)

The public functions check their arguments and take any integer arrays; the underscored ones
are the unchecked vector forms the kernels of numpy_int8.py use (values in int64 holding
int32). numpy_int8.py explains the scheme around them (scales, zero points, padding).
"""
import math

import numpy as np

from .int8_checks import INT32_MAX, INT32_MIN, MAX_LEFT_SHIFT, _int32_values, _int_arg, _scale

__all__ = ["INT32_MAX", "INT32_MIN", "add_multipliers", "mbqm", "quantize_multiplier", "rdbpot",
           "round_half_away", "srdhm"]


# ==== rounding and the multiplier ==============================================================

def round_half_away(v):
    """Round to the nearest integer, ties away from zero, as C's round/roundf (0.5 -> 1,
    -0.5 -> -1, 2.5 -> 3; numpy's np.round rounds ties to even). Keeps v's float dtype:
    t = trunc(v); v - t is exact, so the tie test |v - t| >= 0.5 is exact too."""
    v = np.asarray(v)
    t = np.trunc(v)
    with np.errstate(invalid="ignore"):          # inf - inf: the result is inf anyway
        return t + np.where(np.abs(v - t) >= 0.5, np.sign(v), 0)


def quantize_multiplier(real):
    """TFLite's QuantizeMultiplier: real >= 0 as (m, shift) with real ~= m * 2**(shift - 31),
    m an int32 in [2**30, 2**31) (or 0).

        q, e = frexp(real)                 0.5 <= q < 1, real = q * 2**e
        m = round_half_away(q * 2**31)     exact in float64
        m == 2**31 (q rounded up to 1):    m = 2**30, e += 1
        e < -31: (0, 0) (real is too small: it multiplies everything to 0)
        e > 30:  (2**31 - 1, 30) (the largest representable)
    """
    if isinstance(real, bool) or not isinstance(real, (int, float, np.integer, np.floating)):
        raise TypeError(f"quantize_multiplier: real must be a number, got "
                        f"{type(real).__name__}")
    real = float(real)
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"quantize_multiplier: real must be finite and >= 0, got {real!r}")
    if real == 0:
        return 0, 0
    q, e = math.frexp(real)
    m = int(round_half_away(q * 2.0 ** 31))
    if m == 2 ** 31:
        m //= 2
        e += 1
    if e < -31:
        return 0, 0
    if e > 30:
        return 2 ** 31 - 1, 30
    return m, e


def add_multipliers(a_scale, b_scale, y_scale, left_shift=20):
    """The six integers of qadd for inputs of scales a_scale, b_scale and output y_scale (TFLite's
    int8 ADD): both inputs are brought to the common scale twice_max / 2**left_shift, added,
    and the sum rescaled to y_scale:

        twice_max = 2 max(a_scale, b_scale)
        (a_multiplier, a_shift) = quantize_multiplier(a_scale / twice_max)           (<= 1/2)
        (b_multiplier, b_shift) = quantize_multiplier(b_scale / twice_max)           (<= 1/2)
        (y_multiplier, y_shift) = quantize_multiplier(twice_max / (2**left_shift y_scale))
    """
    op = "add_multipliers"
    a_scale, b_scale, y_scale = (float(_scale(op, name, s, np.float64)) for name, s in
                                 (("a_scale", a_scale), ("b_scale", b_scale),
                                  ("y_scale", y_scale)))
    left_shift = _int_arg(op, "left_shift", left_shift, 0, MAX_LEFT_SHIFT)
    twice_max = 2.0 * max(a_scale, b_scale)
    return (*quantize_multiplier(a_scale / twice_max), *quantize_multiplier(b_scale / twice_max),
            *quantize_multiplier(twice_max / ((1 << left_shift) * y_scale)))


# ==== the fixed-point primitives ===============================================================
# The public srdhm / rdbpot / mbqm check their arguments and return int32; the kernels call the
# unchecked _srdhm / _rdbpot / _mbqm on int64 arrays holding int32 values (broadcasting).

def _saturate32(x):
    return np.clip(x, INT32_MIN, INT32_MAX)


def _srdhm(a, b):
    ab = a * b                                                      # exact: |ab| <= 2**62
    v = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))              # the rounding nudge
    high = np.where(v >= 0, v >> 31, -((-v) >> 31))                 # C's division: truncates
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def _rdbpot(x, exponent):
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def _mbqm(x, multiplier, shift):
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    return _rdbpot(_srdhm(_saturate32(x << left), multiplier), right)


def srdhm(a, b):
    """TFLite's SaturatingRoundingDoublingHighMul (gemmlowp), elementwise over int32 values:

        a == b == INT32_MIN:  INT32_MAX            (the one product that overflows)
        else:  ab = a * b (64-bit);  nudge = 2**30 if ab >= 0 else 1 - 2**30
               (ab + nudge) / 2**31, truncated toward zero as C's integer division

    i.e. a b / 2**31 rounded to nearest, ties upwards (2.5 -> 3, -2.5 -> -2: the negative
    nudge is one short of -1/2 and the division truncates)."""
    a = _int32_values("srdhm", "a", a)
    b = _int32_values("srdhm", "b", b)
    return _srdhm(a, b).astype(np.int32)


def rdbpot(x, exponent):
    """TFLite's RoundingDivideByPOT: x / 2**exponent rounded to nearest, ties away from zero,
    elementwise (0 <= exponent <= 31, >> arithmetic):

        mask = 2**exponent - 1;  remainder = x & mask;  threshold = (mask >> 1) + (x < 0)
        (x >> exponent) + (remainder > threshold)
    """
    x = _int32_values("rdbpot", "x", x)
    exponent = _int32_values("rdbpot", "exponent", exponent, 0, 31)
    return _rdbpot(x, exponent).astype(np.int32)


def mbqm(x, multiplier, shift):
    """TFLite's MultiplyByQuantizedMultiplier: x * multiplier * 2**(shift - 31), rounded,
    elementwise (shift in [-31, 30], multiplier in [0, 2**31 - 1]):

        xs = saturate_int32(x << max(shift, 0))
        rdbpot(srdhm(xs, multiplier), max(-shift, 0))

    TFLite computes x * (1 << left) in int32, which overflows for large x; saturating gives
    the same result wherever TFLite's is defined."""
    x = _int32_values("mbqm", "x", x)
    multiplier = _int32_values("mbqm", "multiplier", multiplier, 0, INT32_MAX)
    shift = _int32_values("mbqm", "shift", shift, -31, 30)
    return _mbqm(x, multiplier, shift).astype(np.int32)


def _requantize(acc, multiplier, shift, zero_point, act_min, act_max):
    """int8 clamp(mbqm(acc, multiplier, shift) + zero_point, act_min, act_max): the output
    stage of every kernel below (acc int64 holding int32 values)."""
    y = _mbqm(acc, multiplier, shift) + zero_point
    return np.clip(y, act_min, act_max).astype(np.int8)
