"""Matrix products, tensordot/kron/trace/cross and einsum through the table-driven harness
(see harness.py), plus error messages and the numpy/native backend switch."""
import os

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import minitorch_edge as mte
from harness import Row, fixed, import_torch, make_tests

SIDE = st.integers(0, 4)          # M, N, K: zero-sized included
POS = st.integers(1, 4)


# ---- shape strategies --------------------------------------------------------------------------
def _batches(max_dims=2):
    """Two mutually broadcastable batch shapes (possibly empty, possibly with zeros)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims,
                                             min_side=0, max_side=3).map(lambda r: r.input_shapes)


@st.composite
def mm_shapes(draw, left="mat", right="mat", batch=False):
    """Shapes for a @ b: left/right "vec" (K,) or "mat" (.., M, K) / (.., K, N); with batch=True
    the matrix operands get broadcastable batch dims."""
    m, n, k = draw(SIDE), draw(SIDE), draw(SIDE)
    ba, bb = draw(_batches()) if batch else ((), ())
    sa = (k,) if left == "vec" else ba + (m, k)
    sb = (k,) if right == "vec" else bb + (k, n)
    return sa, sb


@st.composite
def bmm_shapes(draw):
    b, m, n, k = draw(SIDE), draw(SIDE), draw(SIDE), draw(SIDE)
    return (b, m, k), (b, k, n)


@st.composite
def addmm_shapes(draw, batched=False):
    """(input, m1, m2): input is () or a shape broadcastable to the product's shape."""
    m, n, k = draw(SIDE), draw(SIDE), draw(SIDE)
    pre = (draw(SIDE),) if batched else ()
    out = pre + (m, n)
    inp = draw(st.sampled_from([(), (n,), (1, n), (m, 1), out]))
    return inp, pre + (m, k), pre + (k, n)


@st.composite
def letter_shapes(draw, spec, side=SIDE):
    """Shapes for an einsum spec like "ij,jk": one drawn size per letter."""
    size = {c: draw(side) for c in sorted(set(spec) - {","})}
    return tuple(tuple(size[c] for c in term) for term in spec.split(","))


@st.composite
def ellipsis_shapes(draw):
    """'...ij,...jk': batch dims that broadcast (different lengths, size-1 dims)."""
    (sa, sb), (i, j, k) = draw(_batches()), (draw(SIDE), draw(SIDE), draw(SIDE))
    return sa + (i, j), sb + (j, k)


@st.composite
def one_broadcast(draw):
    """'ij,ij->ij' where a letter has size 1 in one operand (einsum broadcasts it)."""
    i, j = draw(POS), draw(POS)
    return draw(st.sampled_from([((i, 1), (1, j)), ((i, j), (1, j)), ((1, 1), (i, j))]))


def ints(rng, shapes, dtype):
    return [rng.integers(-4, 5, s).astype(dtype) for s in shapes]


