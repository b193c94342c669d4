"""Linear algebra: the matrix product in all its spellings, plus addmm, tensordot, kron, trace,
cross.

matmul is the one kernel here. Its forward calls ``backend.matmul`` (the numpy reference or the
native SGEMM, switchable at run time) and its backward is two more matrix products,

    C = A @ B      dA = dC @ B^T      dB = A^T @ dC,

each reduced by `sum_to` over the batch dims that broadcasting repeated. A 1-D operand is first
made a matrix (a vector on the left becomes a 1xK row, on the right a Kx1 column) and the unit
dim is dropped from the result, exactly as in PyTorch; backward reshapes the same way. Because
the backward uses matmul itself, gradients of gradients work.

mm, bmm, mv and dot check their stricter shapes and then run the same product, under each one's
PyTorch grad_fn name (`Mm`, `Bmm`, `Mv`, `Dot`; matmul is `Mm`, or `Mv`/`Dot` for those shapes;
PyTorch's batched matmul records UnsafeViewBackward0, a reshape of its result). tensordot, inner
and cross are einsum equations (see einsum.py); outer and kron are broadcast products.
"""
from .._autocast import autocast_op
import numpy as np

from .. import backend
from .. import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import check_broadcast, norm_dim, shape_str, sum_to, tensor_method
from .einsum import einsum
from .elementwise import where

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "baddbmm", "tensordot", "kron", "trace", "cross"]


# ---- checks shared by the products -------------------------------------------------------------
def _tensors(op, *args):
    for name, t in args:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, got "
                            f"{type(t).__name__}")


def _same_dtype(op, *tensors):
    d = tensors[0]._data.dtype
    for t in tensors[1:]:
        if t._data.dtype != d:
            names = " and ".join(x._data.dtype.name for x in tensors)
            raise RuntimeError(f"{op}: expected all operands to have the same dtype, but got "
                               f"{names}; cast with .to({d.name}) first")
    if d == np.bool_:
        raise NotImplementedError(f"{op}: not implemented for bool tensors; cast with .int() "
                                  f"or .float() first")


def _check_matmul(a, b, op):
    """torch.matmul's shape rules; returns nothing, raises before any work is done."""
    sa, sb = a._data.shape, b._data.shape
    if not sa or not sb:
        raise RuntimeError(f"both arguments to {op} need to be at least 1D, but they are "
                           f"{len(sa)}D and {len(sb)}D")
    _same_dtype(op, a, b)
    if sa[-1] != (sb[-2] if len(sb) >= 2 else sb[0]):
        raise RuntimeError(f"{op}: shapes cannot be multiplied ({shape_str(sa)} and "
                           f"{shape_str(sb)})")
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise RuntimeError(f"{op}: the batch dims of {shape_str(sa)} and {shape_str(sb)} cannot "
                           f"be broadcast together ({shape_str(sa[:-2])} vs "
                           f"{shape_str(sb[:-2])}); make them equal or 1") from None


# ---- the kernel --------------------------------------------------------------------------------
class SwapLast(Function):
    """y = x with its last two dims swapped (a view; torch's ``x.mT``).  dx = dy swapped back."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a):
        return np.swapaxes(a._data, -1, -2)

    @staticmethod
    def backward(ctx, grad):
        return SwapLast.apply(grad)


class Mm(Function):
    """C = A @ B (np.matmul semantics; computed by backend.matmul).
    dA = dC @ B^T, dB = A^T @ dC, summed over broadcast batch dims; vectors as 1xK / Kx1."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, b):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, b)
        x, y = a._data, b._data     # bfloat16/float16: the backend's half GEMM (float32 sums)
        out = np.asarray(backend.matmul(x, y))
        return _dt.result_array(out, x.dtype)     # (1-D @ 1-D gives a numpy scalar)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        sa, sb = a._data.shape, b._data.shape
        A = a if len(sa) >= 2 else a.reshape(1, sa[0])      # row vector
        B = b if len(sb) >= 2 else b.reshape(sb[0], 1)      # column vector
        SA, SB = A._data.shape, B._data.shape
        G = grad.reshape(np.broadcast_shapes(SA[:-2], SB[:-2]) + (SA[-2], SB[-1]))
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = sum_to(Mm.apply(G, SwapLast.apply(B)), SA).reshape(sa)
        if ctx.needs_input_grad[1]:
            if len(SB) == 2 and len(SA) > 2:
                # B was shared by every batch (a Linear layer): fold the batch into the rows,
                # one (K x rows) @ (rows x N) product instead of a batch of them summed after
                rows = int(np.prod(SA[:-1]))
                gb = Mm.apply(SwapLast.apply(A.reshape(rows, SA[-1])),
                                  G.reshape(rows, SB[-1]))
            else:
                gb = sum_to(Mm.apply(SwapLast.apply(A), G), SB)
            gb = gb.reshape(sb)
        return ga, gb


