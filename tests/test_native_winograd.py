"""Tests of Winograd convolution: the numpy twin (backend/winograd.py) and the native kernel
(_C.winograd3x3, _C.winograd_transform_weight, the selection rule).

The twin is checked exactly: its matrices against the Toom-Cook identities, its convolution
against numpy_backend.conv2d in float64. The native kernel is checked against both, over
hypothesis shapes (H, W not multiples of the tile, 1x1 outputs, padding 0..3, asymmetric pads,
primes), on every ISA this CPU runs and with 1 and 2 threads, with an error bound relative to
the sum of |terms| of each output. Bad input to every binding must raise, never crash.
"""
import gc
import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch_edge.backend import numpy_backend
from minitorch_edge.backend import winograd as wg

try:
    from minitorch_edge import _C
except ImportError:
    _C = None
HAVE_NATIVE = _C is not None and hasattr(_C, "winograd3x3")
if os.environ.get("MTE_REQUIRE_NATIVE") == "1" and not HAVE_NATIVE:
    raise ImportError("MTE_REQUIRE_NATIVE=1 but minitorch_edge._C has no winograd3x3")
# the numpy twin's tests run everywhere; the native kernel's only where it is built
native = pytest.mark.skipif(not HAVE_NATIVE, reason="minitorch_edge._C (Winograd) not built")

# relative to the largest sum of |w x| over the terms of an output in the same (n, k) plane:
# a Winograd tile mixes all its (m+2)^2 inputs, so an output whose own terms are small (at a
# padded border) still carries the rounding of its neighbours. F(4,3)'s matrices (entries up
# to 8, 1/24) cost ~10x F(2,3)'s rounding; the C tests print the worst seen.
TOL = {4: 2e-5, 2: 1.5e-6}
DIMS = st.sampled_from([1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17])
CHANNELS = st.sampled_from([1, 2, 3, 5, 7, 16, 17, 31])


