"""Orthogonal factorisations: QR, the SVD (and svdvals), the symmetric eigendecomposition eigh
(and eigvalsh), and the pseudo-inverse built on the SVD.

Forward runs numpy's LAPACK drivers, batched. The backward formulas below (real matrices,
``<G, dX> = tr(G^T dX)``, ``o`` the elementwise product) are written with matmul and solve, so
they are differentiable again (svdvals and eigvalsh, whose vectors are not outputs, treat the
vectors as constants: first derivatives only).

* eigh A = V diag(w) V^T (A symmetric, distinct eigenvalues). Differentiating V^T A V =
  diag(w) with M = V^T dA V and V^T dV antisymmetric gives dw = diag(M) and
  dV = V (F o M), F_ij = 1/(w_j - w_i) (0 on the diagonal). So
  <gw, dw> + <gV, dV> = <V (diag(gw) + E) V^T, dA> with E = F o (V^T gV); only symmetric dA
  are possible, so the symmetric part is taken: gA = V (diag(gw) + (E + E^T) / 2) V^T.
* svd A = U diag(s) V^T (U m x k, V n x k, k = min(m, n), distinct non-zero s). From
  U^T dA V = (U^T dU) S + dS + S (dV^T V), whose diagonal is ds and whose off-diagonal parts
  (U^T dU, V^T dV antisymmetric) solve to F_ij = 1/(s_j^2 - s_i^2) terms, plus the parts of
  dU, dV outside span(U), span(V) (dU_perp = (I - U U^T) dA V S^-1, likewise for V):
  with J = U^T gU, K = V^T gV,
  gA = U [diag(gs) + (F o (J - J^T)) S + S (F o (K - K^T))] V^T
       + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)
  (the last two terms vanish for square A). Only the first k columns of U, V count
  (full_matrices=True), as in PyTorch.
* qr A = Q R (m >= n). dA = dQ R + Q dR with Q^T dQ antisymmetric (for square Q) and dR R^-1
  upper triangular: Q^T dA R^-1 = Q^T dQ + dR R^-1 splits into its strictly lower part (which
  fixes Q^T dQ) and the rest. Transposing that map gives, with M = R gR^T - gQ^T Q and
  copyltu(M) = tril(M) + tril(M, -1)^T (M's lower triangle mirrored),
  gA = (gQ + Q copyltu(M)) R^-T. For m < n, A = [X | Y] and R = [U | V]: X = Q U is a square
  QR, and Y = Q V, so gX is that formula with gQ + Y gV^T for gQ, and gY = Q gV.
* pinv P = A^+ (constant rank): dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P
  (Golub & Pereyra); moving each dA out of the trace,
  gA = -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A).

Eigenvectors and singular vectors are defined up to sign: only functions that do not depend on
that choice have well-defined gradients (as in PyTorch).
"""
from .._autocast import autocast_op
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import accepts_out, tensor_method
from .decomp import (LinalgSolveEx, check_float, check_matrix, check_square, eye_like,
                     keep_outputs, mT, named_result)
from .linalg import matmul

__all__ = ["svd", "qr", "pinverse"]

QRResult = named_result("linalg_qr", ("Q", "R"))
SVDResult = named_result("linalg_svd", ("U", "S", "Vh"))
EighResult = named_result("linalg_eigh", ("eigenvalues", "eigenvectors"))
OldSVDResult = named_result("svd", ("U", "S", "V"))
OldQRResult = named_result("qr", ("Q", "R"))


def _diag_embed(v):
    return v.unsqueeze(-1) * eye_like(v, v._data.shape[-1])


def _inverse_gaps(v):
    """F_ij = 1 / (v_j - v_i) off the diagonal, 0 on it, for the last dim of the Tensor v:
    built from Tensor ops, so second derivatives see how the gaps move."""
    from .elementwise import where
    n = v._data.shape[-1]
    on_diag = Tensor._make(np.eye(n, dtype=bool))
    gaps = v.unsqueeze(-2) - v.unsqueeze(-1)
    return where(on_diag, 0.0, 1.0 / where(on_diag, 1.0, gaps))


