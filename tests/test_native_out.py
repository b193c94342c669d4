"""`out=` on the inference kernels: the result is written into the given array (which is what
is returned: no allocation), equal to the result without `out` and to the numpy twin; a wrong
`out` is refused with an error that names it. The graph executor writes every convolution
into its memory arena this way."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch_edge.backend import numpy_backend

_C = pytest.importorskip("minitorch_edge._C", reason="the native backend is not built")
from minitorch_edge.backend import native_conv

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
