"""`out=` on the inference kernels: the result is written into the given array (which is what
is returned: no allocation), equal to the result without `out` and to the numpy twin; a wrong
`out` is refused with an error that names it. The graph executor writes every convolution
into its memory arena this way."""
import tracemalloc

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from minitorch_edge.backend import numpy_backend

_C = pytest.importorskip("minitorch_edge._C", reason="the native backend is not built")
from native_harness import on_every_isa

from minitorch_edge.backend import native_conv, native_gemm, native_pool

RNG = np.random.default_rng(3)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@given(c=st.sampled_from([1, 3, 8, 16]), k=st.sampled_from([1, 4, 9]),
       size=st.integers(3, 12), kernel=st.sampled_from([1, 3]), stride=st.sampled_from([1, 2]),
       depthwise=st.booleans(), act=st.sampled_from([None, "relu", "relu6"]),
       inference=st.booleans(), residual=st.booleans())
def test_conv2d_writes_into_out(c, k, size, kernel, stride, depthwise, act, inference,
                                residual):
    groups, k = (c, c) if depthwise else (1, k)
    x = rand(1, c, size, size)
    w = rand(k, c // groups, kernel, kernel)
    b = rand(k)
    pad = kernel // 2
    geom = ((stride, stride), (pad, pad, pad, pad), (1, 1), groups)
    want = numpy_backend.conv2d(x, w, b, *geom, act=act)
    r = rand(*want.shape) if residual else None
    if r is not None:
        want = numpy_backend.conv2d(x, w, b, *geom, act=act, residual=r)
    plain = native_conv.conv2d(x, w, b, *geom, act=act, residual=r, inference=inference)
    out = np.full(want.shape, np.nan, np.float32)
    got = native_conv.conv2d(x, w, b, *geom, act=act, residual=r, inference=inference, out=out)
    assert got is out
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1, np.abs(want).max()))
    twin_out = np.empty_like(out)
    assert numpy_backend.conv2d(x, w, b, *geom, act=act, residual=r, out=twin_out) is twin_out
    # the same conv decided once (backend.conv2d_prepare, what the graph executor calls)
    run = native_conv.conv2d_prepare(x.shape, w, b, *geom, act=act, residual=r is not None)
    prepared_out = np.empty_like(out)
    assert run(x, r, prepared_out) is prepared_out
    np.testing.assert_allclose(prepared_out, want, rtol=1e-4,
                               atol=1e-4 * max(1, np.abs(want).max()))
    if not inference:        # conv2d's inference route is the one conv2d_prepare takes
        run_twin = numpy_backend.conv2d_prepare(x.shape, w, b, *geom, act=act)
        np.testing.assert_allclose(run_twin(x, r), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernel", ["conv2d", "depthwise3x3", "winograd3x3"])
def test_a_wrong_out_is_refused(kernel):
    x = rand(1, 4, 6, 6)
    w = rand(4, 1, 3, 3) if kernel == "depthwise3x3" else rand(4, 4, 3, 3)
    call = {"conv2d": lambda out: _C.conv2d(x, w, None, 1, 1, out=out),
            "depthwise3x3": lambda out: _C.depthwise3x3(x, w, out=out),
            "winograd3x3": lambda out: _C.winograd3x3(x, w, out=out)}[kernel]
    good = np.empty((1, 4, 6, 6), np.float32)
    assert call(good) is good
    with pytest.raises(ValueError, match=rf"{kernel}: out has shape \(1x4x6x5\), expected "
                                         r"\(1x4x6x6\)"):
        call(np.empty((1, 4, 6, 5), np.float32))
    with pytest.raises(TypeError, match=f"{kernel}: out must have dtype float32"):
        call(np.empty((1, 4, 6, 6), np.float64))
    with pytest.raises(ValueError, match=f"{kernel}: out must be C-contiguous"):
        call(np.empty((1, 4, 6, 12), np.float32)[..., ::2])
    with pytest.raises(ValueError, match=f"{kernel}: out shares memory with an input"):
        call(x)
    ro = np.empty((1, 4, 6, 6), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=f"{kernel}: out is read-only"):
        call(ro)


# ---- linear, gemm_epilogue, pooling: out= on every backend kernel ---------------------------

ACTS = numpy_backend.ACTIVATIONS
DIMS = st.sampled_from([0, 1, 2, 3, 7, 16, 17, 33])


def _filled(shape, dtype=np.float32):
    """An out array whose old contents must not show through (NaN everywhere)."""
    return np.full(shape, np.nan, dtype)


def _close(got, want, k):
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * max(1, k) ** 0.5)