class Bmm(Mm):
    """Mm of two batches of matrices (bmm())."""


class Mv(Mm):
    """Mm of a matrix and a vector (mv())."""


class Dot(Mm):
    """Mm of two vectors (dot())."""


# ---- the products ------------------------------------------------------------------------------
@tensor_method("matmul")
@autocast_op("matmul")
def matmul(input, other):
    """Matrix product as ``torch.matmul``: 1-D @ 1-D is the dot product (a 0-dim tensor); 2-D @
    2-D the matrix product; a 1-D operand is treated as a row (left) or column (right) and that
    dim removed after; N-D operands are batches of matrices whose batch dims broadcast. Both
    operands need the same dtype (integers stay integers)."""
    _tensors("matmul", ("input", input), ("other", other))
    _check_matmul(input, other, "matmul")
    fn = {(1, 1): Dot, (2, 1): Mv}.get((input._data.ndim, other._data.ndim), Mm)
    return fn.apply(input, other)


def _matmul_op(self, other):
    return matmul(self, other) if isinstance(other, Tensor) else NotImplemented


def _rmatmul_op(self, other):
    return matmul(other, self) if isinstance(other, Tensor) else NotImplemented


Tensor.__matmul__ = _matmul_op
Tensor.__rmatmul__ = _rmatmul_op


def _ndims(op, want, *tensors):
    got = tuple(t._data.ndim for t in tensors)
    if got != want:
        w = " and ".join(f"{n}-D" for n in want)
        g = " and ".join(f"{n}-D" for n in got)
        raise RuntimeError(f"{op}: expected {w} tensors, but got {g}; use matmul() for other "
                           f"shapes")


@tensor_method("mm")
@autocast_op("mm")
def mm(input, mat2):
    """Matrix product of two 2-D tensors (no broadcasting)."""
    _tensors("mm", ("input", input), ("mat2", mat2))
    _ndims("mm", (2, 2), input, mat2)
    _check_matmul(input, mat2, "mm")
    return Mm.apply(input, mat2)


def _check_bmm(input, mat2, op):
    _ndims(op, (3, 3), input, mat2)
    sa, sb = input._data.shape, mat2._data.shape
    if sa[0] != sb[0]:
        raise RuntimeError(f"{op}: the batch sizes must be equal, but got {shape_str(sa)} and "
                           f"{shape_str(sb)}; use matmul() to broadcast batches")
    _check_matmul(input, mat2, op)


@tensor_method("bmm")
@autocast_op("bmm")
def bmm(input, mat2):
    """Batched matrix product: (B, n, m) @ (B, m, p) -> (B, n, p), equal batch sizes."""
    _tensors("bmm", ("input", input), ("mat2", mat2))
    _check_bmm(input, mat2, "bmm")
    return Bmm.apply(input, mat2)


@tensor_method("mv")
def mv(input, vec):
    """Matrix-vector product: (n, m) @ (m,) -> (n,)."""
    _tensors("mv", ("input", input), ("vec", vec))
    _ndims("mv", (2, 1), input, vec)
    _check_matmul(input, vec, "mv")
    return Mv.apply(input, vec)


@tensor_method("dot")
def dot(input, other):
    """Dot product of two 1-D tensors of equal length: a 0-dim tensor."""
    _tensors("dot", ("input", input), ("other", other))
    _ndims("dot", (1, 1), input, other)
    _same_dtype("dot", input, other)
    n, m = input._data.shape[0], other._data.shape[0]
    if n != m:
        raise RuntimeError(f"dot: expected both vectors to have the same number of elements, "
                           f"but got {n} and {m}")
    return Dot.apply(input, other)


@tensor_method("vdot")
def vdot(input, other):
    """conj(input) . other; with real tensors (all minitorch_edge has) the same as dot."""
    _tensors("vdot", ("input", input), ("other", other))
    return dot(input, other)


