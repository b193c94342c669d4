"""Native depthwise convolution (_C.depthwise: any K x K forward; _C.depthwise3x3 and its
backward) against its numpy twin.

Forward, backward-input and backward-weight against numpy_backend.conv2d* with groups == C
(float64 reference, float32 tolerance), on every ISA this CPU runs; the backward kernels are
also checked to be the exact adjoints of the forward (<conv(x), g> = <x, dx(g)> =
<w, dw(g)>), which is what gradcheck establishes. Bad input to every binding raises
TypeError / ValueError without crashing. (Pooling: test_native_pool.py.)
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from native_harness import on_every_isa as _on_every_isa, rand, require_native

_C = require_native("depthwise3x3", "depthwise")

from minitorch_edge import backend  # noqa: E402
from minitorch_edge.backend import numpy_backend as nb  # noqa: E402

EPS32 = float(np.finfo(np.float32).eps)
ISAS = list(_C.available_isas())
SIZES = st.integers(0, 20)


def on_every_isa(fn):
    _on_every_isa(_C, fn)


def assert_close(got, ref, bound, terms, what):
    tol = 2.0 * (terms + 2) * EPS32 * bound + 1e-6
    assert got.shape == ref.shape, what
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= tol), f"{what}: max error {err.max()} (tol {tol.max()})"


def dw_ref(x, w, bias, s):
    """The numpy twin (groups = C) in float64, and the bound sum |w| * |x| for the tolerance."""
    c = x.shape[1]
    if c == 0:  # the twin needs groups >= 1
        n, _, h, w = x.shape
        shape = (n, 0, (h - 1) // s + 1 if h else 0, (w - 1) // s + 1 if w else 0)
        return np.zeros(shape), np.zeros(shape)
    pad, x64, w64 = (1, 1, 1, 1), x.astype(np.float64), w.astype(np.float64)
    b64 = None if bias is None else bias.astype(np.float64)
    ref = nb.conv2d(x64, w64, b64, (s, s), pad, (1, 1), c)
    bound = nb.conv2d(np.abs(x64), np.abs(w64), None if b64 is None else np.abs(b64), (s, s),
                      pad, (1, 1), c)
    return ref, bound


# ------------------------------------------------------------------------- depthwise 3x3

@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 3), c=st.integers(0, 17), h=SIZES, w=SIZES, stride=st.sampled_from([1, 2]),
       use_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_depthwise_matches_numpy_conv2d(n, c, h, w, stride, use_bias, seed):
    rng = np.random.default_rng(seed)
    x, wt = rand(rng, (n, c, h, w)), rand(rng, (c, 1, 3, 3))
    bias = rand(rng, (c,)) if use_bias else None
    ref, bound = dw_ref(x, wt, bias, stride)

    def check(isa):
        y = _C.depthwise3x3(x, wt, bias, stride)
        assert y.dtype == np.float32 and y.flags.c_contiguous
        assert_close(y, ref, bound, 9, f"{isa} forward")
    on_every_isa(check)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 2), c=st.integers(0, 9), h=SIZES, w=SIZES, stride=st.sampled_from([1, 2]),
       seed=st.integers(0, 2**16))
def test_depthwise_backward_matches_numpy(n, c, h, w, stride, seed):
    rng = np.random.default_rng(seed)
    x, wt = rand(rng, (n, c, h, w)), rand(rng, (c, 1, 3, 3))
    ho, wo = (h - 1) // stride + 1 if h else 0, (w - 1) // stride + 1 if w else 0
    gy = rand(rng, (n, c, ho, wo))
    args = ((stride, stride), (1, 1, 1, 1), (1, 1), c)
    if 0 in x.shape:  # (the twin's col2im cannot take empty outputs)
        assert not _C.depthwise3x3_backward_input(gy, wt, stride, h, w).any()
        gw = _C.depthwise3x3_backward_weight(gy, x, stride)
        assert gw.shape == wt.shape and not gw.any()
        return
    g64, x64, w64 = gy.astype(np.float64), x.astype(np.float64), wt.astype(np.float64)
    ref_x = nb.conv2d_backward_input(g64, w64, x.shape, *args)
    bound_x = nb.conv2d_backward_input(np.abs(g64), np.abs(w64), x.shape, *args)
    ref_w = nb.conv2d_backward_weight(g64, x64, wt.shape, *args)
    bound_w = nb.conv2d_backward_weight(np.abs(g64), np.abs(x64), wt.shape, *args)

    def check(isa):
        gx = _C.depthwise3x3_backward_input(gy, wt, stride, h, w)
        gw = _C.depthwise3x3_backward_weight(gy, x, stride)
        assert_close(gx, ref_x, bound_x, 9, f"{isa} grad_x")
        assert_close(gw, ref_w, bound_w, max(1, n * ho * wo), f"{isa} grad_w")
    on_every_isa(check)


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("shape", [(2, 5, 13, 17), (1, 3, 56, 56), (1, 4, 7, 40)])
def test_depthwise_backward_is_the_adjoint(stride, shape):
    """<y(x; w), g> = <x, dx(g)> = <w, dw(g)> (bias None): what gradcheck checks, exactly."""
    rng = np.random.default_rng(1)
    x, wt = rand(rng, shape), rand(rng, (shape[1], 1, 3, 3))

    def check(isa):
        y = _C.depthwise3x3(x, wt, None, stride)
        g = rand(rng, y.shape)
        lhs = float(np.sum(y.astype(np.float64) * g))
        dx = _C.depthwise3x3_backward_input(g, wt, stride, shape[2], shape[3])
        dw = _C.depthwise3x3_backward_weight(g, x, stride)
        scale = float(np.sum(np.abs(y.astype(np.float64) * g))) + 1.0
        assert abs(lhs - float(np.sum(x.astype(np.float64) * dx))) < 1e-4 * scale, isa
        assert abs(lhs - float(np.sum(wt.astype(np.float64) * dw))) < 1e-4 * scale, isa
    on_every_isa(check)


@pytest.mark.parametrize("act", ["relu", "relu6"])
def test_depthwise_fused_activation(act):
    rng = np.random.default_rng(2)
    x, wt, b = rand(rng, (2, 6, 11, 23)) * 4, rand(rng, (6, 1, 3, 3)), rand(rng, (6,))
    for stride in (1, 2):
        plain = _C.depthwise3x3(x, wt, b, stride)
        want = np.maximum(plain, 0) if act == "relu" else np.clip(plain, 0, 6)
        np.testing.assert_array_equal(_C.depthwise3x3(x, wt, b, stride, act), want)


def test_depthwise_issue_shapes():
    rng = np.random.default_rng(3)
    for c, hw, stride in ((144, 56, 1), (144, 56, 2), (576, 14, 1)):
        x, wt, b = rand(rng, (1, c, hw, hw)), rand(rng, (c, 1, 3, 3)), rand(rng, (c,))
        ref, bound = dw_ref(x, wt, b, stride)
        assert_close(_C.depthwise3x3(x, wt, b, stride), ref, bound, 9, f"C={c}")


# ------------------------------------------------------------- general K x K (_C.depthwise)

def dw_ref_any(x, w, bias, s, p, act):
    """The numpy twin (groups = C) in float64 with padding p and the activation, and the
    bound sum |w| * |x| + |b|."""
    c = x.shape[1]
    pad, x64, w64 = (p, p, p, p), x.astype(np.float64), w.astype(np.float64)
    b64 = None if bias is None else bias.astype(np.float64)
    ref = nb.conv2d(x64, w64, b64, (s, s), pad, (1, 1), c, act)
    bound = nb.conv2d(np.abs(x64), np.abs(w64), None if b64 is None else np.abs(b64), (s, s),
                      pad, (1, 1), c)
    return ref, bound


GENERAL = dict(
    n=st.integers(1, 2), c=st.sampled_from([1, 3, 8, 17, 32]), h=st.integers(1, 33),
    w=st.integers(1, 33), k=st.sampled_from([3, 5, 7]), stride=st.sampled_from([1, 2]),
    pad_frac=st.floats(0, 0.999), use_bias=st.booleans(),
    act=st.sampled_from([None, "relu", "relu6"]), seed=st.integers(0, 2**16))


@settings(max_examples=120, deadline=None)
@given(**GENERAL)
def test_depthwise_any_matches_numpy(n, c, h, w, k, stride, pad_frac, use_bias, act, seed):
    """_C.depthwise (K 3/5/7, stride 1/2, padding 0..K-1, every activation, H, W 1..33 including
    sizes below K) equals the numpy twin to 1e-5 relative, on every ISA."""
    pad = int(pad_frac * k)
    if min(h, w) + 2 * pad < k:  # no output: the binding refuses it
        with pytest.raises(ValueError):
            _C.depthwise(np.zeros((n, c, h, w), np.float32), np.zeros((c, 1, k, k), np.float32),
                         None, stride, pad)
        return
    rng = np.random.default_rng(seed)
    x, wt = rand(rng, (n, c, h, w)) * 3, rand(rng, (c, 1, k, k))
    bias = rand(rng, (c,)) if use_bias else None
    ref, bound = dw_ref_any(x, wt, bias, stride, pad, act)

    def check(isa):
        y = _C.depthwise(x, wt, bias, stride, pad, act or "none")
        assert y.dtype == np.float32 and y.flags.c_contiguous and y.shape == ref.shape
        err = np.abs(y.astype(np.float64) - ref)
        assert np.all(err <= 1e-5 * bound + 1e-6), f"{isa}: max error {err.max()}"
    on_every_isa(check)


@pytest.mark.parametrize("k, pad", [(1, 0), (2, 1), (4, 2), (9, 4), (11, 3)])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_any_other_kernel_sizes(k, pad, stride):
    rng = np.random.default_rng(k)
    x, wt, b = rand(rng, (1, 5, 23, 18)), rand(rng, (5, 1, k, k)), rand(rng, (5,))
    ref, bound = dw_ref_any(x, wt, b, stride, pad, "relu")

    def check(isa):
        y = _C.depthwise(x, wt, b, stride, pad, "relu")
        assert np.all(np.abs(y - ref) <= 1e-5 * bound + 1e-6), isa
    on_every_isa(check)


def test_depthwise_any_defaults_and_alias():
    """padding defaults to K // 2; K = 3 padding 1 is depthwise3x3, bit for bit."""
    rng = np.random.default_rng(4)
    x, w3, w5 = rand(rng, (2, 6, 15, 12)), rand(rng, (6, 1, 3, 3)), rand(rng, (6, 1, 5, 5))
    b = rand(rng, (6,))
    for s in (1, 2):
        np.testing.assert_array_equal(_C.depthwise(x, w3, b, s, activation="relu6"),
                                      _C.depthwise3x3(x, w3, b, s, "relu6"))
        np.testing.assert_array_equal(_C.depthwise(x, w5, b, s), _C.depthwise(x, w5, b, s, 2))
        assert _C.depthwise(x, w5, None, (s, s), (2, 2)).shape == (2, 6, (15 - 1) // s + 1,
                                                                   (12 - 1) // s + 1)


@pytest.mark.parametrize("k, stride, pad", [(5, 1, 2), (5, 2, 2), (7, 1, 3), (3, 2, 0),
                                            (5, 1, 0), (7, 2, 6)])
def test_backend_routes_depthwise_any(k, stride, pad, monkeypatch):
    """backend.conv2d with groups == C and a (C, 1, K, K) weight goes to _C.depthwise (with its
    fused bias + activation), and agrees with the numpy backend."""
    from minitorch_edge.backend import native_conv
    rng = np.random.default_rng(k * 10 + pad)
    x, wt, b = rand(rng, (1, 8, 17, 20)), rand(rng, (8, 1, k, k)), rand(rng, (8,))
    geom = ((stride, stride), (pad, pad, pad, pad), (1, 1), 8)
    calls = []
    real = native_conv._C.depthwise

    class Spy:
        def __getattr__(self, name):
            return getattr(_C, name)

        @staticmethod
        def depthwise(*a, **kw):
            calls.append(a[3:])
            return real(*a, **kw)
    monkeypatch.setattr(native_conv, "_C", Spy())
    y = native_conv.conv2d(x, wt, b, *geom, act="relu6", inference=True)
    assert calls == [(stride, pad, "relu6")]
    ref = nb.conv2d(x.astype(np.float64), wt.astype(np.float64), b.astype(np.float64), *geom,
                    "relu6")
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    # GELU: the kernel without activation, then one in-place pass
    calls.clear()
    native_conv.conv2d(x, wt, b, *geom, act="gelu")
    assert calls == [(stride, pad, "none")]
    # what the general kernel does not take goes elsewhere: dilation 2, a residual
    calls.clear()
    native_conv.conv2d(x, wt, b, (stride, stride), (pad,) * 4, (2, 2), 8)
    native_conv.conv2d(x, wt, b, *geom, residual=np.zeros_like(y))
    assert calls == []


@pytest.mark.parametrize("stride", [1, 2])
def test_functional_depthwise5x5_native_equals_numpy(stride):
    """F.conv2d 5x5 with groups == C: the forward on _C.depthwise, the backward on the im2col
    path; values and gradients agree with the numpy backend."""
    import minitorch_edge as mte
    import minitorch_edge.nn.functional as F
    rng = np.random.default_rng(8)
    data, wdata, bdata = rand(rng, (2, 6, 15, 12)), rand(rng, (6, 1, 5, 5)), rand(rng, (6,))
    results = {}
    try:
        for name in ("numpy", "native"):
            backend.use(name)
            x = mte.tensor(data, requires_grad=True)
            w = mte.tensor(wdata, requires_grad=True)
            b = mte.tensor(bdata, requires_grad=True)
            y = F.conv2d(x, w, b, stride=stride, padding=2, groups=6)
            (y * y).sum().backward()
            results[name] = [t.detach().numpy() for t in (y, x.grad, w.grad, b.grad)]
    finally:
        backend.use(os.environ.get("MTE_BACKEND", "auto"))
    for a, b in zip(results["numpy"], results["native"]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4)


def torch_ref_any(torch, x, w, bias, s, p, act):
    """torch's depthwise conv2d in float64 with the activation, and the bound |w| * |x| + |b|."""
    F = torch.nn.functional
    c = x.shape[1]
    x64, w64 = torch.from_numpy(x).double(), torch.from_numpy(w).double()
    b64 = None if bias is None else torch.from_numpy(bias).double()
    ref = F.conv2d(x64, w64, b64, s, p, 1, c)
    if act == "relu":
        ref = ref.clamp(min=0)
    elif act == "relu6":
        ref = ref.clamp(0, 6)
    bound = F.conv2d(x64.abs(), w64.abs(), None if b64 is None else b64.abs(), s, p, 1, c)
    return ref.numpy(), bound.numpy()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 2), c=st.sampled_from([1, 2, 5, 16]), h=st.integers(1, 40),
       w=st.integers(1, 40), k=st.sampled_from([3, 5, 7]), stride=st.sampled_from([1, 2]),
       pad_frac=st.floats(0, 0.999), use_bias=st.booleans(),
       act=st.sampled_from([None, "relu", "relu6"]), seed=st.integers(0, 2**16))
