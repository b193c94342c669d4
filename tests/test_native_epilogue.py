"""Tests of libmte's fused epilogue, act(a @ b + bias + residual) with act in relu, relu6, gelu,
gelu_tanh, silu, hardswish: ``_C.sgemm(..., bias, bias_mode, act, residual)``, ``_C.conv2d(..., act, residual)``
and the backend functions over them (``gemm_epilogue``, ``native_conv.conv2d`` with ``act``/``residual``).

Native results are compared with the numpy twins (numpy_backend.gemm_epilogue, which uses
math.erf in float64) over hypothesis shapes (0, 1, primes, tile tails) on every ISA this CPU
runs, and with PyTorch (torch.nn.functional.gelu / relu / silu / hardswish). Bad input to the bindings raises
TypeError/ValueError naming the argument and leaves ``out`` untouched.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if os.environ.get("MTE_REQUIRE_NATIVE") == "1":
    from minitorch_edge import _C
else:
    _C = pytest.importorskip("minitorch_edge._C")

from minitorch_edge import backend  # noqa: E402
from minitorch_edge.backend import native_gemm, native_conv  # noqa: E402
from minitorch_edge.backend import numpy_backend as ref  # noqa: E402
from native_harness import on_every_isa

ACTS = (None, "relu", "relu6", "gelu", "gelu_tanh", "silu", "hardswish")
DIMS = st.sampled_from([0, 1, 2, 3, 5, 7, 13, 17, 31, 33, 47, 97])
EPS32 = float(np.finfo(np.float32).eps)


def rand(rng, shape, dtype=np.float32):
    return (rng.standard_normal(shape) * 1.5).astype(dtype)


def assert_epilogue_close(got, expect, pre_bound, k):
    """GEMM rounding (K + 4 terms of float32 of size pre_bound) through the 1.13-Lipschitz
    activation, plus the activation's own float32 error (~3e-7 relative)."""
    got, expect = np.asarray(got, np.float64), np.asarray(expect, np.float64)
    assert got.shape == expect.shape
    tol = 1.2 * 2.0 * (k + 6) * EPS32 * pre_bound + 3e-7 * (1.0 + np.abs(expect))
    err = np.abs(got - expect)
    assert np.all(err <= tol), f"max error {err.max()} at {np.unravel_index(err.argmax(), err.shape)}"


@pytest.fixture(params=_C.available_isas())
def isa(request):
    _C.set_isa(request.param)
    yield request.param
    _C.set_isa("auto")


# ---- sgemm ------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(m=DIMS, n=DIMS, k=DIMS, act=st.sampled_from(ACTS), mode=st.sampled_from(["col", "row"]),
       with_bias=st.booleans(), with_res=st.booleans(), ta=st.booleans(), tb=st.booleans(),
       seed=st.integers(0, 2**31 - 1))
def test_gemm_epilogue_matches_twin(m, n, k, act, mode, with_bias, with_res, ta, tb, seed):
    rng = np.random.default_rng(seed)
    a = rand(rng, (k, m) if ta else (m, k))
    b = rand(rng, (n, k) if tb else (k, n))
    bias = rand(rng, (n if mode == "col" else m,)) if with_bias else None
    res = rand(rng, (m, n)) if with_res else None
    got = _C.sgemm(a, b, trans_a=ta, trans_b=tb, bias=bias, bias_mode=mode, act=act,
                   residual=res)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expect = ref.gemm_epilogue(a64, b64, None if bias is None else bias.astype(np.float64),
                               mode, act, None if res is None else res.astype(np.float64), ta, tb)
    bound = np.abs(a64.T if ta else a64) @ np.abs(b64.T if tb else b64) + 1.0
    if bias is not None:
        bound = bound + np.abs(bias if mode == "col" else bias[:, None])
    if res is not None:
        bound = bound + np.abs(res)
    assert got.dtype == np.float32 and got.shape == (m, n)
    assert_epilogue_close(got, expect, bound, k)
    # the backend function gives the same, and the float32 twin agrees to rounding
    np.testing.assert_array_equal(native_gemm.gemm_epilogue(a, b, bias, mode, act, res, ta, tb),
                                  got)


