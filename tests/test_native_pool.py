"""Native pooling (_C.max_pool2d, _C.avg_pool2d and their backward, through
backend.native_pool) against the numpy twins.

Every native_pool function against its twin over hypothesis windows, with ties, NaN and -inf
(max pooling must agree bit for bit, indices included, and with PyTorch), the 2x2 / 3x3 fast
paths on every ISA this CPU runs, the fallbacks to the twin, and nn.functional with the native
and the numpy backend. Bad input to every binding raises TypeError / ValueError without
crashing.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from native_harness import on_every_isa as _on_every_isa, rand, require_native

_C = require_native("max_pool2d", "pooling")

from minitorch_edge import backend  # noqa: E402
from minitorch_edge.backend import native_pool  # noqa: E402
from minitorch_edge.backend import numpy_backend as nb  # noqa: E402

ISAS = list(_C.available_isas())


def on_every_isa(fn):
    _on_every_isa(_C, fn)


@st.composite
def windows(draw, dilation=True):
    k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    p = (draw(st.integers(0, k[0] // 2)), draw(st.integers(0, k[1] // 2)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) if dilation else (1, 1)
    return k, s, p, d


def fits(h, w, k, s, p, d, ceil):
    """At least one output, and every window holds a real element (with dilation a window
    can fall entirely into padding; there PyTorch's index points outside the plane, the
    twin's is negative and ours is the nearest element: no reference to compare with)."""
    for size, kk, ss, pp, dd in ((h, k[0], s[0], p[0], d[0]), (w, k[1], s[1], p[1], d[1])):
        out = nb.pool_output_size(size, kk, ss, pp, dd, ceil)
        if out < 1:
            return False
        taps = np.arange(out)[:, None] * ss - pp + np.arange(kk)[None, :] * dd
        if not np.all(((taps >= 0) & (taps < size)).any(axis=1)):
            return False
    return True


def pool_input(rng, shape, special):
    """Plain values, or ties, NaN and -inf to exercise the tie and NaN rules."""
    if not special:
        return rand(rng, shape)
    x = rng.integers(-2, 3, shape).astype(np.float32)
    x[rng.random(shape) < 0.04] = np.nan
    x[rng.random(shape) < 0.04] = -np.inf
    return x


def torch_max_pool(x, k, s, p, d, ceil):
    torch = pytest.importorskip("torch")
    y, idx = torch.nn.functional.max_pool2d(torch.from_numpy(x), k, s, p, d, ceil_mode=ceil,
                                            return_indices=True)
    return y.numpy(), idx.numpy()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 5), h=st.integers(1, 20), w=st.integers(1, 20),
       win=windows(), ceil=st.booleans(), special=st.booleans(), seed=st.integers(0, 2**16))
def test_max_pool_matches_numpy(n, c, h, w, win, ceil, special, seed):
    """Values bit for bit as the twin's; indices as PyTorch's (the twin's tie loop skips
    offset 0, so on a tie with the window's first element it reports a later one)."""
    k, s, p, d = win
    if not fits(h, w, k, s, p, d, ceil):
        return
    rng = np.random.default_rng(seed)
    x = pool_input(rng, (n, c, h, w), special)
    y, idx = native_pool.max_pool2d(x, k, s, p, d, ceil)
    y_ref, idx_ref = nb.max_pool2d(x, k, s, p, d, ceil)
    np.testing.assert_array_equal(y, y_ref)
    assert idx.dtype == np.int64 and idx.shape == idx_ref.shape
    if not special:  # distinct values: the twin's indices are right
        np.testing.assert_array_equal(idx, idx_ref)
    y_t, idx_t = torch_max_pool(x, k, s, p, d, ceil)
    np.testing.assert_array_equal(y, y_t)
    np.testing.assert_array_equal(idx, idx_t)
    gy = rand(rng, y.shape)
    np.testing.assert_allclose(native_pool.max_pool2d_backward(gy, idx, x.shape),
                               nb.max_pool2d_backward(gy, idx, x.shape), rtol=1e-6, atol=1e-6)


