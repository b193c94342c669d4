"""Norms: ``vector_norm`` (the p-norm of the elements over some dims), ``matrix_norm`` (norms
of matrices over two dims) and ``norm``, which picks one of the two from its arguments.

vector_norm is reduce.py's `LinalgVectorNorm` (its docstring derives each p's gradient).
float16 and bfloat16 inputs are summed in float32 and the norm rounded once, as PyTorch does;
the SVD norms ('nuc', 2, -2) refuse them, as PyTorch's do.
Matrix norms are compositions of differentiable ops, so their gradients come from those ops:

    'fro'   sqrt(sum a_ij^2)             = vector 2-norm over both dims
    'nuc'   sum of singular values       gA = U V^T          (svdvals)
    2 / -2  largest / smallest singular value: gA = u_1 v_1^T (one singular pair)
    1 / -1  max / min over columns of sum_i |a_ij|
    inf / -inf  max / min over rows of sum_j |a_ij|
"""
import math

from .. import dtypes as _dt
from ..ops._util import accepts_out
from ..ops.decomp import _C_NAME, check_float
from ..ops.reduce import LinalgVectorNorm, _count, _dims
from ..ops.spectral import svdvals

__all__ = ["vector_norm", "matrix_norm", "norm"]


def _cast(x, dtype, op):
    """dtype=: x converted first; like PyTorch, only to a dtype x promotes to (no narrowing)."""
    if dtype is None:
        return x
    d = _dt.to_dtype(dtype)
    if x.is_floating_point() and _dt.promote_types(x.dtype, d) is not d:
        raise RuntimeError(f"{op}: the dtype of the input ({_C_NAME.get(x.dtype.name)}) should "
                           f"be convertible without narrowing to the specified dtype "
                           f"({_C_NAME.get(d.name)})")
    return x.to(d)


@accepts_out("linalg.vector_norm")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over `dim` (None: all elements, whatever x's shape); ord=inf/-inf:
    max/min |x|, ord=0: the number of non-zeros. dtype= casts x first."""
    op = "linalg.vector_norm"
    x = _cast(x, dtype, op)
    check_float(x, op, "input", low_precision=True)
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"{op}(): argument 'ord' must be a number, not {type(ord).__name__} "
                        f"(use linalg.matrix_norm or linalg.norm for 'fro' and 'nuc')")
    dims = _dims(dim, x._data.ndim, op)
    p = float(ord)
    if math.isinf(p) and _count(x._data.shape, dims) == 0 and x._data.size == 0:
        raise RuntimeError(f"{op} cannot compute the {ord} norm on an empty tensor because the "
                           f"operation does not have an identity")
    return LinalgVectorNorm.apply(x, p, dims, bool(keepdim))


def _matrix_dims(A, dim, op):
    nd = A._data.ndim
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (int(d) % nd if -nd <= int(d) < nd else None for d in dim)
    if d0 is None or d1 is None:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {tuple(dim)})")
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _restore(r, d0, d1, keepdim):
    """A result over dims moved to the end: put keepdim's size-1 dims back at d0, d1."""
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


@accepts_out("linalg.matrix_norm")
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm `ord` ('fro', 'nuc', 2, -2, 1, -1, inf, -inf) of each matrix of A over
    the dims `dim` (see the module docstring)."""
    op = "linalg.matrix_norm"
    A = _cast(A, dtype, op)
    check_float(A, op, low_precision=ord not in ("nuc", 2, -2))  # those need an SVD
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _matrix_dims(A, dim, op)
    if ord == "fro":
        return LinalgVectorNorm.apply(A, 2.0, tuple(sorted((d0, d1))), bool(keepdim))
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)))
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        return _restore(r, d0, d1, keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = A.abs().sum(inner, keepdim=True)
        r = sums.amax(outer, keepdim=True) if ord > 0 else sums.amin(outer, keepdim=True)
        return r if keepdim else r.squeeze((d0, d1))
    raise RuntimeError(f"{op}: Order {ord} not supported. Use one of 'fro', 'nuc', inf, -inf, "
                       f"1, -1, 2, -2")


@accepts_out("linalg.norm")
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector or a matrix norm, chosen as torch.linalg.norm does: `dim` an int (or 1-tuple)
    -> vector_norm; a 2-tuple -> matrix_norm; dim None -> the 2-norm of all elements when ord
    is None, else a vector norm of a 1-D input or a matrix norm of a 2-D one."""
    op = "linalg.norm"
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"{op}: ord={ord!r} is a matrix norm, but dim selects one "
                                   f"dimension (give dim a 2-tuple)")
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
        raise RuntimeError(f"{op}: If dim is specified, it must be of length 1 or 2. Got {dim}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    nd = A._data.ndim
    if nd == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if nd == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be 1D or 2D. "
                       f"Got {nd}D.")
