"""Gradient clipping: keep one bad batch from blowing up training.

clip_grad_norm_ treats all gradients as one long vector g. If its p-norm ||g|| exceeds
max_norm, every gradient is scaled by max_norm / (||g|| + 1e-6), so the direction is kept and
the length capped; otherwise the factor is clamped to 1 (gradients unchanged). The norm of the
whole vector is the norm of the per-tensor norms, so it is computed tensor by tensor.
clip_grad_value_ clamps each gradient element to [-clip_value, clip_value] instead.
"""
import math

import numpy as np

from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters):
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def _vector_norm(x, p):
    """The p-norm of all elements of numpy array `x`, in float64."""
    a = np.abs(x.astype(np.float64, copy=False)).reshape(-1)
    if a.size == 0:
        return 0.0
    if p == math.inf:
        return float(a.max())
    if p == -math.inf:
        return float(a.min())
    if p == 0:
        return float(np.count_nonzero(a))
    if p == 2:
        return float(np.linalg.norm(a))
    if p == 1:
        return float(a.sum())
    return float(np.sum(a ** p) ** (1.0 / p))


def _write(g, values, name):
    """Store `values` into gradient tensor `g` in place (views of it see the change)."""
    if g._data.flags.writeable:
        np.copyto(g._data, values, casting="unsafe")
    else:
        g._data = values.astype(g._data.dtype)
    g._vc[0] += 1
    g._vc[1] = name


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (= the p-norm of all their elements together), as a
    0-d tensor in their dtype. error_if_nonfinite raises RuntimeError on a nan/inf norm."""
    norm_type = float(norm_type)
    tensors = [t for t in _as_list(tensors) if t is not None]
    if not tensors:
        return Tensor._make(np.array(0.0, np.float32))
    norms = np.array([_vector_norm(t._data, norm_type) for t in tensors])
    total = _vector_norm(norms, norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           f"is non-finite, so it cannot be clipped. To disable this error and "
                           f"scale the gradients by the non-finite norm anyway, set "
                           f"`error_if_nonfinite=False`")
    dtype = np.result_type(*[t._data.dtype for t in tensors])
    return Tensor._make(np.array(total, dtype))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every gradient by min(max_norm / (total_norm + 1e-6), 1)."""
    grads = _grads(parameters)
    if not grads:
        return
    total = float(total_norm.item() if isinstance(total_norm, Tensor) else total_norm)
    with np.errstate(invalid="ignore", divide="ignore"):
        coef = np.minimum(float(max_norm) / (total + 1e-6), 1.0)   # nan stays nan
    for g in grads:
        with np.errstate(invalid="ignore", over="ignore"):
            _write(g, g._data * g._data.dtype.type(coef), "clip_grad_norm")


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of `parameters` (a tensor or an iterable of them) in place so that
    their combined p-norm is at most max_norm. Returns the total norm before clipping (a 0-d
    tensor); inf norm_type uses the largest |gradient|. A nan/inf total norm raises with
    error_if_nonfinite=True (nothing is changed), else the gradients become nan/inf-scaled as
    in PyTorch. `foreach` is accepted and ignored (the loop is already vectorised per tensor)."""
    params = _as_list(parameters)
    total = get_total_norm(_grads(params), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element of `parameters` to [-clip_value, clip_value] in place."""
    c = float(clip_value)
    for g in _grads(parameters):
        _write(g, np.clip(g._data, -c, c), "clip_grad_value")
