"""Square-matrix algebra through LU and Cholesky factorisations: inverse, det, slogdet/logdet,
solve, cholesky; shared argument checks and PyTorch's LinAlgError for the torch.linalg ops.

The factorisations run in numpy (LAPACK), batched over the leading dims. Each backward is
written with matmul, solve and inverse, which are differentiable themselves, so gradients of
gradients work. With ``Y = A^-1`` and ``<G, dY> = tr(G^T dY)`` the derivations are:

* inverse: dY = -Y dA Y, so <G, dY> = <-Y^T G Y^T, dA>:          gA = -Y^T gY Y^T
* det: d det = det * tr(A^-1 dA) (Jacobi's formula):             gA = g det A^-T
* slogdet: d log|det| = tr(A^-1 dA):                              gA = g A^-T (sign: constant)
* solve AX = B: dX = A^-1 (dB - dA X), so gB = A^-T gX,           gA = -gB X^T
* cholesky A = L L^T: with P = L^T gL and Phi(P) = its lower triangle with the diagonal
  halved, gA = L^-T Phi(P) L^-1, symmetrised (A is symmetric): gA = (gA + gA^T) / 2
  (from dL = L Phi(L^-1 dA L^-T); Phi is self-adjoint).

A singular or non-positive-definite input raises `LinAlgError` (a RuntimeError) with
PyTorch's message, naming the zero pivot / failing leading minor and the batch element.
"""
from .._autocast import autocast_op
from collections import namedtuple

import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import accepts_out, shape_str, tensor_method
from .linalg import SwapLast, matmul

__all__ = ["inverse", "det", "logdet", "slogdet", "cholesky"]


class LinAlgError(RuntimeError):
    """A linear-algebra failure that depends on the values (a singular matrix, a matrix that
    is not positive-definite), as torch.linalg.LinAlgError."""


LinAlgError.__module__ = "minitorch_edge.linalg"
_LOW = {"float16": "Half", "bfloat16": "BFloat16"}
_C_NAME = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
           "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