def direct(x, w, b, ph, pw):
    """Reference: numpy_backend.conv2d in float64, and the sum of |terms| per output."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    pad = (ph, ph, pw, pw)
    y = numpy_backend.conv2d(x64, w64, None if b is None else b.astype(np.float64), (1, 1),
                             pad, (1, 1), 1)
    mag = numpy_backend.conv2d(np.abs(x64), np.abs(w64),
                               None if b is None else np.abs(b.astype(np.float64)), (1, 1),
                               pad, (1, 1), 1)
    return y, mag


def assert_winograd_close(got, x, w, b, ph, pw, tile):
    ref, mag = direct(x, w, b, ph, pw)
    assert got.shape == ref.shape and got.dtype == np.float32 and got.flags.c_contiguous
    err = np.abs(got.astype(np.float64) - ref)
    scale = mag.max(axis=(2, 3), keepdims=True) + 1.0 if mag.size else mag + 1.0
    assert np.all(err <= TOL[tile] * scale), f"worst relative error {np.max(err / scale):.3g}"


def rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- the matrices ------------------------------------------------------------------------------

DOCUMENTED = {  # as printed in native/src/mte_winograd_transforms.h
    4: ([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
        [[Fraction(1, 4), 0, 0], [Fraction(1, 6)] * 3,
         [Fraction(-1, 6), Fraction(1, 6), Fraction(-1, 6)],
         [Fraction(-1, 24), Fraction(-1, 12), Fraction(-1, 6)],
         [Fraction(1, 24), Fraction(-1, 12), Fraction(1, 6)], [0, 0, 1]],
        [[4, 0, -5, 0, 1, 0], [0, 4, 4, -1, -1, 0], [0, 4, -4, -1, 1, 0], [0, 2, 1, -2, -1, 0],
         [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]),
    2: ([[1, 1, 1, 0], [0, 1, -1, 1]],
        [[1, 0, 0], [Fraction(1, 2)] * 3, [Fraction(-1, 2), Fraction(1, 2), Fraction(-1, 2)],
         [0, 0, -1]],
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, 1, -1, 0], [0, 1, 0, -1]]),
}


@pytest.mark.parametrize("tile", [4, 2])
def test_derived_matrices_are_the_documented_ones(tile):
    at, g, bt = wg.toom_cook(tile, 3, wg.POINTS[tile])
    assert (at, g, bt) == tuple([[Fraction(v) for v in row] for row in m]
                                for m in DOCUMENTED[tile])
    for got, want in zip(wg.matrices(tile), DOCUMENTED[tile]):
        np.testing.assert_array_equal(got, np.array(want, dtype=float))


@pytest.mark.parametrize("m,r,points", [(4, 3, wg.POINTS[4]), (2, 3, wg.POINTS[2]),
                                        (3, 2, (0, 1, -1, "inf")), (6, 3, (0, 1, -1, 2, -2,
                                                                          Fraction(1, 2),
                                                                          Fraction(-1, 2),
                                                                          "inf"))])
def test_toom_cook_computes_correlation_exactly(m, r, points):
    """y = A^T [(G g) * (B^T d)] is the exact correlation y_i = sum_k g_k d_(i+k)."""
    at, g, bt = wg.toom_cook(m, r, points)
    rng = np.random.default_rng(m * 10 + r)
    a = m + r - 1
    for _ in range(5):
        gv = [Fraction(int(v)) for v in rng.integers(-9, 10, r)]
        dv = [Fraction(int(v)) for v in rng.integers(-9, 10, a)]
        u = [sum(gi * gk for gi, gk in zip(row, gv)) for row in g]
        v = [sum(bi * dk for bi, dk in zip(row, dv)) for row in bt]
        y = [sum(ai * ui * vi for ai, ui, vi in zip(row, u, v)) for row in at]
        assert y == [sum(gv[k] * dv[i + k] for k in range(r)) for i in range(m)]


def test_toom_cook_rejects_wrong_point_count():
    with pytest.raises(ValueError, match="needs 6 points"):
        wg.toom_cook(4, 3, (0, 1, -1, "inf"))
    with pytest.raises(ValueError, match="tile must be 4 or 2"):
        wg.matrices(3)


# ---- the numpy twin ----------------------------------------------------------------------------

@settings(deadline=None)
@given(n=st.integers(1, 2), c=CHANNELS, k=CHANNELS, h=DIMS, w=DIMS, ph=st.integers(0, 3),
       pw=st.integers(0, 3), tile=st.sampled_from([4, 2]), bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_numpy_twin_equals_conv2d_in_float64(n, c, k, h, w, ph, pw, tile, bias, seed):
    if h + 2 * ph < 3 or w + 2 * pw < 3:
        return
    rng = np.random.default_rng(seed)
    x, wt = rng.standard_normal((n, c, h, w)), rng.standard_normal((k, c, 3, 3))
    b = rng.standard_normal(k) if bias else None
    ref, mag = direct(x, wt, b, ph, pw)
    got = wg.winograd3x3(x, wt, b, ph, pw, tile=tile)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-11 * (mag.max() + 1))
    u = wg.transform_weight(wt, tile)
    np.testing.assert_allclose(wg.winograd3x3(x, None, b, ph, pw, U=u), got, rtol=1e-13,
                               atol=1e-13)


def test_numpy_twin_transform_weight_layout():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 3, 3, 3))
    for tile in (4, 2):
        _, g, _ = wg.matrices(tile)
        u = wg.transform_weight(w, tile)
        a = tile + 2
        assert u.shape == (a * a, 3, 5)
        want = np.stack([g @ w[k, c] @ g.T for c in range(3) for k in range(5)])
        np.testing.assert_allclose(u.reshape(a, a, 3, 5).transpose(2, 3, 0, 1).reshape(-1, a, a),
                                   want)
    with pytest.raises(ValueError, match=r"\(K, C, 3, 3\)"):
        wg.transform_weight(np.zeros((2, 2, 3, 2)))


# ---- the native kernel -------------------------------------------------------------------------

def native_cases():
    isas = _C.available_isas()
    return [(isa, t) for isa in isas for t in (1, 2)]


@pytest.fixture
def restore_isa_threads():
    threads = _C.get_num_threads()
    yield
    _C.set_isa("auto")
    _C.set_num_threads(threads)


@native
@settings(deadline=None)
@given(n=st.integers(1, 3), c=CHANNELS, k=CHANNELS, h=DIMS, w=DIMS, ph=st.integers(0, 3),
       pw=st.integers(0, 3), tile=st.sampled_from([4, 2, 0]), bias=st.booleans(),
       cached=st.booleans(), seed=st.integers(0, 2**16))
def test_native_matches_twin_and_conv2d(n, c, k, h, w, ph, pw, tile, bias, cached, seed):
    if h + 2 * ph < 3 or w + 2 * pw < 3:
        return
    rng = np.random.default_rng(seed)
    x, wt = rand(rng, (n, c, h, w)), rand(rng, (k, c, 3, 3))
    b = rand(rng, k) if bias else None
    used = tile or wg.choose_tile(n, c, k, h, w, ph, pw, cached=cached)
    assert tile or used == _C.winograd_tile(n, c, k, h, w, ph, pw, cached=cached)
    if cached:
        u = _C.winograd_transform_weight(wt, used)
        np.testing.assert_allclose(u, wg.transform_weight(wt, used), rtol=1e-6, atol=1e-6)
        got = _C.winograd3x3(x, None, b, ph, pw, U=u)
    else:
        got = _C.winograd3x3(x, wt, b, ph, pw, tile=tile)
    assert_winograd_close(got, x, wt, b, ph, pw, used)
    twin = wg.winograd3x3(x, wt, b, ph, pw, tile=used)  # float32 too: same algorithm
    np.testing.assert_allclose(got, twin, rtol=0, atol=4 * TOL[used] * (np.abs(twin).max() + 1))


@native
@pytest.mark.parametrize("tile", [4, 2])
def test_every_isa_and_thread_count(tile, restore_isa_threads):
    rng = np.random.default_rng(tile)
    x, wt, b = rand(rng, (2, 19, 23, 17)), rand(rng, (37, 19, 3, 3)), rand(rng, 37)
    u = _C.winograd_transform_weight(wt, tile)
    for isa, threads in native_cases():
        _C.set_isa(isa)
        _C.set_num_threads(threads)
        for ph, pw in ((1, 1), (0, 2)):
            got = _C.winograd3x3(x, wt, b, ph, pw, tile=tile)
            assert_winograd_close(got, x, wt, b, ph, pw, tile)
            np.testing.assert_array_equal(_C.winograd3x3(x, None, b, ph, pw, U=u), got)


@native
def test_many_blocks_and_images():
    """A batch large enough to be split into several blocks of tile rows (a block can end
    inside an image), and channels past the SGEMM's k-slice."""
    rng = np.random.default_rng(7)
    x, wt = rand(rng, (40, 64, 9, 10)), rand(rng, (64, 64, 3, 3))
    for tile in (4, 2):
        assert_winograd_close(_C.winograd3x3(x, wt, None, 1, 1, tile=tile), x, wt, None, 1, 1,
                              tile)
    x, wt = rand(rng, (1, 300, 6, 5)), rand(rng, (9, 300, 3, 3))
    assert_winograd_close(_C.winograd3x3(x, wt, None, 1, 1, tile=4), x, wt, None, 1, 1, 4)


