"""Tests of the native extension ``minitorch_edge._C`` and ``backend.native_gemm``.

Every native result is compared with numpy (float64 reference, float32 tolerance scaled
with K); every ISA path this CPU supports is exercised (in process with ``_C.set_isa`` and
through the ``MTE_ISA`` environment variable in a subprocess); bad input to every binding
must raise TypeError/ValueError, never crash. The module is skipped when the extension is
not built, unless MTE_REQUIRE_NATIVE=1 (set by .ci/run), which turns that skip into an error.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if os.environ.get("MTE_REQUIRE_NATIVE") == "1":
    from minitorch_edge import _C
else:
    _C = pytest.importorskip("minitorch_edge._C")

from minitorch_edge import backend
from minitorch_edge.backend import native_gemm

EPS32 = float(np.finfo(np.float32).eps)
DIMS = st.sampled_from([0, 1, 2, 3, 5, 7, 13, 16, 17, 31, 33, 64, 97])
K_DIMS = st.one_of(DIMS, st.sampled_from([257, 1000]))
SCALARS = st.sampled_from([0.0, 1.0, -0.5, 2.5])


def rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def assert_close(got, a, b, alpha=1.0, beta=0.0, c0=None):
    """got ~= alpha * a @ b + beta * c0, with an error bound that grows with K."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    ref = alpha * np.matmul(a64, b64)
    bound = abs(alpha) * np.matmul(np.abs(a64), np.abs(b64))
    if c0 is not None and beta != 0.0:
        ref = ref + beta * c0.astype(np.float64)
        bound = bound + abs(beta) * np.abs(c0.astype(np.float64))
    k = a64.shape[-1] if a64.ndim else 1
    tol = 2.0 * (k + 4) * EPS32 * bound + 1e-30
    assert np.shape(got) == np.shape(ref)
    err = np.abs(np.asarray(got, np.float64) - ref)
    assert np.all(err <= tol), f"max error {err.max()} (tol {tol.max()}) for K={k}"


# --------------------------------------------------------------------------- _C.sgemm

@settings(max_examples=40, deadline=None)
@given(m=DIMS, n=DIMS, k=K_DIMS, ta=st.booleans(), tb=st.booleans(), alpha=SCALARS,
       beta=SCALARS, use_out=st.booleans(), seed=st.integers(0, 2**16))
def test_sgemm_matches_numpy(m, n, k, ta, tb, alpha, beta, use_out, seed):
    rng = np.random.default_rng(seed)
    a = rand(rng, (k, m) if ta else (m, k))
    b = rand(rng, (n, k) if tb else (k, n))
    op_a, op_b = (a.T if ta else a), (b.T if tb else b)
    if use_out:
        out = rand(rng, (m, n))
        c0 = out.copy()
        got = _C.sgemm(a, b, trans_a=ta, trans_b=tb, alpha=alpha, beta=beta, out=out)
        assert got is out
        assert_close(got, op_a, op_b, alpha, beta, c0)
    else:
        got = _C.sgemm(a, b, ta, tb, alpha, beta)
        assert got.dtype == np.float32 and got.flags.c_contiguous
        assert_close(got, op_a, op_b, alpha)  # a fresh output starts from zeros


def test_sgemm_beta_zero_does_not_read_out():
    rng = np.random.default_rng(0)
    a, b = rand(rng, (9, 20)), rand(rng, (20, 11))
    out = np.full((9, 11), np.nan, np.float32)
    _C.sgemm(a, b, beta=0.0, out=out)
    assert_close(out, a, b)


def test_sgemm_zero_sizes():
    z = _C.sgemm(np.ones((3, 0), np.float32), np.ones((0, 4), np.float32))
    assert z.shape == (3, 4) and not z.any()
    assert _C.sgemm(np.ones((0, 5), np.float32), np.ones((5, 4), np.float32)).shape == (0, 4)
    assert _C.sgemm(np.ones((3, 5), np.float32), np.ones((5, 0), np.float32)).shape == (3, 0)
    out = np.full((2, 2), 3.0, np.float32)
    _C.sgemm(np.ones((2, 0), np.float32), np.ones((0, 2), np.float32), beta=2.0, out=out)
    assert np.all(out == 6.0)


# --------------------------------------------------------------------------- _C.matmul

@settings(max_examples=30, deadline=None)
@given(batch=st.sampled_from([None, 0, 1, 3]), a_batched=st.booleans(),
       b_batched=st.booleans(), m=DIMS, n=DIMS, k=K_DIMS, seed=st.integers(0, 2**16))
def test_c_matmul_matches_numpy(batch, a_batched, b_batched, m, n, k, seed):
    rng = np.random.default_rng(seed)
    a_shape = (batch, m, k) if batch is not None and a_batched else (m, k)
    b_shape = (batch, k, n) if batch is not None and b_batched else (k, n)
    a, b = rand(rng, a_shape), rand(rng, b_shape)
    got = _C.matmul(a, b)
    assert got.dtype == np.float32
    assert_close(got, a, b)