def test_depthwise_any_matches_torch(n, c, h, w, k, stride, pad_frac, use_bias, act, seed):
    """_C.depthwise (the strip kernels for K 3/5/7: strips of 16 columns, a last one of <= 8,
    rows of padding skipped at the top and bottom) equals torch's conv2d with groups = C
    to float32 rounding, H, W 1..40, on every ISA."""
    torch = pytest.importorskip("torch")
    pad = int(pad_frac * k)
    if min(h, w) + 2 * pad < k:
        return  # no output (refused: test_depthwise_any_matches_numpy)
    rng = np.random.default_rng(seed)
    x, wt = rand(rng, (n, c, h, w)) * 3, rand(rng, (c, 1, k, k))
    bias = rand(rng, (c,)) if use_bias else None
    ref, bound = torch_ref_any(torch, x, wt, bias, stride, pad, act)

    def check(isa):
        y = _C.depthwise(x, wt, bias, stride, pad, act or "none")
        err = np.abs(y.astype(np.float64) - ref)
        assert np.all(err <= 2.0 * (k * k + 2) * EPS32 * bound + 1e-6), \
            f"{isa}: max error {err.max()}"
    on_every_isa(check)


@pytest.mark.parametrize("shape, k, stride, pad", [
    ((1, 3, 56, 56), 5, 2, 2), ((1, 2, 28, 28), 5, 1, 2), ((1, 4, 14, 14), 5, 2, 2),
    ((1, 3, 7, 7), 5, 1, 2), ((1, 2, 112, 97), 5, 1, 2), ((2, 2, 61, 70), 7, 2, 3),
    ((1, 2, 50, 45), 3, 1, 0), ((1, 2, 47, 66), 7, 1, 5)])