@native
def test_accuracy_against_direct_convolution():
    """The figure the docs quote: relative error vs a float64 direct convolution at the
    benchmark shape (ReLU-net-like inputs)."""
    rng = np.random.default_rng(11)
    x = np.abs(rand(rng, (1, 64, 28, 28)))
    wt = (rand(rng, (64, 64, 3, 3)) * np.sqrt(2 / (64 * 9))).astype(np.float32)
    ref, _ = direct(x, wt, None, 1, 1)
    for tile, bound in ((4, 2e-5), (2, 2e-6)):
        got = _C.winograd3x3(x, wt, None, 1, 1, tile=tile)
        rel = np.abs(got - ref).max() / np.abs(ref).max()
        assert rel < bound, (tile, rel)


@native
def test_zero_sizes():
    w = np.ones((3, 2, 3, 3), np.float32)
    assert _C.winograd3x3(np.ones((0, 2, 5, 5), np.float32), w, None, 1, 1).shape == (0, 3, 5, 5)
    y = _C.winograd3x3(np.ones((1, 2, 5, 5), np.float32), np.ones((0, 2, 3, 3), np.float32))
    assert y.shape == (1, 0, 5, 5)
    b = np.array([1, 2, 3], np.float32)
    y = _C.winograd3x3(np.ones((2, 0, 4, 6), np.float32), np.ones((3, 0, 3, 3), np.float32), b)
    assert y.shape == (2, 3, 4, 6) and np.all(y == b.reshape(1, 3, 1, 1))
    y = _C.winograd3x3(np.ones((1, 2, 0, 3), np.float32), W, b, 2, 1)  # only padding
    assert y.shape == (1, 3, 2, 3) and np.all(y == b.reshape(1, 3, 1, 1))
    np.testing.assert_array_equal(wg.winograd3x3(np.ones((1, 2, 0, 3), np.float32), W, b, 2, 1),
                                  y)
    assert _C.winograd_transform_weight(np.ones((0, 4, 3, 3), np.float32)).shape == (36, 4, 0)
    assert _C.winograd_transform_weight(np.ones((4, 0, 3, 3), np.float32), 2).shape == (16, 0, 4)