@given(m=DIMS, n=DIMS, k=DIMS, act=st.sampled_from(ACTS), with_bias=st.booleans(),
       w_transposed=st.booleans())
def test_linear_writes_into_out(m, n, k, act, with_bias, w_transposed):
    x = rand(m, k)
    w = rand(k, n).T if w_transposed else rand(n, k)   # a transposed view is read in place
    b = rand(n) if with_bias else None
    plain = native_gemm.linear(x, w, b, act)
    out = _filled((m, n))
    assert native_gemm.linear(x, w, b, act, out=out) is out
    np.testing.assert_array_equal(out, plain)
    twin_out = _filled((m, n))
    assert numpy_backend.linear(x, w, b, act, out=twin_out) is twin_out
    _close(out, twin_out, k)


@given(m=DIMS, n=DIMS, k=DIMS, act=st.sampled_from(ACTS), mode=st.sampled_from(["col", "row"]),
       with_bias=st.booleans(), with_res=st.booleans(), ta=st.booleans(), tb=st.booleans())
def test_gemm_epilogue_writes_into_out(m, n, k, act, mode, with_bias, with_res, ta, tb):
    a = rand(k, m) if ta else rand(m, k)
    b = rand(n, k) if tb else rand(k, n)
    bias = rand(n if mode == "col" else m) if with_bias else None
    res = rand(m, n) if with_res else None
    args = (a, b, bias, mode, act, res, ta, tb)
    plain = native_gemm.gemm_epilogue(*args)
    out = _filled((m, n))
    assert native_gemm.gemm_epilogue(*args, out=out) is out
    np.testing.assert_array_equal(out, plain)
    twin_out = _filled((m, n))
    assert numpy_backend.gemm_epilogue(*args, out=twin_out) is twin_out
    _close(out, twin_out, k)
    # _C.sgemm itself: out with every epilogue argument, beta = 0 reads nothing of it
    c = _filled((m, n))
    assert _C.sgemm(a, b, trans_a=ta, trans_b=tb, out=c, bias=bias, bias_mode=mode, act=act,
                    residual=res) is c
    np.testing.assert_array_equal(c, plain)


POOL = {"size": st.integers(1, 13), "kernel": st.integers(1, 4), "stride": st.integers(1, 3),
        "dilation": st.integers(1, 2), "ceil_mode": st.booleans(), "pad": st.integers(0, 2),
        "c": st.sampled_from([1, 3, 8])}


