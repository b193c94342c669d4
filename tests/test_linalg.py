"""minitorch_edge.linalg (and the torch.* / Tensor spellings: inverse, det, logdet, slogdet,
cholesky, qr, svd, pinverse): the harness table (forward and backward against torch, gradcheck,
gradgradcheck for some), then PyTorch's errors and the argument dispatch of the norms."""
import numpy as np
import pytest
from hypothesis import strategies as st

import minitorch_edge as mte
import minitorch_edge.linalg  # noqa: F401  (the namespace, also without the package import)
from harness import Row, import_torch, make_tests

torch = import_torch()
ML = mte.linalg


# ---- shapes and inputs --------------------------------------------------------------------------
@st.composite
def matrices(draw, count=1, square=True, min_n=1, max_n=4, batch=True):
    """`count` shapes (batch..., m, n) sharing the batch (0-2 dims, sizes 1-2)."""
    b = tuple(draw(st.lists(st.integers(1, 2), max_size=2))) if batch else ()
    m = draw(st.integers(min_n, max_n))
    n = m if square else draw(st.integers(min_n, max_n))
    return tuple(b + (m, n) for _ in range(count))


@st.composite
def solve_shapes(draw, vector=False, full_batch=False):
    b = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    n, k = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    bb = b if full_batch else b[draw(st.integers(0, len(b))):]   # B's batch: a suffix
    if vector:      # B (n,) or A's shape without the last dim: the vector case
        return (b + (n, n), (n,) if draw(st.booleans()) else b + (n,))
    return (b + (n, n), bb + (n, k))


def well_conditioned(rng, shapes, dtype):
    """Square matrices (first input) with eigenvalues near 3: inverse, det, solve are tame;
    other inputs are plain normal."""
    out = []
    for k, s in enumerate(shapes):
        a = rng.standard_normal(s) * 0.5
        if k == 0:
            a = a + 3 * np.eye(s[-1])
        out.append(a.astype(dtype))
    return out


def _orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def separated_singular(rng, shapes, dtype):
    """A = U diag(s) V^T with singular values 1, 2, 3, ... (times a jitter): well separated
    and away from 0, so the SVD's gradient is well conditioned."""
    out = []
    for s in shapes:
        m, n = s[-2:]
        k = min(m, n)
        u, v = _orthogonal(rng, s[:-2], m)[..., :k], _orthogonal(rng, s[:-2], n)[..., :k]
        sv = (np.arange(k, 0, -1) + rng.uniform(0, 0.3, s[:-2] + (k,)))
        out.append(((u * sv[..., None, :]) @ np.swapaxes(v, -1, -2)).astype(dtype))
    return out


def separated_symmetric(rng, shapes, dtype):
    """Half of a symmetric matrix with eigenvalues -n.., 1, 2, ... (distinct, apart by >= 1):
    the row functions symmetrise with a + a^T."""
    out = []
    for s in shapes:
        n = s[-1]
        v = _orthogonal(rng, s[:-2], n)
        w = np.arange(n) - n / 2 + rng.uniform(0, 0.2, s[:-2] + (n,)) + 0.3
        out.append(((v * w[..., None, :]) @ np.swapaxes(v, -1, -2) / 2).astype(dtype))
    return out


def _eye(L, n, like):
    return L.eye(n, dtype=like.dtype)


def spd(L, a):
    """A symmetric positive-definite matrix made from any square a (differentiable)."""
    return a @ a.mT + _eye(L, a.shape[-1], a)


def _svd_invariants(U, S, Vh):
    """Sign-independent functions of an SVD (singular vectors are defined up to sign)."""
    return S, U @ Vh, U.abs(), Vh.abs()


def _svd_row(L, a, full=False):
    U, S, Vh = L.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]           # (full_matrices: the extra columns are any basis of the rest)
    return _svd_invariants(U[..., :k], S, Vh[..., :k, :])


def _eigh_row(L, a):
    w, v = L.linalg.eigh(a + a.mT)
    return w, v.abs(), (v * w.unsqueeze(-2)) @ v.mT


SQ = matrices()
RECT = matrices(square=False)
F64 = dict(rtol=1e-4, atol=1e-4)      # float32 factorisations of small random matrices