@native
def test_workspace_is_reused():
    rng = np.random.default_rng(5)
    x, wt = rand(rng, (1, 32, 20, 20)), rand(rng, (32, 32, 3, 3))
    _C.winograd3x3(x, wt, None, 1, 1)
    peak = _C.winograd_workspace_peak_bytes()
    assert peak > 0
    for _ in range(3):
        _C.winograd3x3(x, wt, None, 1, 1)
    assert _C.winograd_workspace_peak_bytes() == peak


# ---- the selection rule ------------------------------------------------------------------------

@native
def test_rule_native_equals_twin():
    for n in (1, 2, 8):
        for c, k in ((3, 64), (16, 16), (32, 32), (64, 64), (128, 256), (256, 256), (512, 512)):
            for hw in (1, 4, 6, 7, 8, 12, 14, 28, 56):
                for pad in (0, 1):
                    for cached in (False, True):
                        args = (n, c, k, hw, hw, pad, pad, cached)
                        assert _C.winograd_tile(*args) == wg.choose_tile(*args), args
                        assert _C.winograd_should_use(*args) == wg.should_use(*args), args
    # the benchmark shapes (default padding 1)
    assert [_C.winograd_tile(1, c, c, hw, hw) for c, hw in ((64, 56), (128, 28), (256, 14))] \
        == [4, 4, 2]
    assert _C.winograd_tile(1, 256, 256, 14, 14, cached=True) == 2
    assert _C.winograd_tile(4, 256, 256, 14, 14) == 4  # 64 tiles amortise U
    assert all(_C.winograd_should_use(1, c, c, hw, hw, cached=cached)
               for c, hw in ((64, 56), (128, 28), (256, 14)) for cached in (False, True))
    assert not _C.winograd_should_use(1, 3, 64, 224, 224)
    assert not _C.winograd_should_use(1, 16, 16, 56, 56, cached=True)
    assert _C.winograd_tile(1, 8, 8, 1, 1, 0, 0) == 0
    with pytest.raises(ValueError):
        _C.winograd_tile(1, -1, 8, 5, 5)


# ---- bad input ---------------------------------------------------------------------------------

X = np.ones((1, 2, 5, 5), np.float32)
W = np.ones((3, 2, 3, 3), np.float32)
U4 = np.ones((36, 2, 3), np.float32)


