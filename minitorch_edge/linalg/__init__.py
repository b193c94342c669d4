"""``minitorch_edge.linalg``: PyTorch's torch.linalg namespace.

The kernels live with the other ops (ops/decomp.py: inv, det, slogdet, solve, cholesky;
ops/spectral.py: qr, svd, eigh, pinv, matrix_rank; ops/linalg.py: the products); this package
gives them their torch.linalg names and signatures and adds the norms (norms.py) and the
products that only exist here (products.py). Every function takes batches of matrices
(..., m, n) and differentiates where PyTorch does; value-dependent failures (a singular matrix,
one that is not positive-definite) raise `LinAlgError`, a RuntimeError.
"""
from ..ops._util import accepts_out
from ..ops.decomp import LinAlgError, det, inv, slogdet, solve
from ..ops.decomp import cholesky_lower as _cholesky
from ..ops.linalg import matmul
from ..ops.shape import diagonal as _diagonal
from ..ops.spectral import (eigh, eigvalsh, linalg_qr as qr, linalg_svd as svd, matrix_rank,
                            pinv, svdvals)
from .norms import matrix_norm, norm, vector_norm
from .products import cross, matrix_power, multi_dot, vecdot

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve",
           "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "matrix_rank", "pinv",
           "cross", "vecdot", "multi_dot", "matrix_power", "matmul", "diagonal"]


@accepts_out("linalg.cholesky")
def cholesky(A, *, upper=False):
    """L (lower triangular, positive diagonal) with A = L L^T for symmetric positive-definite A
    (its lower triangle is read); upper=True gives U = L^T. Raises LinAlgError naming the first
    leading minor that is not positive-definite. Gradient (symmetric): with P = L^T gL,
    gA = sym(L^-T Phi(P) L^-1), Phi = lower triangle with the diagonal halved."""
    return _cholesky(A, upper, "linalg.cholesky")


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of each matrix (a view): torch.diagonal with matrix-last defaults."""
    return _diagonal(A, offset, dim1, dim2)
