"""Tests of the native convolution: ``_C.conv2d*`` (native/src/conv.c) and the backend module
``backend.native_conv`` that dispatches to it (and to the depthwise / Winograd kernels).

Every native result is compared with the numpy twin (numpy_backend) in float64, with a float32
tolerance that grows with the length of each sum; the adjoint (dot-product) identities check
that the two backward passes are exactly the transposes of the forward map; every ISA this CPU
runs is exercised; bad input to every binding raises TypeError/ValueError; repeated calls do
not grow the workspace arena; training SmallCNN gives the same losses on both backends.
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
if not hasattr(_C, "conv2d"):
    pytest.skip("this build of _C has no conv2d", allow_module_level=True)

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import backend  # noqa: E402
from minitorch_edge.backend import native_conv  # noqa: E402
from minitorch_edge.backend import numpy_backend as ref  # noqa: E402

EPS32 = float(np.finfo(np.float32).eps)


def rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def close(got, expect, bound, terms):
    """|got - expect| <= 2 (terms + 4) eps32 * bound, elementwise (bound: sum of |products|)."""
    got, expect = np.asarray(got, np.float64), np.asarray(expect, np.float64)
    assert got.shape == expect.shape, (got.shape, expect.shape)
    tol = 2.0 * (terms + 4) * EPS32 * np.asarray(bound, np.float64) + 1e-30
    err = np.abs(got - expect)
    assert np.all(err <= tol), f"max error {err.max()} (tol at that point {tol.flat[err.argmax()]})"


def f64(*arrays):
    return [None if a is None else a.astype(np.float64) for a in arrays]


def empty(*shapes):
    """True when a sum in the convolution is empty (the numpy twin's reshapes cannot take
    every such case, so the tests build the expected zeros / bias themselves)."""
    return any(0 in tuple(s) for s in shapes)


def twin_forward(x, w, b, geom):
    y_shape = (x.shape[0], w.shape[0],
               natural(x.shape[2], w.shape[2], geom[0][0], *geom[1][:2], geom[2][0]),
               natural(x.shape[3], w.shape[3], geom[0][1], *geom[1][2:], geom[2][1]))
    if empty(x.shape, w.shape, y_shape):
        out = np.zeros(y_shape)
        return out if b is None else out + b.reshape(1, -1, 1, 1)
    return ref.conv2d(x, w, b, *geom)


def twin_backward_input(gy, w, x_shape, geom):
    if empty(gy.shape, w.shape, x_shape):
        return np.zeros(x_shape)
    return ref.conv2d_backward_input(gy, w, x_shape, *geom)


def twin_backward_weight(gy, x, w_shape, geom):
    if empty(gy.shape, x.shape, w_shape):
        return np.zeros(w_shape)
    return ref.conv2d_backward_weight(gy, x, w_shape, *geom)


def check_forward(x, w, b, geom, act=None):
    y = _C.conv2d(x, w, b, *geom, act=act)
    x64, w64, b64 = f64(x, w, b)
    expect = twin_forward(x64, w64, b64, geom)
    bound = twin_forward(np.abs(x64), np.abs(w64), None if b is None else np.abs(b64), geom)
    if act in ("relu", "relu6"):
        expect = np.maximum(expect, 0)
    if act == "relu6":
        expect = np.minimum(expect, 6)
    close(y, expect, bound, int(np.prod(w.shape[1:])))
    assert y.dtype == np.float32 and y.flags.c_contiguous
    return y


def natural(size, k, s, p0, p1, d):
    return ref.conv_output_size(size, k, s, p0, p1, d)


def check_backward(x, w, gy, geom):
    gx = _C.conv2d_backward_input(gy, w, x.shape, *geom)
    x64, w64, gy64 = f64(x, w, gy)
    close(gx, twin_backward_input(gy64, w64, x.shape, geom),
          twin_backward_input(np.abs(gy64), np.abs(w64), x.shape, geom), w.shape[0] * 16)
    gw = _C.conv2d_backward_weight(gy, x, w.shape, *geom)
    close(gw, twin_backward_weight(gy64, x64, w.shape, geom),
          twin_backward_weight(np.abs(gy64), np.abs(x64), w.shape, geom),
          gy.shape[0] * gy.shape[2] * gy.shape[3])


@st.composite
def conv_cases(draw):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cg = draw(st.sampled_from([1, 2, 3, 5, 8, 17]))
    kg = draw(st.sampled_from([1, 2, 4, 7, 16, 33]))
    if draw(st.booleans()) and draw(st.booleans()):
        cg, kg, groups = 1, draw(st.sampled_from([1, 2])), draw(st.sampled_from([3, 8]))
    n = draw(st.sampled_from([0, 1, 1, 2, 3]))
    h, w = draw(st.sampled_from([1, 2, 5, 7, 13, 16])), draw(st.sampled_from([1, 3, 6, 11, 29]))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = tuple(draw(st.integers(0, 3)) for _ in range(4))
    dilation = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    return (n, groups * cg, h, w), (groups * kg, cg, kh, kw), (stride, padding, dilation, groups)


@settings(max_examples=60, deadline=None)
@given(case=conv_cases(), bias=st.booleans(), act=st.sampled_from([None, "relu", "relu6"]),
       seed=st.integers(0, 2**16), dho=st.integers(-1, 1), dwo=st.integers(-1, 1))
def test_matches_numpy_twin(case, bias, act, seed, dho, dwo):
    x_shape, w_shape, geom = case
    (sh, sw), (top, bottom, left, right), (dh, dw), _ = geom
    ho = natural(x_shape[2], w_shape[2], sh, top, bottom, dh)
    wo = natural(x_shape[3], w_shape[3], sw, left, right, dw)
    if ho < 0 or wo < 0:
        with pytest.raises(ValueError):
            _C.conv2d(np.zeros(x_shape, np.float32), np.zeros(w_shape, np.float32), None, *geom)
        return
    rng = np.random.default_rng(seed)
    x, w = rand(rng, x_shape), rand(rng, w_shape)
    b = rand(rng, (w_shape[0],)) if bias else None
    check_forward(x, w, b, geom, act)
    # backward with grad_y of the forward's size, or one row/column more or fewer (the
    # numpy twin reads grad_y's size; backward_weight only where its windows stay inside)
    gy = rand(rng, (x_shape[0], w_shape[0], max(0, ho + min(dho, 0)), max(0, wo + min(dwo, 0))))
    check_backward(x, w, gy, geom)
    gy = rand(rng, (x_shape[0], w_shape[0], max(0, ho + dho), max(0, wo + dwo)))
    gx = _C.conv2d_backward_input(gy, w, x_shape, *geom)
    gy64, w64 = f64(gy, w)
    close(gx, twin_backward_input(gy64, w64, x_shape, geom),
          twin_backward_input(np.abs(gy64), np.abs(w64), x_shape, geom), w_shape[0] * 16)


# fixed shapes that cross the GEMM's blocking: K past KC, outputs past MC, pixels past the
# column block, the 1x1 direct GEMM, depthwise direct loops, tiny images in a batch
FIXED = [
    ((1, 64, 9, 9), (24, 64, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ((1, 4, 6, 6), (200, 4, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ((1, 2, 37, 41), (5, 2, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ((2, 96, 14, 14), (144, 96, 1, 1), ((1, 1), (0, 0, 0, 0), (1, 1), 1)),
    ((2, 8, 9, 7), (16, 8, 1, 1), ((1, 1), (0, 1, 0, 2), (1, 1), 1)),
    ((2, 6, 11, 13), (9, 2, 1, 1), ((2, 3), (0, 0, 0, 0), (1, 1), 3)),
    ((2, 16, 12, 12), (16, 1, 5, 5), ((2, 2), (2, 2, 2, 2), (1, 1), 16)),
    ((2, 16, 12, 12), (16, 1, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 16)),
    ((3, 5, 4, 4), (7, 5, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ((2, 32, 16, 16), (32, 32, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ((2, 32, 17, 17), (48, 32, 3, 3), ((2, 2), (1, 0, 0, 1), (1, 1), 1)),
    ((1, 3, 40, 48), (16, 3, 5, 5), ((1, 1), (2, 2, 2, 2), (2, 2), 1)),
    ((2, 0, 5, 5), (4, 0, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ((2, 3, 5, 5), (0, 3, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
    ((2, 3, 0, 4), (2, 3, 3, 3), ((1, 1), (1, 1, 1, 1), (1, 1), 1)),
]


@pytest.mark.parametrize("x_shape,w_shape,geom", FIXED)
def test_fixed_shapes(x_shape, w_shape, geom):
    rng = np.random.default_rng(1)
    x, w, b = rand(rng, x_shape), rand(rng, w_shape), rand(rng, w_shape[:1])
    for act in (None, "relu", "relu6"):
        y = check_forward(x, w, b, geom, act)
    check_backward(x, w, rand(rng, y.shape), geom)


def test_every_isa_and_thread_count():
    rng = np.random.default_rng(2)
    x, w = rand(rng, (2, 32, 15, 15)), rand(rng, (48, 32, 3, 3))
    gy = rand(rng, (2, 48, 15, 15))
    geom = ((1, 1), (1, 1, 1, 1), (1, 1), 1)
    old_threads = _C.get_num_threads()
    try:
        for isa in _C.available_isas():
            _C.set_isa(isa)
            for n in (1, 3):
                _C.set_num_threads(n)
                check_forward(x, w, None, geom, "relu")
                check_backward(x, w, gy, geom)
    finally:
        _C.set_isa("auto")
        _C.set_num_threads(old_threads)


@settings(max_examples=20, deadline=None)
@given(case=conv_cases(), seed=st.integers(0, 2**16))
def test_adjoint_identities(case, seed):
    """<conv(x, w), g> == <x, backward_input(g, w)> == <w, backward_weight(g, x)>: the backward
    passes are exactly the transposes of the forward map (a check that needs no reference)."""
    x_shape, w_shape, geom = case
    (sh, sw), (top, bottom, left, right), (dh, dw), _ = geom
    if natural(x_shape[2], w_shape[2], sh, top, bottom, dh) < 0 or \
            natural(x_shape[3], w_shape[3], sw, left, right, dw) < 0:
        return
    rng = np.random.default_rng(seed)
    x, w = rand(rng, x_shape), rand(rng, w_shape)
    y = _C.conv2d(x, w, None, *geom)
    g = rand(rng, y.shape)
    lhs = float(np.dot(y.ravel().astype(np.float64), g.ravel()))
    gx = _C.conv2d_backward_input(g, w, x_shape, *geom)
    gw = _C.conv2d_backward_weight(g, x, w_shape, *geom)
    scale = 1e-4 * (np.abs(y).sum() * np.abs(g).max(initial=0.0) + 1.0)
    assert abs(lhs - float(np.dot(x.ravel().astype(np.float64), gx.ravel()))) <= scale
    assert abs(lhs - float(np.dot(w.ravel().astype(np.float64), gw.ravel()))) <= scale


# --------------------------------------------------------------------------- backend module

GEOM = ((1, 1), (1, 1, 1, 1), (1, 1), 1)


def test_backend_dispatch_and_fallbacks():
    for name in ("conv2d", "conv2d_backward_input", "conv2d_backward_weight"):
        assert backend.KERNELS[name].native == "native_conv"
    if backend.active() == "native":
        assert backend.conv2d is native_conv.conv2d
    rng = np.random.default_rng(3)
    x, w, b = rand(rng, (2, 6, 10, 10)), rand(rng, (4, 6, 3, 3)), rand(rng, (4,))
    want = ref.conv2d(x, w, b, *GEOM)
    np.testing.assert_allclose(native_conv.conv2d(x, w, b, *GEOM), want, rtol=1e-5, atol=1e-4)
    # non-contiguous float32 input: copied, then native
    xt = np.asfortranarray(x)
    np.testing.assert_allclose(native_conv.conv2d(xt, w, b, *GEOM), want, rtol=1e-5, atol=1e-4)
    # float64: the numpy twin, bit for bit
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    got = native_conv.conv2d(x64, w64, None, *GEOM)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, ref.conv2d(x64, w64, None, *GEOM))
    g64 = rng.standard_normal((2, 4, 10, 10))
    np.testing.assert_array_equal(native_conv.conv2d_backward_input(g64, w64, x.shape, *GEOM),
                                  ref.conv2d_backward_input(g64, w64, x.shape, *GEOM))
    np.testing.assert_array_equal(native_conv.conv2d_backward_weight(g64, x64, w.shape, *GEOM),
                                  ref.conv2d_backward_weight(g64, x64, w.shape, *GEOM))
    # lists of ints or tuples: both accepted
    geom = ([2, 1], [0, 1, 1, 0], [1, 2], 2)
    w2 = rand(rng, (4, 3, 3, 3))
    np.testing.assert_allclose(native_conv.conv2d(x, w2, None, *geom),
                               ref.conv2d(x, w2, None, *geom), rtol=1e-5, atol=1e-4)


_DISPATCH_CHECK = """
import numpy as np
from minitorch_edge.backend import native_conv, numpy_backend as ref
rng = np.random.default_rng(4)
rand = lambda shape: rng.standard_normal(shape).astype(np.float32)
stride, (h, w_) = {stride}, {size}
geom = ((stride, stride), (1, 1, 1, 1), (1, 1), 8)
x, w, b = rand((2, 8, h, w_)), rand((8, 1, 3, 3)), rand((8,))
y = native_conv.conv2d(x, w, b, *geom)
np.testing.assert_allclose(y, ref.conv2d(x, w, b, *geom), rtol=1e-4, atol=1e-4)
g = rand(y.shape)
np.testing.assert_allclose(native_conv.conv2d_backward_input(g, w, x.shape, *geom),
                           ref.conv2d_backward_input(g, w, x.shape, *geom), rtol=1e-4, atol=1e-4)
