"""The int8 numpy twins (backend/numpy_int8.py: TFLite's integer-only scheme) against the spec.

The fixed-point primitives against a scalar Python-int transcription of TFLite's code (and the
rounding it means, in exact fractions); hand-worked examples; every kernel against a slow
independent formula over hypothesis shapes, zero points, clamps and multipliers (saturation
included); the errors and out=. The C kernels are held to these twins elsewhere.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from minitorch_edge import backend
from minitorch_edge.backend import numpy_backend as nb
from minitorch_edge.backend import numpy_int8 as q8

MIN, MAX = -(2 ** 31), 2 ** 31 - 1
KERNELS = ("qconv2d", "qlinear", "qavg_pool2d", "qmax_pool2d", "qadd", "quantize", "dequantize",
           "requantize")


# ---- the spec, transcribed with Python ints (C's truncating division spelled out) ------------

def ref_srdhm(a, b):
    if a == b == MIN:
        return MAX
    ab = a * b
    v = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    return (abs(v) >> 31) * (1 if v >= 0 else -1)       # truncation toward zero


def ref_rdbpot(x, e):
    mask = (1 << e) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if (x & mask) > threshold else 0)


def ref_mbqm(x, m, shift):
    xs = min(max(x << max(shift, 0), MIN), MAX)
    return ref_rdbpot(ref_srdhm(xs, m), max(-shift, 0))


def ref_requantize(acc, m, shift, zp, lo, hi):
    """int8 array: clamp(mbqm(saturate(acc)) + zp), one scalar call per element; m and shift
    broadcast against acc."""
    acc, m, shift = np.broadcast_arrays(np.asarray(acc, np.int64), np.asarray(m), np.asarray(shift))
    out = [min(max(ref_mbqm(min(max(int(a), MIN), MAX), int(mm), int(s)) + zp, lo), hi)
           for a, mm, s in zip(acc.ravel(), m.ravel(), shift.ravel())]
    return np.array(out, np.int8).reshape(acc.shape)


def round_away(v):                                      # exact for |v| < 2**52
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


int32s = st.one_of(st.sampled_from([MIN, MIN + 1, -2, -1, 0, 1, MAX - 1, MAX]),
                   st.integers(MIN, MAX))
multipliers = st.one_of(st.sampled_from([0, 2 ** 30, MAX]), st.integers(2 ** 30, MAX))
zero_points = st.integers(-128, 127)


@st.composite
def act_ranges(draw):
    if draw(st.booleans()):
        return -128, 127
    lo, hi = sorted(draw(st.lists(st.integers(-128, 127), min_size=2, max_size=2)))
    return lo, hi


# ---- fixed-point primitives ------------------------------------------------------------------

@settings(max_examples=40)
@given(xs=st.lists(int32s, min_size=1, max_size=12), m=multipliers)
def test_primitives_match_the_scalar_spec_for_every_shift(xs, m):
    x = np.array(xs, np.int32)
    shifts = np.arange(-31, 31, dtype=np.int32)[:, None]          # every shift, as a column
    got = q8.mbqm(x, m, shifts)
    assert got.dtype == np.int32
    assert got.tolist() == [[ref_mbqm(v, m, int(s)) for v in xs] for s in shifts[:, 0]]
    assert q8.srdhm(x, np.int32(m)).tolist() == [ref_srdhm(v, m) for v in xs]
    assert q8.srdhm(x, x[::-1]).tolist() == [ref_srdhm(a, b) for a, b in zip(xs, xs[::-1])]
    for e in range(32):
        assert q8.rdbpot(x, e).tolist() == [ref_rdbpot(v, e) for v in xs]


@given(x=int32s, y=int32s, e=st.integers(0, 31))
def test_the_primitives_round_to_nearest(x, y, e):
    """rdbpot: x / 2**e, ties away from zero; srdhm: x y / 2**31, ties upwards (the negative
    nudge is 1 - 2**30, one short of -2**30, and the division truncates)."""
    exact = Fraction(x, 2 ** e)
    away = math.floor(abs(exact) + Fraction(1, 2)) * (1 if exact >= 0 else -1)
    assert q8.rdbpot(x, e) == away
    if not x == y == MIN:
        assert q8.srdhm(x, y) == math.floor(Fraction(x * y, 2 ** 31) + Fraction(1, 2))


def test_hand_worked_fixed_point_examples():
    # frexp(0.5) = (0.5, 0): m = 0.5 * 2**31 = 2**30, shift 0; 1.0 = 0.5 * 2**1: shift 1
    assert q8.quantize_multiplier(0.5) == (2 ** 30, 0)
    assert q8.quantize_multiplier(1.0) == (2 ** 30, 1)
    assert q8.quantize_multiplier(0.75) == (3 * 2 ** 29, 0)
    assert q8.quantize_multiplier(0.1) == (1717986918, -3)   # 0.8 * 2**31 = 1717986918.4
    assert q8.quantize_multiplier(1 - 2 ** -40) == (2 ** 30, 1)  # q * 2**31 rounds to 2**31
    assert q8.quantize_multiplier(0) == (0, 0)
    assert q8.quantize_multiplier(2.0 ** -40) == (0, 0)      # exponent -39 < -31
    assert q8.quantize_multiplier(2.0 ** 40) == (MAX, 30)    # exponent 41 > 30
    assert q8.srdhm(MIN, MIN) == MAX                         # the saturating case
    assert q8.srdhm(3, 2 ** 30) == 2 and q8.srdhm(-3, 2 ** 30) == -1   # +-1.5: ties upwards
    assert q8.rdbpot(5, 1) == 3 and q8.rdbpot(-5, 1) == -3   # +-2.5: ties away from zero
    assert q8.rdbpot(6, 2) == 2 and q8.rdbpot(-6, 2) == -2   # +-1.5
    assert q8.rdbpot(-5, 2) == -1                            # -1.25
    assert q8.mbqm(100, 2 ** 30, 0) == 50                    # 100 * 0.5
    assert q8.mbqm(100, 2 ** 30, 1) == 100                   # x << 1, then * 0.5
    assert q8.mbqm(100, 2 ** 30, -2) == 13                   # 50 / 4 = 12.5 -> 13
    assert q8.mbqm(2 ** 20, 2 ** 30, 30) == 2 ** 30      # 2**50 saturates: MAX * 0.5 -> 2**30
    assert q8.srdhm(MAX, MAX) == MAX - 1                     # (2**31 - 1)**2 / 2**31
    assert q8.round_half_away(np.array([0.5, -0.5, 2.5, -2.5, 1.49])).tolist() == \
        [1, -1, 3, -3, 1]
    # add: twice_max = 0.2; 0.1 / 0.2 = 0.5 -> (2**30, 0); 0.05 / 0.2 = 0.25 -> (2**30, -1);
    # 0.2 / (2**20 * 0.2) = 2**-20 -> (2**30, -19)
    assert q8.add_multipliers(0.1, 0.05, 0.2) == (2 ** 30, 0, 2 ** 30, -1, 2 ** 30, -19)


@given(real=st.floats(1e-9, 1e9))
def test_quantize_multiplier_represents_the_real(real):
    m, shift = q8.quantize_multiplier(real)
    assert 2 ** 30 <= m < 2 ** 31 and -31 <= shift <= 30
    assert abs(m * 2.0 ** (shift - 31) - real) <= real * 2.0 ** -31


# ---- quantize, dequantize, requantize --------------------------------------------------------

def test_quantize_ties_nan_and_saturation():
    x = np.array([1.25, -1.25, 0.25, -0.25, 0.2, np.nan, 1e9, -np.inf, 63.0], np.float32)
    # / 0.5: 2.5 -> 3, -2.5 -> -3, 0.5 -> 1, -0.5 -> -1, 0.4 -> 0; NaN -> zp; saturate
    assert q8.quantize(x, 0.5, 0).tolist() == [3, -3, 1, -1, 0, 0, 127, -128, 126]
    assert q8.quantize(x, 0.5, -5).tolist() == [-2, -8, -4, -6, -5, -5, 127, -128, 121]
    x = np.float32(0.3) * np.arange(-5, 6, dtype=np.float32)    # the division is float32's
    assert np.array_equal(q8.quantize(x, 0.3, 1), np.clip(round_away(x / np.float32(0.3)) + 1,
                                                          -128, 127).astype(np.int8))
    q = np.arange(-128, 128).astype(np.int8)
    assert np.array_equal(q8.dequantize(q, 0.1, 3),
                          (q.astype(np.float32) - 3) * np.float32(0.1))


@given(seed=st.integers(0, 2 ** 16), scale=st.floats(1e-3, 10), zp=zero_points)
def test_quantize_round_trip_is_within_half_a_step(seed, scale, zp):
    lo, hi = (-128 - zp) * scale, (127 - zp) * scale
    x = np.random.default_rng(seed).uniform(lo, hi, 50).astype(np.float32)
    q = q8.quantize(x, scale, zp)
    assert q.dtype == np.int8
    err = np.abs(q8.dequantize(q, scale, zp).astype(np.float64) - x)
    assert err.max() <= scale / 2 * (1 + 1e-5) + 1e-6 * np.abs(x).max()


@given(seed=st.integers(0, 2 ** 16), izp=zero_points, ozp=zero_points, m=multipliers,
       shift=st.integers(-31, 30))
def test_requantize_matches_the_formula(seed, izp, ozp, m, shift):
    q = np.random.default_rng(seed).integers(-128, 128, (3, 7)).astype(np.int8)
    want = ref_requantize(q.astype(np.int64) - izp, m, shift, ozp, -128, 127)
    assert np.array_equal(q8.requantize(q, izp, m, shift, ozp), want)


# ---- qconv2d, qlinear ------------------------------------------------------------------------

def ref_qconv2d(x, xzp, w, bias, m, s, yzp, lo, hi, stride, padding, dilation, groups):
    """The literal acc formula: x padded with its zero point, one loop per tap."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw), (top, bottom, left, right) = stride, dilation, padding
    xpad = np.full((n, c, h + top + bottom, wd + left + right), xzp, np.int64)
    xpad[:, :, top:top + h, left:left + wd] = x
    ho = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    acc = np.zeros((n, o, ho, wo), np.int64) + bias[:, None, None]
    for oc in range(o):
        g = oc // (o // groups)
        for ci in range(cg):
            for i in range(kh):
                for j in range(kw):
                    tap = xpad[:, g * cg + ci, i * dh:i * dh + (ho - 1) * sh + 1:sh,
                               j * dw:j * dw + (wo - 1) * sw + 1:sw]
                    acc[:, oc] += (tap - xzp) * int(w[oc, ci, i, j])
    return ref_requantize(acc, m[:, None, None], s[:, None, None], yzp, lo, hi)