def test_depthwise_any_wide_planes(shape, k, stride, pad):
    """Planes wider and taller than the hypothesis sizes (EfficientNet-Lite0's 5x5 shapes,
    several 16-column strips, the rows prefetched ahead) equal the numpy twin on every ISA."""
    rng = np.random.default_rng(sum(shape) + k)
    x, wt, b = rand(rng, shape), rand(rng, (shape[1], 1, k, k)), rand(rng, (shape[1],))
    ref, bound = dw_ref_any(x, wt, b, stride, pad, "relu6")

    def check(isa):
        y = _C.depthwise(x, wt, b, stride, pad, "relu6")
        assert np.all(np.abs(y - ref) <= 1e-5 * bound + 1e-6), isa
    on_every_isa(check)


@pytest.mark.parametrize("k, stride", [(3, 1), (5, 1), (5, 2), (7, 2)])
@pytest.mark.parametrize("act", ["none", "relu", "relu6"])
def test_depthwise_any_nan_reaches_its_window(k, stride, act):
    """A NaN input makes exactly the outputs whose window holds it NaN (ReLU / ReLU6 keep NaN),
    the others stay finite."""
    rng = np.random.default_rng(k + stride)
    h, w, pad = 19, 21, k // 2
    x, wt = rand(rng, (1, 2, h, w)), rand(rng, (2, 1, k, k))
    x[0, 1, 9, 4] = np.nan
    on = np.zeros((h + 2 * pad, w + 2 * pad), bool)  # the NaN in padded coordinates
    on[9 + pad, 4 + pad] = True
    ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    want = np.array([[on[r * stride:r * stride + k, s * stride:s * stride + k].any()
                      for s in range(wo)] for r in range(ho)])

    def check(isa):
        y = _C.depthwise(x, wt, None, stride, pad, act)
        np.testing.assert_array_equal(np.isnan(y[0, 1]), want, err_msg=isa)
        assert np.isfinite(y[0, 0]).all(), isa
    on_every_isa(check)


