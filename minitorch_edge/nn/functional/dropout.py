"""Dropout: during training, zero each element (or each whole channel) with probability p and
scale the survivors by 1/(1-p), so the expected value of every element is unchanged.

    y = x * m / (1 - p),   m ~ Bernoulli(1 - p)        (p = 1: y = 0)

The mask is drawn in numpy from the default Generator (``minitorch_edge.manual_seed`` makes it
repeatable) and enters the graph as a constant: y = x * mask is one multiply, whose backward is
dy * mask. In evaluation (training=False) or with p = 0 the input is returned as it is.

alpha_dropout keeps the mean and variance of a SELU network's activations instead: dropped
elements are set to SELU's negative saturation value -alpha*scale, then an affine map a*y + b
restores zero mean and unit variance.
"""
import warnings

import numpy as np

from ...random import np_rng
from ...tensor import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_SELU_NEG = 1.7580993408473766   # alpha * scale of SELU: its limit for x -> -inf is -this


def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _need_tensor(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")


def _keep_mask(shape, p, dtype):
    """A {0, 1} array of `shape` where each entry is 1 with probability 1 - p."""
    if p == 1.0:
        return np.zeros(shape, dtype)
    return (np_rng().random(shape) >= p).astype(dtype)


def _apply(input, factor, inplace):
    f = Tensor._make(factor)
    return input.mul_(f) if inplace else input * f


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (when training)."""
    _need_tensor(input, "dropout")
    _check_p(p)
    if not training or p == 0.0:
        return input
    x = input._data
    mask = _keep_mask(x.shape, p, x.dtype)
    if p < 1.0:
        mask *= x.dtype.type(1.0 / (1.0 - p))
    return _apply(input, mask, inplace)


def _feature_dropout(input, p, training, inplace, op, feature_dims):
    """Drop whole channels: one mask value per (sample, channel) of an (N, C, *) input whose
    trailing `feature_dims` dims are the positions; an input with one dim fewer has no batch."""
    _need_tensor(input, op)
    _check_p(p)
    nd = input._data.ndim
    if nd not in (feature_dims + 1, feature_dims + 2):
        warnings.warn(f"{op}: received a {nd}-D input; expected (N, C, *) with {feature_dims} "
                      f"trailing position dims (or (C, *) without a batch dim). Each entry of the "
                      f"first {max(nd - feature_dims, 1)} dims is dropped as one channel.",
                      stacklevel=3)
    if not training or p == 0.0:
        return input
    x = input._data
    lead = max(nd - feature_dims, min(nd, 1))
    mask = _keep_mask(x.shape[:lead] + (1,) * (nd - lead), p, x.dtype)
    if p < 1.0:
        mask *= x.dtype.type(1.0 / (1.0 - p))
    return _apply(input, mask, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, L) or (C, L) input."""
    return _feature_dropout(input, p, training, inplace, "dropout1d", 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, H, W) input. A 3-D input is taken as (N, C, L) and gets
    channel-wise 1-D dropout, as PyTorch does (with a warning)."""
    _need_tensor(input, "dropout2d")
    if input._data.ndim == 3:
        warnings.warn("dropout2d: received a 3-D input; it is treated as (N, C, L) and 1-D "
                      "channel-wise dropout is applied (use dropout1d for that).", stacklevel=2)
        return _feature_dropout(input, p, training, inplace, "dropout2d", 1)
    return _feature_dropout(input, p, training, inplace, "dropout2d", 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) input."""
    return _feature_dropout(input, p, training, inplace, "dropout3d", 3)


def _alpha(input, p, training, inplace, mask_shape, op):
    _need_tensor(input, op)
    _check_p(p)
    if not training or p == 0.0:
        return input
    x = input._data
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    keep = _keep_mask(mask_shape, p, x.dtype)
    a = 1.0 / np.sqrt((_SELU_NEG ** 2 * p + 1) * (1 - p))
    # y = a * (x * keep - alpha' * (1 - keep)) + a * alpha' * p  =  x * (a keep) + shift
    shift = (keep - 1) * x.dtype.type(_SELU_NEG * a) + x.dtype.type(_SELU_NEG * a * p)
    scale = keep * x.dtype.type(a)
    out = input.mul_(Tensor._make(scale)) if inplace else input * Tensor._make(scale)
    return out.add_(Tensor._make(shift)) if inplace else out + Tensor._make(shift)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: keeps zero mean and unit variance (see the file header)."""
    return _alpha(input, p, training, inplace, input._data.shape if isinstance(input, Tensor)
                  else None, "alpha_dropout")


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout with one mask value per (sample, channel) of an (N, C, *) input."""
    _need_tensor(input, "feature_alpha_dropout")
    shape = input._data.shape
    lead = min(len(shape), 2)
    return _alpha(input, p, training, inplace, shape[:lead] + (1,) * (len(shape) - lead),
                  "feature_alpha_dropout")