TABLE = [
    Row("inv", lambda L, a: L.linalg.inv(a), shapes=SQ, make=well_conditioned, double=True),
    Row("inverse", lambda L, a: a.inverse(), shapes=SQ, make=well_conditioned),
    Row("det", lambda L, a: L.linalg.det(a), shapes=SQ, make=well_conditioned, double=True),
    Row("det_method", lambda L, a: a.det(), shapes=SQ, make=well_conditioned),
    Row("slogdet", lambda L, a: tuple(L.linalg.slogdet(a - 3 * _eye(L, a.shape[-1], a))),
        shapes=SQ, make=well_conditioned, **F64),
    Row("logdet", lambda L, a: L.logdet(spd(L, a)), shapes=SQ, **F64),
    Row("solve", lambda L, a, b: L.linalg.solve(a, b), shapes=solve_shapes(),
        make=well_conditioned, double=True),
    Row("solve_vector", lambda L, a, b: L.linalg.solve(a, b), shapes=solve_shapes(True),
        make=well_conditioned),
    Row("solve_left_false", lambda L, a, b: L.linalg.solve(a, b.mT, left=False),
        shapes=solve_shapes(full_batch=True), make=well_conditioned),
    Row("cholesky", lambda L, a: L.linalg.cholesky(spd(L, a)), shapes=SQ, double=True, **F64),
    Row("cholesky_upper", lambda L, a: L.linalg.cholesky(spd(L, a), upper=True), shapes=SQ,
        **F64),
    Row("cholesky_method", lambda L, a: spd(L, a).cholesky(), shapes=SQ, **F64),
    Row("qr", lambda L, a: tuple(L.linalg.qr(a)), shapes=RECT, make=separated_singular,
        double=True, **F64),
    Row("qr_complete_square", lambda L, a: tuple(L.linalg.qr(a, mode="complete")), shapes=SQ,
        make=separated_singular, **F64),
    Row("qr_r", lambda L, a: L.linalg.qr(a, mode="r")[1], shapes=RECT, make=separated_singular,
        grad=False, **F64),
    Row("qr_old", lambda L, a: tuple(L.qr(a)), shapes=RECT, make=separated_singular, **F64),
    Row("svd", _svd_row, shapes=RECT, make=separated_singular, double=True, **F64),
    Row("svd_full_matrices", lambda L, a: _svd_row(L, a, True), shapes=RECT,
        make=separated_singular, **F64),
    Row("svd_old", lambda L, a: (lambda u, s, v: (s, u @ v.mT, u.abs()))(*L.svd(a)),
        shapes=RECT, make=separated_singular, **F64),
    # svdvals / eigvalsh treat the singular/eigen vectors as constants in backward: first
    # derivatives only (svd / eigh themselves differentiate twice)
    Row("svdvals", lambda L, a: L.linalg.svdvals(a), shapes=RECT, make=separated_singular,
        **F64),
    Row("eigh", _eigh_row, shapes=SQ, make=separated_symmetric, double=True, **F64),
    Row("eigh_upper", lambda L, a: L.linalg.eigh(a + a.mT, UPLO="U")[0], shapes=SQ,
        make=separated_symmetric, **F64),
    Row("eigvalsh", lambda L, a: L.linalg.eigvalsh(a + a.mT), shapes=SQ,
        make=separated_symmetric, **F64),
    Row("pinv", lambda L, a: L.linalg.pinv(a), shapes=RECT, make=separated_singular,
        double=True, **F64),
    Row("pinv_hermitian", lambda L, a: L.linalg.pinv(a + a.mT, hermitian=True), shapes=SQ,
        make=separated_symmetric, **F64),
    Row("pinverse", lambda L, a: a.pinverse(), shapes=RECT, make=separated_singular, **F64),
    Row("matrix_rank", lambda L, a: L.linalg.matrix_rank(a), shapes=RECT, grad=False),
    Row("vector_norm", lambda L, a: L.linalg.vector_norm(a), shapes=RECT),
    Row("vector_norm_ord_dims", lambda L, a: L.linalg.vector_norm(a, 3, dim=(-1, 0),
                                                                 keepdim=True), shapes=RECT),
    Row("vector_norm_inf", lambda L, a: L.linalg.vector_norm(a, float("inf"), dim=-1),
        shapes=RECT),
    *[Row(f"matrix_norm_{o}", lambda L, a, o=o: L.linalg.matrix_norm(a, o), shapes=RECT,
          make=separated_singular, **F64)
      for o in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf"))],
    Row("matrix_norm_dims_keepdim", lambda L, a: L.linalg.matrix_norm(a, "nuc", dim=(-1, -2),
                                                                     keepdim=True),
        shapes=RECT, make=separated_singular, **F64),
    Row("norm_default", lambda L, a: L.linalg.norm(a), shapes=RECT),
    Row("norm_vector_dim", lambda L, a: L.linalg.norm(a, 1, dim=-1), shapes=RECT),
    Row("norm_matrix_ord", lambda L, a: L.linalg.norm(a, 2),
        shapes=matrices(square=False, batch=False), make=separated_singular, **F64),
    Row("cross", lambda L, a, b: L.linalg.cross(a, b),
        shapes=st.sampled_from([((3,), (3,)), ((2, 3), (1, 3)), ((1, 4, 3), (2, 1, 3))]),
        double=True),
    Row("cross_dim", lambda L, a, b: L.linalg.cross(a, b, dim=0),
        shapes=st.sampled_from([((3, 2), (3, 2)), ((3, 1), (3, 4))])),
    Row("vecdot", lambda L, a, b: L.linalg.vecdot(a, b),
        shapes=st.sampled_from([((3,), (3,)), ((2, 4), (1, 4)), ((2, 1, 3), (4, 3))])),
    Row("multi_dot", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
        shapes=st.sampled_from([((3,), (3, 5), (5, 2)), ((2, 3), (3, 1), (1,)),
                                ((4,), (4, 2), (2,)), ((1, 3), (3, 6), (6, 2))]), double=True),
    Row("multi_dot_long", lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]),
        shapes=st.just(((5, 1), (1, 4), (4, 3), (3, 2)))),
    Row("matrix_power_3", lambda L, a: L.linalg.matrix_power(a, 3), shapes=SQ,
        make=well_conditioned, **F64),
    Row("matrix_power_neg", lambda L, a: L.linalg.matrix_power(a, -2), shapes=SQ,
        make=well_conditioned, **F64),
    Row("matrix_power_0", lambda L, a: L.linalg.matrix_power(a, 0), shapes=SQ, grad=False),
]