@tensor_method("inner")
def inner(input, other):
    """Sum over the last dim of both: out[i.., j..] = sum_k a[i.., k] b[j.., k]. A 0-dim operand
    multiplies elementwise."""
    _tensors("inner", ("input", input), ("other", other))
    sa, sb = input._data.shape, other._data.shape
    if not sa or not sb:
        return input * other
    if sa[-1] != sb[-1]:
        raise RuntimeError(f"inner: the last dimension must match on both inputs, but got "
                           f"shapes {shape_str(sa)} and {shape_str(sb)}")
    return tensordot(input, other, dims=([-1], [-1]))


@tensor_method("outer", "ger")
def outer(input, vec2):
    """out[i, j] = a[i] * b[j] for 1-D a, b (a broadcast product; dtypes promote as mul)."""
    _tensors("outer", ("input", input), ("vec2", vec2))
    for name, t in (("input", input), ("vec2", vec2)):
        if t._data.ndim != 1:
            raise RuntimeError(f"outer: expected a 1-D argument {name}, but got "
                               f"{t._data.ndim}-D")
    return input.reshape(input._data.shape[0], 1) * vec2.reshape(1, vec2._data.shape[0])


ger = outer


def _add_scaled(input, prod, beta, alpha):
    """beta * input + alpha * prod; beta == 0 ignores input (its nan/inf do not propagate)."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:   # input is ignored (as PyTorch) but still gets its (zero) gradient
        return where(Tensor._make(np.array(False)), input, prod)
    return (input if beta == 1 else input * beta) + prod


def _check_addend(input, out_shape, op):
    _tensors(op, ("input", input))
    s = input._data.shape
    try:
        ok = np.broadcast_shapes(s, out_shape) == out_shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"{op}: input of shape {shape_str(s)} cannot be broadcast to the "
                           f"product's shape {shape_str(out_shape)}")


@tensor_method("addmm")
@autocast_op("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), input broadcastable to the product's shape.
    Gradients: d input = beta * dy (summed to its shape), d mat1/d mat2 as matmul times alpha."""
    _tensors("addmm", ("input", input), ("mat1", mat1), ("mat2", mat2))
    _ndims("addmm", (2, 2), mat1, mat2)
    _check_matmul(mat1, mat2, "addmm")
    _same_dtype("addmm", input, mat1)
    _check_addend(input, (mat1._data.shape[0], mat2._data.shape[1]), "addmm")
    return _add_scaled(input, Mm.apply(mat1, mat2), beta, alpha)


@tensor_method("baddbmm")
@autocast_op("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * bmm(batch1, batch2), input broadcastable to (B, n, p)."""
    _tensors("baddbmm", ("input", input), ("batch1", batch1), ("batch2", batch2))
    _check_bmm(batch1, batch2, "baddbmm")
    _same_dtype("baddbmm", input, batch1)
    sa, sb = batch1._data.shape, batch2._data.shape
    _check_addend(input, (sa[0], sa[1], sb[2]), "baddbmm")
    return _add_scaled(input, Mm.apply(batch1, batch2), beta, alpha)


_L = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _dim_list(d, ndim, op):
    d = [d] if not isinstance(d, (list, tuple)) else list(d)
    out = [norm_dim(x, ndim, op) for x in d]
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}: dim {out} appears multiple times in the list of dims")
    return out