@pytest.mark.parametrize("act", ACTS)
def test_every_isa_tile_tails(isa, act):
    """Shapes around every ISA's MR x NR tile and KC block, with residual and both biases."""
    rng = np.random.default_rng(1)
    for m, n, k in ((1, 1, 1), (7, 33, 300), (9, 65, 17), (17, 31, 700), (6, 16, 5)):
        a, b = rand(rng, (m, k)), rand(rng, (k, n))
        for mode in ("col", "row"):
            bias, res = rand(rng, (n if mode == "col" else m,)), rand(rng, (m, n))
            got = _C.sgemm(a, b, bias=bias, bias_mode=mode, act=act, residual=res)
            expect = ref.gemm_epilogue(*(x.astype(np.float64) for x in (a, b, bias)), mode, act,
                                       res.astype(np.float64))
            bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 10.0
            assert_epilogue_close(got, expect, bound, k)


def test_beta_and_out_with_epilogue():
    rng = np.random.default_rng(2)
    a, b, res = rand(rng, (5, 7)), rand(rng, (7, 11)), rand(rng, (5, 11))
    out = rand(rng, (5, 11))
    c0 = out.astype(np.float64)
    got = _C.sgemm(a, b, alpha=2.0, beta=0.5, out=out, act="gelu", residual=res)
    assert got is out
    pre = 2.0 * a.astype(np.float64) @ b.astype(np.float64) + 0.5 * c0 + res
    np.testing.assert_allclose(out, ref.epilogue_activation(pre, "gelu"), rtol=1e-5, atol=1e-5)


def test_gelu_against_torch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-12, 12, 200001, dtype=np.float32).reshape(1, -1)
    one = np.ones((1, 1), np.float32)
    for act, approx in (("gelu", "none"), ("gelu_tanh", "tanh")):
        got = _C.sgemm(one, x, act=act)  # 1 x 1 @ 1 x n: the activation of x itself
        expect = torch.nn.functional.gelu(torch.from_numpy(x.astype(np.float64)),
                                          approximate=approx).numpy()
        torch32 = torch.nn.functional.gelu(torch.from_numpy(x), approximate=approx).numpy()
        err = np.abs(got - expect) / np.maximum(1.0, np.abs(x))
        err_torch = np.abs(torch32 - expect) / np.maximum(1.0, np.abs(x))
        assert err.max() <= 2.5e-7, (act, err.max())
        assert err.max() <= 2.0 * err_torch.max() + 1e-7  # as accurate as PyTorch's float32


@pytest.mark.parametrize("act", ["silu", "hardswish"])
def test_silu_hardswish_against_torch(act):
    """The numpy twin is PyTorch's F.silu / F.hardswish (float64: to rounding; float32:
    hardswish bit for bit), and the native epilogue (every ISA) agrees with both to float32
    rounding on a dense sweep, at the kinks and at +-inf / NaN (-inf gives NaN, as PyTorch)."""
    from harness import import_torch
    torch = import_torch()
    fn = {"silu": torch.nn.functional.silu, "hardswish": torch.nn.functional.hardswish}[act]
    x = np.linspace(-12, 12, 200001, dtype=np.float32)
    x = np.concatenate([x, np.float32([-3, 3, -0.0, 0, -100, 100, -1e30, 1e30, np.inf, -np.inf,
                                       np.nan])]).reshape(1, -1)
    expect64 = fn(torch.from_numpy(x.astype(np.float64))).numpy()
    expect32 = fn(torch.from_numpy(x)).numpy()
    with np.errstate(invalid="ignore"):
        twin64 = ref.epilogue_activation(x.astype(np.float64), act)
        twin32 = ref.epilogue_activation(x, act)
    assert twin32.dtype == np.float32
    np.testing.assert_allclose(twin64, expect64, rtol=1e-14, atol=1e-300)
    if act == "hardswish":
        np.testing.assert_array_equal(twin32, expect32)
    else:
        np.testing.assert_allclose(twin32, expect32, rtol=2e-7, atol=1e-38)
    one = np.ones((1, 1), np.float32)

    def check(isa):
        got = _C.sgemm(one, x, act=act)  # 1 x 1 @ 1 x n: the activation of x itself
        np.testing.assert_allclose(got, twin32, rtol=3e-7, atol=1e-37, err_msg=isa)
        np.testing.assert_allclose(got, expect32, rtol=3e-7, atol=1e-37, err_msg=isa)
    on_every_isa(_C, check)


@settings(max_examples=20, deadline=None)
@given(m=DIMS, n=DIMS, k=DIMS, act=st.sampled_from(["silu", "hardswish"]),
       seed=st.integers(0, 2**31 - 1))