# ---- shared checks ----------------------------------------------------------------------------
def check_float(A, op, name="A", low_precision=False):
    """A must be a float Tensor; float16/bfloat16 only where low_precision (PyTorch's
    allow_low_precision_dtypes: the norms, which accumulate in float32)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    d = A.dtype.name
    if d in _LOW and not low_precision:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_LOW[d]} (convert "
                           f"with .float())")
    if not A.is_floating_point():
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{_C_NAME.get(d, d)} (convert with .float() or .double())")


def check_matrix(A, op, name="A"):
    check_float(A, op, name)
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions. "
                           f"(got shape {shape_str(A._data.shape)}; a single matrix is "
                           f"2-D)")


def check_square(A, op, name="A"):
    check_matrix(A, op, name)
    m, n = A._data.shape[-2:]
    if m != n:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are {m} "
                           f"by {n} matrices")


def mT(t):
    return SwapLast.apply(t)


def eye_like(t, n=None):
    n = t._data.shape[-1] if n is None else n
    return Tensor._make(np.eye(n, dtype=t._data.dtype))


def keep_outputs(outputs):
    """Save the outputs of a multi-output built-in op on its node, as ``save_output`` does for
    output 0 alone: backward then reads them as tensors of the graph (so double backward sees
    how they depend on the input), and an in-place change to one is detected."""
    node = next((o._fn for o in outputs if o is not None and o._fn is not None), None)
    if node is not None:
        node._saved = [(None, o._vc, o._vc[0], o._data, o._nr) for o in outputs]
    return outputs


def _batch_prefix(info, batch_shape):
    """'(Batch element k): ' for the first failing element k (flat index) of a batch."""
    bad = np.flatnonzero(info.reshape(-1))
    k = int(bad[0]) if bad.size else 0
    return (f"(Batch element {k}): " if batch_shape else ""), k


def lu_zero_pivot(a):
    """Per matrix of the batch a (..., n, n): the 1-based position of the first exactly-zero
    pivot of LU with partial pivoting (LAPACK getrf's info), 0 when there is none."""
    b = np.array(a.reshape((-1,) + a.shape[-2:]), copy=True)
    n = b.shape[-1]
    info = np.zeros(b.shape[0], np.int64)
    rows = np.arange(b.shape[0])
    for k in range(n):
        p = k + np.argmax(np.abs(b[:, k:, k]), axis=1)
        b[rows, k], b[rows, p] = b[rows, p].copy(), b[rows, k].copy()
        piv = b[:, k, k]
        zero = piv == 0
        info[(info == 0) & zero] = k + 1
        safe = np.where(zero, 1, piv)
        f = np.where(zero[:, None], 0, b[:, k + 1:, k] / safe[:, None])
        b[:, k + 1:, k:] -= f[:, :, None] * b[:, k, None, k:]
    return info.reshape(a.shape[:-2])


def singular_error(a, op):
    info = lu_zero_pivot(a)
    prefix, k = _batch_prefix(info, a.shape[:-2])
    pivot = int(info.reshape(-1)[k]) if info.size else 0
    if pivot == 0:
        return LinAlgError(f"{op}: {prefix}The input matrix is singular (numerically), so the "
                           f"inversion could not be completed.")
    return LinAlgError(f"{op}: {prefix}The diagonal element {pivot} is zero, the inversion "
                       f"could not be completed because the input matrix is singular.")


# ---- inverse ----------------------------------------------------------------------------------
class LinalgInvEx(Function):
    """Y = A^-1 (batched).  gA = -Y^T gY Y^T (see the module docstring)."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, op):
        x = a._data
        try:
            return np.linalg.inv(x)
        except np.linalg.LinAlgError:
            raise singular_error(x, op) from None

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        yt = mT(y)
        return -matmul(matmul(yt, grad), yt), None


@accepts_out("linalg.inv")
@autocast_op("linalg_inv")
def inv(A):
    """The inverse of each square matrix of A (..., n, n). Singular matrices raise
    LinAlgError naming the zero pivot. Gradient: gA = -Y^T gY Y^T with Y = A^-1."""
    check_square(A, "linalg.inv")
    return LinalgInvEx.apply(A, "linalg.inv")


@tensor_method("inverse")
@accepts_out("inverse")
@autocast_op("inverse")
def inverse(input):
    """torch.inverse: the same as linalg.inv."""
    return inv(input)


# ---- determinants -------------------------------------------------------------------------------
def _cofactor(x):
    """The cofactor matrix of each matrix of x, d det / dA, valid for singular matrices too:
    with A = U S V^T, cof(A) = det(U) det(V) U diag(prod_{j != i} s_j) V^T."""
    u, s, vh = np.linalg.svd(x)
    n = s.shape[-1]
    others = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], -1) \
        if n else s
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return (sign[..., None, None] * (u * others[..., None, :])) @ vh


class LinalgDet(Function):
    """d = det(A) (batched).  gA = g d A^-T; for a singular A the cofactor matrix (the same
    derivative, from the SVD) is used, as a constant."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
        return np.asarray(np.linalg.det(a._data))

    @staticmethod
    def backward(ctx, grad):
        a, d = ctx.saved_tensors
        g = (grad * d).unsqueeze(-1).unsqueeze(-1)
        if a._data.size == 0:
            return g * mT(a),
        if np.all(d._data != 0):
            try:
                return g * mT(LinalgInvEx.apply(a, "linalg.det")),
            except LinAlgError:
                pass
        cof = Tensor._make(_cofactor(a._data).astype(a._data.dtype))
        return grad.unsqueeze(-1).unsqueeze(-1) * cof,


@accepts_out("linalg.det")
def det(A):
    """The determinant of each square matrix of A (..., n, n) -> (...). Gradient: the cofactor
    matrix, g det(A) A^-T (also right for singular A)."""
    check_square(A, "linalg.det")
    return LinalgDet.apply(A)


class LinalgSlogdet(Function):
    """(sign, log|det A|) (batched).  g_logabs: gA = g A^-T; sign is piecewise constant."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
        sign, logabs = np.linalg.slogdet(a._data)
        ctx.mark_non_differentiable(sign)
        return np.asarray(sign), np.asarray(logabs)

    @staticmethod
    def backward(ctx, g_sign, g_logabs):
        a, = ctx.saved_tensors
        if g_logabs is None:
            return None,
        x = a._data
        with np.errstate(divide="ignore", invalid="ignore"):
            try:
                return g_logabs.unsqueeze(-1).unsqueeze(-1) * \
                    mT(LinalgInvEx.apply(a, "linalg.slogdet")),
            except LinAlgError:        # |det| = 0: the derivative is infinite
                d = np.linalg.det(x)[..., None, None]
                cof = _cofactor(x) / d
                return g_logabs.unsqueeze(-1).unsqueeze(-1) * Tensor._make(cof.astype(x.dtype)),


def named_result(name, fields):
    """A named tuple type like torch.return_types.<name> (e.g. linalg_slogdet(sign, ...))."""
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
        return f"minitorch_edge.return_types.{name}(\n{body})"
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__module__": "minitorch_edge.return_types"})


SlogdetResult = named_result("linalg_slogdet", ("sign", "logabsdet"))


@accepts_out("linalg.slogdet")
def slogdet(A):
    """(sign, logabsdet) of each square matrix of A: det = sign * exp(logabsdet), without
    overflow (sign 0 and logabsdet -inf for a singular matrix). Differentiable in logabsdet:
    gA = g A^-T."""
    check_square(A, "linalg.slogdet")
    return SlogdetResult(*LinalgSlogdet.apply(A))




@tensor_method("det")
def _det_method(input):
    """torch.det: the same as linalg.det."""
    return det(input)


@tensor_method("slogdet")
def _slogdet_method(input):
    """torch.slogdet: the same as linalg.slogdet."""
    return slogdet(input)


@tensor_method("logdet")
def logdet(input):
    """log(det A): log|det| where det > 0, nan where det < 0, -inf where det = 0 (as
    PyTorch). Differentiable where det > 0 (gA = g A^-T)."""
    from .elementwise import where
    check_square(input, "logdet")
    sign, logabs = LinalgSlogdet.apply(input)
    return where(sign < 0, float("nan"), logabs)



# ---- solve --------------------------------------------------------------------------------------
class LinalgSolveEx(Function):
    """X = A^-1 B for matrices B (..., n, k), A and B with equal batch dims.
    gB = A^-T gX (a solve with A^T),  gA = -gB X^T."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, b):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
        try:
            return np.linalg.solve(a._data, b._data)
        except np.linalg.LinAlgError:
            info = lu_zero_pivot(a._data)
            prefix, _ = _batch_prefix(info, a._data.shape[:-2])
            raise LinAlgError(f"torch.linalg.solve: {prefix}The solver failed because the "
                              f"input matrix is singular.") from None

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        gb = LinalgSolveEx.apply(mT(a), grad)
        ga = -matmul(gb, mT(x)) if ctx.needs_input_grad[0] else None
        return ga, gb


@accepts_out("linalg.solve")
@autocast_op("linalg_solve")
def solve(A, B, *, left=True):
    """The X with A X = B (left=True) or X A = B (left=False), for square A (..., n, n) and B
    (..., n, k), or a vector B (n,) / (..., n) when its shape is A's without the last dim.
    Batch dims broadcast. Singular A raises LinAlgError. Gradient: gB = A^-T gX,
    gA = -gB X^T (summed over broadcast batch dims)."""
    op = "linalg.solve"
    check_square(A, op)
    check_float(B, op, "B")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{_C_NAME[A.dtype.name]} and B of type {_C_NAME[B.dtype.name]} "
                           f"instead (convert one with .to())")
    sa, sb = A._data.shape, B._data.shape
    vector = len(sb) == 1 or (len(sb) == len(sa) - 1 and sb == sa[:-1])
    if not left:                          # X A = B  <=>  A^T X^T = B^T
        n = sa[-1]
        rows, cols = (sb[-1], 1) if vector else sb[-2:]      # a vector B is a column
        if cols != n:
            raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation XA = B "
                               f"({n}x{n} and {rows}x{cols})")
        if vector:
            raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not "
                               f"supported for left=False. In this case linalg.solve is "
                               f"equivalent to B / A.squeeze(-1)")
        return mT(solve(mT(A), mT(B)))
    Bm = B.unsqueeze(-1) if vector else B
    n = sa[-1]
    if Bm._data.shape[-2] != n:
        rows, cols = Bm._data.shape[-2:]
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {rows}x{cols})")
    try:
        batch = np.broadcast_shapes(sa[:-2], Bm._data.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{op}: the batch dims of A {shape_str(sa)} and B {shape_str(sb)} "
                           f"cannot be broadcast together") from None
    Ab = A if sa[:-2] == batch else A.expand(batch + sa[-2:])
    Bb = Bm if Bm._data.shape[:-2] == batch else Bm.expand(batch + Bm._data.shape[-2:])
    X = LinalgSolveEx.apply(Ab, Bb)
    return X.squeeze(-1) if vector else X