# --------------------------------------------------------------------------- bad input

X = np.zeros((1, 2, 5, 5), np.float32)
W = np.zeros((2, 1, 3, 3), np.float32)
GY = np.zeros((1, 2, 5, 5), np.float32)
BAD = [
    (lambda: _C.depthwise3x3(X.astype(np.float64), W, None, 1), TypeError),
    (lambda: _C.depthwise3x3([[1.0]], W, None, 1), TypeError),
    (lambda: _C.depthwise3x3(X, W.astype(np.float16), None, 1), TypeError),
    (lambda: _C.depthwise3x3(X[0], W, None, 1), ValueError),
    (lambda: _C.depthwise3x3(X[:, :, :, ::2], W, None, 1), ValueError),
    (lambda: _C.depthwise3x3(X, W[:1], None, 1), ValueError),
    (lambda: _C.depthwise3x3(X, np.zeros((2, 1, 5, 5), np.float32), None, 1), ValueError),
    (lambda: _C.depthwise3x3(X, W, np.zeros(3, np.float32), 1), ValueError),
    (lambda: _C.depthwise3x3(X, W, None, 3), ValueError),
    (lambda: _C.depthwise3x3(X, W, None, (1, 2)), ValueError),
    (lambda: _C.depthwise3x3(X, W, None, 1.0), TypeError),
    (lambda: _C.depthwise3x3(X, W, None, 1, "gelu"), ValueError),
    (lambda: _C.depthwise(X.astype(np.float64), W), TypeError),
    (lambda: _C.depthwise(X, np.zeros((2, 1, 3, 5), np.float32)), ValueError),
    (lambda: _C.depthwise(X, np.zeros((2, 2, 3, 3), np.float32)), ValueError),
    (lambda: _C.depthwise(X, np.zeros((2, 1, 33, 33), np.float32)), ValueError),
    (lambda: _C.depthwise(X, W, None, 3), ValueError),
    (lambda: _C.depthwise(X, W, None, 1, 3), ValueError),
    (lambda: _C.depthwise(X, W, None, 1, -1), ValueError),
    (lambda: _C.depthwise(X, W, None, 1, (1, 2)), ValueError),
    (lambda: _C.depthwise(X, W, None, 1, 1, "gelu"), ValueError),
    (lambda: _C.depthwise(X, np.zeros((2, 1, 7, 7), np.float32), None, 1, 0), ValueError),
    (lambda: _C.depthwise(X, W, np.zeros(3, np.float32)), ValueError),
    (lambda: _C.depthwise3x3_backward_input(GY, W, 1, 5, 6), ValueError),
    (lambda: _C.depthwise3x3_backward_input(GY, W, 2, 5, 5), ValueError),
    (lambda: _C.depthwise3x3_backward_input(GY, W, 1, -5, 5), ValueError),
    (lambda: _C.depthwise3x3_backward_input(GY, W[:1], 1, 5, 5), ValueError),
    (lambda: _C.depthwise3x3_backward_input(GY.astype(np.float64), W, 1, 5, 5), TypeError),
    (lambda: _C.depthwise3x3_backward_weight(GY, X[:, :1], 1), ValueError),
    (lambda: _C.depthwise3x3_backward_weight(GY, X, 2), ValueError),
    (lambda: _C.depthwise3x3_backward_weight(GY, X.astype(np.int32), 1), TypeError),
]