# ---- eigh -------------------------------------------------------------------------------------
class LinalgEigh(Function):
    """(w, V) with A = V diag(w) V^T, w ascending (one triangle of A read).
    gA = V (diag(gw) + (E + E^T)/2) V^T, E = F o (V^T gV), F_ij = 1/(w_j - w_i)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, uplo, vectors):
        x = a._data
        if ctx.needs_input_grad:
            ctx.materialize_grads = False      # an unused output's gradient stays None
        if vectors:
            return np.linalg.eigh(x, UPLO=uplo)
        if not ctx.needs_input_grad:
            return np.linalg.eigvalsh(x, UPLO=uplo)
        w, v = np.linalg.eigh(x, UPLO=uplo)
        ctx.vectors = v                    # eigvalsh: V is not an output (a constant here)
        return w

    @staticmethod
    def backward(ctx, gw, gv=None):
        if gv is None and getattr(ctx, "vectors", None) is not None:
            V = Tensor._make(ctx.vectors)
        else:
            w, V = ctx.saved_tensors
        inner = None if gw is None else _diag_embed(gw)
        if gv is not None:
            E = _inverse_gaps(w) * matmul(mT(V), gv)
            sym = (E + mT(E)) * 0.5
            inner = sym if inner is None else inner + sym
        if inner is None:
            return None, None, None
        return matmul(matmul(V, inner), mT(V)), None, None


@accepts_out("linalg.eigh")
@autocast_op("linalg_eigh")
def eigh(A, UPLO="L"):
    """(eigenvalues, eigenvectors) of the symmetric matrices A (only the triangle named by UPLO
    is read): eigenvalues ascending, eigenvectors the columns. Differentiable for distinct
    eigenvalues (gradients of sign-independent functions of the vectors)."""
    check_square(A, "linalg.eigh")
    _check_uplo(UPLO)
    return EighResult(*keep_outputs(LinalgEigh.apply(A, UPLO, True)))


def _check_uplo(uplo):
    if uplo not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")


@accepts_out("linalg.eigvalsh")
@autocast_op("linalg_eigvalsh")
def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of the symmetric matrices A; gA = V diag(gw) V^T."""
    check_square(A, "linalg.eigvalsh")
    _check_uplo(UPLO)
    return LinalgEigh.apply(A, UPLO, False)


# ---- svd ----------------------------------------------------------------------------------------
class LinalgSvd(Function):
    """(U, S, Vh) with A = U diag(S) Vh; gradient in the module docstring."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, full_matrices, vectors):
        x = a._data
        if ctx.needs_input_grad:
            ctx.shape = x.shape
            ctx.materialize_grads = False      # an unused output's gradient stays None
        if vectors:
            return np.linalg.svd(x, full_matrices=full_matrices)
        if not ctx.needs_input_grad:
            return np.linalg.svd(x, compute_uv=False)
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        ctx.factors = (u, vh)                 # svdvals: U, V are constants here
        return s

    @staticmethod
    def backward(ctx, *grads):
        factors = getattr(ctx, "factors", None)
        if factors is not None:
            gs, = grads
            U, V = Tensor._make(factors[0]), mT(Tensor._make(factors[1]))
            return matmul(matmul(U, _diag_embed(gs)), mT(V)), None, None
        gu, gs, gvh = grads
        U, S, Vh = ctx.saved_tensors
        k = S._data.shape[-1]
        if U._data.shape[-1] != k:            # full_matrices: only the first k columns count
            U, gu = U[..., :k], None if gu is None else gu[..., :k]
        if Vh._data.shape[-2] != k:
            Vh, gvh = Vh[..., :k, :], None if gvh is None else gvh[..., :k, :]
        return _svd_backward(U, S, mT(Vh), ctx.shape, gu, gs,
                             None if gvh is None else mT(gvh)), None, None


def _svd_backward(U, S, V, shape, gu, gs, gv):
    m, n = shape[-2:]
    s = S._data
    k = s.shape[-1]
    inner = _diag_embed(gs) if gs is not None else None
    if gu is None and gv is None:
        return matmul(matmul(U, inner), mT(V))
    if inner is None:
        inner = Tensor._make(np.zeros(s.shape + (k,), s.dtype))
    F = _inverse_gaps(S * S)
    Sd = _diag_embed(S)
    Sinv = 1.0 / S                                       # (s > 0 assumed, as in PyTorch)
    extra = None
    if gu is not None:
        J = matmul(mT(U), gu)
        inner = inner + matmul(F * (J - mT(J)), Sd)
        if m > k:                                         # (I - U U^T) gU S^-1 V^T
            extra = matmul((gu - matmul(U, J)) * Sinv.unsqueeze(-2), mT(V))
    if gv is not None:
        K = matmul(mT(V), gv)
        inner = inner + matmul(Sd, F * (K - mT(K)))
        if n > k:                                         # U S^-1 gV^T (I - V V^T)
            term = matmul(U * Sinv.unsqueeze(-2), mT(gv - matmul(V, K)))
            extra = term if extra is None else extra + term
    main = matmul(matmul(U, inner), mT(V))
    return main if extra is None else main + extra


@accepts_out("linalg.svd")
def linalg_svd(A, full_matrices=True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending. full_matrices=False gives the reduced
    factors (U m x k, Vh k x n, k = min(m, n))."""
    check_matrix(A, "linalg.svd")
    return SVDResult(*keep_outputs(LinalgSvd.apply(A, bool(full_matrices), True)))


