"""libmte's bfloat16 / float16 kernels (native/include/mte_bf16.h) through _C and the backend:
half_gemm, half_conv2d and the matmul / linear / conv2d routes that take those dtypes, against
their numpy twins (float32 compute, one rounding) and an exact float64 sum, over generated
shapes and on every ISA this CPU runs; the conversions against ml_dtypes; PyTorch's CPU bf16
matmul as a reference; bad input. Skipped when the extension is not built, unless
MTE_REQUIRE_NATIVE=1."""
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if os.environ.get("MTE_REQUIRE_NATIVE") == "1":
    from minitorch_edge import _C
else:
    _C = pytest.importorskip("minitorch_edge._C")

from minitorch_edge import backend
from minitorch_edge.backend import native_conv, native_gemm
from minitorch_edge.backend import numpy_backend as ref

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [BF16, F16]
MANTISSA = {BF16: 7, F16: 10}   # stored mantissa bits
MIN_EXP = {BF16: -126, F16: -14}


def rand(shape, dtype, rng, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def ulp(v, dtype):
    """One unit in the last place of `dtype` at |v| (float64 array)."""
    e = np.floor(np.log2(np.maximum(np.abs(v), np.finfo(np.float64).tiny)))
    return np.exp2(np.maximum(e, MIN_EXP[dtype]) - MANTISSA[dtype])


def assert_rounded(got, exact, mag, k, dtype):
    """got (dtype or float32) is `exact` (float64) up to float32 sums of k terms of total size
    `mag` and, for a half result, one rounding to the format (one ulp: the twin's float32
    value may sit on the other side of a rounding boundary)."""
    acc = (k + 3) * 2.0 ** -24 * mag + 1e-30
    tol = acc + (ulp(np.abs(exact) + acc, dtype) if got.dtype == dtype else 0.0)
    err = np.abs(got.astype(np.float64) - exact)
    assert np.all(err <= tol), (float(np.max(err / tol)), got.dtype)


def exact_gemm(a, b, ta, tb, bias=None, bias_mode="col"):
    a64 = a.astype(np.float64).T if ta else a.astype(np.float64)
    b64 = b.astype(np.float64).T if tb else b.astype(np.float64)
    y, mag = a64 @ b64, np.abs(a64) @ np.abs(b64)
    if bias is not None:
        bb = bias.astype(np.float64)
        y = y + (bb if bias_mode == "col" else bb[:, None])
        mag = mag + np.abs(bb if bias_mode == "col" else bb[:, None])
    return y, mag


# ---- the kernel set, the ISA table, the backend table ------------------------------------------

def test_kernel_set_family_and_backend_rows():
    assert "bf16" in _C.kernels()
    assert "bf16" in _C.dispatch_table()
    table = backend.table()
    for name in ("half_gemm", "half_conv2d"):
        assert backend.KERNELS[name].isa_family == "bf16"
        assert table[name] == f"native[{_C.dispatch_table()['bf16']}]", table[name]


def test_path_uses_the_bf16_hardware_where_the_cpu_has_it():
    path = _C.half_gemm_path(BF16)
    feats = set(_C.cpu_features())
    if _C.active_isa().startswith("avx512"):
        best = ("tdpbf16ps" if "amx_bf16" in feats else
                "vdpbf16ps" if "avx512_bf16" in feats else "widen+sgemm")
        assert best in path, path
    if _C.active_isa().startswith("neon"):
        assert ("bfdot" in path) == ("bf16" in feats), path
    assert "widen+sgemm" in _C.half_gemm_path(F16)
    assert _C.bf16_peak_gflops(0.01) > 0
    with pytest.raises(TypeError, match="half_gemm_path"):
        _C.half_gemm_path(np.float32)


def test_masking_amx_off_runs_the_avx512_bf16_kernel_with_the_same_results():
    """MTE_CPU_DISABLE masks features at detection: on an AMX CPU the bf16 GEMM then runs the
    VDPBF16PS kernel (what an AMD CPU runs); both give results within one rounding of the
    exact sum, from the same inputs in a fresh process."""
    import subprocess
    import sys
    code = ("import numpy as np, ml_dtypes; from minitorch_edge import _C\n"
            "r = np.random.default_rng(5); bf = ml_dtypes.bfloat16\n"
            "a = r.standard_normal((67, 300)).astype(bf); b = r.standard_normal((300, 45)).astype(bf)\n"
            "y = _C.half_gemm(a, b, out_float32=True)\n"
            "e = a.astype(np.float64) @ b.astype(np.float64)\n"
            "print(_C.half_gemm_path(bf), ' '.join(_C.cpu_features()), float(np.abs(y - e).max()))\n")
    runs = {}
    for mask in ("", "amx_bf16,amx_int8"):
        env = dict(os.environ, MTE_CPU_DISABLE=mask)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120, check=True).stdout.split()
        runs[mask] = (out[0], set(out[2:-1]), float(out[-1]))
    assert "amx_bf16" not in runs["amx_bf16,amx_int8"][1]
    assert "amx_int8" not in runs["amx_bf16,amx_int8"][1]
    if "amx_bf16" in runs[""][1]:
        assert runs[""][0] == "amx_bf16" and runs["amx_bf16,amx_int8"][0] != "amx_bf16"
    for path, _, err in runs.values():
        assert err < 1e-3, (path, err)        # float32 sums of 300 products of size ~1


