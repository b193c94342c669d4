"""Products that exist only in torch.linalg: ``cross`` (with broadcasting and dim=-1),
``vecdot``, ``multi_dot`` (a chain of matrix products in the cheapest order) and
``matrix_power``. Each is made of differentiable ops (einsum, mul/sum, matmul, inv), which give
the gradients: for C = A B, gA = gC B^T and gB = A^T gC, applied along the chain.
"""
from .._autocast import autocast_op
import numpy as np

from ..ops import linalg as _L
from ..ops._util import accepts_out, shape_str
from ..ops.decomp import _C_NAME, check_square, inv
from ..ops.shape import broadcast_tensors
from ..tensor import Tensor

__all__ = ["cross", "vecdot", "multi_dot", "matrix_power"]


def _tensor(x, op, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


@accepts_out("linalg.cross")
def cross(input, other, *, dim=-1):
    """The 3-vector cross product along `dim` (default: the last) of inputs with the same
    number of dims, the other dims broadcast:
    c_i = sum_jk eps_ijk a_j b_k."""
    op = "linalg.cross"
    _tensor(input, op, "input")
    _tensor(other, op, "other")
    nd = input._data.ndim
    if other._data.ndim != nd:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions. (got "
                           f"{shape_str(input._data.shape)} and {shape_str(other._data.shape)}; "
                           f"unsqueeze one of them)")
    if not -nd <= dim < nd:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {dim})")
    sa, sb = input._data.shape, other._data.shape
    if sa[dim] != 3 or sb[dim] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {sa[dim]} and "
                           f"{sb[dim]}")
    a, b = broadcast_tensors(input, other)
    return _L.cross(a, b, dim=dim % nd)


@accepts_out("linalg.vecdot")
@autocast_op("linalg_vecdot")
def vecdot(x, y, *, dim=-1):
    """sum_i x_i y_i along `dim` (x, y broadcast; real tensors, so no conjugation)."""
    op = "linalg.vecdot"
    _tensor(x, op, "x")
    _tensor(y, op, "y")
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"{op}: Expected x and y to have the same dtype, but found x of type "
                           f"{_C_NAME.get(x.dtype.name, x.dtype.name)} and y of type "
                           f"{_C_NAME.get(y.dtype.name, y.dtype.name)} instead (convert one "
                           f"with .to())")
    return (x * y).sum(dim)


def _chain_order(dims):
    """The classic matrix-chain dynamic programme: split[i][j] = where to split the product
    of matrices i..j (matrix k is dims[k] x dims[k + 1]) for the fewest multiplications."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@accepts_out("linalg.multi_dot")
def multi_dot(tensors):
    """The product of 2-D matrices T_0 @ T_1 @ ... @ T_k, multiplied in the order with the
    fewest scalar multiplications; the first may be a 1-D row vector and the last a 1-D column
    vector (their dim is dropped from the result, as in matmul)."""
    op = "multi_dot()"
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"{op}: expected at least 2 tensors but got {len(tensors)}")
    for k, t in enumerate(tensors):
        _tensor(t, "multi_dot", f"tensors[{k}]")
        nd = t._data.ndim
        if k in (0, len(tensors) - 1):
            if nd not in (1, 2):
                which = "first" if k == 0 else "last"
                raise RuntimeError(f"{op}: the {which} tensor must be 1D or 2D but got {nd}D")
        elif nd != 2:
            raise RuntimeError(f"{op}: tensor {k} must be 2D but got {nd}D")
        if t._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError(f"{op}: all tensors must have be the same dtype but tensor 0 is "
                               f"{_C_NAME.get(tensors[0].dtype.name)} and tensor {k} is "
                               f"{_C_NAME.get(t.dtype.name)}")
    first_vec, last_vec = tensors[0]._data.ndim == 1, tensors[-1]._data.ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for k in range(len(mats) - 1):
        a, b = mats[k]._data.shape, mats[k + 1]._data.shape
        if a[1] != b[0]:
            raise RuntimeError(f"{op}: tensors {k} and {k + 1} with shapes "
                               f"{list(tensors[k].shape)} and {list(tensors[k + 1].shape)} "
                               f"cannot be multiplied")
    dims = [m._data.shape[0] for m in mats] + [mats[-1]._data.shape[1]]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return _L.mm(product(i, k), product(k + 1, j))
    out = product(0, len(mats) - 1)
    if first_vec and last_vec:
        return out.reshape(())
    if first_vec:
        return out.squeeze(0)
    if last_vec:
        return out.squeeze(-1)
    return out


@accepts_out("linalg.matrix_power")
def matrix_power(A, n):
    """A^n for square matrices (batched): n = 0 gives the identity, n < 0 the power of the
    inverse; computed by repeated squaring."""
    op = "linalg.matrix_power"
    _tensor(A, op, "A")
    if A._data.ndim < 2 or A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{'x'.join(map(str, A._data.shape[-2:]))} matrices")
    n = int(n)
    if n == 0:
        eye = np.broadcast_to(np.eye(A._data.shape[-1], dtype=A._data.dtype), A._data.shape)
        return Tensor._make(eye.copy())
    if n < 0:
        check_square(A, op)
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else _L.matmul(result, base)
        n >>= 1
        if n:
            base = _L.matmul(base, base)
    return result