@native
@pytest.mark.parametrize("call,exc,match", [
    (lambda: _C.winograd3x3(X.astype(np.float64), W), TypeError, "float32"),
    (lambda: _C.winograd3x3([[1.0]], W), TypeError, "ndarray"),
    (lambda: _C.winograd3x3(X, W.astype(np.float16)), TypeError, "float32"),
    (lambda: _C.winograd3x3(X[0], W), ValueError, "4-D"),
    (lambda: _C.winograd3x3(np.ones((1, 2, 5, 10), np.float32)[..., ::2], W), ValueError,
     "C-contiguous"),
    (lambda: _C.winograd3x3(X, np.ones((3, 2, 3, 2), np.float32)), ValueError, r"\(K, C, 3, 3\)"),
    (lambda: _C.winograd3x3(X, np.ones((3, 4, 3, 3), np.float32)), ValueError, "input channels"),
    (lambda: _C.winograd3x3(X, W, np.ones(4, np.float32)), ValueError, r"bias has shape \(4\)"),
    (lambda: _C.winograd3x3(X, W, np.ones((3, 1), np.float32)), ValueError, "1-D"),
    (lambda: _C.winograd3x3(X, W, None, -1, 1), ValueError, "padding"),
    (lambda: _C.winograd3x3(X, W, None, 1, 1 << 30), ValueError, "padding"),
    (lambda: _C.winograd3x3(np.ones((1, 2, 1, 5), np.float32), W, None, 0, 1), ValueError,
     "smaller than the 3x3 kernel"),
    (lambda: _C.winograd3x3(X, W, tile=3), ValueError, "tile"),
    (lambda: _C.winograd3x3(X, None), ValueError, "give w or U"),
    (lambda: _C.winograd3x3(X, None, U=np.ones((25, 2, 3), np.float32)), ValueError,
     "36 or 16"),
    (lambda: _C.winograd3x3(X, None, U=np.ones((36, 3, 3), np.float32)), ValueError,
     "U has shape"),
    (lambda: _C.winograd3x3(X, W, U=np.ones((36, 2, 4), np.float32)), ValueError, "U has shape"),
    (lambda: _C.winograd3x3(X, W, U=U4, tile=2), ValueError, "made for tile 4"),
    (lambda: _C.winograd3x3(X, None, U=U4.astype(np.float64)), TypeError, "float32"),
    (lambda: _C.winograd_transform_weight(W, 3), ValueError, "tile"),
    (lambda: _C.winograd_transform_weight(W[0]), ValueError, "4-D"),
    (lambda: _C.winograd_transform_weight(W.astype(np.float64)), TypeError, "float32"),
    (lambda: _C.winograd_transform_weight(np.ones((2, 2, 5, 5), np.float32)), ValueError,
     r"\(K, C, 3, 3\)"),
])
def test_bad_input_raises(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@native
def test_u_with_matching_tile_and_w_ignored():
    rng = np.random.default_rng(2)
    x, wt = rand(rng, (1, 2, 6, 6)), rand(rng, (3, 2, 3, 3))
    u = _C.winograd_transform_weight(wt, 2)
    y = _C.winograd3x3(x, np.zeros_like(wt), None, 1, 1, U=u, tile=2)  # U wins over w
    assert_winograd_close(y, x, wt, None, 1, 1, 2)


# ---- prepared (cached) Winograd weights ------------------------------------------------------

def _conv_model(rng):
    import minitorch_edge as mte
    conv = mte.nn.Conv2d(32, 32, 3, padding=1)
    x = mte.tensor(rand(rng, (1, 32, 16, 16)))
    return mte, conv, x


@native
def test_prepared_weights_follow_every_writer():
    """Inference reuses U; every way the library writes a weight drops it."""
    from minitorch_edge.backend import prepared
    rng = np.random.default_rng(4)
    mte, conv, x = _conv_model(rng)
    assert _C.winograd_should_use(1, 32, 32, 16, 16, 1, 1, cached=True)

    def check():  # the result is Winograd's for the weight as it is now
        with mte.no_grad():
            y = conv(x)
        tile = _C.winograd_tile(1, 32, 32, 16, 16, 1, 1, cached=True)
        assert_winograd_close(y._data, x._data, conv.weight._data, conv.bias._data, 1, 1, tile)

    check()
    before = prepared.stats()
    check()                                       # second call: U comes from the cache
    after = prepared.stats()
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]

    opt = mte.optim.SGD(conv.parameters(), lr=0.5)  # an optimizer step
    conv(x).sum().backward()
    opt.step()
    check()
    other = mte.nn.Conv2d(32, 32, 3, padding=1)   # load_state_dict
    conv.load_state_dict(other.state_dict())
    check()
    mte.nn.init.normal_(conv.weight)              # nn.init
    check()
    with mte.no_grad():
        conv.weight.mul_(0.5)                     # an in-place op
        check()
        conv.weight.data.add_(1.0)                # an in-place op through .data
        check()
        conv.weight[0] = 0.25                     # index assignment
        check()
    conv.weight.data = mte.tensor(rand(rng, (32, 32, 3, 3)))  # a new array
    check()