# ---- half_gemm over generated shapes ----------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 300),
       ta=st.booleans(), tb=st.booleans(), dt=st.sampled_from(HALVES),
       bias_mode=st.sampled_from([None, "col", "row"]), out_float32=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_half_gemm_equals_its_twin_and_the_exact_sum(m, n, k, ta, tb, dt, bias_mode,
                                                     out_float32, seed):
    rng = np.random.default_rng(seed)
    a = rand((k, m) if ta else (m, k), dt, rng)
    b = rand((n, k) if tb else (k, n), dt, rng)
    bias = None if bias_mode is None else rng.standard_normal(n if bias_mode == "col" else m
                                                              ).astype(np.float32)
    args = (a, b, ta, tb, bias, bias_mode or "col", out_float32)
    got, twin = native_gemm.half_gemm(*args), ref.half_gemm(*args)
    assert got.dtype == twin.dtype == (np.float32 if out_float32 else dt)
    assert got.shape == twin.shape == (m, n)
    exact, mag = exact_gemm(a, b, ta, tb, bias, bias_mode or "col")
    assert_rounded(got, exact, mag, k, dt)
    assert_rounded(twin, exact, mag, k, dt)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 80), n=st.integers(1, 600), k=st.integers(1, 1100),
       ta=st.booleans(), tb=st.booleans(), alpha_beta=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_bf16_gemm_over_blocks_equals_the_exact_sum(m, n, k, ta, tb, alpha_beta, seed):
    """Larger shapes: the path the CPU has (on AMX, the TDPBF16PS tiles: ragged 32 x 32
    blocks, k over a 1024 slice, columns past a block, transposed operands) gives the exact sum
    to float32 accumulation. The path without AMX is checked by `make -C native test`
    (MTE_CPU_DISABLE) and test_masking_amx_off_... above."""
    rng = np.random.default_rng(seed)
    a = rand((k, m) if ta else (m, k), BF16, rng)
    b = rand((n, k) if tb else (k, n), BF16, rng)
    bias = rng.standard_normal(n).astype(np.float32) if alpha_beta else None
    exact, mag = exact_gemm(a, b, ta, tb, bias)
    got = native_gemm.half_gemm(a, b, ta, tb, bias, "col", out_float32=True)
    assert got.dtype == np.float32 and got.shape == (m, n)
    assert_rounded(got, exact, mag, k, BF16)


@pytest.mark.parametrize("dt", HALVES, ids=["bf16", "fp16"])
def test_every_isa_runs_the_same_product(dt):
    rng = np.random.default_rng(1)
    a, b = rand((45, 515), dt, rng), rand((515, 70), dt, rng)   # K over one block, ragged tiles
    exact, mag = exact_gemm(a, b, False, False)
    try:
        for isa in _C.available_isas():
            _C.set_isa(isa)
            got = _C.half_gemm(a, b)
            assert got.dtype == dt, isa
            assert_rounded(got, exact, mag, 515, dt)
            assert_rounded(_C.half_gemm(a.T.copy(), b.T.copy(), True, True, out_float32=True),
                           exact, mag, 515, dt)
    finally:
        _C.set_isa("auto")


# ---- matmul, linear, conv2d with half inputs ---------------------------------------------------

@pytest.mark.parametrize("dt", HALVES, ids=["bf16", "fp16"])
def test_matmul_routes_half_inputs_and_keeps_their_dtype(dt):
    rng = np.random.default_rng(2)
    cases = [((17, 33), (33, 9)), ((33,), (33, 9)), ((17, 33), (33,)), ((4, 6, 20), (20, 7)),
             ((3, 1, 5, 8), (2, 8, 4)), ((20,), (20,))]
    for sa, sb in cases:
        a, b = rand(sa, dt, rng), rand(sb, dt, rng)
        got, twin = native_gemm.matmul(a, b), ref.matmul(a, b)
        assert np.shape(got) == np.shape(twin) == np.matmul(a.astype(np.float32),
                                                            b.astype(np.float32)).shape
        assert np.asarray(got).dtype == dt
        exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
        mag = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        assert_rounded(np.asarray(got), exact, mag, sa[-1], dt)
    a, b = rand((30, 12), dt, rng), rand((9, 30), dt, rng)   # transposed views, read in place
    exact, mag = exact_gemm(a, b, True, True)
    assert_rounded(native_gemm.matmul(a.T, b.T), exact, mag, 30, dt)