@accepts_out("linalg.svdvals")
@autocast_op("linalg_svdvals")
def svdvals(A, *, driver=None):
    """The singular values of A, descending; gA = U diag(gS) V^T."""
    check_matrix(A, "linalg.svdvals")
    return LinalgSvd.apply(A, False, False)


@tensor_method("svd")
@accepts_out("svd")
@autocast_op("svd")
def svd(input, some=True, compute_uv=True):
    """torch.svd (the older API): (U, S, V) with A = U diag(S) V^T, V itself (not V^T);
    some=True gives the reduced factors. compute_uv=False gives zero U and V, as PyTorch."""
    check_matrix(input, "svd")
    if not compute_uv:
        m, n = input._data.shape[-2:]
        b = input._data.shape[:-2]
        S = svdvals(input)
        return OldSVDResult(Tensor._make(np.zeros(b + (m, m), input._data.dtype)), S,
                            Tensor._make(np.zeros(b + (n, n), input._data.dtype)))
    U, S, Vh = linalg_svd(input, not some)
    return OldSVDResult(U, S, mT(Vh))


# ---- qr -----------------------------------------------------------------------------------------
class LinalgQr(Function):
    """(Q, R) with A = Q R; gradient in the module docstring."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, mode):
        x = a._data
        if ctx.needs_input_grad:
            ctx.info = mode
            ctx.materialize_grads = False
        if mode == "r":
            return np.zeros((0,), x.dtype), np.linalg.qr(x, mode="r")
        return np.linalg.qr(x, mode=mode)

    @staticmethod
    def backward(ctx, gq, gr):
        mode = ctx.info
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                               "going to differentiate through linalg.qr.")
        Q, R = ctx.saved_tensors
        m, n = Q._data.shape[-2], R._data.shape[-1]
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        gq = _zeros_for(Q) if gq is None else gq
        gr = _zeros_for(R) if gr is None else gr
        if m >= n:
            return _qr_square_part(Q, R, gq, gr), None
        # m < n: A = [X | Y] with X = Q U square, Y = Q V
        U, Vr = R[..., :, :m], R[..., :, m:]
        gU, gV = gr[..., :, :m], gr[..., :, m:]
        gX = _qr_square_part(Q, U, gq + matmul(matmul(Q, Vr), mT(gV)), gU)
        from .join import cat
        return cat([gX, matmul(Q, gV)], -1), None


def _zeros_for(t):
    return Tensor._make(np.zeros(t._data.shape, t._data.dtype))


def _qr_square_part(Q, R, gq, gr):
    """gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q (R square)."""
    M = matmul(R, mT(gr)) - matmul(mT(gq), Q)
    b = gq + matmul(Q, M.tril() + mT(M.tril(-1)))
    return mT(LinalgSolveEx.apply(R, mT(b)))


@accepts_out("linalg.qr")
def linalg_qr(A, mode="reduced"):
    """(Q, R) with A = Q R, Q orthonormal columns, R upper triangular. mode: 'reduced' (Q m x
    k, R k x n, k = min(m, n)), 'complete' (Q m x m), 'r' (R only; Q is empty)."""
    check_matrix(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    return QRResult(*keep_outputs(LinalgQr.apply(A, mode)))


@tensor_method("qr")
@accepts_out("qr")
@autocast_op("qr")
def qr(input, some=True):
    """torch.qr (the older API): linalg.qr with mode 'reduced' (some=True) or 'complete'."""
    return OldQRResult(*linalg_qr(input, "reduced" if some else "complete"))


# ---- pinv ---------------------------------------------------------------------------------------
def _rank_tol(s, m, n, atol, rtol, dtype):
    """PyTorch's cutoff: max(atol, rtol * s_max); rtol defaults to eps * max(m, n) when neither
    is given (and to 0 when only atol is)."""
    eps = np.finfo(dtype).eps
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,), s.dtype)
    a = 0.0 if atol is None else (atol._data[..., None] if isinstance(atol, Tensor) else atol)
    if rtol is None:
        r = eps * max(m, n) if atol is None or (not isinstance(atol, Tensor) and atol <= 0) \
            else 0.0
    else:
        r = rtol._data[..., None] if isinstance(rtol, Tensor) else rtol
    return np.maximum(a, r * smax)


class LinalgPinv(Function):
    """P = A^+ = V diag(1/s for s > tol) U^T.  Gradient in the module docstring."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, atol, rtol, hermitian):
        x = a._data
        m, n = x.shape[-2:]
        if hermitian:                      # A = V diag(w) V^T: the "singular values" are |w|
            w, v = np.linalg.eigh(x)
            s = -np.sort(-np.abs(w), axis=-1)
            tol = _rank_tol(s, m, n, atol, rtol, x.dtype)
            with np.errstate(divide="ignore"):
                inv = np.where(np.abs(w) > tol, 1.0 / np.where(w == 0, 1, w), 0)
            out = (v * inv[..., None, :]) @ np.swapaxes(v, -1, -2)
        else:
            u, s, vh = np.linalg.svd(x, full_matrices=False)
            tol = _rank_tol(s, m, n, atol, rtol, x.dtype)
            with np.errstate(divide="ignore"):
                inv = np.where(s > tol, 1.0 / np.where(s == 0, 1, s), 0)
            out = (np.swapaxes(vh, -1, -2) * inv[..., None, :]) @ np.swapaxes(u, -1, -2)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
        return out.astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        a, p = ctx.saved_tensors
        m, n = a._data.shape[-2:]
        pt, gt = mT(p), mT(g)
        eye_m, eye_n = eye_like(a, m), eye_like(a, n)
        term1 = -matmul(matmul(pt, g), pt)
        term2 = matmul(matmul(eye_m - matmul(a, p), gt), matmul(p, pt))
        term3 = matmul(matmul(matmul(pt, p), gt), eye_n - matmul(p, a))
        return term1 + term2 + term3, None, None, None