def _pool_args(size, kernel, stride, pad, c, dilation=1, ceil_mode=False):
    """x and the window; hypothesis drops windows that hold no real element (there the
    twin's index is negative and the native one the nearest element: test_native_pool.fits)."""
    pad = min(pad, kernel // 2)
    for n in (size, size + 1):
        out = numpy_backend.pool_output_size(n, kernel, stride, pad, dilation, ceil_mode)
        taps = np.arange(max(out, 0))[:, None] * stride - pad + np.arange(kernel) * dilation
        assume(out >= 1 and np.all(((taps >= 0) & (taps < n)).any(axis=1)))
    x = rand(2, c, size, size + 1)
    x[0, 0, 0, :2] = np.nan                                    # NaN windows
    return x, (kernel, kernel), (stride, stride), (pad, pad)


@given(**POOL)
def test_max_pool2d_writes_into_out(size, kernel, stride, dilation, ceil_mode, pad, c):
    x, k, s, p = _pool_args(size, kernel, stride, pad, c, dilation, ceil_mode)
    d = (dilation, dilation)
    y, ind = native_pool.max_pool2d(x, k, s, p, d, ceil_mode)
    out = _filled(y.shape)
    got, got_ind = native_pool.max_pool2d(x, k, s, p, d, ceil_mode, out=out)
    assert got is out
    np.testing.assert_array_equal(out, y)
    np.testing.assert_array_equal(got_ind, ind)
    twin_out = _filled(y.shape)
    twin, twin_ind = numpy_backend.max_pool2d(x, k, s, p, d, ceil_mode, out=twin_out)
    assert twin is twin_out
    np.testing.assert_array_equal(twin_out, y)
    np.testing.assert_array_equal(twin_ind, ind)
    # inference: y alone, no indices computed, on both twins and every ISA
    inf_out = _filled(y.shape)
    assert native_pool.max_pool2d_inference(x, k, s, p, d, ceil_mode, out=inf_out) is inf_out
    np.testing.assert_array_equal(inf_out, y)
    np.testing.assert_array_equal(native_pool.max_pool2d_inference(x, k, s, p, d, ceil_mode), y)
    twin_inf = _filled(y.shape)
    assert numpy_backend.max_pool2d_inference(x, k, s, p, d, ceil_mode, out=twin_inf) \
        is twin_inf
    np.testing.assert_array_equal(twin_inf, y)
    np.testing.assert_array_equal(numpy_backend.max_pool2d_inference(x, k, s, p, d, ceil_mode),
                                  y)

    def check(isa):
        o = _filled(y.shape)
        r = _C.max_pool2d(x, k, s, p, d, ceil_mode, out=o, return_indices=False)
        assert r is o and isinstance(r, np.ndarray)
        np.testing.assert_array_equal(o, y, err_msg=isa)
    on_every_isa(_C, check)


@given(count_include_pad=st.booleans(), divisor=st.sampled_from([None, 3]), **POOL)
def test_avg_pool2d_writes_into_out(size, kernel, stride, dilation, ceil_mode, pad, c,
                                    count_include_pad, divisor):
    x, k, s, p = _pool_args(size, kernel, stride, pad, c, 1, ceil_mode)
    x = np.nan_to_num(x)
    args = (x, k, s, p, ceil_mode, count_include_pad, divisor)
    y = native_pool.avg_pool2d(*args)
    out = _filled(y.shape)
    assert native_pool.avg_pool2d(*args, out=out) is out
    np.testing.assert_array_equal(out, y)
    twin_out = _filled(y.shape)
    assert numpy_backend.avg_pool2d(*args, out=twin_out) is twin_out
    np.testing.assert_allclose(twin_out, y, rtol=1e-5, atol=1e-6)


@given(c=st.sampled_from([1, 4, 16]), size=st.integers(1, 15), stride=st.sampled_from([1, 2]),
       act=st.sampled_from(["gelu", "gelu_tanh", "silu", "hardswish"]), bias=st.booleans())
def test_depthwise_route_any_activation_into_out(c, size, stride, act, bias):
    """The depthwise 3x3 route with an activation its kernel does not fuse: the kernel, then
    one native in-place epilogue pass, all in `out`; conv2d_prepare's route the same."""
    x, w = rand(2, c, size, size + 2), rand(c, 1, 3, 3)
    b = rand(c) if bias else None
    geom = ((stride, stride), (1, 1, 1, 1), (1, 1), c)
    want = numpy_backend.conv2d(x, w, b, *geom, act=act)
    out = _filled(want.shape)
    assert native_conv.conv2d(x, w, b, *geom, act=act, out=out) is out
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(native_conv.conv2d(x, w, b, *geom, act=act), out)
    run = native_conv.conv2d_prepare(x.shape, w, b, *geom, act=act)
    again = _filled(want.shape)
    assert run(x, None, again) is again
    np.testing.assert_array_equal(again, out)


# ---- the Winograd route: its residual and activation are one pass into out ----------------

@pytest.mark.parametrize("act", ACTS)
def test_winograd_route_epilogue_into_out(act):
    x, w, b = rand(1, 64, 28, 28), rand(64, 64, 3, 3) * 0.05, rand(64)
    geom = ((1, 1), (1, 1, 1, 1), (1, 1), 1)
    if not native_conv._winograd_tile(x.shape, w.shape, *geom):
        pytest.skip("Winograd does not win for this shape here")
    r = rand(1, 64, 28, 28)
    want = numpy_backend.conv2d(x, w, b, *geom, act=act, residual=r)
    out = _filled(want.shape)
    got = native_conv.conv2d(x, w, b, *geom, act=act, residual=r, inference=True, out=out)
    assert got is out
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    # the in-place pass alone: act(y + residual), written into y
    y = rand(3, 5, 7)
    res = rand(3, 5, 7)
    expect = numpy_backend.epilogue_activation(y + res, act)
    assert native_conv._epilogue_in_place(y, act, res) is y
    np.testing.assert_allclose(y, expect, rtol=3e-7, atol=1e-7)


# ---- a wrong out is refused, naming the kernel, by the bindings and both twins ----------------

def _calls():
    """kernel name -> (native backend call, twin call, out shape, x): each takes out only."""
    x = rand(2, 3, 8, 8)
    xl, wl, bl = rand(4, 5), rand(20, 5), rand(20)
    a, b = rand(4, 5), rand(5, 6)
    pool = ((2, 2), (2, 2), (0, 0))
    mp = pool + ((1, 1), False)
    ap = pool + (False, True, None)
    wc = rand(4, 3, 3, 3)
    cg = ((1, 1), (1, 1, 1, 1), (1, 1), 1)
    return {
        "conv2d": (lambda o: native_conv.conv2d(x, wc, None, *cg, out=o),
                   lambda o: numpy_backend.conv2d(x, wc, None, *cg, out=o), (2, 4, 8, 8), x),
        "linear": (lambda o: native_gemm.linear(xl, wl, bl, "relu", out=o),
                   lambda o: numpy_backend.linear(xl, wl, bl, "relu", out=o), (4, 20), xl),
        "gemm_epilogue": (lambda o: native_gemm.gemm_epilogue(a, b, act="silu", out=o),
                          lambda o: numpy_backend.gemm_epilogue(a, b, act="silu", out=o),
                          (4, 6), a),
        "max_pool2d": (lambda o: native_pool.max_pool2d(x, *mp, out=o)[0],
                       lambda o: numpy_backend.max_pool2d(x, *mp, out=o)[0], (2, 3, 4, 4), x),
        "max_pool2d_inference": (lambda o: native_pool.max_pool2d_inference(x, *mp, out=o),
                                 lambda o: numpy_backend.max_pool2d_inference(x, *mp, out=o),
                                 (2, 3, 4, 4), x),
        "avg_pool2d": (lambda o: native_pool.avg_pool2d(x, *ap, out=o),
                       lambda o: numpy_backend.avg_pool2d(x, *ap, out=o), (2, 3, 4, 4), x),
    }


@pytest.mark.parametrize("name", list(_calls()))
@pytest.mark.parametrize("which", ["native", "twin"])
def test_backend_refuses_a_wrong_out(name, which):
    native, twin, shape, x = _calls()[name]
    call = native if which == "native" else twin
    good = _filled(shape)
    assert call(good) is good
    # the binding names itself (max_pool2d_inference runs _C.max_pool2d, the depthwise/
    # Winograd routes their kernels); the twin and the Python-side checks name the kernel
    op = "max_pool2d" if name == "max_pool2d_inference" and which == "native" else name
    wrong_shape = shape[:-1] + (shape[-1] + 1,)
    with pytest.raises(ValueError, match=op + r": out (has shape|must have shape)"):
        call(_filled(wrong_shape))
    with pytest.raises(ValueError, match=name + ": out must have .*dtype float32"):
        call(_filled(shape, np.float64))
    with pytest.raises(ValueError, match=op + ": out must (be C-contiguous|have .*; got .*not "
                                              "C-contiguous)"):
        call(_filled(shape[:-1] + (2 * shape[-1],))[..., ::2])
    if x.shape == shape:
        with pytest.raises(ValueError, match=op + ": out shares memory with an input"):
            call(x)
    ro = _filled(shape)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=op + ": out is read-only"):
        call(ro)