@pytest.mark.parametrize("dt", HALVES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("act", [None, "relu"])
def test_linear_with_half_inputs(dt, act):
    rng = np.random.default_rng(3)
    x, w = rand((19, 40), dt, rng), rand((24, 40), dt, rng)
    bias = rng.standard_normal(24).astype(np.float32)
    got, twin = native_gemm.linear(x, w, bias, act), ref.linear(x, w, bias, act)
    assert got.dtype == twin.dtype == dt
    exact, mag = exact_gemm(x, w, False, True, bias)
    if act == "relu":
        exact = np.maximum(exact, 0)
    assert_rounded(got, exact, mag, 40, dt)
    assert_rounded(twin, exact, mag, 40, dt)


def exact_conv(x, w, bias, stride, padding, dilation, groups):
    args = (stride, padding, dilation, groups)
    y = ref.conv2d(x.astype(np.float64), w.astype(np.float64), bias.astype(np.float64), *args)
    mag = ref.conv2d(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)),
                     np.abs(bias.astype(np.float64)), *args)
    return y, mag


@settings(max_examples=15, deadline=None)
@given(dt=st.sampled_from(HALVES), n=st.integers(1, 2), groups=st.sampled_from([1, 2]),
       cg=st.integers(1, 4), og=st.integers(1, 5), h=st.integers(3, 9), wd=st.integers(3, 9),
       k=st.sampled_from([1, 2, 3]), s=st.integers(1, 2), p=st.integers(0, 2),
       d=st.integers(1, 2), seed=st.integers(0, 2 ** 16))
def test_conv2d_with_half_inputs_over_generated_shapes(dt, n, groups, cg, og, h, wd, k, s, p,
                                                       d, seed):
    if h + 2 * p < d * (k - 1) + 1 or wd + 2 * p < d * (k - 1) + 1:
        return
    rng = np.random.default_rng(seed)
    x, w = rand((n, groups * cg, h, wd), dt, rng), rand((groups * og, cg, k, k), dt, rng)
    bias = rng.standard_normal(groups * og).astype(np.float32)
    geom = ((s, s), (p, p, p, p), (d, d), groups)
    got, twin = native_conv.conv2d(x, w, bias, *geom), ref.conv2d(x, w, bias, *geom)
    assert got.dtype == twin.dtype == dt and got.shape == twin.shape
    exact, mag = exact_conv(x, w, bias, *geom)
    assert_rounded(got, exact, mag, cg * k * k, dt)
    assert_rounded(twin, exact, mag, cg * k * k, dt)
    y32 = native_conv.half_conv2d(x, w, bias, s, p, d, groups, out_float32=True)
    assert y32.dtype == np.float32
    assert_rounded(y32, exact, mag, cg * k * k, dt)


# ---- conversions ------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", HALVES, ids=["bf16", "fp16"])
def test_conversions_equal_ml_dtypes_bit_for_bit(dt):
    every = np.arange(65536, dtype=np.uint16).view(dt)
    wide = _C.half_to_float32(every)
    expect = every.astype(np.float32)
    nan = np.isnan(expect)
    assert np.array_equal(np.isnan(wide), nan)
    assert np.array_equal(wide[~nan].view(np.uint32), expect[~nan].view(np.uint32))
    rng = np.random.default_rng(4)
    pos = wide[:int(np.argmax(np.isinf(wide))) + 1].astype(np.float64)  # +0 ... +inf
    mid = ((pos[:-2] + pos[1:-1]) / 2).astype(np.float32)   # midpoints (exact): the ties
    x = np.concatenate([rng.integers(0, 2 ** 32, 50000, dtype=np.uint32).view(np.float32),
                        mid, -mid, np.array([65504, 65520, 65536, 3.4e38, 1e-8, -0.0],
                                            np.float32)])
    with np.errstate(all="ignore"):   # overflow to inf is part of the check
        got, want = _C.float32_to_half(x, dt), x.astype(dt)
    nan = np.isnan(x)
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


# ---- PyTorch's CPU bf16 matmul ------------------------------------------------------------------