np.testing.assert_allclose(native_conv.conv2d_backward_weight(g, x, w.shape, *geom),
                           ref.conv2d_backward_weight(g, x, w.shape, *geom), rtol=1e-4, atol=1e-3)
x, w = rand((1, 32, 20, 20)), rand((32, 32, 3, 3))
geom = ((1, 1), (1, 1, 1, 1), (1, 1), 1)
np.testing.assert_allclose(native_conv.conv2d(x, w, b[:1].repeat(32), *geom),
                           ref.conv2d(x, w, b[:1].repeat(32), *geom), rtol=1e-3, atol=1e-3)
"""


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("size", [(12, 12), (13, 12), (12, 13)])
def test_depthwise_and_winograd_shapes_through_the_backend(stride, size):
    """Whatever kernel the dispatcher picks (depthwise 3x3, Winograd, im2col), the results are
    the twin's (Winograd's F(4x4) tile has a larger float32 error: looser tolerance). Run in a
    subprocess: these are other kernels' code paths, and a crash there must fail this test,
    not end the test session."""
    import subprocess
    import sys
    code = _DISPATCH_CHECK.format(stride=stride, size=size)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr[-3000:]}"


def test_conv2d_fused_activation():
    rng = np.random.default_rng(5)
    x, w, b = rand(rng, (2, 3, 9, 9)) * 4, rand(rng, (5, 3, 3, 3)), rand(rng, (5,))
    plain = ref.conv2d(x, w, b, *GEOM)
    np.testing.assert_allclose(native_conv.conv2d(x, w, b, *GEOM, act="relu"),
                               np.maximum(plain, 0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(native_conv.conv2d(x, w, b, *GEOM, act="relu6"),
                               np.clip(plain, 0, 6), rtol=1e-5, atol=1e-4)
    # depthwise 3x3 (goes to _C.depthwise3x3 with its activation when that is built)
    dw = ((1, 1), (1, 1, 1, 1), (1, 1), 3)
    w3 = rand(rng, (3, 1, 3, 3))
    np.testing.assert_allclose(native_conv.conv2d(x, w3, b[:3], *dw, act="relu6"),
                               np.clip(ref.conv2d(x, w3, b[:3], *dw), 0, 6), rtol=1e-5, atol=1e-4)
    x64, w64, b64 = f64(x, w, b)
    np.testing.assert_allclose(native_conv.conv2d(x64, w64, b64, *GEOM, act="relu6"),
                               np.clip(ref.conv2d(x64, w64, b64, *GEOM), 0, 6))
    with pytest.raises(ValueError):
        native_conv.conv2d(x64, w64, b64, *GEOM, act="swish")


def test_gradients_through_functional_match_numpy_backend():
    """Autograd through nn.functional.conv2d: native float32 path == numpy float32 path."""
    import minitorch_edge.nn.functional as F
    rng = np.random.default_rng(6)
    xs, ws, bs = rand(rng, (2, 4, 11, 9)), rand(rng, (6, 2, 3, 2)), rand(rng, (6,))

    def grads(name):
        backend.use(name)
        try:
            x, w, b = (mte.tensor(a, requires_grad=True) for a in (xs, ws, bs))
            y = F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
            (y * y).sum().backward()
            return [t.grad.numpy() for t in (x, w, b)] + [y.detach().numpy()]
        finally:
            backend.use(os.environ.get("MTE_BACKEND", "auto"))

    for got, want in zip(grads("native"), grads("numpy")):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_small_cnn_training_matches_numpy_backend():
    """Ten SGD steps of SmallCNN on the native backend and on the numpy one: same losses."""
    from minitorch_edge import models, nn, optim
    rng = np.random.default_rng(7)
    data = [(rand(rng, (16, 1, 28, 28)), rng.integers(0, 10, 16)) for _ in range(10)]

    def losses(name):
        backend.use(name)
        try:
            mte.manual_seed(0)
            model = models.SmallCNN(in_channels=1, num_classes=10, input_size=28)
            opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            loss_fn, out = nn.CrossEntropyLoss(), []
            for xb, yb in data:
                opt.zero_grad()
                loss = loss_fn(model(mte.tensor(xb)), mte.tensor(yb))
                loss.backward()
                opt.step()
                out.append(loss.item())
            return np.array(out)
        finally:
            backend.use(os.environ.get("MTE_BACKEND", "auto"))

    native, numpy = losses("native"), losses("numpy")
    assert native[-1] < native[0]  # it learns something
    np.testing.assert_allclose(native, numpy, rtol=2e-4, atol=1e-5)


# --------------------------------------------------------------------------- arena, bad input

def test_arena_peak_stable_after_first_call():
    rng = np.random.default_rng(8)
    x, w = rand(rng, (2, 24, 20, 20)), rand(rng, (40, 24, 3, 3))
    geom = ((1, 1), (1, 1, 1, 1), (1, 1), 1)
    y = _C.conv2d(x, w, None, *geom, act="relu")
    _C.conv2d_backward_input(y, w, x.shape, *geom)
    _C.conv2d_backward_weight(y, x, w.shape, *geom)
    peak = _C.arena_peak_bytes()
    assert peak > 0
    for _ in range(5):
        _C.conv2d(x, w, None, *geom, act="relu")
        _C.conv2d_backward_input(y, w, x.shape, *geom)
        _C.conv2d_backward_weight(y, x, w.shape, *geom)
    assert _C.arena_peak_bytes() == peak


def test_bad_input_raises():
    x, w = np.zeros((1, 4, 5, 5), np.float32), np.zeros((2, 4, 3, 3), np.float32)
    gy = np.zeros((1, 2, 3, 3), np.float32)
    g = ((1, 1), (0, 0, 0, 0), (1, 1), 1)
    type_errors = [
        lambda: _C.conv2d(x.astype(np.float64), w),
        lambda: _C.conv2d([[1.0]], w),
        lambda: _C.conv2d(x, w, np.zeros(2, np.int32)),
        lambda: _C.conv2d(x, w, None, 1.5),
        lambda: _C.conv2d(x, w, None, 1, 0, 1, 1, 7),
        lambda: _C.conv2d_backward_input(gy.astype(np.float64), w, x.shape, *g),
        lambda: _C.conv2d_backward_weight(gy, x.astype(np.float16), w.shape, *g),
        lambda: _C.conv2d_backward_weight(gy, x, ("a", 4, 3, 3), *g),
    ]
    value_errors = [
        lambda: _C.conv2d(x[0], w),
        lambda: _C.conv2d(x[:, :, :, ::2], w),
        lambda: _C.conv2d(x, np.zeros((2, 3, 3, 3), np.float32)),          # channels
        lambda: _C.conv2d(x, np.zeros((3, 2, 3, 3), np.float32), None, 1, 0, 1, 2),  # 3 % 2
        lambda: _C.conv2d(x, w, np.zeros(3, np.float32)),                   # bias length
        lambda: _C.conv2d(x, w, None, 0),                                   # stride 0
        lambda: _C.conv2d(x, w, None, 1, -1),                               # padding < 0
        lambda: _C.conv2d(x, w, None, 1, (1, 2, 3)),                        # 3 pads
        lambda: _C.conv2d(x, w, None, 1, 0, 0),                             # dilation 0
        lambda: _C.conv2d(x, w, None, 1, 0, 1, 0),                          # groups 0
        lambda: _C.conv2d(x, w, None, 1, 0, 1, 1, "swish"),
        lambda: _C.conv2d(x, w, None, 1, 0, 3),                             # kernel too big
        lambda: _C.conv2d(x, w, None, 2**31),
        lambda: _C.conv2d(x, np.zeros((2, 4, 0, 3), np.float32)),          # 0-size kernel
        lambda: _C.conv2d_backward_input(gy, w, (1, 4, 5), *g),
        lambda: _C.conv2d_backward_input(gy, w, (2, 4, 5, 5), *g),         # batch
        lambda: _C.conv2d_backward_input(gy, w, (1, 3, 5, 5), *g),         # channels
        lambda: _C.conv2d_backward_input(gy, w, (1, 4, -5, 5), *g),
        lambda: _C.conv2d_backward_weight(gy, x, (3, 4, 3, 3), *g),        # grad_y channels
        lambda: _C.conv2d_backward_weight(gy[:, :1], x, w.shape, *g),
        lambda: _C.conv2d_backward_weight(gy, x, (2, 4, 3), *g),
    ]
    for f in type_errors:
        with pytest.raises(TypeError):
            f()
    for f in value_errors:
        with pytest.raises(ValueError):
            f()
    # padding as (ph, pw) is symmetric; zero-size batches work
    np.testing.assert_array_equal(_C.conv2d(x, w, None, 1, (1, 0)),
                                  _C.conv2d(x, w, None, 1, (1, 1, 0, 0)))
    assert _C.conv2d(x[:0], w).shape == (0, 2, 3, 3)


# ---- prepacked weights (inference) -------------------------------------------------------------

@pytest.mark.parametrize("shape,groups,stride,padding", [
    ((1, 96, 14, 14, 576, 1), 1, 1, 0),      # 1x1: the direct GEMM
    ((2, 16, 9, 9, 24, 3), 1, 2, 1),         # strided 3x3: im2col
    ((1, 12, 8, 8, 18, 3), 3, 1, 1),         # groups
])
def test_packed_weights_match_and_follow_writes(shape, groups, stride, padding):
    """Inference calls (inference=True) of the im2col conv reuse packed weight panels: the
    result is bitwise the per-call one, and a write to the weight drops the panels."""
    from minitorch_edge.backend import native_conv, prepared
    n, c, h, w_, k, ks = shape
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, c, h, w_)).astype(np.float32)
    w = rng.standard_normal((k, c // groups, ks, ks)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    geom = ((stride, stride), (padding,) * 4, (1, 1), groups)
    plain = _C.conv2d(x, w, b, *geom)
    misses = prepared.stats()["misses"]
    first = native_conv.conv2d(x, w, b, *geom, inference=True)
    again = native_conv.conv2d(x, w, b, *geom, inference=True)
    assert prepared.stats()["misses"] == misses + 1       # packed once, then reused
    np.testing.assert_array_equal(first, plain)
    np.testing.assert_array_equal(again, plain)
    native_conv.conv2d(x, w, b, *geom)                    # a training call packs nothing
    assert prepared.stats()["misses"] == misses + 1
    w *= 0.5                                              # written in place ...
    prepared.wrote(w)                                     # ... and announced
    np.testing.assert_array_equal(native_conv.conv2d(x, w, b, *geom, inference=True),
                                  _C.conv2d(x, w, b, *geom))


def test_packed_weight_binding_errors():
    w = np.ones((8, 4, 3, 3), np.float32)
    x = np.ones((1, 4, 5, 5), np.float32)
    packed = _C.conv2d_pack_weight(w)
    assert packed.ndim == 1 and packed.dtype == np.float32
    assert _C.conv2d_pack_weight(np.ones((4, 1, 3, 3), np.float32), 4) is None  # depthwise
    with pytest.raises(ValueError, match="packed_w was not packed for this weight"):
        _C.conv2d(x, np.ones((8, 2, 3, 3), np.float32), None, 1, 1, 1, 2, packed_w=packed)
    with pytest.raises(ValueError, match="pack it again"):
        _C.conv2d(x, w, None, 1, 1, packed_w=packed[:10])
    with pytest.raises(TypeError):
        _C.conv2d(x, w, None, 1, 1, packed_w=packed.astype(np.float64))
    with pytest.raises(ValueError, match="divisible by groups"):
        _C.conv2d_pack_weight(w, 3)
    with pytest.raises(ValueError, match="groups must be positive"):
        _C.conv2d_pack_weight(w, 0)


# ---- 1x1 convolutions: x read in place (the AVX-512 direct tile) -------------------------------

@pytest.mark.parametrize("cin,cout,hw", [
    (16, 96, 1), (3, 8, 4), (5, 13, 17), (24, 8, 20), (8, 16, 33), (7, 9, 47), (160, 24, 49),
    (96, 24, 52), (64, 40, 53), (300, 16, 196), (1, 8, 97), (600, 8, 98), (32, 16, 784),
])
def test_1x1_in_place_every_width_isa_and_epilogue(cin, cout, hw):
    """y = act(W x + b + residual) for 1x1 convs whose pixel counts hit every tile shape of
    the in-place path (masked last vector, 1-4 extra columns down the rows, 49 = 48 + 1,
    196, K = 1 and past the k slice, channels not a multiple of 8), prepacked or not, on
    every ISA (those without the direct tile take the packed path), against float64."""
    rng = np.random.default_rng(cin * 1000 + hw)
    side = {1: (1, 1), 4: (2, 2), 49: (7, 7), 196: (14, 14), 784: (28, 28)}.get(hw, (1, hw))
    x = rand(rng, (1, cin) + side)
    w = rand(rng, (cout, cin, 1, 1)) * 3.0
    b = rand(rng, (cout,))
    r = rand(rng, (1, cout) + side)
    x64, w64 = x.reshape(cin, -1).astype(np.float64), w.reshape(cout, cin).astype(np.float64)
    base = w64 @ x64
    bound = np.abs(w64) @ np.abs(x64) + np.abs(b)[:, None] + np.abs(r.reshape(cout, -1))
    try:
        for isa in _C.available_isas():
            _C.set_isa(isa)
            packed = _C.conv2d_pack_weight(w, 1)
            for act in (None, "relu", "relu6"):
                for res in (None, r):
                    want = base + b[:, None] + (0 if res is None else r.reshape(cout, -1))
                    if act:
                        want = np.clip(want, 0, 6 if act == "relu6" else np.inf)
                    for pk in (None, packed):
                        y = _C.conv2d(x, w, b, 1, 0, 1, 1, act, res, packed_w=pk)
                        close(y.reshape(cout, -1), want, bound, cin + 2)
    finally:
        _C.set_isa("auto")
