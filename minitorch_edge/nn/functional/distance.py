"""Distances and similarities between vectors: cosine_similarity, pairwise_distance (row by row
of two batches), pdist (every pair of rows of one matrix) and cdist (every row of one batch
against every row of another).

All are composed of Tensor ops (broadcast, subtract, index, p-norm), so their gradients, and the
gradients of those, come from the ops. The p-norm's gradient (ops/reduce.py
LinalgVectorNorm) is the one PyTorch uses for these: 0 where a distance is 0 (p = 2 and general
p), sign(d) for p = 1, nothing for p = 0.

The one non-op piece is `_ClampMinKeepGrad`: cosine_similarity divides by max(||x||, eps),
where PyTorch clamps the norm in place under no_grad, so the value is clamped but the gradient
flows through the norm as if it were not. That is this Function: y = max(x, eps), dy/dx = 1.
"""
from ..._autocast import autocast_op
import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...ops._util import norm_dim, shape_str
from ...ops.shape import broadcast_shapes
from ...tensor import Tensor

# (cdist is torch.cdist, not torch.nn.functional.cdist: it is exported at the top level)
__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]

_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


class _ClampMinKeepGrad(Function):
    """y = max(x, eps) elementwise; the gradient passes through unchanged, dx = dy (PyTorch's
    clamp_min_ of the norms under no_grad inside cosine_similarity). Its backward is the
    identity, so it is linear for double backward."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, eps):
        return np.maximum(x._data, np.asarray(eps, x._data.dtype))

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _float_pair(x1, x2, op):
    """x1 and x2 converted to their common floating dtype (RuntimeError for an integer one)."""
    for name, x in (("x1", x1), ("x2", x2)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not "
                            f"{type(x).__name__}")
    common = _dt.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"{op}(): expected common dtype to be floating point, yet common "
                           f"dtype is {common.name} (x1: {x1.dtype.name}, x2: {x2.dtype.name}); "
                           f"convert with .float()")
    return x1.to(common), x2.to(common)


def _broadcast(x1, x2, op):
    try:
        shape = broadcast_shapes(x1._data.shape, x2._data.shape)
    except RuntimeError:
        raise RuntimeError(f"{op}(): x1 of shape {shape_str(x1.shape)} and x2 of shape "
                           f"{shape_str(x2.shape)} cannot be broadcast together") from None
    return x1.expand(shape), x2.expand(shape), tuple(shape)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """cos = sum_dim(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)), computed as PyTorch does,
    as the sum over `dim` of (x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps)) (so |cos| <= 1),
    with x1 and x2 broadcast together first and norms taken over `dim` of that shape.
    Gradient (u = x1 / n1, v = x2 / n2): d cos / d x1 = (v - cos u) / n1, and symmetrically for
    x2; the clamp to eps changes the value only (the gradient flows through the norm as if
    unclamped, as in PyTorch)."""
    x1, x2 = _float_pair(x1, x2, "cosine_similarity")
    x1, x2, shape = _broadcast(x1, x2, "cosine_similarity")
    if not shape:                                 # 0-d: one number, a vector of length 1
        x1, x2 = x1.reshape((1,)), x2.reshape((1,))
        return cosine_similarity(x1, x2, 0, eps).reshape(())
    d = norm_dim(dim, len(shape), "cosine_similarity")
    n1 = _ClampMinKeepGrad.apply(x1.norm(2, d, keepdim=True), eps)
    n2 = _ClampMinKeepGrad.apply(x2.norm(2, d, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(d)


def _check_p(p, op):
    p = float(p)
    if p < 0:
        raise RuntimeError(f"{op} only supports non-negative p values, got p={p}")
    return p


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """d = ||x1 - x2 + eps||_p over the last dim (of the broadcast shape): one distance per row
    of the batches x1, x2 (N, D) -> (N,). eps keeps the norm's gradient finite when x1 = x2.
    Gradient: that of the p-norm, e.g. (x1 - x2 + eps) / d for p = 2."""
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise TypeError(f"pairwise_distance(): x1 and x2 must be Tensors, got "
                        f"{type(x1).__name__} and {type(x2).__name__}")
    p = float(p)
    out_dim = max(x1.dim(), x2.dim())
    try:
        diff = x1 - x2 + eps
    except RuntimeError:
        raise RuntimeError(f"pairwise_distance(): x1 of shape {shape_str(x1.shape)} and x2 of "
                           f"shape {shape_str(x2.shape)} cannot be broadcast together") from None
    if not diff.is_floating_point():
        diff = diff.to(_dt.get_default_dtype())
    if out_dim == 0:
        return diff.reshape((1,)).norm(p, 0, keepdim=False)
    return diff.norm(p, out_dim - 1, keepdim=keepdim)


def _check_float(x, op, name="input"):
    if not _dt.is_float_dtype(x._data.dtype):
        raise RuntimeError(f"{op} only supports floating-point dtypes, {name} got: "
                           f"{x.dtype.name}; convert with .float()")


def pdist(input, p=2):
    """The p-norm distance between every pair of rows i < j of the (N, M) input, in the order
    (0,1), (0,2), ..., (0,N-1), (1,2), ...: a vector of N(N-1)/2 values (the upper triangle of
    cdist(input, input), row by row). Gradient: that of ||x_i - x_j||_p for each pair, summed
    onto rows i and j (0 for a zero distance)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D (shape "
                           f"{shape_str(input.shape)}); pass an (N, M) matrix of N row vectors")
    _check_float(input, "pdist")
    p = _check_p(p, "pdist")
    n = input._data.shape[0]
    i, j = np.triu_indices(n, 1)
    rows_i = input.index_select(0, Tensor._make(i.astype(np.int64)))
    rows_j = input.index_select(0, Tensor._make(j.astype(np.int64)))
    return (rows_i - rows_j).norm(p, 1)


@autocast_op("cdist")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p for x1 (..., P, M) and
    x2 (..., R, M) (batch dims broadcast): (..., P, R). Computed directly from the differences
    in every mode (PyTorch's 'use_mm' modes use |a|^2 + |b|^2 - 2 a.b for p = 2, which rounds
    differently). Gradient: that of each p-norm, summed over the pairs each row is in (0 for a
    zero distance)."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode; use one of "
                         f"{', '.join(_CDIST_MODES)}")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{x.dim()}D (shape {shape_str(x.shape)})")
        _check_float(x, "cdist", name)
    if x1._data.shape[-1] != x2._data.shape[-1]:
        raise RuntimeError(f"cdist: X1 and X2 must have the same number of columns. X1: "
                           f"{x1._data.shape[-1]} X2: {x2._data.shape[-1]}")
    if x1._data.dtype != x2._data.dtype:
        raise RuntimeError(f"cdist: X1 and X2 must have the same dtype, got {x1.dtype.name} and "
                           f"{x2.dtype.name}; convert one of them with .to()")
    p = _check_p(p, "cdist")
    try:
        broadcast_shapes(x1._data.shape[:-2], x2._data.shape[:-2])
    except RuntimeError:
        raise RuntimeError(f"cdist: the batch dims of X1 {shape_str(x1.shape)} and X2 "
                           f"{shape_str(x2.shape)} cannot be broadcast together") from None
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)      # (..., P, R, M)
    return diff.norm(p, -1)