def test_max_pool_all_negative_infinity_points_inside():
    """A window of -inf that starts in the padding: PyTorch (and we) pick its first real
    element; the indices stay inside the plane, so the backward works."""
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    y, idx = native_pool.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1), False)
    assert np.all(np.isneginf(y))
    np.testing.assert_array_equal(idx[0, 0], [[0, 1], [4, 5]])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 5), h=st.integers(1, 20), w=st.integers(1, 20),
       win=windows(dilation=False), ceil=st.booleans(), incl=st.booleans(),
       div=st.sampled_from([None, None, 0, 1, 3, -2]), seed=st.integers(0, 2**16))
def test_avg_pool_matches_numpy(n, c, h, w, win, ceil, incl, div, seed):
    k, s, p, _ = win
    if not fits(h, w, k, s, p, (1, 1), ceil):
        return
    rng = np.random.default_rng(seed)
    x = rand(rng, (n, c, h, w))
    y = native_pool.avg_pool2d(x, k, s, p, ceil, incl, div)
    ref = nb.avg_pool2d(x.astype(np.float64), k, s, p, ceil, incl, div)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    assert y.dtype == np.float32
    gy = rand(rng, y.shape)
    got = native_pool.avg_pool2d_backward(gy, x.shape, k, s, p, incl, div)
    want = nb.avg_pool2d_backward(gy.astype(np.float64), x.shape, k, s, p, incl, div)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k, pad", [((2, 2), (0, 0)), ((3, 3), (0, 0)), ((3, 3), (1, 1))])
@pytest.mark.parametrize("ceil", [False, True])
def test_pool_fast_paths(k, pad, ceil):
    """The 2x2 / 3x3 stride-2 paths on odd and even sizes, on every ISA."""
    rng = np.random.default_rng(4)
    for h, w in ((26, 26), (13, 27), (5, 8), (2, 3)):
        if not fits(h, w, k, (2, 2), pad, (1, 1), ceil):
            continue
        x = pool_input(rng, (2, 3, h, w), special=(h == 13))

        def check(isa):
            y, idx = native_pool.max_pool2d(x, k, (2, 2), pad, (1, 1), ceil)
            y_ref, idx_ref = torch_max_pool(x, k, (2, 2), pad, (1, 1), ceil)
            np.testing.assert_array_equal(y, y_ref, err_msg=isa)
            np.testing.assert_array_equal(idx, idx_ref, err_msg=isa)
            if h != 13:
                a = native_pool.avg_pool2d(x, k, (2, 2), pad, ceil, True, None)
                np.testing.assert_allclose(a, nb.avg_pool2d(x, k, (2, 2), pad, ceil, True, None),
                                           rtol=1e-6, atol=1e-7, err_msg=isa)
        on_every_isa(check)


def test_pool_falls_back_to_numpy():
    """Inputs the native kernels do not take give the twin's result."""
    x64 = np.random.default_rng(5).standard_normal((1, 2, 6, 6))
    for got, want in (
        (native_pool.max_pool2d(x64, (2, 2), (2, 2), (0, 0), (1, 1), False),
         nb.max_pool2d(x64, (2, 2), (2, 2), (0, 0), (1, 1), False)),
        (native_pool.avg_pool2d(x64, (3, 3), (1, 1), (1, 1), False, True, None),
         nb.avg_pool2d(x64, (3, 3), (1, 1), (1, 1), False, True, None)),
    ):
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, r in zip(got, want):
            assert g.dtype == r.dtype
            np.testing.assert_array_equal(g, r)
    x = x64.astype(np.float32)[:, :, ::2, :]  # not C-contiguous: copied, still native
    np.testing.assert_allclose(native_pool.avg_pool2d(x, (2, 2), (1, 1), (0, 0), False, True, 3),
                               nb.avg_pool2d(x, (2, 2), (1, 1), (0, 0), False, True, 3), rtol=1e-6)
    # a fractional divisor the kernel does not take: the twin's answer
    np.testing.assert_array_equal(native_pool.avg_pool2d(x, (2, 2), (1, 1), (0, 0), False, True, 2.5),
                                  nb.avg_pool2d(x, (2, 2), (1, 1), (0, 0), False, True, 2.5))