# ---- the table ---------------------------------------------------------------------------------
# Rows with batch dims or three operands allow gradcheck on up to 80 elements (default 40) so
# that a fair share of the drawn shapes is actually gradchecked.
TABLE = [
    Row("matmul_1d_1d", lambda m, a, b: m.matmul(a, b), shapes=mm_shapes("vec", "vec"),
        double=True),
    Row("matmul_1d_2d", lambda m, a, b: m.matmul(a, b), shapes=mm_shapes("vec", "mat"),
        double=True),
    Row("matmul_2d_1d", lambda m, a, b: m.matmul(a, b), shapes=mm_shapes("mat", "vec"),
        double=True),
    Row("matmul_2d_2d", lambda m, a, b: m.matmul(a, b), shapes=mm_shapes(), double=True),
    Row("matmul_batched", lambda m, a, b: m.matmul(a, b), shapes=mm_shapes(batch=True),
        double=True,
        max_gradcheck_numel=80),
    Row("matmul_vec_batched", lambda m, a, b: m.matmul(a, b),
        shapes=mm_shapes("vec", "mat", batch=True), double=True),
    Row("matmul_batched_vec", lambda m, a, b: m.matmul(a, b),
        shapes=mm_shapes("mat", "vec", batch=True), double=True),
    Row("matmul_batched_x_2d", lambda m, a, b: a @ b,   # the folded dB path (a Linear layer)
        shapes=st.tuples(st.tuples(POS, POS, SIDE, st.just(3)), st.just((3, 2))),
        double=True),
    Row("matmul_operator", lambda m, a, b: a @ b, shapes=mm_shapes(batch=True)),
    Row("rmatmul", lambda m, a, b: b.__rmatmul__(a), shapes=mm_shapes()),
    Row("matmul_method", lambda m, a, b: a.matmul(b), shapes=mm_shapes("mat", "vec")),
    Row("matmul_int", lambda m, a, b: a @ b, shapes=mm_shapes(batch=True), make=ints,
        dtype="int64", grad=False),
    Row("mm", lambda m, a, b: m.mm(a, b), shapes=mm_shapes(), double=True),
    Row("mm_method", lambda m, a, b: a.mm(b), shapes=mm_shapes()),
    Row("bmm", lambda m, a, b: m.bmm(a, b), shapes=bmm_shapes(), double=True,
        max_gradcheck_numel=80),
    Row("mv", lambda m, a, b: m.mv(a, b), shapes=mm_shapes("mat", "vec"), double=True),
    Row("dot", lambda m, a, b: m.dot(a, b), shapes=mm_shapes("vec", "vec"), double=True),
    Row("dot_method", lambda m, a, b: a.dot(b), shapes=mm_shapes("vec", "vec")),
    Row("vdot", lambda m, a, b: m.vdot(a, b), shapes=mm_shapes("vec", "vec")),
    Row("inner", lambda m, a, b: m.inner(a, b),
        shapes=letter_shapes("abk,ck", side=st.integers(0, 3)),
        max_gradcheck_numel=80),
    Row("inner_scalar", lambda m, a, b: m.inner(a, b), shapes=fixed((), (2, 3))),
    Row("outer", lambda m, a, b: m.outer(a, b), shapes=letter_shapes("i,j"), double=True),
    Row("ger_method", lambda m, a, b: a.ger(b), shapes=letter_shapes("i,j")),
    Row("addmm", lambda m, c, a, b: m.addmm(c, a, b), shapes=addmm_shapes(), double=True),
    Row("addmm_beta_alpha", lambda m, c, a, b: c.addmm(a, b, beta=0.5, alpha=-2.0),
        shapes=addmm_shapes()),
    Row("addmm_beta0", lambda m, c, a, b: m.addmm(c, a, b, beta=0), shapes=addmm_shapes()),
    Row("baddbmm", lambda m, c, a, b: m.baddbmm(c, a, b, beta=2.0, alpha=0.5),
        shapes=addmm_shapes(batched=True),
        max_gradcheck_numel=80),
    Row("tensordot_int", lambda m, a, b: m.tensordot(a, b, dims=2),
        shapes=letter_shapes("ijk,jkl", side=st.integers(0, 3)), double=True,
        max_gradcheck_numel=80),
    Row("tensordot_lists", lambda m, a, b: m.tensordot(a, b, dims=([0, 2], [1, 0])),
        shapes=letter_shapes("ijk,kil", side=st.integers(0, 3)),
        max_gradcheck_numel=80),
    Row("tensordot_0", lambda m, a, b: m.tensordot(a, b, dims=0),
        shapes=letter_shapes("ij,k", side=st.integers(0, 3))),
    Row("kron", lambda m, a, b: m.kron(a, b), shapes=st.tuples(
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
        hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))),
    Row("trace", lambda m, a: m.trace(a), shapes=letter_shapes("ij").map(lambda s: s[:1]),
        double=True),
    Row("trace_method_int", lambda m, a: a.trace(), shapes=fixed((3, 4)), make=ints,
        dtype="int32", grad=False),
    Row("cross", lambda m, a, b: m.cross(a, b, dim=1),
        shapes=st.tuples(st.tuples(SIDE, st.just(3)), st.tuples(SIDE, st.just(3))).filter(
            lambda s: s[0][0] == s[1][0])),
    Row("cross_broadcast", lambda m, a, b: m.cross(a, b, dim=-1),
        torch_fn=lambda t, a, b: t.linalg.cross(a, b, dim=-1),
        shapes=fixed((2, 1, 3), (1, 4, 3))),
    # einsum
    Row("einsum_ij,jk->ik", lambda m, a, b: m.einsum("ij,jk->ik", a, b),
        shapes=letter_shapes("ij,jk"), double=True),
    Row("einsum_bij,bjk->bik", lambda m, a, b: m.einsum("bij,bjk->bik", a, b),
        shapes=letter_shapes("bij,bjk", side=st.integers(0, 3)), double=True,
        max_gradcheck_numel=80),
    Row("einsum_ij->ji", lambda m, a: m.einsum("ij->ji", a), shapes=letter_shapes("ij")),
    Row("einsum_ii->i", lambda m, a: m.einsum("ii->i", a), shapes=letter_shapes("ii"),
        double=True),
    Row("einsum_ii", lambda m, a: m.einsum("ii", a), shapes=letter_shapes("ii"), double=True),
    Row("einsum_iij->ji", lambda m, a: m.einsum("iij->ji", a),
        shapes=letter_shapes("iij", side=st.integers(0, 3))),
    Row("einsum_i,i->", lambda m, a, b: m.einsum("i,i->", a, b), shapes=letter_shapes("i,i")),
    Row("einsum_i,j->ij", lambda m, a, b: m.einsum("i,j->ij", a, b),
        shapes=letter_shapes("i,j"), double=True),
    Row("einsum_ellipsis_matmul", lambda m, a, b: m.einsum("...ij,...jk->...ik", a, b),
        shapes=ellipsis_shapes(), double=True),
    Row("einsum_ellipsis_implicit", lambda m, a, b: m.einsum("...ij,...jk", a, b),
        shapes=ellipsis_shapes()),
    Row("einsum_ellipsis_summed", lambda m, a: m.einsum("i...j->j", a),
        shapes=hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=3).map(
            lambda s: (s,))),
    Row("einsum_ijk->", lambda m, a: m.einsum("ijk->", a),
        shapes=letter_shapes("ijk", side=st.integers(0, 3))),
    Row("einsum_ij->i", lambda m, a: m.einsum("ij->i", a), shapes=letter_shapes("ij")),
    Row("einsum_attention", lambda m, a, b: m.einsum("bhqd,bhkd->bhqk", a, b),
        shapes=letter_shapes("bhqd,bhkd", side=st.integers(0, 3)), double=True,
        max_gradcheck_numel=80),
    Row("einsum_three", lambda m, a, b, c: m.einsum("ij,jk,kl->il", a, b, c),
        shapes=letter_shapes("ij,jk,kl"), double=True,
        max_gradcheck_numel=80),
    Row("einsum_implicit", lambda m, a, b: m.einsum("ij,jk", a, b),
        shapes=letter_shapes("ij,jk")),
    Row("einsum_implicit_order", lambda m, a, b: m.einsum("ba,Ab", a, b),
        shapes=letter_shapes("ba,Ab")),
    Row("einsum_list_spaces", lambda m, a, b: m.einsum(" i j , j k -> k i ", [a, b]),
        shapes=letter_shapes("ij,jk")),
    Row("einsum_only_in_one", lambda m, a, b: m.einsum("ij,jk->j", a, b),
        shapes=letter_shapes("ij,jk"), double=True),
    Row("einsum_diag_and_summed", lambda m, a, b: m.einsum("iij,k->k", a, b),
        shapes=letter_shapes("iij,k", side=st.integers(0, 3)), double=True),
    Row("einsum_size1_broadcast", lambda m, a, b: m.einsum("ij,ij->ij", a, b),
        shapes=one_broadcast(), double=True),
    Row("einsum_int", lambda m, a, b: m.einsum("ij,jk->ik", a, b),
        shapes=letter_shapes("ij,jk"), make=ints, dtype="int32", grad=False),
]