def test_c_matmul_batch_of_one_broadcasts():
    rng = np.random.default_rng(1)
    a, b = rand(rng, (1, 4, 6)), rand(rng, (5, 6, 3))
    assert_close(_C.matmul(a, b), a, b)
    assert_close(_C.matmul(b.transpose(0, 2, 1).copy(), a.transpose(0, 2, 1).copy()),
                 b.transpose(0, 2, 1), a.transpose(0, 2, 1))


# ------------------------------------------------------------------ native_gemm.matmul

# pairs of broadcast-compatible batch shapes
BATCH_PAIRS = st.sampled_from([
    ((), ()), ((3,), ()), ((), (3,)), ((3,), (3,)), ((3,), (1,)), ((1,), (3,)),
    ((2, 1), (4,)), ((2, 1), (1, 4)), ((2, 3), (2, 3)), ((2, 1, 3), (3,)), ((1,), (2, 1)),
    ((0,), ()), ((0,), (1,)), ((1, 1), ()),
])


@st.composite
def matmul_operands(draw):
    """Two float32 operands in any np.matmul-compatible configuration: 1-D or N-D,
    broadcastable batch dimensions, and non-contiguous layouts (transposed, strided)."""
    m, n, k = draw(DIMS), draw(DIMS), draw(K_DIMS)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a_batch, b_batch = draw(BATCH_PAIRS)

    def make(batch, rows, cols, vector, layout):
        if vector:  # 1-D operands have length K
            x = rand(rng, (k * 2,))
            return x[::2] if layout == "strided" else x[:k]
        if layout == "transposed":
            return rand(rng, batch + (cols, rows)).swapaxes(-1, -2)
        if layout == "strided":
            return rand(rng, batch + (rows, cols * 2))[..., ::2]
        return rand(rng, batch + (rows, cols))

    layouts = st.sampled_from(["contiguous", "transposed", "strided"])
    vector = st.sampled_from([False, False, False, True])  # a 1-D operand now and then
    a_vec = not a_batch and draw(vector)
    b_vec = not b_batch and draw(vector)
    a = make(a_batch, m, k, a_vec, draw(layouts))
    b = make(b_batch, k, n, b_vec, draw(layouts))
    return a, b


@settings(max_examples=60, deadline=None)
@given(operands=matmul_operands())
def test_backend_matmul_matches_numpy(operands):
    a, b = operands
    expected = np.matmul(a, b)
    got = native_gemm.matmul(a, b)
    assert type(got) is type(expected)
    assert np.shape(got) == expected.shape and got.dtype == expected.dtype
    assert_close(got, a, b)


def test_backend_matmul_vector_vector_is_a_scalar():
    a, b = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    got = native_gemm.matmul(a, b)
    assert isinstance(got, np.float32) and got == 10.0


@pytest.mark.parametrize("da,db", [(np.float64, np.float64), (np.float32, np.float64),
                                   (np.int64, np.int64), (np.int32, np.float32),
                                   (np.float16, np.float32), (np.complex64, np.complex64)])
def test_backend_matmul_other_dtypes_are_numpys(da, db):
    # (float16 @ float16 and bfloat16 @ bfloat16 run libmte's half GEMM: test_native_bf16.py)
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((2, 3, 4)) * 4).astype(da)
    b = (rng.standard_normal((4, 5)) * 4).astype(db)
    expected = np.matmul(a, b)
    got = native_gemm.matmul(a, b)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_backend_matmul_non_native_inputs_follow_numpy():
    assert native_gemm.matmul([[1.0, 2.0]], [[3.0], [4.0]]).tolist() == [[11.0]]
    swapped = np.ones((2, 2), dtype=">f4")
    assert np.array_equal(native_gemm.matmul(swapped, swapped), np.matmul(swapped, swapped))


@pytest.mark.parametrize("a_shape,b_shape", [((2, 3), (4, 5)), ((3,), (4,)), ((2, 2, 3), (3, 3, 4)),
                                             ((), (3,)), ((3,), ())])
def test_backend_matmul_errors_are_numpys(a_shape, b_shape):
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    with pytest.raises(ValueError) as ours:
        native_gemm.matmul(a, b)
    with pytest.raises(ValueError) as theirs:
        np.matmul(a, b)
    assert str(ours.value) == str(theirs.value)


# ------------------------------------------------------------------------- ISA paths