@accepts_out("linalg.pinv")
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse of A (..., m, n) -> (..., n, m): singular values at
    or below max(atol, rtol * s_max) count as zero (rtol defaults to eps * max(m, n)).
    hermitian=True uses eigh (A symmetric). Differentiable where the rank is constant."""
    op = "linalg.pinv"
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(A).__name__}")
    if A._data.ndim < 2 or not A.is_floating_point() or A.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"{op}({A.dtype.name}{{{list(A.shape)}}}): expected a tensor with 2 "
                           f"or more dimensions of float, double, cfloat or cdouble types")
    return LinalgPinv.apply(A, atol, rtol, bool(hermitian))


@tensor_method("pinverse")
def pinverse(input, rcond=1e-15):
    """torch.pinverse: pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


@accepts_out("linalg.matrix_rank")
@autocast_op("linalg_matrix_rank")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):
    """The number of singular values (eigenvalue magnitudes when hermitian) of each matrix
    above max(atol, rtol * s_max) (the pinv cutoff): an int64 tensor of A's batch shape."""
    op = "torch.linalg.matrix_rank"
    if not isinstance(A, Tensor):
        raise TypeError(f"matrix_rank(): argument 'input' must be Tensor, not "
                        f"{type(A).__name__}")
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor input must have at least 2 dimensions.")
    check_float(A, op, "input")
    if tol is not None:
        atol = tol
    x = A._data
    m, n = x.shape[-2:]
    if hermitian:
        s = -np.sort(-np.abs(np.linalg.eigvalsh(x)), axis=-1)
    else:
        s = np.linalg.svd(x, compute_uv=False)
    cut = _rank_tol(s, m, n, atol, rtol, x.dtype)
    return Tensor._make(np.asarray(np.sum(s > cut, axis=-1)).astype(np.int64))