@pytest.mark.parametrize("call, exc", BAD)
def test_bad_input_raises(call, exc):
    with pytest.raises(exc):
        call()


def test_zero_sized_inputs():
    for shape in ((0, 3, 5, 5), (2, 0, 5, 5), (2, 3, 0, 5), (2, 3, 5, 0)):
        x = np.zeros(shape, np.float32)
        w = np.zeros((shape[1], 1, 3, 3), np.float32)
        for s in (1, 2):
            y = _C.depthwise3x3(x, w, None, s)
            ho, wo = ((d - 1) // s + 1 if d else 0 for d in shape[2:])
            assert y.shape == shape[:2] + (ho, wo)
            assert _C.depthwise3x3_backward_input(y, w, s, shape[2], shape[3]).shape == shape
            gw = _C.depthwise3x3_backward_weight(y, x, s)
            assert gw.shape == (shape[1], 1, 3, 3) and not gw.any()


@pytest.mark.parametrize("stride", [1, 2])
def test_functional_depthwise_native_equals_numpy(stride):
    """F.conv2d with groups == C (routed by native_conv to the depthwise kernels): values and
    the gradients of input, weight and bias agree with the numpy backend."""
    import minitorch_edge as mte
    import minitorch_edge.nn.functional as F
    rng = np.random.default_rng(7)
    data, wdata, bdata = rand(rng, (2, 6, 15, 12)), rand(rng, (6, 1, 3, 3)), rand(rng, (6,))
    results = {}
    try:
        for name in ("numpy", "native"):
            backend.use(name)
            x = mte.tensor(data, requires_grad=True)
            w = mte.tensor(wdata, requires_grad=True)
            b = mte.tensor(bdata, requires_grad=True)
            y = F.conv2d(x, w, b, stride=stride, padding=1, groups=6)
            (y * y).sum().backward()
            results[name] = [t.detach().numpy() for t in (y, x.grad, w.grad, b.grad)]
    finally:
        backend.use(os.environ.get("MTE_BACKEND", "auto"))
    for a, b in zip(results["numpy"], results["native"]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4)