def test_bf16_matmul_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    a, b = rand((64, 200), BF16, rng), rand((200, 48), BF16, rng)
    ours = native_gemm.matmul(a, b)
    t = (torch.from_numpy(a.astype(np.float32)).bfloat16()
         @ torch.from_numpy(b.astype(np.float32)).bfloat16())
    assert t.dtype == torch.bfloat16 and ours.dtype == BF16
    exact, mag = exact_gemm(a, b, False, False)
    assert_rounded(ours, exact, mag, 200, BF16)
    assert_rounded(t.float().numpy().astype(BF16), exact, mag, 200, BF16)
    theirs = t.float().numpy()
    assert np.all(np.abs(ours.astype(np.float64) - theirs) <= 2 * ulp(exact, BF16) + 1e-4 * mag)


# ---- bad input ---------------------------------------------------------------------------------

def test_bad_input_raises_clear_errors():
    a = np.ones((3, 4), BF16)
    with pytest.raises(TypeError, match="half_gemm: a and b must have one dtype"):
        _C.half_gemm(a, np.ones((4, 2), np.float16))
    with pytest.raises(TypeError, match="half_gemm: b must have dtype bfloat16"):
        _C.half_gemm(a, np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="half_gemm: shapes cannot be multiplied"):
        _C.half_gemm(a, np.ones((3, 2), BF16))
    with pytest.raises(ValueError, match="bias has shape"):
        _C.half_gemm(a, np.ones((4, 2), BF16), bias=np.ones(3, np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        _C.half_gemm(np.ones((4, 3), BF16).T, np.ones((4, 2), BF16))
    with pytest.raises(TypeError, match="half_gemm: a and b must be bfloat16 or float16"):
        ref.half_gemm(a, np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="half_conv2d: groups=2 must divide C=3"):
        _C.half_conv2d(np.ones((1, 3, 5, 5), BF16), np.ones((4, 1, 3, 3), BF16), groups=2)
    with pytest.raises(ValueError, match="does not fit"):
        _C.half_conv2d(np.ones((1, 1, 2, 2), BF16), np.ones((1, 1, 3, 3), BF16))
    with pytest.raises(TypeError, match="float32_to_half: dtype must be bfloat16"):
        _C.float32_to_half(np.ones(3, np.float32), np.int16)


@pytest.mark.parametrize("dt", HALVES, ids=["bf16", "fp16"])
def test_conv2d_backward_with_half_inputs(dt):
    rng = np.random.default_rng(6)
    x, w = rand((2, 4, 7, 6), dt, rng), rand((6, 2, 3, 3), dt, rng)
    geom = ((2, 1), (1, 1, 0, 2), (1, 1), 2)
    gy = rand(ref.conv2d(x.astype(np.float32), w.astype(np.float32), None, *geom).shape, dt, rng)
    for name, args in (("conv2d_backward_input", (gy, w, x.shape)),
                       ("conv2d_backward_weight", (gy, x, w.shape))):
        got = getattr(native_conv, name)(*args, *geom)
        twin = getattr(ref, name)(*args, *geom)
        exact = getattr(ref, name)(*[a.astype(np.float64) if isinstance(a, np.ndarray) else a
                                     for a in args], *geom)
        mag = getattr(ref, name)(*[np.abs(a.astype(np.float64)) if isinstance(a, np.ndarray)
                                   else a for a in args], *geom)
        assert got.dtype == twin.dtype == dt, name
        assert_rounded(got, exact, mag, 200, dt)
        assert_rounded(twin, exact, mag, 200, dt)


@pytest.mark.parametrize("half", HALVES, ids=str)
@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(0, 7), min_size=0, max_size=3), seed=st.integers(0, 2**31 - 1),
       transpose=st.booleans())
def test_cast_equals_its_numpy_twin_bit_for_bit(half, shape, seed, transpose):
    """backend cast (libmte's conversions for float32 <-> half) equals numpy_backend.cast
    (astype through ml_dtypes / numpy) bit for bit, shape included (0-d, empty, strided), with
    ties, subnormals, inf and nan in the input (nan: any nan)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    flat = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    flat[::3] = np.float32(1.0) + np.float32(2.0 ** -(MANTISSA[half] + 1))   # exact ties
    flat[1::5] = flat[1::5] * np.float32(2.0 ** -100)                          # tiny values
    x = flat.reshape(shape)
    if transpose and x.ndim >= 2:
        x = x.swapaxes(0, 1)

    def bits(a):
        a = np.ascontiguousarray(a).reshape(-1)
        return a.view(np.uint16 if a.itemsize == 2 else np.uint32), np.isnan(a.astype(np.float32))

    for src, dst in [(x, half), (ref.cast(x, half), np.dtype(np.float32))]:
        got, want = native_gemm.cast(src, dst), ref.cast(src, dst)
        assert got.dtype == want.dtype and got.shape == want.shape
        (gb, gnan), (wb, wnan) = bits(got), bits(want)
        assert np.array_equal(gnan, wnan) and np.array_equal(gb[~wnan], wb[~wnan])
