"""Regression losses: elementwise distances between a prediction and a real-valued target.

  mse_loss        l = (x - y)^2
  l1_loss         l = |x - y|
  smooth_l1_loss  l = 0.5 d^2 / beta if |d| < beta else |d| - 0.5 beta        (d = x - y)
  huber_loss      l = 0.5 d^2 if |d| <= delta else delta (|d| - 0.5 delta)  (= beta * smooth_l1)
  soft_margin     l = log(1 + exp(-y x)) = softplus(-y x)                    (y = +-1)
  poisson_nll     l = exp(x) - y x  (log_input) or x - y log(x + eps)
  gaussian_nll    l = 0.5 (log var + (x - y)^2 / var)

All are compositions of differentiable Tensor ops: autograd derives the gradients (w.r.t. the
target too, as in PyTorch). When input and target shapes differ they broadcast, with PyTorch's
warning, since that is almost always a bug (a (N, 1) prediction against an (N,) target gives
an (N, N) loss).
"""
from ..._autocast import autocast_op
import math
import warnings

import numpy as np

from ...ops.activation import logsigmoid
from ...ops.elementwise import where
from ...ops.unary import exp, log
from ...tensor import Tensor
from ._reduction import (apply_reduction, check_reduction, check_tensor, const,
                         legacy_reduction, op_name, shape_text)

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss",
           "poisson_nll_loss", "gaussian_nll_loss"]


def _pair(op, input, target, size_average=None, reduce_=None, reduction="mean"):
    """Validate an (input, target) pair; returns the reduction string."""
    check_tensor(input, op, "input")
    check_tensor(target, op, "target")
    reduction = legacy_reduction(size_average, reduce_, reduction)
    check_reduction(reduction, op)
    a, b = input._data.shape, target._data.shape
    if a != b:
        try:
            np.broadcast_shapes(a, b)
        except ValueError:
            raise RuntimeError(f"{op_name(op)}: input of shape {shape_text(input)} and target of "
                               f"shape {shape_text(target)} cannot be broadcast together; they "
                               f"should have the same shape") from None
        warnings.warn(f"{op_name(op)}: using a target size {shape_text(target)} that is different "
                      f"to the input size {shape_text(input)}. This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=3)
    return reduction


def _with_weight(op, loss, input, weight, reduction, mean_by_weight=True):
    """Reduce `loss`, weighted elementwise by `weight` (the input's shape) when given. The
    weighted 'mean' is sum(w l) / sum(w) for mse/l1 and mean(w l) for huber, as PyTorch."""
    if weight is None:
        return apply_reduction(loss, reduction)
    check_tensor(weight, op, "weight")
    if weight._data.shape != input._data.shape:
        raise ValueError(f"{op_name(op)}: weight of shape {shape_text(weight)} must have the "
                         f"same shape as input {shape_text(input)}")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        with np.errstate(invalid="ignore", divide="ignore"):   # zero total weight gives nan
            return loss.sum() / weight.sum()
    return apply_reduction(loss, reduction)


@autocast_op("mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error: l = (x - y)^2 (times `weight` if given)."""
    reduction = _pair("mse_loss", input, target, size_average, reduce, reduction)
    d = input - target
    return _with_weight("mse_loss", d * d, input, weight, reduction)


@autocast_op("l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error: l = |x - y| (times `weight` if given)."""
    reduction = _pair("l1_loss", input, target, size_average, reduce, reduction)
    return _with_weight("l1_loss", (input - target).abs(), input, weight, reduction)


def _smooth(d, beta):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta = 0: plain |d|)."""
    ad = d.abs()
    if beta == 0:
        return ad
    return where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta)


@autocast_op("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1: quadratic for |x - y| < beta, linear beyond (less sensitive to outliers than
    MSE, smooth at 0 unlike L1)."""
    op = "smooth_l1_loss"
    reduction = _pair(op, input, target, size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError(f"{op_name(op)}: beta must be >= 0, got {beta}")
    return apply_reduction(_smooth(input - target, float(beta)), reduction)


@autocast_op("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber: 0.5 d^2 for |d| <= delta, delta (|d| - 0.5 delta) beyond (= delta * smooth_l1 with
    beta = delta)."""
    op = "huber_loss"
    reduction = _pair(op, input, target, None, None, reduction)
    if delta <= 0:
        raise RuntimeError(f"{op_name(op)}: delta must be > 0, got {delta}")
    d = input - target
    ad = d.abs()
    loss = where(ad <= delta, d * d * 0.5, (ad - 0.5 * delta) * float(delta))
    return _with_weight(op, loss, input, weight, reduction, mean_by_weight=False)


@autocast_op("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss for labels y = +-1: l = log(1 + exp(-y x)) = -logsigmoid(y x)."""
    reduction = _pair("soft_margin_loss", input, target, size_average, reduce, reduction)
    return apply_reduction(-logsigmoid(input * target), reduction)


@autocast_op("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log-likelihood of a Poisson target y with rate exp(x) (log_input) or x:
    l = exp(x) - y x, or x - y log(x + eps). full adds Stirling's approximation of log(y!),
    y log y - y + 0.5 log(2 pi y), where y > 1."""
    op = "poisson_nll_loss"
    reduction = _pair(op, input, target, size_average, reduce, reduction)
    if log_input:
        loss = exp(input) - target * input
    else:
        loss = input - target * log(input + eps)
    if full:
        big = Tensor._make(np.asarray(target._data > 1))
        y = where(big, target, const(2.0, target))   # keeps log() finite where masked out
        stirling = y * log(y) - y + 0.5 * log(2 * math.pi * y)
        loss = loss + where(big, stirling, const(0.0, target))
    return apply_reduction(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log-likelihood of target y under N(x, var):
    l = 0.5 (log max(var, eps) + (x - y)^2 / max(var, eps)) (+ 0.5 log(2 pi) if full).
    var has the input's shape, or lacks its last dim, or has a last dim of 1 (one variance
    shared by the features), or is a number. The clamp at eps passes gradients through
    unchanged (PyTorch clamps under no_grad)."""
    op = "gaussian_nll_loss"
    check_tensor(input, op, "input")
    check_tensor(target, op, "target")
    check_reduction(reduction, op)
    if not isinstance(var, Tensor):
        var = const(np.full(input._data.shape, float(var)), input)
    xs, vs = input._data.shape, var._data.shape
    if vs != xs:
        if xs[:-1] == vs:
            var = var.unsqueeze(-1)
        elif not (xs[:-1] == vs[:-1] and vs[-1:] == (1,)):
            raise ValueError(f"{op_name(op)}: var of shape {shape_text(var)} does not fit input of "
                             f"shape {shape_text(input)} (use the input's shape, the input's "
                             f"shape without its last dim, or a last dim of 1)")
    if (var._data < 0).any():
        raise ValueError(f"{op_name(op)}: var has negative entry/entries")
    v = var._data
    var = var + Tensor._make((np.maximum(v, eps) - v).astype(v.dtype))  # clamp, gradient as is
    d = input - target
    loss = (log(var) + d * d / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return apply_reduction(loss, reduction)