def test_twin_refuses_out_aliasing_x():
    x = rand(3, 4)
    w = rand(4, 4)
    for call in (lambda: numpy_backend.linear(x, w, out=x),
                 lambda: numpy_backend.gemm_epilogue(x, w, out=x)):
        with pytest.raises(ValueError, match="out shares memory with an input"):
            call()
    for call in (lambda: native_gemm.gemm_epilogue(x, w, out=x),
                 lambda: _C.sgemm(x, w, out=x)):
        with pytest.raises(ValueError, match="out (shares|must not share) memory"):
            call()
    xp = rand(1, 1, 4, 4)
    with pytest.raises(ValueError, match="out shares memory"):
        _C.avg_pool2d(xp, 1, 1, 0, False, True, None, out=xp)
    with pytest.raises(ValueError, match="out shares memory"):
        _C.max_pool2d(xp, 1, 1, 0, 1, False, out=xp, return_indices=False)


@pytest.mark.parametrize("kernel", ["max_pool2d", "avg_pool2d"])
def test_pool_bindings_refuse_a_wrong_out(kernel):
    x = rand(1, 2, 6, 6)
    call = {"max_pool2d": lambda out: _C.max_pool2d(x, 2, 2, 0, 1, False, out=out)[0],
            "avg_pool2d": lambda out: _C.avg_pool2d(x, 2, 2, 0, False, True, None, out=out)}
    call = call[kernel]
    good = np.empty((1, 2, 3, 3), np.float32)
    assert call(good) is good
    with pytest.raises(ValueError, match=rf"{kernel}: out has shape \(1x2x3x4\), expected "
                                         r"\(1x2x3x3\)"):
        call(np.empty((1, 2, 3, 4), np.float32))
    with pytest.raises(TypeError, match=f"{kernel}: out must have dtype float32"):
        call(np.empty((1, 2, 3, 3), np.float64))
    with pytest.raises(ValueError, match=f"{kernel}: out must be C-contiguous"):
        call(np.empty((1, 2, 3, 6), np.float32)[..., ::2])
    with pytest.raises(ValueError, match=f"{kernel}: out must be 4-D"):
        call(np.empty((2, 3, 3), np.float32))