make_tests(TABLE, globals())


# ---- errors: the exception, the message, and inputs left unchanged -----------------------------
def _pair(sa, sb, dtype=np.float32):
    a = mte.from_numpy(np.arange(np.prod(sa), dtype=dtype).reshape(sa)).requires_grad_()
    b = mte.from_numpy(np.arange(np.prod(sb), dtype=dtype).reshape(sb)).requires_grad_()
    return a, b, a.detach().numpy().copy(), b.detach().numpy().copy()


def _unchanged(a, b, ca, cb):
    np.testing.assert_array_equal(a.detach().numpy(), ca)
    np.testing.assert_array_equal(b.detach().numpy(), cb)
    assert a.grad is None and b.grad is None and a._version == 0 and b._version == 0


def test_matmul_shape_error_message_exact():
    a, b, ca, cb = _pair((2, 3), (4, 5))
    with pytest.raises(RuntimeError) as e:
        mte.matmul(a, b)
    assert str(e.value) == "matmul: shapes cannot be multiplied (2x3 and 4x5)"
    with pytest.raises(RuntimeError) as e:
        a @ b
    assert str(e.value) == "matmul: shapes cannot be multiplied (2x3 and 4x5)"
    _unchanged(a, b, ca, cb)


@pytest.mark.parametrize("fn, sa, sb, exc, msg", [
    (lambda a, b: mte.matmul(a, b), (), (3,), RuntimeError,
     "both arguments to matmul need to be at least 1D"),
    (lambda a, b: mte.matmul(a, b), (3,), (4,), RuntimeError,
     r"matmul: shapes cannot be multiplied \(3 and 4\)"),
    (lambda a, b: mte.matmul(a, b), (7, 2, 3), (5, 3, 5), RuntimeError, "batch dims of 7x2x3"),
    (lambda a, b: mte.mm(a, b), (3,), (3, 3), RuntimeError, "mm: expected 2-D and 2-D"),
    (lambda a, b: mte.mm(a, b), (2, 3), (4, 3), RuntimeError,
     r"mm: shapes cannot be multiplied \(2x3 and 4x3\)"),
    (lambda a, b: mte.bmm(a, b), (2, 2, 3), (3, 3, 3), RuntimeError, "batch sizes must be equal"),
    (lambda a, b: mte.bmm(a, b), (2, 2, 3), (3, 3), RuntimeError, "bmm: expected 3-D and 3-D"),
    (lambda a, b: mte.mv(a, b), (2, 3), (4,), RuntimeError, r"\(2x3 and 4\)"),
    (lambda a, b: mte.dot(a, b), (3,), (4,), RuntimeError, "same number of elements"),
    (lambda a, b: mte.dot(a, b), (3,), (3, 1), RuntimeError, "dot: expected 1-D and 1-D"),
    (lambda a, b: mte.outer(a, b), (3,), (3, 2), RuntimeError, "1-D argument vec2"),
    (lambda a, b: mte.trace(a), (3,), (1,), RuntimeError, "trace: expected a matrix"),
    (lambda a, b: mte.addmm(a, b, b.reshape(3, 2)), (4, 3), (2, 3), RuntimeError,
     "input of shape 4x3 cannot be broadcast"),
    (lambda a, b: mte.tensordot(a, b, dims=([1], [1])), (2, 3, 4), (3, 4, 5), RuntimeError,
     "first has size 3 in dim 1 and second has size 4 in dim 1"),
    (lambda a, b: mte.tensordot(a, b, dims=-1), (2, 3), (3, 2), RuntimeError, "dims >= 0"),
    (lambda a, b: mte.tensordot(a, b, dims=([1, 2], [0])), (2, 3, 4), (3, 4), RuntimeError,
     "same length"),
    (lambda a, b: mte.inner(a, b), (2, 3), (4, 4), RuntimeError, "last dimension must match"),
    (lambda a, b: mte.cross(a, b, dim=1), (2, 4), (2, 4), RuntimeError, "must have length 3"),
    (lambda a, b: mte.matmul(a, 2.0), (2, 3), (1,), TypeError, "must be a Tensor"),
])
def test_product_errors(fn, sa, sb, exc, msg):
    a, b, ca, cb = _pair(sa, sb)
    with pytest.raises(exc, match=msg):
        fn(a, b)
    _unchanged(a, b, ca, cb)