def test_every_isa_in_process():
    rng = np.random.default_rng(3)
    a, b = rand(rng, (37, 300)), rand(rng, (300, 45))
    isas = _C.available_isas()
    assert "generic" in isas and _C.active_isa() in isas
    try:
        for isa in isas:
            _C.set_isa(isa)
            assert _C.active_isa() == isa
            assert_close(_C.sgemm(a, b), a, b)
            assert_close(_C.sgemm(a.T.copy(), b.T.copy(), True, True, 2.0), a, b, 2.0)
            assert_close(native_gemm.matmul(a[None].repeat(2, 0), b), a[None].repeat(2, 0), b)
    finally:
        _C.set_isa("auto")


FAMILIES = {"sgemm", "epilogue", "im2col", "depthwise3x3", "depthwise", "pool", "winograd",
            "rowwise", "attention", "qgemm", "qdepthwise", "convdirect", "qelem", "bf16"}
BASE_ISA = {"avx512vnni": "avx512", "neondot": "neon"}  # rows that add int8 kernels to another


def test_dispatch_table_switches_every_family():
    """One ISA table: every family reports the active ISA or 'generic', set_isa switches
    them all, and every ISA runs its own SGEMM microkernel (avx512vnni / neondot: their base
    ISA's, plus their own int8 GEMM)."""
    try:
        for isa in _C.available_isas():
            _C.set_isa(isa)
            table = _C.dispatch_table()
            assert set(table) == FAMILIES, table
            base = BASE_ISA.get(isa, isa)
            assert set(table.values()) <= {isa, base, "generic"}, table
            assert table["sgemm"] == base
            assert table["qgemm"] in (isa, "generic")
        _C.set_isa("generic")
        assert set(_C.dispatch_table().values()) == {"generic"}
    finally:
        _C.set_isa("auto")
    assert _C.dispatch_table()["sgemm"] == BASE_ISA.get(_C.active_isa(), _C.active_isa())


def test_mte_isa_environment_variable():
    script = ("import numpy as np; from minitorch_edge import _C; "
              "a = np.arange(35, dtype=np.float32).reshape(5, 7) / 7; "
              "b = np.arange(21, dtype=np.float32).reshape(7, 3) / 3; "
              "assert np.allclose(_C.sgemm(a, b), a @ b, rtol=1e-5); print(_C.active_isa())")
    for isa in _C.available_isas():
        env = dict(os.environ, MTE_ISA=isa)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == isa


def test_set_isa_rejects_unknown_and_unavailable():
    before = _C.active_isa()
    with pytest.raises(ValueError):
        _C.set_isa("sse9")
    for isa in ("avx512", "avx2", "neon"):
        if isa not in _C.available_isas():  # not compiled in, or not on this CPU
            with pytest.raises(ValueError):
                _C.set_isa(isa)
    assert _C.active_isa() == before


# ---------------------------------------------------------------------- bad input

F = np.ones((2, 3), np.float32)
G = np.ones((3, 4), np.float32)
READONLY = np.zeros((2, 4), np.float32)
READONLY.flags.writeable = False
BAD_CALLS = [
    # wrong dtype or not an array -> TypeError
    (lambda: _C.sgemm(F.astype(np.float64), G), TypeError),
    (lambda: _C.sgemm(F, G.astype(np.int32)), TypeError),
    (lambda: _C.sgemm(F.tolist(), G), TypeError),
    (lambda: _C.sgemm(None, G), TypeError),
    (lambda: _C.sgemm(F, G.astype(">f4")), TypeError),
    (lambda: _C.sgemm(F, G, out=np.zeros((2, 4), np.float64)), TypeError),
    (lambda: _C.sgemm(F, G, out=[[0.0] * 4] * 2), TypeError),
    (lambda: _C.matmul(F.astype(np.float16), G), TypeError),
    (lambda: _C.matmul(F, "G"), TypeError),
    # layout, rank, sizes -> ValueError
    (lambda: _C.sgemm(F, G.T), ValueError),
    (lambda: _C.sgemm(np.ones((2, 6), np.float32)[:, ::2], G), ValueError),
    (lambda: _C.sgemm(F[None], G), ValueError),
    (lambda: _C.sgemm(F[0], G), ValueError),
    (lambda: _C.sgemm(np.float32(1.0), G), TypeError),
    (lambda: _C.sgemm(F, F), ValueError),
    (lambda: _C.sgemm(F, G, trans_a=True), ValueError),
    (lambda: _C.sgemm(F, G, out=np.zeros((4, 2), np.float32)), ValueError),
    (lambda: _C.sgemm(F, G, out=np.zeros((2, 8), np.float32)[:, ::2]), ValueError),
    (lambda: _C.sgemm(F, G, out=np.zeros((1, 2, 4), np.float32)), ValueError),
    (lambda: _C.sgemm(F, G, out=READONLY), ValueError),
    (lambda: _C.matmul(F, F), ValueError),
    (lambda: _C.matmul(F[0], G), ValueError),
    (lambda: _C.matmul(F[None, None], G), ValueError),
    (lambda: _C.matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 4), np.float32)),
     ValueError),
    (lambda: _C.matmul(np.ones((4, 3), np.float32).T, G), ValueError),
    (lambda: _C.set_num_threads(0), ValueError),
    (lambda: _C.set_num_threads(10**6), ValueError),
    (lambda: _C.set_num_threads(2**40), TypeError),
    (lambda: _C.sgemm(F, G, alpha="2"), TypeError),
    (lambda: _C.set_isa("avx9000"), ValueError),
]


