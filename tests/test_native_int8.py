"""Tests of the native int8 kernels: ``backend.native_int8`` (over ``_C.q*``, native/src/q*.c)
against the numpy twins of ``numpy_int8`` bit for bit (np.array_equal), on every ISA this CPU
runs (each ISA's qgemm / qdepthwise microkernels), over hypothesis shapes and parameters:
tile edges, groups, strides, dilation, asymmetric padding, depthwise 3x3, zero points, every
shift, saturating biases and clamps; plus out=, prepared weights and the error messages.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_harness import on_every_isa, require_native

_C = require_native("qconv2d", "int8")

from minitorch_edge.backend import native_int8 as nat
from minitorch_edge.backend import numpy_int8 as ref

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def i8(rng, shape, lo=-128, hi=127):
    return rng.integers(lo, hi + 1, shape, dtype=np.int8)


def channel_params(rng, o, big_bias=False):
    m = rng.integers(0, 2 ** 31, o, dtype=np.int64).astype(np.int32)
    real = rng.uniform(1e-5, 0.05, o)
    for i in range(o):                      # mostly realistic multipliers, some arbitrary
        if rng.random() < 0.7:
            m[i], _ = ref.quantize_multiplier(real[i])
    shift = np.where(rng.random(o) < 0.7, rng.integers(-14, 0, o), rng.integers(-31, 31, o))
    hi = 2 ** 31 - 1 if big_bias else 20000
    bias = rng.integers(-hi - (1 if big_bias else 0), hi + 1, o, dtype=np.int64).astype(np.int32)
    return bias, m.astype(np.int32), shift.astype(np.int32)


def same_on_every_isa(native, twin):
    expect = twin()
    on_every_isa(_C, lambda isa: np.testing.assert_array_equal(native(), expect, err_msg=isa))


conv_case = st.fixed_dictionaries({
    "n": st.integers(1, 2), "cg": st.integers(1, 6), "og": st.integers(1, 19),
    "groups": st.sampled_from([1, 1, 2, 3]), "h": st.integers(1, 9), "w": st.integers(1, 40),
    "k": st.tuples(st.integers(1, 3), st.integers(1, 3)),
    "stride": st.tuples(st.integers(1, 2), st.integers(1, 3)),
    "padding": st.tuples(*[st.integers(0, 2)] * 4),
    "dilation": st.tuples(st.integers(1, 2), st.integers(1, 2)),
    "seed": st.integers(0, 2 ** 16), "bias": st.booleans(), "big": st.booleans(),
})


def fits(h, w, k, stride, padding, dilation):
    ho = (h + padding[0] + padding[1] - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
    wo = (w + padding[2] + padding[3] - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
    return ho >= 1 and wo >= 1


@SETTINGS
@given(conv_case)
def test_qconv2d_equals_twin(c):
    if not fits(c["h"], c["w"], c["k"], c["stride"], c["padding"], c["dilation"]):
        return
    rng = np.random.default_rng(c["seed"])
    g = c["groups"]
    x = i8(rng, (c["n"], c["cg"] * g, c["h"], c["w"]))
    w = i8(rng, (c["og"] * g, c["cg"], *c["k"]), -127)
    bias, m, shift = channel_params(rng, c["og"] * g, c["big"])
    lo, hi = sorted(rng.integers(-128, 128, 2)) if rng.random() < 0.3 else (-128, 127)
    args = (x, int(rng.integers(-128, 128)), w, bias if c["bias"] else None, m, shift,
            int(rng.integers(-128, 128)), int(lo), int(hi), c["stride"], c["padding"],
            c["dilation"], g)
    same_on_every_isa(lambda: nat.qconv2d(*args), lambda: ref.qconv2d(*args))


@SETTINGS
@given(st.integers(1, 2), st.integers(64, 400), st.integers(1, 70), st.integers(1, 8),
       st.integers(1, 45), st.sampled_from([1, 3]), st.booleans(), st.integers(0, 2 ** 16))
def test_long_reductions_equal_twin(n, k, o, h, w, ksize, fast, seed):
    """K >= 64: where the CPU has AMX-INT8, the AMX kernel's 32 x 32 tiles (k padded to a
    multiple of 64, weights row-major), output channels and pixels around its tile edges."""
    rng = np.random.default_rng(seed)
    c = k if ksize == 1 else max(8, k // 9)
    x = i8(rng, (n, c, h, w))
    wt = i8(rng, (o, c, ksize, ksize), -127)
    bias, m, shift = channel_params(rng, o)
    if fast:                                # the kernels' fast channels: shifts -1 .. -23
        shift = rng.integers(-14, -1, o).astype(np.int32)
    p = ksize // 2
    args = (x, int(rng.integers(-128, 128)), wt, bias, m, shift, int(rng.integers(-128, 128)),
            -128, 127, (1, 1), (p, p, p, p), (1, 1), 1)
    same_on_every_isa(lambda: nat.qconv2d(*args), lambda: ref.qconv2d(*args))
    lin = (i8(rng, (n * h, k)), args[1], i8(rng, (o, k), -127), bias, m, shift,
           args[6], -128, 127)
    same_on_every_isa(lambda: nat.qlinear(*lin), lambda: ref.qlinear(*lin))


def test_qgemm_path_names_the_kernel_the_cpu_runs():
    feats = set(_C.cpu_features())
    long, short = _C.qgemm_path(576), _C.qgemm_path(16)
    if _C.active_isa() == "avx512vnni":
        assert long == ("amx_int8 tdpbsud" if "amx_int8" in feats else "avx512vnni vpdpbusd")
        assert short == "avx512vnni vpdpbusd"          # short reductions stay on VPDPBUSD
    assert _C.qgemm_path() == _C.qgemm_path(1 << 20)
    assert isinstance(short, str) and short


def assert_same_digest_with_masked(code, features):
    """`code` (prints a digest of kernel outputs) gives the same line in a fresh process with
    the CPU features `features` masked off (MTE_CPU_DISABLE) as with none."""
    import os
    import subprocess
    import sys
    digests = set()
    for mask in ("", features):
        env = dict(os.environ, MTE_CPU_DISABLE=mask)
        digests.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   text=True, timeout=120, check=True).stdout.strip())
    assert len(digests) == 1


def test_int8_with_amx_masked_off_gives_the_same_bytes():
    """MTE_CPU_DISABLE=amx_int8 (what a CPU without AMX runs): the same bytes as the default
    kernels, from the same inputs in a fresh process, on a long reduction."""
    code = ("import numpy as np, hashlib; from minitorch_edge.backend import native_int8 as q\n"
            "r = np.random.default_rng(2)\n"
            "x = r.integers(-128, 128, (1, 96, 9, 13), dtype=np.int8)\n"
            "w = r.integers(-127, 128, (45, 96, 3, 3), dtype=np.int8)\n"
            "b = r.integers(-9999, 9999, 45).astype(np.int32)\n"
            "m = np.full(45, 1 << 30, np.int32); s = np.full(45, -9, np.int32)\n"
            "y = q.qconv2d(x, 3, w, b, m, s, -5, -128, 127, (1, 1), (1, 1, 1, 1), (1, 1), 1)\n"
            "print(hashlib.sha256(y.tobytes()).hexdigest())\n")
    assert_same_digest_with_masked(code, "amx_int8")


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 40), st.integers(1, 34),
       st.booleans(), st.integers(0, 2 ** 16))
def test_narrow_depthwise3x3_equals_twin(n, c, h, wd, fast, seed):
    """Stride 1, padding 1, rows up to 34 (the copy-free route takes W <= 20: MobileNetV2's
    7 and 14; the copy kernel the wider ones): the copy-free
    route of the VNNI kernel (windows permuted out of two loads, chunks of rows, the rows
    above and below the plane filled with x_zp), every chunk count and last-chunk height;
    fast: multipliers from real ratios (the one-rounding requantization), else any."""
    rng = np.random.default_rng(seed)
    x, w = i8(rng, (n, c, h, wd)), i8(rng, (c, 1, 3, 3), -127)
    bias, m, shift = channel_params(rng, c, big_bias=not fast and rng.random() < 0.3)
    if fast:
        for o in range(c):
            m[o], shift[o] = ref.quantize_multiplier(float(rng.uniform(1e-4, 0.05)))
    args = (x, int(rng.integers(-128, 128)), w, bias, m, shift, int(rng.integers(-128, 128)),
            -128, 127, (1, 1), (1, 1, 1, 1), (1, 1), c)
    same_on_every_isa(lambda: nat.qconv2d(*args), lambda: ref.qconv2d(*args))


def test_depthwise_without_vbmi_gives_the_same_bytes():
    """MTE_CPU_DISABLE=avx512_vbmi (a Cascade Lake: VNNI without byte permutes) runs the
    copy kernel on narrow planes: the same bytes as the permute route."""
    code = ("import numpy as np, hashlib; from minitorch_edge.backend import native_int8 as q\n"
            "r = np.random.default_rng(5)\n"
            "out = []\n"
            "for h, wd in ((7, 7), (14, 14), (28, 20), (3, 19), (40, 1)):\n"
            "    x = r.integers(-128, 128, (2, 6, h, wd), dtype=np.int8)\n"
            "    w = r.integers(-127, 128, (6, 1, 3, 3), dtype=np.int8)\n"
            "    b = r.integers(-9999, 9999, 6).astype(np.int32)\n"
            "    m = np.full(6, 1 << 30, np.int32); s = np.full(6, -9, np.int32)\n"
            "    out.append(q.qconv2d(x, 3, w, b, m, s, -5, -128, 127, (1, 1), (1, 1, 1, 1),"
            " (1, 1), 6).tobytes())\n"
            "print(hashlib.sha256(b''.join(out)).hexdigest())\n")
    assert_same_digest_with_masked(code, "avx512_vbmi")


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 20), st.integers(1, 70), st.integers(1, 2),
       st.integers(0, 1), st.integers(0, 2 ** 16))
def test_depthwise3x3_equals_twin(c, h, wd, stride, pad, seed):
    if h + 2 * pad < 3 or wd + 2 * pad < 3:
        return
    rng = np.random.default_rng(seed)
    x, w = i8(rng, (1, c, h, wd)), i8(rng, (c, 1, 3, 3), -127)
    bias, m, shift = channel_params(rng, c)
    args = (x, int(rng.integers(-128, 128)), w, bias, m, shift, 7, -128, 127, (stride, stride),
            (pad,) * 4, (1, 1), c)
    same_on_every_isa(lambda: nat.qconv2d(*args), lambda: ref.qconv2d(*args))


@SETTINGS
@given(st.integers(1, 2), st.integers(1, 70), st.integers(1, 40), st.integers(1, 150),
       st.tuples(st.integers(1, 3), st.integers(1, 2)), st.tuples(*[st.integers(0, 2)] * 4),
       st.integers(0, 2 ** 16))
def test_depthwise3x3_every_parameter_equals_twin(n, c, h, wd, stride, pad, seed):
    """The qdepthwise kernels (the VNNI one on bytes x ^ 0x80, its compensation folded into
    comp; the others on int16) over row phases (stride_h != stride_w), asymmetric padding,
    rows wider than a 64-byte vector, every zero point, non-fast channels (left shifts,
    saturating biases) and clamps."""
    if h + pad[0] + pad[1] < 3 or wd + pad[2] + pad[3] < 3:
        return
    rng = np.random.default_rng(seed)
    x, w = i8(rng, (n, c, h, wd)), i8(rng, (c, 1, 3, 3), -127)
    if rng.random() < 0.2:  # the largest |x - x_zp| * w sums
        x[:] = 127
        w = i8(rng, (c, 1, 3, 3), 120)
    bias, m, shift = channel_params(rng, c, big_bias=rng.random() < 0.3)
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2)) if rng.random() < 0.5 \
        else (-128, 127)
    args = (x, int(rng.integers(-128, 128)), w, bias if rng.random() < 0.8 else None, m,
            shift, int(rng.integers(-128, 128)), lo, hi, stride, pad, (1, 1), c)
    same_on_every_isa(lambda: nat.qconv2d(*args), lambda: ref.qconv2d(*args))


@SETTINGS
@given(st.integers(0, 31), st.integers(0, 2), st.integers(1, 20), st.integers(1, 70),
       st.sampled_from(["pointwise", "3x3", "linear"]), st.booleans(), st.integers(0, 2 ** 16))
def test_every_column_tail_equals_twin(tail, tiles, o, k, route, realistic, seed):
    """N = 32 * tiles + tail GEMM columns (the 8 x 16 tile takes tails of at most 16) through
    the pointwise conv, a flat 3x3 conv (N = Ho * (Wo + 2)) and qlinear (a transposed
    store); realistic: every multiplier from a real ratio (the all-fast stores)"""
    n = max(32 * tiles + tail, 1)
    rng = np.random.default_rng(seed)
    bias, m, shift = channel_params(rng, o)
    if realistic:
        for i in range(o):
            m[i], shift[i] = ref.quantize_multiplier(float(rng.uniform(1e-4, 0.05)))
        bias = rng.integers(-2000, 2000, o, dtype=np.int32)
    zps = (int(rng.integers(-128, 128)), int(rng.integers(-128, 128)))
    if route == "linear":
        x, w = i8(rng, (n, k)), i8(rng, (o, k), -127)
        args = (x, zps[0], w, bias, m, shift, zps[1], -128, 127)
        same_on_every_isa(lambda: nat.qlinear(*args), lambda: ref.qlinear(*args))
        return
    kk, wd = (1, n) if route == "pointwise" else (3, max(n - 2, 1))
    x, w = i8(rng, (1, k, 1, wd)), i8(rng, (o, k, kk, kk), -127)
    pad = (kk // 2,) * 4
    args = (x, zps[0], w, bias, m, shift, zps[1], -128, 127, (1, 1), pad, (1, 1), 1)
    same_on_every_isa(lambda: nat.qconv2d(*args), lambda: ref.qconv2d(*args))


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 300), st.integers(1, 40), st.integers(0, 2 ** 16))
def test_qlinear_equals_twin(rows, k, mo, seed):
    rng = np.random.default_rng(seed)
    x, w = i8(rng, (rows, k)), i8(rng, (mo, k), -127)
    bias, m, shift = channel_params(rng, mo, big_bias=seed % 3 == 0)
    args = (x, int(rng.integers(-128, 128)), w, bias, m, shift, int(rng.integers(-128, 128)),
            -128, 127)
    same_on_every_isa(lambda: nat.qlinear(*args), lambda: ref.qlinear(*args))


@SETTINGS
@given(st.tuples(st.integers(1, 4), st.integers(1, 4)), st.tuples(st.integers(1, 3),
       st.integers(1, 3)), st.integers(0, 2), st.booleans(), st.booleans(),
       st.integers(0, 2 ** 16))
def test_pools_equal_twin(kernel, stride, pad, ceil, incl, seed):
    padding = (min(pad, kernel[0] // 2), min(pad, kernel[1] // 2))
    rng = np.random.default_rng(seed)
    x = i8(rng, (2, 3, int(rng.integers(kernel[0], 14)), int(rng.integers(kernel[1], 14))))
    lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
    same_on_every_isa(lambda: nat.qavg_pool2d(x, kernel, stride, padding, ceil, incl, lo, hi),
                      lambda: ref.qavg_pool2d(x, kernel, stride, padding, ceil, incl, lo, hi))
    dil = (int(rng.integers(1, 3)), 1)
    if ref._float_twins().pool_output_size(x.shape[2], kernel[0], stride[0], padding[0],
                                            dil[0], ceil) >= 1:
        same_on_every_isa(lambda: nat.qmax_pool2d(x, kernel, stride, padding, dil, ceil),
                          lambda: ref.qmax_pool2d(x, kernel, stride, padding, dil, ceil))


@SETTINGS
@given(st.integers(0, 2 ** 16))
def test_elementwise_equal_twin(seed):
    rng = np.random.default_rng(seed)
    a, b = i8(rng, (3, 17, 5)), i8(rng, (3, 17, 5))
    p = [int(v) for v in (rng.integers(-128, 128), rng.integers(0, 2 ** 31),
                          rng.integers(-31, 1), rng.integers(-128, 128), rng.integers(0, 2 ** 31),
                          rng.integers(-31, 1), rng.integers(-128, 128), rng.integers(0, 2 ** 31),
                          rng.integers(-31, 31))]
    ls = int(rng.integers(0, 24))
    args = (a, *p[:3], b, *p[3:], -128, 127, ls)
    same_on_every_isa(lambda: nat.qadd(*args), lambda: ref.qadd(*args))
    params = (*p[:3], *p[3:], -128, 127, ls)          # the lookup form: every pair once
    full_a, full_b = (np.arange(65536) >> 8).astype(np.int8), np.arange(65536).astype(np.int8)
    assert np.array_equal(nat.qadd_prepare(*params)(full_a, full_b),
                          ref.qadd(full_a, *p[:3], full_b, *p[3:], -128, 127, ls))
    assert np.array_equal(nat.qadd_prepare(*params)(a, b), ref.qadd_prepare(*params)(a, b))
    x = (rng.standard_normal((4, 33)) * 50).astype(np.float32)
    x.flat[:6] = [np.nan, np.inf, -np.inf, 0.5, -0.5, 1e30]
    scale, zp = float(rng.uniform(0.01, 2)), int(rng.integers(-128, 128))
    assert np.array_equal(nat.quantize(x, scale, zp), ref.quantize(x, scale, zp))
    q = ref.quantize(x, scale, zp)
    assert np.array_equal(nat.dequantize(q, scale, zp), ref.dequantize(q, scale, zp))
    mm, sh = int(rng.integers(0, 2 ** 31)), int(rng.integers(-31, 31))
    assert np.array_equal(nat.requantize(q, zp, mm, sh, 3), ref.requantize(q, zp, mm, sh, 3))
    real = float(rng.uniform(0, 4)) * 2.0 ** int(rng.integers(-40, 40))
    assert _C.quantize_multiplier(real) == ref.quantize_multiplier(real)


EDGE_MULTIPLIERS = [0, 1, 2 ** 30, 2 ** 31 - 32769, 2 ** 31 - 32768, 2 ** 31 - 1, 0x5A5A8000]


@SETTINGS
@given(st.floats(0.002, 0.5), st.floats(0.002, 0.5), st.floats(0.002, 1.0),
       st.sampled_from([None] + EDGE_MULTIPLIERS), st.integers(-31, 2), st.booleans(),
       st.integers(0, 2 ** 16))
def test_qadd_model_parameters_equal_twin(sa, sb, sy, edge, y_shift, relu, seed):
    """qadd with add_multipliers' parameters (left shift 20, one side m = 2^30 shift 0: the
    exact-shift side; the other two 16-bit products) on every int8 pair, through the vector
    arithmetic of every ISA (64 pairs a step and the 16-pair tail); edge: a multiplier whose
    16-bit split is at its limits, given to one side or the output, with y_shift (the
    one-rounding output covers -23..-1)"""
    rng = np.random.default_rng(seed)
    am, ash, bm, bsh, ym, ysh = ref.add_multipliers(sa, sb, sy)
    if edge is not None:
        which = seed % 3
        if which == 0:
            am = edge
        elif which == 1:
            bm = edge
        else:
            ym, ysh = edge, min(y_shift, 0)
    zps = [int(v) for v in rng.integers(-128, 128, 3)]
    lo, hi = (zps[2], 127) if relu else (-128, 127)
    params = (zps[0], am, ash, zps[1], bm, bsh, zps[2], ym, ysh, lo, hi, 20)
    full_a = (np.arange(65536 + 37) >> 8).astype(np.int8)
    full_b = np.arange(65536 + 37).astype(np.int8)
    same_on_every_isa(lambda: nat.qadd(full_a, *params[:3], full_b, *params[3:]),
                      lambda: ref.qadd(full_a, *params[:3], full_b, *params[3:]))


def test_out_and_prepared_weights():
    rng = np.random.default_rng(1)
    x, w = i8(rng, (1, 8, 7, 7)), i8(rng, (16, 8, 3, 3), -127)
    bias, m, shift = channel_params(rng, 16)
    args = (x, 1, w, bias, m, shift, -3, -128, 127, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    out = np.empty((1, 16, 7, 7), np.int8)
    assert nat.qconv2d(*args, out=out) is out
    assert np.array_equal(out, ref.qconv2d(*args))
    assert np.array_equal(nat.qconv2d(*args), out)           # the cached plan
    plan = _C.qconv2d_prepare(w, 1)
    assert plan.isa == _C.active_isa() and plan.shape == (16, 8, 3, 3)
    with pytest.raises(ValueError, match="qconv2d: plan was prepared for another"):
        _C.qconv2d(x, 1, w[:8], bias[:8], m[:8], shift[:8], 0, -128, 127, (1, 1),
                   (1, 1, 1, 1), (1, 1), 1, plan=plan)
    bad_out = np.empty((1, 16, 7, 7), np.int8)[:, :, :, ::-1]  # not C-contiguous: the twin
    with pytest.raises(ValueError, match="qconv2d: out"):
        nat.qconv2d(*args, out=bad_out)


def test_errors():
    rng = np.random.default_rng(2)
    x, w = i8(rng, (1, 2, 5, 5)), i8(rng, (3, 2, 1, 1), -127)
    bias, m, shift = channel_params(rng, 3)
    base = {"x": x, "x_zero_point": 0, "w": w, "bias": bias, "multiplier": m, "shift": shift,
            "y_zero_point": 0, "act_min": -128, "act_max": 127, "stride": (1, 1),
            "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1}

    def call(**kw):
        return _C.qconv2d(**{**base, **kw})
    with pytest.raises(TypeError, match="qconv2d: x must have dtype int8"):
        call(x=x.astype(np.float32))
    with pytest.raises(ValueError, match="qconv2d: x_zero_point must lie in"):
        call(x_zero_point=128)
    with pytest.raises(ValueError, match="qconv2d: multiplier must lie in"):
        call(multiplier=np.array([-1, 0, 0], np.int32))
    with pytest.raises(ValueError, match="qconv2d: shift must lie in"):
        call(shift=np.array([31, 0, 0], np.int32))
    with pytest.raises(ValueError, match="qconv2d: bias has shape"):
        call(bias=bias[:2])
    with pytest.raises(ValueError, match="qconv2d: act_min"):
        call(act_min=5, act_max=4)
    with pytest.raises(ValueError, match="qconv2d: w .* holds -128"):
        call(w=np.full((3, 2, 1, 1), -128, np.int8))
    with pytest.raises(ValueError, match="qconv2d: x has shape"):
        call(groups=2)
    out = np.full((1, 3, 5, 5), 9, np.int8)
    with pytest.raises(ValueError):
        call(shift=np.array([31, 0, 0], np.int32), out=out)
    assert (out == 9).all()                                 # nothing written on error
    with pytest.raises(TypeError, match="qlinear: x must have dtype int8"):
        _C.qlinear(np.zeros((2, 3), np.float32), 0, w[:, :, 0, 0].copy(), None, m, shift, 0,
                   -128, 127)
    with pytest.raises(ValueError, match="qadd: a has shape"):
        _C.qadd(x, 0, 1, 0, x[:, :1], 0, 1, 0, 0, 1, 0, -128, 127)
    with pytest.raises(ValueError, match="quantize: scale must be finite"):
        _C.quantize(np.zeros(3, np.float32), 0.0, 0)
    # the native module routes what _C does not take to the twin (its error)
    with pytest.raises(ValueError, match="qconv2d: x has dtype float32"):
        nat.qconv2d(**{**base, "x": x.astype(np.float32)})