@st.composite
def channel_params(draw, o):
    """bias, multiplier, shift for o channels: realistic or saturating."""
    big = draw(st.booleans())
    bias = draw(st.lists(st.integers(MIN, MAX) if big else st.integers(-3000, 3000),
                         min_size=o, max_size=o))
    m = draw(st.lists(multipliers, min_size=o, max_size=o))
    shift = draw(st.lists(st.one_of(st.integers(-31, 30), st.integers(-14, -6)),
                          min_size=o, max_size=o))
    return np.array(bias, np.int32), np.array(m, np.int32), np.array(shift, np.int32)


def int8_data(rng, shape, extreme, weights=False):
    lo = -127 if weights else -128
    if extreme:                     # only the range's ends: the largest accumulators
        return rng.choice(np.array([lo, 127], np.int8), shape)
    return rng.integers(lo, 128, shape).astype(np.int8)


@settings(max_examples=40)
@given(data=st.data(), n=st.integers(1, 2), kind=st.sampled_from(["dense", "grouped", "depthwise"]),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3)), stride=st.tuples(st.integers(1, 2),
       st.integers(1, 2)), dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       padding=st.tuples(*[st.integers(0, 2)] * 4), hw=st.tuples(st.integers(1, 7),
       st.integers(1, 7)), xzp=zero_points, yzp=zero_points, act=act_ranges(),
       extreme=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_qconv2d_matches_the_acc_formula(data, n, kind, k, stride, dilation, padding, hw, xzp,
                                         yzp, act, extreme, seed):
    if kind == "depthwise":
        groups = c = o = data.draw(st.integers(1, 4))
    else:
        groups = 1 if kind == "dense" else data.draw(st.integers(2, 3))
        c, o = groups * data.draw(st.integers(1, 3)), groups * data.draw(st.integers(1, 3))
    assume(all(nb.conv_output_size(hw[d], k[d], stride[d], padding[2 * d], padding[2 * d + 1],
                                   dilation[d]) >= 1 for d in (0, 1)))
    rng = np.random.default_rng(seed)
    x = int8_data(rng, (n, c) + hw, extreme)
    w = int8_data(rng, (o, c // groups) + k, extreme, weights=True)
    bias, m, s = data.draw(channel_params(o))
    args = (xzp, w, bias, m, s, yzp, *act, stride, padding, dilation, groups)
    got = q8.qconv2d(x, *args)
    assert got.dtype == np.int8 and got.flags.c_contiguous
    assert np.array_equal(got, ref_qconv2d(x, *args))


def test_hand_worked_conv_padding_contributes_zero():
    # x_zp = 1: x - x_zp = [[0, 1], [2, 3]]; a 2x2 kernel of ones, padding 1 at top and left
    # (padded with the code 1 = real 0). acc = bias 10 + the window sums of x - x_zp:
    #   [[0, 0 + 1], [0 + 2, 0 + 1 + 2 + 3]] + 10 = [[10, 11], [12, 16]]
    # * 0.5 (m = 2**30, shift 0): [[5, 5.5 -> 6], [6, 8]], + y_zp -3: [[2, 3], [3, 5]].
    # Had padding been the code 0 instead, each padded tap would add (0 - 1) * 1 = -1.
    x = np.array([[[[1, 2], [3, 4]]]], np.int8)
    w = np.ones((1, 1, 2, 2), np.int8)
    one = np.array([2 ** 30], np.int32), np.array([0], np.int32)
    y = q8.qconv2d(x, 1, w, np.array([10], np.int32), *one, -3, -128, 127, (1, 1),
                   (1, 0, 1, 0), (1, 1), 1)
    assert y.tolist() == [[[[2, 3], [3, 5]]]]
    # no bias: [[0, 1], [2, 6]] * 0.5 = [[0, 0.5 -> 1], [1, 3]]; - 3, clamped to [-2, -1]
    clamped = q8.qconv2d(x, 1, w, None, *one, -3, -2, -1, (1, 1), (1, 0, 1, 0), (1, 1), 1)
    assert clamped.tolist() == [[[[-2, -2], [-2, -1]]]]


def test_the_longest_reduction_is_accepted_and_one_more_refused():
    params = np.zeros(1, np.int32), np.full(1, 2 ** 30, np.int32), np.zeros(1, np.int32)
    x = np.full((1, 65536, 1, 1), 127, np.int8)
    w = np.full((1, 65536, 1, 1), -127, np.int8)          # acc = 65536 * 255 * -127
    y = q8.qconv2d(x, -128, w, *params, 0, -128, 127, (1, 1), (0,) * 4, (1, 1), 1)
    assert y.item() == -128
    with pytest.raises(ValueError, match="^qconv2d: the reduction length K = 65537"):
        q8.qconv2d(np.zeros((1, 65537, 1, 1), np.int8), 0, np.zeros((1, 65537, 1, 1), np.int8),
                   *params, 0, -128, 127, (1, 1), (0,) * 4, (1, 1), 1)


@given(data=st.data(), rows=st.integers(0, 4), k=st.integers(1, 40), o=st.integers(1, 6),
       xzp=zero_points, yzp=zero_points, act=act_ranges(), extreme=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_qlinear_matches_the_acc_formula(data, rows, k, o, xzp, yzp, act, extreme, seed):
    rng = np.random.default_rng(seed)
    x, w = int8_data(rng, (rows, k), extreme), int8_data(rng, (o, k), extreme, weights=True)
    bias, m, s = data.draw(channel_params(o))
    acc = (x.astype(np.int64) - xzp) @ w.astype(np.int64).T + bias
    got = q8.qlinear(x, xzp, w, bias, m, s, yzp, *act)
    assert np.array_equal(got, ref_requantize(acc, m, s, yzp, *act))
    acc = (x.astype(np.int64) - xzp) @ w.astype(np.int64).T
    assert np.array_equal(q8.qlinear(x, xzp, w, None, m, s, yzp, *act),
                          ref_requantize(acc, m, s, yzp, *act))


# ---- pooling, add ----------------------------------------------------------------------------

@st.composite
def pool_windows(draw):
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    p = (draw(st.integers(0, k[0] // 2)), draw(st.integers(0, k[1] // 2)))
    return k, s, p


@given(n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 9), w=st.integers(1, 9),
       win=pool_windows(), ceil=st.booleans(), include=st.booleans(), act=act_ranges(),
       seed=st.integers(0, 2 ** 16))
def test_qavg_pool2d_is_the_rounded_float_average(n, c, h, w, win, ceil, include, act, seed):
    k, s, p = win
    assume(nb.pool_output_size(h, k[0], s[0], p[0], 1, ceil) >= 1
           and nb.pool_output_size(w, k[1], s[1], p[1], 1, ceil) >= 1)
    x = np.random.default_rng(seed).integers(-128, 128, (n, c, h, w)).astype(np.int8)
    avg = nb.avg_pool2d(x.astype(np.float64), k, s, p, ceil, include, None)
    want = np.clip(round_away(avg), *act).astype(np.int8)
    assert np.array_equal(q8.qavg_pool2d(x, k, s, p, ceil, include, *act), want)


def test_qavg_pool2d_ties_and_global_pooling():
    x = np.array([[[[3, 2, -1, -2, 1, 4]]]], np.int8)
    pool = q8.qavg_pool2d
    # windows of 2: 5/2 = 2.5 -> 3, -3/2 = -1.5 -> -2, 5/2 -> 3; global: 7/6 -> 1
    assert pool(x, (1, 2), (1, 2), (0, 0), False, False, -128, 127).tolist() == [[[[3, -2, 3]]]]
    assert pool(x, (1, 6), (1, 1), (0, 0), False, False, -128, 127).item() == 1
    # padding 1 on the left and right: windows [pad, 3], [2, -1], [-2, 1], [4, pad]: the first
    # and last count 1 element (3, 4) or 2 (3/2 -> 2, 4/2 = 2); act_max 2 clamps
    assert pool(x, (1, 2), (1, 2), (0, 1), False, False, -128, 127).tolist() == \
        [[[[3, 1, -1, 4]]]]                                  # 1/2 -> 1, -1/2 -> -1
    assert pool(x, (1, 2), (1, 2), (0, 1), False, True, -128, 127).tolist() == [[[[2, 1, -1, 2]]]]
    assert pool(x, (1, 2), (1, 2), (0, 1), False, False, -128, 2).tolist() == [[[[2, 1, -1, 2]]]]


@given(n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 9), w=st.integers(1, 9),
       win=pool_windows(), d=st.tuples(st.integers(1, 2), st.integers(1, 2)), ceil=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_qmax_pool2d_matches_the_float_kernel(n, c, h, w, win, d, ceil, seed):
    k, s, p = win
    assume(nb.pool_output_size(h, k[0], s[0], p[0], d[0], ceil) >= 1
           and nb.pool_output_size(w, k[1], s[1], p[1], d[1], ceil) >= 1)
    x = np.random.default_rng(seed).integers(-128, 128, (n, c, h, w)).astype(np.int8)
    ref = nb.max_pool2d_inference(x.astype(np.float32), k, s, p, d, ceil)
    want = np.where(np.isinf(ref), -128, ref).astype(np.int8)   # a window of only padding
    assert np.array_equal(q8.qmax_pool2d(x, k, s, p, d, ceil), want)


@given(seed=st.integers(0, 2 ** 16), scales=st.tuples(*[st.floats(1e-3, 1)] * 3),
       zps=st.tuples(zero_points, zero_points, zero_points), act=act_ranges(),
       wild=st.booleans())
def test_qadd_matches_the_formula_and_the_float_sum(seed, scales, zps, act, wild):
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-128, 128, (2, 9)).astype(np.int8) for _ in range(2))
    (azp, bzp, yzp), (sa, sb, sy) = zps, scales
    mult = q8.add_multipliers(sa, sb, sy)
    if wild:                                        # saturating multipliers, any shifts
        mult = tuple(int(v) for v in rng.choice([0, 2 ** 30, MAX], 3)) + tuple(
            int(v) for v in rng.integers(-31, 31, 3))
        mult = (mult[0], mult[3], mult[1], mult[4], mult[2], mult[5])
    got = q8.qadd(a, azp, *mult[:2], b, bzp, *mult[2:4], yzp, *mult[4:], *act)
    ra = [ref_mbqm((int(v) - azp) << 20, *mult[:2]) for v in a.ravel()]
    rb = [ref_mbqm((int(v) - bzp) << 20, *mult[2:4]) for v in b.ravel()]
    want = ref_requantize(np.add(ra, rb), mult[4], mult[5], yzp, *act).reshape(a.shape)
    assert np.array_equal(got, want)
    if not wild:                                    # within one step of the real sum
        real = ((a.astype(np.float64) - azp) * sa + (b.astype(np.float64) - bzp) * sb) / sy
        assert np.all(np.abs(got - np.clip(real + yzp, *act)) <= 1.0)


# ---- errors and out= -------------------------------------------------------------------------

X4 = np.arange(-16, 16, dtype=np.int8).reshape(1, 2, 4, 4)
F4 = X4.astype(np.float32)
CH = {"bias": np.zeros(3, np.int32), "multiplier": np.full(3, 2 ** 30, np.int32),
      "shift": np.zeros(3, np.int32)}
ACT = {"act_min": -128, "act_max": 127}
VALID = {
    "qconv2d": {"x": X4, "x_zero_point": 0, "w": np.ones((3, 2, 2, 2), np.int8), **CH,
                "y_zero_point": 0, **ACT, "stride": (1, 1), "padding": (0, 0, 0, 0),
                "dilation": (1, 1), "groups": 1},
    "qlinear": {"x": X4[0, 0], "x_zero_point": 0, "w": np.ones((3, 4), np.int8), **CH,
                "y_zero_point": 0, **ACT},
    "qavg_pool2d": {"x": X4, "kernel": (2, 2), "stride": (2, 2), "padding": (0, 0),
                    "ceil_mode": False, "count_include_pad": False, **ACT},
    "qmax_pool2d": {"x": X4, "kernel": (2, 2), "stride": (2, 2), "padding": (1, 1),
                    "dilation": (1, 1), "ceil_mode": False},
    "qadd": {"a": X4, "a_zero_point": 0, "a_multiplier": 2 ** 30, "a_shift": 0, "b": X4,
             "b_zero_point": 0, "b_multiplier": 2 ** 30, "b_shift": 0, "y_zero_point": 0,
             "y_multiplier": 2 ** 30, "y_shift": -19, **ACT},
    "quantize": {"x": F4, "scale": 0.5, "zero_point": 0},
    "dequantize": {"q": X4, "scale": 0.5, "zero_point": 0},
    "requantize": {"q": X4, "in_zero_point": 0, "multiplier": 2 ** 30, "shift": 0,
                   "out_zero_point": 0},
}


def call(name, **change):
    """Kernel `name` on VALID arguments with `change` applied (out, or a bad argument)."""
    return getattr(q8, name)(**{**VALID[name], **change})


def i32(n, v):
    return np.full(n, v, np.int32)


BAD = [  # (kernel, bad arguments, exception)
    ("qconv2d", {"x": F4}, ValueError), ("qconv2d", {"x": X4.tolist()}, TypeError),
    ("qconv2d", {"w": np.full((3, 2, 2, 2), -128, np.int8)}, ValueError),
    ("qconv2d", {"w": np.ones((3, 1, 2, 2), np.int8)}, ValueError),     # channels mismatch
    ("qconv2d", {"multiplier": i32(2, 1)}, ValueError),
    ("qconv2d", {"multiplier": i32(3, -1)}, ValueError),
    ("qconv2d", {"multiplier": np.ones(3, np.int64)}, ValueError),
    ("qconv2d", {"shift": i32(3, 31)}, ValueError), ("qconv2d", {"bias": i32(4, 0)}, ValueError),
    ("qconv2d", {"x_zero_point": 128}, ValueError),
    ("qconv2d", {"y_zero_point": 1.5}, TypeError),
    ("qconv2d", {"act_min": 5, "act_max": 4}, ValueError),
    ("qconv2d", {"groups": 3}, ValueError), ("qconv2d", {"padding": (0, 0)}, TypeError),
    ("qlinear", {"x": F4[0, 0]}, ValueError),
    ("qlinear", {"w": np.ones((3, 5), np.int8)}, ValueError),
    ("qlinear", {"shift": i32(4, 0)}, ValueError),
    ("qavg_pool2d", {"x": F4}, ValueError), ("qavg_pool2d", {"act_min": -129}, ValueError),
    ("qavg_pool2d", {"kernel": (5, 5)}, ValueError),                    # no output
    ("qmax_pool2d", {"x": X4.astype(np.int32)}, ValueError),
    ("qadd", {"b": X4[:, :1]}, ValueError), ("qadd", {"a_multiplier": 2 ** 31}, ValueError),
    ("qadd", {"y_shift": -32}, ValueError), ("qadd", {"left_shift": 24}, ValueError),
    ("quantize", {"x": X4}, ValueError), ("quantize", {"scale": 0.0}, ValueError),
    ("quantize", {"scale": float("nan")}, ValueError),
    ("quantize", {"zero_point": -129}, ValueError),
    ("dequantize", {"q": X4.astype(np.uint8)}, ValueError),
    ("requantize", {"shift": 31}, ValueError),
    ("requantize", {"multiplier": np.int32(-1)}, ValueError),
]


@pytest.mark.parametrize(("name", "bad", "exc"), BAD)
def test_bad_arguments_raise_naming_the_kernel_and_leave_out_alone(name, bad, exc):
    good = call(name)
    out = np.full(good.shape, 7, good.dtype)
    with pytest.raises(exc, match=f"^{name}: "):
        call(name, **bad, out=out)
    assert np.all(out == 7)


@pytest.mark.parametrize(("fn", "args", "exc", "match"), [
    (q8.quantize_multiplier, (-1.0,), ValueError, "^quantize_multiplier: .*-1.0"),
    (q8.quantize_multiplier, (float("inf"),), ValueError, "^quantize_multiplier: .*inf"),
    (q8.quantize_multiplier, ("0.5",), TypeError, "^quantize_multiplier: "),
    (q8.add_multipliers, (0.1, 0.0, 0.2), ValueError, "^add_multipliers: b_scale"),
    (q8.rdbpot, (1, 32), ValueError, "^rdbpot: exponent"),
    (q8.mbqm, (1, 2 ** 30, 31), ValueError, "^mbqm: shift"),
    (q8.srdhm, (2 ** 31, 1), ValueError, "^srdhm: a"),
    (q8.mbqm, (1.5, 2 ** 30, 0), TypeError, "^mbqm: x"),
])
def test_primitive_errors(fn, args, exc, match):
    with pytest.raises(exc, match=match):
        fn(*args)


@pytest.mark.parametrize("name", KERNELS)
def test_out_is_written_and_returned_and_a_wrong_one_refused(name):
    want = call(name)
    out = np.empty_like(want)
    assert call(name, out=out) is out and np.array_equal(out, want)
    for bad in (np.empty(want.shape + (1,), want.dtype),
                np.empty(want.shape, np.int32 if want.dtype == np.int8 else np.float64)):
        with pytest.raises(ValueError, match=f"^{name}: out"):
            call(name, out=bad)


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_is_a_backend_row_with_this_twin(name):
    assert getattr(nb, name) is getattr(q8, name)
    assert backend.KERNELS[name].numpy is getattr(q8, name)
    assert backend.KERNELS[name].native == "native_int8"