make_tests(TABLE, globals())


def same(o, t, tol=1e-6):
    assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(o.shape) == tuple(t.shape)
    np.testing.assert_allclose(np.asarray(o.detach().numpy(), np.float64),
                               t.detach().double().numpy(), rtol=tol, atol=tol)


def raises_like(fn, match=None):
    with pytest.raises(Exception) as t_err:
        fn(torch)
    with pytest.raises(Exception) as o_err:
        fn(mte)
    assert isinstance(o_err.value, RuntimeError) == isinstance(t_err.value, RuntimeError), \
        (o_err.value, t_err.value)
    assert isinstance(o_err.value, TypeError) == isinstance(t_err.value, TypeError)
    if match:
        assert match in str(t_err.value), str(t_err.value)
        assert match in str(o_err.value), str(o_err.value)
    return o_err.value


# ---- errors -------------------------------------------------------------------------------------
SINGULAR = [[1.0, 2.0], [2.0, 4.0]]


@pytest.mark.parametrize("fn, match", [
    (lambda L: L.linalg.inv(L.tensor(SINGULAR)),
     "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because "
     "the input matrix is singular."),
    (lambda L: L.linalg.inv(L.zeros(2, 2)), "linalg.inv: The diagonal element 1 is zero"),
    (lambda L: L.linalg.inv(L.stack([L.eye(2), L.tensor(SINGULAR)])),
     "linalg.inv: (Batch element 1): The diagonal element 2 is zero"),
    (lambda L: L.inverse(L.tensor(SINGULAR)), "The diagonal element 2 is zero"),
    (lambda L: L.linalg.solve(L.tensor(SINGULAR), L.ones(2)),
     "torch.linalg.solve: The solver failed because the input matrix is singular."),
    (lambda L: L.linalg.solve(L.zeros(2, 2, 2), L.ones(2, 2, 1)),
     "(Batch element 0): The solver failed because the input matrix is singular."),
    (lambda L: L.linalg.cholesky(-L.eye(2)),
     "linalg.cholesky: The factorization could not be completed because the input is not "
     "positive-definite (the leading minor of order 1 is not positive-definite)."),
    (lambda L: L.linalg.cholesky(L.stack([L.eye(3), L.tensor([[1.0, 2, 0], [2, 1, 0],
                                                              [0, 0, 1]])])),
     "(Batch element 1): The factorization could not be completed because the input is not "
     "positive-definite (the leading minor of order 2 is not positive-definite)."),
])
def test_value_errors_are_linalg_errors(fn, match):
    err = raises_like(fn, match)
    assert isinstance(err, ML.LinAlgError) and isinstance(err, RuntimeError)