# ---- cholesky -----------------------------------------------------------------------------------
def _not_pd(x, op):
    """LinAlgError naming the first leading minor that is not positive-definite."""
    flat = x.reshape((-1,) + x.shape[-2:])
    for k, m in enumerate(flat):
        try:
            np.linalg.cholesky(m)
            continue
        except np.linalg.LinAlgError:
            pass
        order = next(j for j in range(1, m.shape[0] + 1)
                     if not _is_pd(m[:j, :j]))
        prefix = f"(Batch element {k}): " if x.ndim > 2 else ""
        return LinAlgError(f"{op}: {prefix}The factorization could not be completed because the "
                           f"input is not positive-definite (the leading minor of order {order} "
                           f"is not positive-definite).")
    return LinAlgError(f"{op}: The factorization could not be completed because the input is "
                       f"not positive-definite.")


def _is_pd(m):
    try:
        np.linalg.cholesky(m)
        return True
    except np.linalg.LinAlgError:
        return False


class LinalgCholeskyEx(Function):
    """L with A = L L^T (lower triangle of A read).  gA: see the module docstring."""
    _builtin = True
    save_output = True

    @staticmethod
    def forward(ctx, a, op):
        try:
            return np.linalg.cholesky(a._data)
        except np.linalg.LinAlgError:
            raise _not_pd(a._data, op) from None

    @staticmethod
    def backward(ctx, grad):
        L, = ctx.saved_tensors
        P = matmul(mT(L), grad)
        eye = eye_like(L)
        phi = P.tril(-1) + P * eye * 0.5
        Linv = LinalgInvEx.apply(L, "linalg.cholesky")
        gA = matmul(matmul(mT(Linv), phi), Linv)
        return (gA + mT(gA)) * 0.5, None


def cholesky_lower(A, upper=False, op="linalg.cholesky"):
    check_square(A, op)
    L = LinalgCholeskyEx.apply(A, op)
    return mT(L).contiguous() if upper else L


@tensor_method("cholesky")
@accepts_out("cholesky")
@autocast_op("cholesky")
def cholesky(input, upper=False):
    """torch.cholesky (deprecated in PyTorch for linalg.cholesky): L with A = L L^T, or the
    upper factor U = L^T with upper=True."""
    return cholesky_lower(input, upper, "linalg.cholesky")

