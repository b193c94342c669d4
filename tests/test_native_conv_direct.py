"""Tests of the direct KxK convolution (_C.conv2d_direct, _C.conv2d_direct_pack,
native/src/conv_direct.c) against its numpy twin numpy_backend.conv2d in float64, and of its
route (_C.conv2d_direct_should_use, backend/native_conv.py).

Hypothesis shapes: kernels 1..7 (square or not), strides 1..3, paddings 0..3 (asymmetric),
output widths from 1 to past a 128-pixel chunk, output channels 1..130 (the partly filled
last block of 64), input channels across the slice of 16; bias, residual, ReLU / ReLU6;
every ISA this CPU runs, 1 and 2 threads. The error bound is relative to the sum of |terms|
of each output. Bad input must raise, never crash.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch_edge.backend import numpy_backend

try:
    from minitorch_edge import _C
except ImportError:
    _C = None
HAVE_NATIVE = _C is not None and hasattr(_C, "conv2d_direct")
if os.environ.get("MTE_REQUIRE_NATIVE") == "1" and not HAVE_NATIVE:
    raise ImportError("MTE_REQUIRE_NATIVE=1 but minitorch_edge._C has no conv2d_direct")
pytestmark = pytest.mark.skipif(not HAVE_NATIVE, reason="minitorch_edge._C not built")

ISAS = list(_C.available_isas()) if HAVE_NATIVE else []
ACTS = {None: lambda v: v, "relu": lambda v: np.maximum(v, 0),
        "relu6": lambda v: np.clip(v, 0, 6)}


def reference(x, w, b, stride, pad, act, res):
    """act(conv2d(x, w) + b + res) in float64, and the sum of |terms| of each output."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    b64 = None if b is None else b.astype(np.float64)
    y = numpy_backend.conv2d(x64, w64, b64, stride, pad, (1, 1), 1)
    mag = numpy_backend.conv2d(np.abs(x64), np.abs(w64), None if b is None else np.abs(b64),
                               stride, pad, (1, 1), 1)
    if res is not None:
        y, mag = y + res, mag + np.abs(res)
    return ACTS[act](y), mag


@st.composite
def convs(draw):
    kh = draw(st.integers(1, 7))
    kw = kh if draw(st.booleans()) else draw(st.integers(1, 7))
    sh = draw(st.integers(1, 3))
    sw = sh if draw(st.booleans()) else draw(st.integers(1, 3))
    pad = tuple(draw(st.integers(0, 3)) for _ in range(4))
    h = draw(st.integers(max(1, kh - pad[0] - pad[1]), 16))
    w = draw(st.integers(max(1, kw - pad[2] - pad[3]), draw(st.sampled_from([16, 150]))))
    return dict(n=draw(st.integers(1, 2)), c=draw(st.sampled_from([1, 3, 16, 17, 33])),
                k=draw(st.sampled_from([1, 15, 16, 33, 64, 65, 130])), h=h, w=w, kh=kh, kw=kw,
                stride=(sh, sw), pad=pad, act=draw(st.sampled_from([None, "relu", "relu6"])),
                bias=draw(st.booleans()), res=draw(st.booleans()),
                isa=draw(st.sampled_from(ISAS or ["generic"])), threads=draw(st.sampled_from([1, 2])))


@settings(max_examples=60, deadline=None)
@given(convs())
def test_conv2d_direct_matches_numpy(p):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((p["n"], p["c"], p["h"], p["w"])).astype(np.float32)
    w = (3 * rng.standard_normal((p["k"], p["c"], p["kh"], p["kw"]))).astype(np.float32)
    b = rng.standard_normal(p["k"]).astype(np.float32) if p["bias"] else None
    ho = (p["h"] + p["pad"][0] + p["pad"][1] - p["kh"]) // p["stride"][0] + 1
    wo = (p["w"] + p["pad"][2] + p["pad"][3] - p["kw"]) // p["stride"][1] + 1
    res = rng.standard_normal((p["n"], p["k"], ho, wo)).astype(np.float32) if p["res"] else None
    prev_isa, prev_threads = _C.active_isa(), _C.get_num_threads()
    try:
        _C.set_isa(p["isa"])
        _C.set_num_threads(p["threads"])
        got = _C.conv2d_direct(x, _C.conv2d_direct_pack(w), w.shape, b, p["stride"], p["pad"],
                               p["act"], res)
    finally:
        _C.set_isa(prev_isa)
        _C.set_num_threads(prev_threads)
    ref, mag = reference(x, w, b, p["stride"], p["pad"], p["act"], res)
    assert got.shape == ref.shape and got.dtype == np.float32
    err = np.abs(got - ref)
    bound = 1e-6 * (mag + 1.0) * np.sqrt(p["c"] * p["kh"] * p["kw"] + 1)
    assert np.all(err <= bound), f"worst {np.max(err / (mag + 1)):.3g} relative to |terms|"