@pytest.mark.parametrize("fn, match", [
    (lambda L: L.linalg.inv(L.zeros(2, 3)),
     "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda L: L.linalg.inv(L.zeros(3)),
     "linalg.inv: The input tensor A must have at least 2 dimensions."),
    (lambda L: L.linalg.inv(L.zeros(2, 2, dtype=L.int64)),
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda L: L.linalg.inv(L.zeros(2, 2, dtype=L.float16)),
     "linalg.inv: Low precision dtypes not supported. Got Half"),
    (lambda L: L.linalg.det(L.zeros(2, 3)), "linalg.det: A must be batches of square matrices"),
    (lambda L: L.linalg.det(L.zeros(2, 2, dtype=L.int32)),
     "linalg.det: Expected a floating point or complex tensor as input. Got Int"),
    (lambda L: L.linalg.solve(L.eye(2), L.ones(2), left=False),
     "linalg.solve: Incompatible shapes of A and B for the equation XA = B (2x2 and 2x1)"),
    (lambda L: L.linalg.solve(L.eye(2).expand(3, 2, 2), L.ones(3, 2), left=False),
     "linalg.solve: Incompatible shapes of A and B for the equation XA = B (2x2 and 2x1)"),
    (lambda L: L.linalg.solve(L.ones(1, 1, 1), L.ones(1, 1), left=False),
     "linalg.solve: Vector broadcasting of the left hand side is not supported for left=False"),
    (lambda L: L.linalg.solve(L.eye(2), L.ones(3)),
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)"),
    (lambda L: L.linalg.solve(L.eye(2), L.ones(2, dtype=L.float64)),
     "linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of "
     "type Double instead"),
    (lambda L: L.linalg.cholesky(L.zeros(2, 3)),
     "linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda L: L.linalg.eigh(L.zeros(2, 3)), "linalg.eigh: A must be batches of square"),
    (lambda L: L.linalg.svd(L.zeros(2, 3, dtype=L.int64)),
     "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    (lambda L: L.linalg.qr(L.zeros(2, 3), mode="foo"),
     "qr received unrecognized mode 'foo' but expected one of 'reduced' (default), 'r', or "
     "'complete'"),
    (lambda L: L.linalg.matrix_norm(L.zeros(3)),
     "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."),
    (lambda L: L.linalg.vector_norm(L.zeros(3, dtype=L.int64)),
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda L: L.linalg.norm(L.zeros(3, 3, 3), ord=2),
     "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."),
    (lambda L: L.linalg.cross(L.zeros(2), L.zeros(2)),
     "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    (lambda L: L.linalg.cross(L.zeros(4, 3), L.zeros(3)),
     "linalg.cross: inputs must have the same number of dimensions."),
    (lambda L: L.linalg.multi_dot([L.zeros(2, 2)]),
     "multi_dot(): expected at least 2 tensors but got 1"),
    (lambda L: L.linalg.multi_dot([L.zeros(2, 2), L.zeros(3, 2)]),
     "multi_dot(): tensors 0 and 1 with shapes [2, 2] and [3, 2] cannot be multiplied"),
    (lambda L: L.linalg.pinv(L.zeros(3)), "expected a tensor with 2 or more dimensions"),
    (lambda L: L.linalg.matrix_rank(L.zeros(3)),
     "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions."),
    (lambda L: L.linalg.vecdot(L.zeros(3), L.zeros(3, dtype=L.float64)),
     "linalg.vecdot: Expected x and y to have the same dtype"),
])
def test_argument_errors_match_torch(fn, match):
    raises_like(fn, match)


def test_qr_backward_errors():
    for L in (mte, torch):
        b = L.randn(4, 3, dtype=L.float64, requires_grad=True)
        q, r = L.linalg.qr(b, mode="complete")
        with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and "
                                               "nrows > ncols"):
            q.sum().backward()
        q, r = L.linalg.qr(b, mode="r")
        assert tuple(q.shape) == (0,)
        with pytest.raises(RuntimeError, match="not computed when mode='r'"):
            r.sum().backward()