def test_linear_silu_hardswish_matches_twin(m, n, k, act, seed):
    """backend.linear with the new activations (native: one GEMM + fused epilogue) equals the
    float32 twin to rounding, and the float64 twin within the GEMM's rounding."""
    rng = np.random.default_rng(seed)
    x, w, b = rand(rng, (m, k)), rand(rng, (n, k)), rand(rng, (n,))
    got = native_gemm.linear(x, w, b, act=act)
    twin = ref.linear(x, w, b, act=act)
    assert got.dtype == np.float32 and got.shape == (m, n)
    expect = ref.linear(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), act)
    bound = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T + np.abs(b) + 1.0
    assert_epilogue_close(got, expect, bound, k)
    assert_epilogue_close(twin, expect, bound, k)


def test_sgemm_bad_input_raises():
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    out = np.full((3, 5), 7.0, np.float32)
    cases = [
        (dict(act="swish"), ValueError, "act must be"),
        (dict(act=3), TypeError, "act must be"),
        (dict(bias=np.ones(3, np.float32)), ValueError, r"bias has shape \(3\), expected \(5,\)"),
        (dict(bias=np.ones(5, np.float32), bias_mode="row"), ValueError, r"expected \(3,\)"),
        (dict(bias=np.ones(5, np.float32), bias_mode="diag"), ValueError, "bias_mode"),
        (dict(bias=np.ones(5, np.float64)), TypeError, "bias must have dtype float32"),
        (dict(bias=np.ones((1, 5), np.float32)), ValueError, "bias must be 1-D"),
        (dict(residual=np.ones((5, 3), np.float32)), ValueError,
         r"residual has shape \(5x3\), expected \(3x5\)"),
        (dict(residual=np.ones((3, 10), np.float32)[:, ::2]), ValueError, "C-contiguous"),
        (dict(residual=np.ones((3, 5), np.int32)), TypeError, "residual must have dtype float32"),
        (dict(residual=[[1.0] * 5] * 3), TypeError, "residual must be a numpy.ndarray"),
        (dict(residual=out), ValueError, "out must not share memory with residual"),
    ]
    for kwargs, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            _C.sgemm(a, b, out=out, **kwargs)
        assert np.all(out == 7.0), kwargs
    # zero-size dimensions are fine with every epilogue argument
    z = _C.sgemm(np.ones((0, 4), np.float32), b, bias=np.ones(5, np.float32), act="gelu",
                 residual=np.ones((0, 5), np.float32))
    assert z.shape == (0, 5)
    z = _C.sgemm(np.ones((3, 0), np.float32), np.ones((0, 2), np.float32),
                 bias=np.full(2, -1.0, np.float32), act="relu",
                 residual=np.full((3, 2), 3.0, np.float32))
    np.testing.assert_array_equal(z, np.full((3, 2), 2.0, np.float32))


def test_backend_dispatch_and_fallbacks():
    rng = np.random.default_rng(3)
    a, b, bias = rand(rng, (6, 9)), rand(rng, (9, 4)), rand(rng, (4,))
    assert "gemm_epilogue" in backend.KERNELS
    if backend.active() == "native":
        assert backend.gemm_epilogue is native_gemm.gemm_epilogue
    # transposed views are read in place, other dtypes go to the twin
    got = native_gemm.gemm_epilogue(a.T.copy().T, b, bias, act="relu6")
    np.testing.assert_allclose(got, ref.gemm_epilogue(a, b, bias, act="relu6"), rtol=1e-5,
                               atol=1e-5)
    got64 = native_gemm.gemm_epilogue(a.astype(np.float64), b.astype(np.float64),
                                         act="gelu_tanh")
    assert got64.dtype == np.float64
    with pytest.raises(ValueError, match="gemm_epilogue: act"):
        ref.gemm_epilogue(a, b, act="swish")
    with pytest.raises(ValueError, match="gemm_epilogue: residual has shape"):
        ref.gemm_epilogue(a, b, residual=np.ones((4, 6)))


# ---- conv2d -----------------------------------------------------------------------------------