@autocast_op("tensordot")
def tensordot(a, b, dims=2):
    """Contract dims of a with dims of b: ``dims=n`` pairs the last n dims of a with the first n
    of b; ``dims=([1, 2], [0, 1])`` names them. Result: a's free dims then b's free dims.
    Computed (and differentiated) as an einsum."""
    _tensors("tensordot", ("a", a), ("b", b))
    sa, sb = a._data.shape, b._data.shape
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError(f"tensordot: dims must be an int or a pair of dim lists, got "
                               f"{dims!r}")
        da, db = _dim_list(dims[0], len(sa), "tensordot"), _dim_list(dims[1], len(sb),
                                                                     "tensordot")
        if len(da) != len(db):
            raise RuntimeError(f"tensordot: both dim lists must have the same length, got "
                               f"{len(da)} and {len(db)}")
    else:
        n = int(dims)
        if n < 0:
            raise RuntimeError(f"tensordot: expects dims >= 0, but got dims={n}")
        if n > len(sa) or n > len(sb):
            raise RuntimeError(f"tensordot: dims={n} is more than the dims of the inputs "
                               f"({shape_str(sa)} and {shape_str(sb)})")
        da, db = list(range(len(sa) - n, len(sa))), list(range(n))
    for i, j in zip(da, db):
        if sa[i] != sb[j] and sa[i] != 1 and sb[j] != 1:
            raise RuntimeError(f"tensordot: contracted dimensions need to match, but first has "
                               f"size {sa[i]} in dim {i} and second has size {sb[j]} in dim {j}")
    _same_dtype("tensordot", a, b)
    if len(sa) + len(sb) > len(_L):
        raise RuntimeError("tensordot: too many dims for an einsum equation (52 at most)")
    la = _L[:len(sa)]
    lb = list(_L[len(sa):len(sa) + len(sb)])
    for i, j in zip(da, db):
        lb[j] = la[i]
    out = "".join(c for i, c in enumerate(la) if i not in da) + \
        "".join(c for j, c in enumerate(lb) if j not in db)
    return einsum(f"{la},{''.join(lb)}->{out}", a, b)


@tensor_method("kron")
def kron(input, other):
    """Kronecker product: out[i*m + k, ...] = a[i, ...] * b[k, ...] (shapes padded with leading
    1s to the same ndim). A broadcast product, then a reshape."""
    _tensors("kron", ("input", input), ("other", other))
    n = max(input._data.ndim, other._data.ndim)
    sa = (1,) * (n - input._data.ndim) + input._data.shape
    sb = (1,) * (n - other._data.ndim) + other._data.shape
    A = input.reshape(tuple(x for s in sa for x in (s, 1)))
    B = other.reshape(tuple(x for s in sb for x in (1, s)))
    return (A * B).reshape(tuple(p * q for p, q in zip(sa, sb)))


class Trace(Function):
    """y = sum_i x[i, i] over the min(n, m) diagonal.  dx = dy * I (the n x m identity).
    Integer inputs sum in int64, as PyTorch."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        x = a._data
        if x.dtype.kind in "biu":
            x = x.astype(np.int64)
        if ctx.needs_input_grad:
            ctx.in_shape = x.shape
        return np.asarray(np.trace(x))

    @staticmethod
    def backward(ctx, grad):
        n, m = ctx.in_shape
        return grad * Tensor._make(np.eye(n, m, dtype=grad._data.dtype))


@tensor_method("trace")
@autocast_op("trace")
def trace(input):
    """Sum of the main diagonal of a 2-D tensor (need not be square)."""
    _tensors("trace", ("input", input))
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got a tensor with dim "
                           f"{input._data.ndim}")
    return Trace.apply(input)


@tensor_method("cross")
def cross(input, other, dim=None):
    """3-vector cross product along `dim`: c_i = sum_jk eps_ijk a_j b_k (eps the Levi-Civita
    symbol), other dims broadcast. dim=None picks the first dim of size 3, as torch.cross.
    Computed (and differentiated) as an einsum with the constant eps."""
    _tensors("cross", ("input", input), ("other", other))
    sa, sb = input._data.shape, other._data.shape
    if len(sa) != len(sb):
        raise RuntimeError(f"cross: inputs must have the same number of dims, got "
                           f"{shape_str(sa)} and {shape_str(sb)}")
    shape = check_broadcast(sa, sb, "cross")
    if dim is None:
        dim = next((d for d, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape "
                               f"{shape_str(shape)}")
    d = norm_dim(dim, len(sa), "cross")
    if sa[d] != 3 or sb[d] != 3:
        raise RuntimeError(f"cross: inputs dimension {d} must have length 3, got {sa[d]} and "
                           f"{sb[d]}")
    _same_dtype("cross", input, other)
    eps = np.zeros((3, 3, 3), input._data.dtype)
    eps[0, 1, 2] = eps[1, 2, 0] = eps[2, 0, 1] = 1
    eps[0, 2, 1] = eps[2, 1, 0] = eps[1, 0, 2] = -1
    batch = [c for c in _L if c not in "ijk"][:len(sa)]

    def sub(letter):
        return "".join(letter if k == d else c for k, c in enumerate(batch))
    return einsum(f"{sub('j')},{sub('k')},ijk->{sub('i')}", input, other, Tensor._make(eps))