def test_out_is_written_in_place():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 8, 9, 9)).astype(np.float32)
    w = rng.standard_normal((70, 8, 3, 3)).astype(np.float32)
    out = np.full((1, 70, 5, 5), np.nan, np.float32)
    y = _C.conv2d_direct(x, _C.conv2d_direct_pack(w), w.shape, None, 2, 1, "relu", out=out)
    assert y is out
    ref, _ = reference(x, w, None, (2, 2), (1, 1, 1, 1), "relu", None)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_bad_input_raises():
    x = np.zeros((1, 4, 8, 8), np.float32)
    w = np.zeros((8, 4, 3, 3), np.float32)
    p = _C.conv2d_direct_pack(w)
    with pytest.raises(ValueError):
        _C.conv2d_direct(x, p[:-1], w.shape, None, 1, 1)        # wrong packing size
    with pytest.raises(ValueError):
        _C.conv2d_direct(x, p, (8, 5, 3, 3), None, 1, 1)        # channels differ
    with pytest.raises(ValueError):
        _C.conv2d_direct(x, p, w.shape, None, 1, 1, act="gelu")
    with pytest.raises(ValueError):
        _C.conv2d_direct(x, p, w.shape, np.zeros(3, np.float32), 1, 1)
    with pytest.raises(ValueError):
        _C.conv2d_direct(x, p, w.shape, None, 1, 1, residual=np.zeros((1, 8, 7, 7), np.float32))
    with pytest.raises(ValueError):
        _C.conv2d_direct(np.zeros((1, 4, 1, 1), np.float32), p, w.shape, None, 1, 0)


def test_rule():
    """The measured rule: strided and 7x7 convs, and stride-1 3x3 ones where Winograd would
    take F(2,3) on a plane under 12 wide (or nothing), on AVX-512 only; never groups/dilation/GELU (the binding has no groups)."""
    use = _C.conv2d_direct_should_use
    if _C.dispatch_table()["convdirect"] != "avx512":     # (avx512vnni runs avx512's tile)
        assert not use((1, 64, 56, 56), (128, 64, 3, 3), 2, 1, "relu")
        return
    assert use((1, 3, 224, 224), (64, 3, 7, 7), 2, 3, "relu")        # ResNet's stem
    assert use((1, 64, 56, 56), (128, 64, 3, 3), 2, 1, "relu")       # stride 2
    assert use((1, 512, 7, 7), (512, 512, 3, 3), 1, 1, None)         # F(2,3) on 7x7
    assert not use((1, 256, 14, 14), (256, 256, 3, 3), 1, 1, None)   # F(2,3) on 14x14
    assert not use((1, 64, 56, 56), (64, 64, 3, 3), 1, 1, "relu")    # Winograd F(4,3)
    assert not use((1, 64, 56, 56), (128, 64, 1, 1), 2, 0, None)     # 1x1
    assert not use((1, 64, 56, 56), (16, 64, 3, 3), 2, 1, None)      # few outputs
    assert not use((1, 64, 56, 56), (128, 64, 3, 3), 2, 1, "gelu")


def test_backend_routes_inference_convs_through_it():
    """backend.conv2d(inference=True) and conv2d_prepare agree with the im2col route."""
    from minitorch_edge.backend import native_conv
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)
    w = rng.standard_normal((128, 64, 3, 3)).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    geom = ((2, 2), (1, 1, 1, 1), (1, 1), 1)
    ref = native_conv.conv2d(x, w, b, *geom, act="relu")
    got = native_conv.conv2d(x, w, b, *geom, act="relu", inference=True)
    run = native_conv.conv2d_prepare(x.shape, w, b, *geom, act="relu")
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(run(x), ref, rtol=2e-5, atol=2e-5)