GEOMS = [  # (x shape, w shape, stride, padding, dilation, groups): each conv.c path
    ((2, 3, 9, 9), (5, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),     # padded pieces
    ((1, 4, 11, 7), (6, 4, 3, 3), (2, 2), (0, 1, 2, 0), (1, 1), 1),    # stride 2: segments
    ((2, 8, 5, 6), (19, 8, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),    # 1x1: B is x
    ((1, 6, 7, 6), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (2, 1), 3),     # groups, dilation
    ((2, 4, 6, 5), (8, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),     # direct depthwise loops
    ((2, 3, 8, 8), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),     # depthwise 3x3 shape
]


def _conv_expect(x, w, b, geom, act, res):
    y = ref.conv2d(*(None if t is None else t.astype(np.float64) for t in (x, w, b)), *geom)
    if res is not None:
        y = y + res
    return ref.epilogue_activation(y, act)


@pytest.mark.parametrize("gi", range(len(GEOMS)))
@pytest.mark.parametrize("act", ACTS)
def test_conv2d_act_residual_matches_twin(gi, act):
    xs, ws, *geom = GEOMS[gi]
    rng = np.random.default_rng(gi)
    x, w, b = rand(rng, xs), rand(rng, ws), rand(rng, (ws[0],))
    y0 = ref.conv2d(x, w, b, *geom)
    res = rand(rng, y0.shape)
    for bias in (None, b):
        for r in (None, res):
            got = native_conv.conv2d(x, w, bias, *geom, act=act, residual=r)
            np.testing.assert_allclose(got, _conv_expect(x, w, bias, geom, act, r), rtol=2e-5,
                                       atol=2e-5)
            direct = _C.conv2d(x, w, bias, geom[0], geom[1], geom[2], geom[3], act, r)
            np.testing.assert_allclose(direct, got, rtol=2e-5, atol=2e-5)
    # the numpy fallback (float64) gives the same
    x64, w64, b64, r64 = (t.astype(np.float64) for t in (x, w, b, res))
    np.testing.assert_allclose(native_conv.conv2d(x64, w64, b64, *geom, act=act, residual=r64),
                               _conv_expect(x, w, b, geom, act, r64), rtol=1e-12, atol=1e-12)


def test_conv2d_resnet_block_against_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(7)
    x, w, b = rand(rng, (2, 8, 10, 10)), rand(rng, (8, 8, 3, 3)) * 0.2, rand(rng, (8,))
    tx, tw, tb = (torch.from_numpy(t) for t in (x, w, b))
    identity = x  # ResNet: relu(conv(x) + b + x)
    got = native_conv.conv2d(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 1, act="relu",
                                 residual=identity)
    expect = F.relu(F.conv2d(tx, tw, tb, padding=1) + tx).numpy()
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    for act, approx in (("gelu", "none"), ("gelu_tanh", "tanh")):
        got = native_conv.conv2d(x, w, b, (2, 2), (1, 1, 1, 1), (1, 1), 1, act=act)
        expect = F.gelu(F.conv2d(tx, tw, tb, stride=2, padding=1), approximate=approx).numpy()
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)


def test_conv2d_bad_input_raises():
    x, w = np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    with pytest.raises(ValueError, match=r"residual has shape \(1x3x5x5\), expected the "
                                         r"output's shape \(1x3x3x3\)"):
        _C.conv2d(x, w, None, 1, 0, 1, 1, "relu", np.ones((1, 3, 5, 5), np.float32))
    with pytest.raises(TypeError, match="residual must have dtype float32"):
        _C.conv2d(x, w, None, 1, 0, 1, 1, None, np.ones((1, 3, 3, 3)))
    with pytest.raises(ValueError, match="residual must be 4-D"):
        _C.conv2d(x, w, None, 1, 0, 1, 1, None, np.ones((3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="act must be"):
        _C.conv2d(x, w, act="swish")
    with pytest.raises(ValueError, match="conv2d: act must be"):
        native_conv.conv2d(x, w, None, (1, 1), (0, 0, 0, 0), (1, 1), 1, act="swish")
    with pytest.raises(ValueError, match="conv2d: residual has shape"):
        native_conv.conv2d(x.astype(np.float64), w.astype(np.float64), None, (1, 1),
                               (0, 0, 0, 0), (1, 1), 1, residual=np.ones((1, 3, 5, 5)))
    # zero-size batch with a residual
    y = _C.conv2d(np.ones((0, 2, 5, 5), np.float32), w, None, 1, 0, 1, 1, "gelu",
                  np.ones((0, 3, 3, 3), np.float32))
    assert y.shape == (0, 3, 3, 3)