@native
def test_frozen_weights_take_the_inference_path_without_no_grad():
    """Grad mode on, but nothing needs a gradient (frozen weights, plain input): nothing is
    recorded, so the conv may use Winograd and its prepared weights, as under no_grad."""
    from minitorch_edge.backend import prepared
    rng = np.random.default_rng(6)
    mte, conv, x = _conv_model(rng)
    conv.requires_grad_(False)
    conv(x)
    hits = prepared.stats()["hits"]
    y = conv(x)
    assert prepared.stats()["hits"] == hits + 1 and not y.requires_grad
    tile = _C.winograd_tile(1, 32, 32, 16, 16, 1, 1, cached=True)
    assert_winograd_close(y._data, x._data, conv.weight._data, conv.bias._data, 1, 1, tile)
    conv.weight.requires_grad_(True)                # training again: im2col, nothing cached
    y = conv(x)
    assert prepared.stats()["hits"] == hits + 1 and y.requires_grad


@native
def test_prepared_weights_can_be_disabled_and_die_with_their_array():
    from minitorch_edge.backend import prepared
    rng = np.random.default_rng(5)
    mte, conv, x = _conv_model(rng)
    with mte.no_grad():
        conv(x)
    alive = prepared.stats()["entries"]
    assert alive >= 1
    del conv
    gc.collect()
    assert prepared.stats()["entries"] == alive - 1  # the weight's entry died with it
    prepared.set_enabled(False)
    try:
        assert prepared.stats()["entries"] == 0
        mte, conv, x = _conv_model(rng)
        with mte.no_grad():
            y = conv(x)
        assert prepared.stats()["entries"] == 0
        tile = _C.winograd_tile(1, 32, 32, 16, 16, 1, 1)
        assert_winograd_close(y._data, x._data, conv.weight._data, conv.bias._data, 1, 1, tile)
    finally:
        prepared.set_enabled(True)


def test_prepared_get_keys_by_view_and_key():
    from minitorch_edge.backend import prepared
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    calls = []

    def make(a):
        calls.append(a.shape)
        return a * 2
    first = prepared.get(base, "double", make)
    assert prepared.get(base, "double", make) is first and not first.flags.writeable
    half = prepared.get(base[:2], "double", make)  # another view of the same memory
    np.testing.assert_array_equal(half, base[:2] * 2)
    prepared.get(base, "other", make)
    assert calls == [(4, 6), (2, 6), (4, 6)]
    prepared.wrote(base[1:])                       # a write through any view drops all of them
    prepared.get(base, "double", make)
    assert len(calls) == 4
    prepared.clear()
    assert prepared.stats()["entries"] == 0


@native
@pytest.mark.parametrize("act", [None, "relu", "relu6"])
def test_inference_conv_with_residual_takes_winograd_and_equals_the_twin(act):
    """backend.conv2d(..., inference=True) with a residual (ResNet's relu(conv + b + x)) runs
    Winograd, then the residual and the activation in place: equal to the twin within
    Winograd's tolerance; a residual of another shape is refused."""
    from minitorch_edge.backend import native_conv
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    r = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)
    geom = ((1, 1), (1, 1, 1, 1), (1, 1), 1)
    assert native_conv._winograd_tile(x.shape, w.shape, *geom)
    got = native_conv.conv2d(x, w, b, *geom, act=act, residual=r, inference=True)
    want = numpy_backend.conv2d(x, w, b, *geom, act=act, residual=r)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL[4] * float(np.abs(want).max()) * 10)
    with pytest.raises(ValueError, match="residual has shape"):
        native_conv.conv2d(x, w, b, *geom, act=act, residual=r[:, :32], inference=True)