@pytest.mark.parametrize("call,exc", BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_bad_input_raises(call, exc):
    with pytest.raises(exc):
        call()


def test_shape_error_message():
    with pytest.raises(ValueError, match=r"sgemm: shapes cannot be multiplied \(2x3 and 4x5\)"):
        _C.sgemm(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(ValueError, match=r"matmul: shapes cannot be multiplied"):
        _C.matmul(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))


def test_out_must_not_alias_inputs():
    buf = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="share memory"):
        _C.sgemm(buf, buf, out=buf)
    with pytest.raises(ValueError, match="share memory"):
        _C.sgemm(buf[:2], buf, out=buf[2:])  # disjoint from a, overlaps b
    assert np.all(buf == 1.0)


def test_rejected_out_is_left_untouched():
    out = np.full((2, 4), 7.0, np.float32)
    with pytest.raises(ValueError):
        _C.sgemm(F, np.ones((4, 4), np.float32), out=out)
    assert np.all(out == 7.0)


# ---------------------------------------------------------- threads, info, concurrency

def test_threads_and_info():
    n0 = _C.get_num_threads()
    try:
        backend.set_num_threads(1)
        assert backend.get_num_threads() == 1
        backend.set_num_threads(2)
        assert backend.get_num_threads() == (2 if _C.has_openmp() else 1)
        rng = np.random.default_rng(4)
        a, b = rand(rng, (200, 150)), rand(rng, (150, 170))
        assert_close(_C.sgemm(a, b), a, b)
    finally:
        _C.set_num_threads(n0)
    info = backend.info()
    assert {"version", "isa", "cpu_features", "kernels", "num_threads", "dispatch"} <= set(info)
    assert info["isa"] in _C.available_isas() and "sgemm" in info["kernels"]
    assert isinstance(info["cpu_features"], list) and _C.version() == info["version"]
    if backend.active() == "native":
        assert info["dispatch"]["matmul"].startswith("native[")


def test_arena_peak_is_reported():
    rng = np.random.default_rng(5)
    a, b = rand(rng, (128, 300)), rand(rng, (300, 96))
    _C.sgemm(a, b)
    assert _C.arena_peak_bytes() >= 96 * 100 * 4  # at least a packed slice of B


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_kernels_work_in_a_forked_child():
    # GNU OpenMP's pool does not survive fork(): libmte runs single-threaded in a child
    # (e.g. a DataLoader worker) instead of hanging.
    rng = np.random.default_rng(7)
    a, b = rand(rng, (300, 200)), rand(rng, (200, 250))
    n0 = _C.get_num_threads()
    _C.set_num_threads(2)
    try:
        _C.sgemm(a, b)  # start the parent's thread pool
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: report, then leave without running pytest's teardown
            ok = False
            try:
                got = _C.sgemm(a, b)
                ok = _C.get_num_threads() == 1 and np.allclose(got, a @ b, rtol=1e-4,
                                                                 atol=1e-3)
            finally:
                os.write(write_end, b"1" if ok else b"0")
                os._exit(0)
        os.close(write_end)
        import select
        ready, _, _ = select.select([read_end], [], [], 60)
        if not ready:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
        assert ready and os.read(read_end, 1) == b"1", "child hung or computed wrongly"
        os.close(read_end)
    finally:
        _C.set_num_threads(n0)


def test_concurrent_callers_release_the_gil():
    rng = np.random.default_rng(6)
    pairs = [(rand(rng, (70, 90)), rand(rng, (90, 50))) for _ in range(4)]
    results, errors = [None] * 4, []

    def work(i):
        try:
            for _ in range(10):
                results[i] = _C.sgemm(*pairs[i])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for (a, b), got in zip(pairs, results):
        assert_close(got, a, b)


def test_peak_and_workspace_counters():
    """The FMA peak the benchmarks quote % of, and the arena's steady-state counters."""
    peak = _C.peak_gflops(0.01)
    assert 0.1 < peak < 10000
    a = np.ones((64, 64), np.float32)
    _C.matmul(a, a)
    before = _C.workspace_allocations()
    _C.arena_reset_peak()
    for _ in range(3):
        np.testing.assert_allclose(_C.matmul(a, a), a @ a)
    assert _C.workspace_allocations() == before          # nothing allocated in steady state
    assert 0 < _C.arena_peak_bytes()