def test_matmul_dtype_errors():
    a = mte.ones(2, 3)
    b = mte.ones(3, 4, dtype=mte.float64)
    with pytest.raises(RuntimeError, match="same dtype, but got float32 and float64"):
        mte.matmul(a, b)
    with pytest.raises(RuntimeError, match="same dtype"):
        mte.dot(mte.ones(3), mte.ones(3, dtype=mte.float64))
    with pytest.raises(RuntimeError, match="same dtype"):
        mte.addmm(mte.ones(3, dtype=mte.float64), mte.ones(2, 3), mte.ones(3, 3))
    with pytest.raises(NotImplementedError, match="bool"):
        mte.matmul(mte.ones(2, 2, dtype=mte.bool), mte.ones(2, 2, dtype=mte.bool))
    with pytest.raises(TypeError):
        mte.ones(2, 2) @ 2
    assert (mte.ones(2, 3, dtype=mte.int32) @ mte.ones(3, 2, dtype=mte.int32)).dtype == mte.int32


@pytest.mark.parametrize("eq, shapes, msg", [
    ("ij,jk", [(2, 3)], "fewer operands"),
    ("ij,jk", [(2, 3), (3, 5), (2,)], "more operands"),
    ("ijk,jk", [(2, 3), (3, 5)], "operand 0 has 2 dims"),
    ("ij,jk", [(2, 3), (4, 5)], "subscript j has size 4 in operand 1 .*size 3 in operand 0"),
    ("ij,jk->iz", [(2, 3), (3, 5)], "output subscript z does not appear"),
    ("ij,jk->ii", [(2, 3), (3, 5)], "output subscript i appears more than once"),
    ("i1,jk", [(2, 3), (3, 5)], "invalid subscript '1'"),
    ("ij.,jk", [(2, 3), (3, 5)], "not part of an ellipsis"),
    ("......", [(2, 3)], "more than one ellipsis"),
    ("ii->i", [(3, 4)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 4"),
    ("ij,jk->ik->i", [(2, 3), (3, 5)], "more than one '->'"),
    ("...ij,...jk", [(4, 2, 2, 3), (5, 3, 5)], r"covered by '\.\.\.' has size 5"),
    ("ij...,jk", [(2,), (3, 5)], "operand 0 has 1 dims"),
])
def test_einsum_errors(eq, shapes, msg):
    ops = [mte.from_numpy(np.arange(np.prod(s), dtype=np.float32).reshape(s)).requires_grad_()
           for s in shapes]
    copies = [o.detach().numpy().copy() for o in ops]
    with pytest.raises(RuntimeError, match=msg) as e:
        mte.einsum(eq, *ops)
    assert f"einsum('{eq}')" in str(e.value)
    for o, c in zip(ops, copies):
        np.testing.assert_array_equal(o.detach().numpy(), c)
        assert o.grad is None and o._version == 0


def test_einsum_type_errors():
    with pytest.raises(TypeError, match="operand 1 must be a Tensor"):
        mte.einsum("ij,ij->i", mte.ones(3, 2), 5)
    with pytest.raises(TypeError, match="equation must be a str"):
        mte.einsum(3, mte.ones(3, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        mte.einsum("ij,jk", mte.ones(2, 3), mte.ones(3, 4, dtype=mte.float64))


def test_einsum_result_does_not_share_memory():
    a = mte.ones(3, 3)
    d = mte.einsum("ii->i", a)
    d.numpy()[0] = 5.0
    assert a.numpy()[0, 0] == 1.0


def test_einsum_int_dtypes_follow_torch():
    torch = import_torch()
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for eq in ["ij->ji", "ij->i", "ij->"]:
        ours, theirs = mte.einsum(eq, mte.from_numpy(x)), torch.einsum(eq, torch.from_numpy(x))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], eq
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- backends ----------------------------------------------------------------------------------
@given(shapes=st.one_of(mm_shapes(batch=True), mm_shapes("vec", "mat", batch=True),
                        mm_shapes("mat", "vec"), mm_shapes("vec", "vec")),
       seed=st.integers(0, 2 ** 31))
def test_matmul_numpy_and_auto_backends_agree(shapes, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    results = {}
    try:
        for name in ("numpy", "auto"):
            mte.backend.use(name)
            a, b = (mte.from_numpy(x).requires_grad_() for x in arrays)
            y = a @ b
            y.backward(mte.ones(*y.shape))
            results[name] = (y.detach().numpy().copy(), a.grad.numpy().copy(),
                             b.grad.numpy().copy())
    finally:   # back to the suite's setting ("auto" unless MTE_BACKEND says otherwise)
        mte.backend.use(os.environ.get("MTE_BACKEND", "auto"))
    expected = np.matmul(arrays[0].astype(np.float64), arrays[1].astype(np.float64))
    for name, (y, ga, gb) in results.items():
        np.testing.assert_allclose(y, expected, rtol=1.3e-6, atol=1e-5, err_msg=name)
    for r, q in zip(results["numpy"], results["auto"]):
        np.testing.assert_allclose(r, q, rtol=1.3e-6, atol=1e-5)


def test_matmul_uses_the_backend_at_call_time(monkeypatch):
    calls = []
    real = mte.backend.matmul

    def spy(x, y):
        calls.append((x.shape, y.shape))
        return real(x, y)
    monkeypatch.setattr(mte.backend, "matmul", spy)
    mte.ones(2, 3) @ mte.ones(3, 4)
    assert calls == [((2, 3), (3, 4))]


def test_matmul_double_backward_matches_torch():
    """Second-order gradients of a broadcast batched matmul, against torch."""
    torch = import_torch()
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((5, 4, 2))
    u, v = rng.standard_normal((2, 5, 3, 2)), rng.standard_normal((2, 1, 3, 4))
    out = []
    for lib, wrap in ((mte, mte.from_numpy), (torch, torch.from_numpy)):
        a, b = wrap(xa).requires_grad_(), wrap(xb).requires_grad_()
        ga, = lib.autograd.grad((lib.matmul(a, b) * wrap(u)).sum(), [a], create_graph=True)
        out.append([g.detach().numpy() for g in lib.autograd.grad((ga * wrap(v)).sum(), [b])])
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-12, atol=1e-12)