def test_functional_pooling_native_equals_numpy():
    """nn.functional through the native backend and through the numpy one: same values and
    gradients (the backend switch the rest of the library uses)."""
    import minitorch_edge as mte
    import minitorch_edge.nn.functional as F
    rng = np.random.default_rng(6)
    data = rand(rng, (2, 3, 9, 10))
    results = {}
    try:
        for name in ("numpy", "native"):
            backend.use(name)
            x = mte.tensor(data, requires_grad=True)
            y = F.max_pool2d(x, 3, 2, 1) + F.avg_pool2d(x, 2, ceil_mode=True)
            (y * y).sum().backward()
            results[name] = (y.detach().numpy(), x.grad.detach().numpy())
    finally:
        backend.use(os.environ.get("MTE_BACKEND", "auto"))
    for a, b in zip(results["numpy"], results["native"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- bad input

X = np.zeros((1, 2, 5, 5), np.float32)
IDX = np.zeros((1, 2, 2, 2), np.int64)
G2 = np.zeros((1, 2, 2, 2), np.float32)
BAD = [
    (lambda: _C.max_pool2d(X, (2, 2), (2, 2), (2, 2), (1, 1), False), ValueError),
    (lambda: _C.max_pool2d(X, (0, 2), (2, 2), (0, 0), (1, 1), False), ValueError),
    (lambda: _C.max_pool2d(X, (2, 2), (0, 2), (0, 0), (1, 1), False), ValueError),
    (lambda: _C.max_pool2d(X, (2, 2), (2, 2), (0, 0), (0, 1), False), ValueError),
    (lambda: _C.max_pool2d(X, (2, 2, 2), (2, 2), (0, 0), (1, 1), False), ValueError),
    (lambda: _C.max_pool2d(X, "ab", (2, 2), (0, 0), (1, 1), False), TypeError),
    (lambda: _C.max_pool2d(X.astype(np.float64), 2, 2, 0, 1, False), TypeError),
    (lambda: _C.max_pool2d(X, (2**40, 2), (2, 2), (0, 0), (1, 1), False), ValueError),
    (lambda: _C.max_pool2d(X, (2**70, 2), (2, 2), (0, 0), (1, 1), False), ValueError),
    (lambda: _C.max_pool2d_backward(G2, IDX.astype(np.int32), X.shape), TypeError),
    (lambda: _C.max_pool2d_backward(G2, IDX[..., :1], X.shape), ValueError),
    (lambda: _C.max_pool2d_backward(G2, IDX + 25, X.shape), ValueError),
    (lambda: _C.max_pool2d_backward(G2, IDX - 1, X.shape), ValueError),
    (lambda: _C.max_pool2d_backward(G2, IDX, (1, 2, 5)), ValueError),
    (lambda: _C.max_pool2d_backward(G2, IDX, (1, 3, 5, 5)), ValueError),
    (lambda: _C.max_pool2d_backward(G2, IDX, (1, 2, -5, 5)), ValueError),
    (lambda: _C.max_pool2d_backward(G2, IDX, 7), TypeError),
    (lambda: _C.max_pool2d_backward(G2, [[0]], X.shape), TypeError),
    (lambda: _C.avg_pool2d(X, (2, 2), (2, 2), (0, 0), False, True, 2.5), TypeError),
    (lambda: _C.avg_pool2d(X, (3, 3), (2, 2), (2, 0), False, True, None), ValueError),
    (lambda: _C.avg_pool2d(X[:, :, ::2], (2, 2), (2, 2), (0, 0), False, True, None), ValueError),
    (lambda: _C.avg_pool2d_backward(G2, (1, 2, 5), (2, 2), (2, 2), (0, 0), True, None), ValueError),
    (lambda: _C.avg_pool2d_backward(G2, (2, 2, 5, 5), (2, 2), (2, 2), (0, 0), True, None),
     ValueError),
    (lambda: _C.avg_pool2d_backward(G2.astype(np.float64), X.shape, 2, 2, 0, True, None),
     TypeError),
]


@pytest.mark.parametrize("call, exc", BAD)
def test_pool_bad_input_raises(call, exc):
    with pytest.raises(exc):
        call()


def test_pool_zero_sized_inputs():
    x = np.zeros((0, 3, 4, 4), np.float32)
    y, idx = _C.max_pool2d(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    assert y.shape == idx.shape == (0, 3, 2, 2)
    assert _C.max_pool2d_backward(y, idx, x.shape).shape == x.shape
    assert _C.avg_pool2d(x, (2, 2), (2, 2), (0, 0), False, True, None).shape == (0, 3, 2, 2)
    with pytest.raises(ValueError):  # windows over nothing
        _C.max_pool2d(np.zeros((1, 1, 0, 4), np.float32), (2, 2), (1, 1), (1, 1), (1, 1), False)