def test_max_pool2d_binding_without_indices():
    x = rand(2, 3, 9, 9)
    y, _ = _C.max_pool2d(x, 3, 2, 1, 1, True)
    y2 = _C.max_pool2d(x, 3, 2, 1, 1, True, return_indices=False)
    assert isinstance(y2, np.ndarray) and y2.dtype == np.float32
    np.testing.assert_array_equal(y2, y)


# ---- with out, the native path allocates no result ------------------------------------------

def _native_calls():
    x = rand(4, 16, 32, 32)
    wd, w3, w1 = rand(16, 1, 3, 3), rand(32, 16, 3, 3) * 0.1, rand(32, 16, 1, 1)
    xl, wl = rand(256, 64), rand(96, 64)
    a, b = rand(256, 64), rand(64, 96)
    geom = ((1, 1), (1, 1, 1, 1), (1, 1))
    return {
        "conv2d depthwise silu": (lambda o: native_conv.conv2d(
            x, wd, None, *geom, 16, act="silu", out=o), (4, 16, 32, 32)),
        "conv2d 3x3 inference": (lambda o: native_conv.conv2d(
            x, w3, None, *geom, 1, act="hardswish", inference=True, out=o), (4, 32, 32, 32)),
        "conv2d 1x1": (lambda o: native_conv.conv2d(
            x, w1, None, (1, 1), (0, 0, 0, 0), (1, 1), 1, act="relu", out=o), (4, 32, 32, 32)),
        "linear": (lambda o: native_gemm.linear(xl, wl, None, "gelu", out=o), (256, 96)),
        "gemm_epilogue": (lambda o: native_gemm.gemm_epilogue(a, b, act="silu", out=o),
                          (256, 96)),
        "max_pool2d_inference": (lambda o: native_pool.max_pool2d_inference(
            x, (2, 2), (2, 2), (0, 0), (1, 1), False, out=o), (4, 16, 16, 16)),
        "avg_pool2d": (lambda o: native_pool.avg_pool2d(
            x, (3, 3), (1, 1), (1, 1), False, True, None, out=o), (4, 16, 32, 32)),
    }


@pytest.mark.parametrize("name", list(_native_calls()))
def test_native_out_allocates_no_result(name):
    call, shape = _native_calls()[name]
    out = _filled(shape)
    call(out)   # warm up: prepared weights (packed panels, Winograd U) are made once
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        got = call(out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got is out and np.shares_memory(got, out)
    assert peak < out.nbytes // 4, f"{name}: {peak} bytes allocated for a {out.nbytes}-byte result"