# ---- values and gradients at the edges ----------------------------------------------------------
def test_singular_det_gradient_and_slogdet():
    """d det / dA is the cofactor matrix, also where det = 0. torch 2.13 returns zeros for an
    exactly singular matrix (its own gradcheck fails there); ours passes gradcheck."""
    s = np.array([[1.0, 0.0, 3.0], [2.0, 0.0, 6.0], [1.0, 0.0, 1.0]])   # rank 2, an exact zero
    a = mte.tensor(s, requires_grad=True)
    ML.det(a).backward()
    cof = np.array([[0.0, 4.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(a.grad.numpy(), cof, atol=1e-12)
    assert mte.autograd.gradcheck(ML.det, [mte.tensor(s, requires_grad=True)])
    assert mte.autograd.gradcheck(ML.det, [mte.tensor(SINGULAR, dtype=mte.float64,
                                                      requires_grad=True)])
    for L in (mte, torch):
        sign, logabs = L.linalg.slogdet(L.tensor(s))
        assert sign.item() == 0 and logabs.item() == -np.inf
    same(*(L.logdet(L.tensor([[-1.0, 0], [0, 2]])) for L in (mte, torch)))
    same(*(L.linalg.det(L.zeros(0, 0)) for L in (mte, torch)))
    same(*(L.linalg.inv(L.zeros(2, 0, 0)) for L in (mte, torch)))


def test_slogdet_result_and_batches():
    a = np.random.default_rng(1).standard_normal((2, 3, 3, 3))
    r = ML.slogdet(mte.tensor(a))
    t = torch.linalg.slogdet(torch.tensor(a))
    same(r.sign, t.sign)
    same(r.logabsdet, t.logabsdet)
    assert repr(r).startswith("minitorch_edge.return_types.linalg_slogdet(")
    same(mte.slogdet(mte.tensor(a))[1], torch.slogdet(torch.tensor(a))[1])


def test_solve_broadcasting_and_vector_rule():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((3, 2, 2)) + 2 * np.eye(2)
    for b in (rng.standard_normal(2), rng.standard_normal((3, 2)), rng.standard_normal((2, 4)),
              rng.standard_normal((5, 1, 2, 1))):
        same(*(L.linalg.solve(L.tensor(A), L.tensor(b)) for L in (mte, torch)))


def test_svd_and_qr_results():
    a = np.random.default_rng(3).standard_normal((2, 4, 3))
    o, t = ML.svd(mte.tensor(a)), torch.linalg.svd(torch.tensor(a))
    assert tuple(o.U.shape) == (2, 4, 4) and tuple(o.Vh.shape) == (2, 3, 3)
    same(o.S, t.S)
    u, s, v = mte.svd(mte.tensor(a), compute_uv=False)
    assert not u.numpy().any() and tuple(u.shape) == (2, 4, 4) and tuple(v.shape) == (2, 3, 3)
    q, r = mte.qr(mte.tensor(a), some=False)
    assert tuple(q.shape) == (2, 4, 4)
    np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
    w, v = ML.eigh(mte.tensor(a[0].T @ a[0]))
    assert repr(ML.eigh(mte.eye(2))).startswith("minitorch_edge.return_types.linalg_eigh(")
    np.testing.assert_allclose((v * w) @ v.mT, a[0].T @ a[0], atol=1e-12)


def test_matrix_rank_and_pinv_tolerances():
    a = np.diag([3.0, 1e-3, 1e-9])
    for kw in ({}, dict(atol=1e-2), dict(rtol=1e-2), dict(atol=1e-12, rtol=0.0),
               dict(hermitian=True)):
        same(*(L.linalg.matrix_rank(L.tensor(a), **kw) for L in (mte, torch)))
        same(*(L.linalg.pinv(L.tensor(a), **kw) for L in (mte, torch)), tol=1e-4)
    same(*(L.linalg.matrix_rank(L.tensor(np.ones((2, 3, 4)))) for L in (mte, torch)))


def test_norm_dispatch_matches_torch():
    a = np.random.default_rng(4).standard_normal((2, 3, 4))
    cases = [dict(), dict(dim=1), dict(dim=(1,)), dict(dim=(0, 2)), dict(ord=3, dim=2),
             dict(ord="nuc", dim=(1, 2)), dict(ord=-np.inf, dim=(2, 0), keepdim=True),
             dict(keepdim=True), dict(dim=(0, 2), ord=1)]
    for kw in cases:
        same(*(L.linalg.norm(L.tensor(a), **kw) for L in (mte, torch)))
    same(*(L.linalg.norm(L.tensor(a[0]), ord=-1) for L in (mte, torch)))
    same(*(L.linalg.norm(L.tensor(a[0, 0]), ord=0) for L in (mte, torch)))
    same(*(L.linalg.vector_norm(L.tensor(a).float(), dim=(0, 1), dtype=L.float64)
           for L in (mte, torch)))
    raises_like(lambda L: L.linalg.vector_norm(L.tensor(a), dtype=L.float32),
                "should be convertible without narrowing to the specified dtype (Float)")
    same(*(L.linalg.matrix_norm(L.tensor(np.zeros((0, 3, 3))), "nuc") for L in (mte, torch)))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_norms_of_half_tensors_match_torch(dtype):
    """vector_norm and the non-SVD matrix norms take float16/bfloat16 (summed in float32, the
    norm rounded once; result and gradient in the input's dtype); the SVD norms refuse them,
    as PyTorch's do."""
    a = np.random.default_rng(5).standard_normal((3, 4, 5))
    inf = float("inf")
    cases = [lambda L, x: L.linalg.vector_norm(x),
             lambda L, x: L.linalg.vector_norm(x, 1, dim=-1),
             lambda L, x: L.linalg.vector_norm(x, inf, dim=(0, 2)),
             lambda L, x: L.linalg.vector_norm(x, -inf, dim=1, keepdim=True),
             lambda L, x: L.linalg.vector_norm(x, 3.5, dim=0),
             lambda L, x: L.linalg.vector_norm(x, dtype=L.float32),
             lambda L, x: L.linalg.norm(x),
             lambda L, x: x.norm(dim=1)]
    cases += [lambda L, x, o=o: L.linalg.matrix_norm(x, o) for o in ("fro", 1, -1, inf, -inf)]
    for case in cases:
        outs, grads = [], []
        for L in (mte, torch):
            x = L.tensor(a).to(getattr(L, dtype)).requires_grad_()
            y = case(L, x)
            y.sum().backward()
            outs.append(y)
            grads.append(x.grad)
        same(*outs, tol=2e-2)
        same(*grads, tol=3e-2)
    for o in ("nuc", 2, -2):
        raises_like(lambda L, o=o: L.linalg.matrix_norm(L.ones(2, 2, dtype=getattr(L, dtype)), o),
                    "linalg.matrix_norm: Low precision dtypes not supported")


def test_multi_dot_picks_a_cheap_order_and_is_exact():
    rng = np.random.default_rng(5)
    mats = [rng.standard_normal(s) for s in ((10, 100), (100, 5), (5, 50))]
    same(ML.multi_dot([mte.tensor(m) for m in mats]),
         torch.linalg.multi_dot([torch.tensor(m) for m in mats]), tol=1e-9)
    from minitorch_edge.linalg.products import _chain_order
    assert _chain_order([10, 100, 5, 50])[0][2] == 1      # (A B) C: 10*100*5 + 10*5*50


def test_linalg_namespace_names():
    for name in ("norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve",
                 "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "matrix_rank", "pinv",
                 "cross", "vecdot", "multi_dot", "matrix_power", "LinAlgError"):
        assert hasattr(ML, name) and hasattr(torch.linalg, name), name
    x = mte.randn(3, 3, dtype=mte.float64, requires_grad=True)
    assert ML.inv(x).grad_fn.name() == "LinalgInvExBackward0"
    assert ML.det(x).grad_fn.name() == "LinalgDetBackward0"
    assert ML.solve(x, x).grad_fn.name() == "LinalgSolveExBackward0"
    assert ML.qr(x).Q.grad_fn.name() == "LinalgQrBackward0"
    assert ML.svd(x).S.grad_fn.name() == "LinalgSvdBackward0"
    assert ML.eigh(x).eigenvalues.grad_fn.name() == "LinalgEighBackward0"
    assert ML.cholesky(spd(mte, x)).grad_fn.name() == "LinalgCholeskyExBackward0"
    assert ML.pinv(x).grad_fn.name() == "LinalgPinvBackward0"


def test_out_argument():
    o = mte.empty(2, 2)
    assert ML.inv(mte.eye(2) * 2, out=o) is o and o.tolist() == [[0.5, 0], [0, 0.5]]
    s, la = mte.empty(()), mte.empty(())
    r = ML.slogdet(mte.eye(2) * 3, out=(s, la))
    assert r.logabsdet is la and abs(la.item() - np.log(9)) < 1e-6
    for L in (mte, torch):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
            L.linalg.inv(L.eye(2), out=L.empty(2, 2, dtype=L.float64))
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            L.linalg.inv(L.eye(2, requires_grad=True), out=L.empty(2, 2))
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            L.linalg.det(L.eye(2), out=L.empty(3))
