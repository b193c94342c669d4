"""Losses: how far a prediction is from its target, as one number (or one per sample).

Every loss computes a per-element loss ``l`` and then reduces it (``reduction``): 'none' keeps
``l``, 'sum' adds it up, 'mean' averages it (weighted losses divide by the total weight).
The deprecated ``size_average``/``reduce`` pair is still accepted, as in PyTorch.

The classification losses (this file) must survive extreme logits (x = +-1e4), so they never
form ``log(softmax(x))`` or ``log(sigmoid(x))``:

* cross_entropy(x, t) = -sum_c a_c log_softmax(x)_c, where ``a`` is the (weighted, smoothed)
  target distribution: one-hot for class indices. log_softmax subtracts the max first. Its
  gradient is the famous ``softmax(x) * sum(a) - a`` (= p - onehot), computed by one fused op;
* binary_cross_entropy_with_logits(x, t) = (1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x),
  with logsigmoid(x) = -softplus(-x) computed stably;
* binary_cross_entropy(p, t) clamps each log at -100, as PyTorch does.

Regression and margin losses live in loss_regression.py and loss_margin.py; everything is
re-exported from here. The helpers all three share (reduction, checks, error names) are in
_reduction.py; a layer that calls these functions (nn.CrossEntropyLoss) puts its own name into
the error messages through its `loss_name`.
"""
from ..._autocast import autocast_op
import warnings

import numpy as np

from ... import dtypes as _dt
from ...autograd.function import Function
from ...autograd.grad_mode import _State
from ...ops.activation import logsigmoid
from ...ops.softmax import softmax, log_softmax
from ...ops.sorting import gather
from ...ops.unary import clamp_min, log, log1p, xlogy, exp
from ...tensor import Tensor
from ._reduction import (apply_reduction, check_reduction, check_tensor, const,
                         legacy_reduction, op_name, shape_text)
from ._reduction import loss_name  # noqa: F401  (nn.layers.loss imports it from here)
from .loss_margin import *  # noqa: F401,F403
from .loss_margin import __all__ as _margin
from .loss_regression import *  # noqa: F401,F403
from .loss_regression import __all__ as _regression

__all__ = ["nll_loss", "cross_entropy", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div"] + _regression + _margin


_c = _dt.compute_array   # the array to compute on: bfloat16 widened to float32


# ---- helpers of the classification losses --------------------------------------------------------
def check_float(x, op, what="input"):
    if not _dt.is_float_dtype(x._data.dtype):
        raise RuntimeError(f"{op_name(op)}: expected a floating point {what}, got {what} of "
                           f"dtype {x.dtype.name}; convert it with .float()")


def divide(total, denominator):
    """total / denominator for a 'mean' over weights: a zero denominator (every target ignored)
    gives nan, as in PyTorch, while the gradient stays 0 rather than nan."""
    if denominator == 0:
        return total * 0.0 + float("nan")
    return total * (1.0 / float(denominator))


# ---- fused softmax cross-entropy ----------------------------------------------------------------
class SoftmaxCrossEntropy(Function):
    """l = -sum_c a_c log_softmax(x)_c along `dim` (the class dim, removed from the output).

    log_softmax(x) = (x - m) - log sum_c exp(x_c - m), m = max_c x_c, so x = +-1e4 is fine.
    dl/dx = softmax(x) * sum_c a_c - a   (p - onehot for a one-hot a);
    dl/da = -log_softmax(x).
    Entries with a_c = 0 contribute 0 even where x_c = -inf (masked logits)."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, a, dim):
        xd, ad = _c(x._data), _c(a._data)     # bfloat16: in float32, rounded once
        z = xd - np.amax(xd, axis=dim, keepdims=True) if xd.size else xd
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            e = np.exp(z)
            s = np.sum(e, axis=dim, keepdims=True)
            logp = z - np.log(s)
            terms = np.where(ad != 0, ad * logp, 0)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, a)
            ctx.dim = dim
            ctx.prob = e / s if ctx.needs_input_grad[0] else None
        return (-np.sum(terms, axis=dim)).astype(x._data.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, a = ctx.saved_tensors
        dim = ctx.dim
        g = grad.unsqueeze(dim)
        gx = ga = None
        if ctx.needs_input_grad[0]:
            if _State.enabled:      # create_graph: build the gradient from differentiable ops
                gx = g * (softmax(x, dim) * a.sum(dim, keepdim=True) - a)
            else:                   # plain backward: reuse the probabilities from forward
                p, ad = ctx.prob, _c(a._data)
                gx = Tensor._make((_c(g._data) * (p * ad.sum(axis=dim, keepdims=True) - ad))
                                  .astype(x._data.dtype, copy=False))
        if ctx.needs_input_grad[1]:
            ga = -(g * log_softmax(x, dim))
        return gx, ga, None


class NllLoss(Function):
    """SoftmaxCrossEntropy for class-index targets, without forming the dense target distribution
    a = w_t onehot(t) + k s (w_t: target weight times (1 - eps), 0 where ignored; s_c = eps/C
    times the class weight; k = 0 where ignored, else 1):
    l = -w_t logp[t] - k sum_c s_c logp_c,  with sum_c s_c logp_c = sum_c s_c z_c - S lse,
    z = x - max x, lse = log sum_c exp z_c, S = sum_c s_c.
    dl/dx = softmax(x) (w_t + k S) - w_t onehot(t) - k s.
    With `divisor` d (not None) the op also reduces: L = sum_i l_i / d (d = 1 for 'sum', the
    weight total for 'mean'), dL/dl_i = 1/d: one op instead of three for a reduced loss.
    The name is PyTorch's grad_fn of cross_entropy with class indices (NllLossBackward0: there
    it is log_softmax followed by nll_loss); this op fuses the two."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, dim, index, wt, s, keep, divisor=None):
        xd = _c(x._data)                       # bfloat16: in float32, rounded once
        z = xd - np.amax(xd, axis=dim, keepdims=True) if xd.size else xd
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            e = np.exp(z)
            sumexp = np.sum(e, axis=dim, keepdims=True)
            lse = np.log(sumexp)
            picked = np.take_along_axis(z, index, dim) - lse
            loss = np.where(wt != 0, -wt * picked, 0)
            if s is not None:
                loss -= keep * (np.sum(s * z, axis=dim, keepdims=True) - lse * s.sum())
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.info = (dim, index, wt, s, keep, e, sumexp, divisor)
        loss = np.squeeze(loss, dim).astype(xd.dtype, copy=False)
        if divisor is not None:
            return np.asarray(np.divide(loss.sum(), divisor), dtype=x._data.dtype)
        return _dt.result_array(loss, x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        dim, index, wt, s, keep, e, sumexp, divisor = ctx.info
        asum = wt if s is None else wt + keep * s.sum()
        if divisor is not None and divisor == 0:  # every target ignored: all weights are 0,
            divisor = np.inf                      # so is the gradient (as torch), not 0/0
        if _State.enabled:      # create_graph: the dense form, from differentiable ops
            a = np.zeros(e.shape, e.dtype)
            np.put_along_axis(a, index, wt, dim)
            if s is not None:
                a = a + keep * s
            g = grad / divisor if divisor is not None else grad.unsqueeze(dim)
            return g * (softmax(x, dim) * Tensor._make(asum) - Tensor._make(a)), None, None, \
                None, None, None, None
        gd = _c(grad._data)
        g = gd / divisor if divisor is not None else np.expand_dims(gd, dim)
        gx = e * (g * asum / sumexp)
        np.put_along_axis(gx, index, np.take_along_axis(gx, index, dim) - g * wt, dim)
        if s is not None:
            gx -= (g * keep) * s
        return Tensor._make(gx.astype(x._data.dtype, copy=False)), None, None, None, None, None, \
            None


class BinaryCrossEntropy(Function):
    """l = -(t log p + (1 - t) log(1 - p)), each log clamped at -100 (so p = 0 or 1 is finite).
    dl/dp = (p - t) / max(p (1 - p), 1e-12);  dl/dt = log(1 - p) - log p (clamped logs)."""
    _builtin = True

    @staticmethod
    def forward(ctx, p, t):
        pd, td = p._data, t._data.astype(p._data.dtype, copy=False)
        if ctx.needs_input_grad:
            ctx.save_for_backward(p, t)
        pd, td = _c(pd), _c(td)                 # bfloat16: in float32, rounded once
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(pd), -100)
            log_q = np.maximum(np.log1p(-pd), -100)
        return _dt.result_array(-(td * log_p + (1 - td) * log_q), p._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        p, t = ctx.saved_tensors
        gp = gt = None
        if ctx.needs_input_grad[0]:
            gp = grad * (p - t) / clamp_min(p * (1 - p), 1e-12)
        if ctx.needs_input_grad[1]:
            gt = grad * (clamp_min(log1p(-p), -100.0) - clamp_min(log(p), -100.0))
        return gp, gt


# ---- class-index targets ------------------------------------------------------------------------
def _class_weight(op, weight, C):
    """The numpy array of a per-class weight (None if not given), checked to have C entries."""
    if weight is None:
        return None
    check_tensor(weight, op, "weight")
    if weight._data.ndim != 1 or weight._data.shape[0] != C:
        raise RuntimeError(f"{op_name(op)}: weight tensor should be defined either for all {C} "
                           f"classes or no classes, but got weight of shape {shape_text(weight)}")
    return weight._data


def _class_target(op, input, target, weight, ignore_index):
    """Validate (input, class-index target, weight). Returns (class dim, C, safe target with
    ignored entries set to 0, per-position weight w[target] (0 where ignored), weight array)."""
    x, t = input._data, target._data
    name = op_name(op)
    if x.ndim == 0:
        raise ValueError(f"{name}: expected input of shape (C,), (N, C) or (N, C, d1, ...), got "
                         f"a 0-d tensor")
    cdim = 1 if x.ndim >= 2 else 0
    C = x.shape[cdim]
    expected = x.shape[:1] + x.shape[2:] if x.ndim >= 2 else ()
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"{name}: expected target of class indices with an integer dtype "
                           f"(int64), got dtype {target.dtype.name} and shape "
                           f"{shape_text(target)}; class probabilities need a float target of "
                           f"the input's shape {shape_text(input)}")
    if t.shape != expected:
        raise ValueError(f"{name}: expected target of shape {tuple(expected)} for input of shape "
                         f"{shape_text(input)}, got target of shape {shape_text(target)}")
    w = _class_weight(op, weight, C)
    keep = t != ignore_index
    bad = keep & ((t < 0) | (t >= C))
    if bad.any():
        value = int(t[bad].reshape(-1)[0])
        raise IndexError(f"{name}: target {value} is out of bounds for {C} classes (valid class "
                         f"indices are 0..{C - 1}; ignore_index is {ignore_index})")
    safe = np.where(keep, t, 0).astype(np.int64)
    ct = _dt.compute_dtype(x.dtype)              # (bfloat16: the weights in float32)
    wt = keep.astype(ct) if w is None else np.where(keep, w.astype(ct)[safe], 0)
    return cdim, C, safe, wt.astype(ct, copy=False), w


def _as_dims(array, cdim, ndim):
    """Reshape a per-class vector so it broadcasts along the class dim."""
    return array.reshape([-1 if d == cdim else 1 for d in range(ndim)])


@autocast_op("nll_loss")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities `input` (N, C, ...) at class indices
    `target` (N, ...): l_i = -w[t_i] input[i, t_i]; 0 where t_i == ignore_index.
    'mean' divides by sum_i w[t_i] over the non-ignored positions (nan if there are none)."""
    op = "nll_loss"
    check_tensor(input, op, "input")
    check_tensor(target, op, "target")
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op)
    check_float(input, op)
    cdim, C, safe, wt, _ = _class_target(op, input, target, weight, ignore_index)
    index = Tensor._make(np.expand_dims(safe, cdim))
    picked = gather(input, cdim, index).squeeze(cdim)
    loss = picked * const(-wt, input)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return divide(loss.sum(), wt.sum())


@autocast_op("cross_entropy_loss")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy between logits `input` (C,), (N, C) or (N, C, d1, ...) and `target`:

    * class indices (shape of input without the class dim, integer dtype):
      l_i = -(1 - eps) w[t_i] log p[i, t_i] - eps/C sum_c w_c log p[i, c],  p = softmax(x_i),
      0 where t_i == ignore_index; 'mean' divides by sum_i w[t_i] over non-ignored positions;
    * class probabilities (same shape as input, float): l_i = -sum_c w_c t'_ic log p_ic with
      t' = (1 - eps) t + eps/C; 'mean' divides by the number of positions (N * d1 * ...).

    eps = label_smoothing in [0, 1]. Computed by one fused op (NllLoss, or SoftmaxCrossEntropy
    for probabilities)."""
    op = "cross_entropy"
    check_tensor(input, op, "input")
    check_tensor(target, op, "target")
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op)
    check_float(input, op)
    name = op_name(op)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"{name}: label_smoothing must be between 0.0 and 1.0, got "
                           f"{label_smoothing}")
    x = input._data
    if x.ndim >= 1 and target._data.shape == x.shape:
        return _cross_entropy_probs(op, input, target, weight, ignore_index, reduction,
                                    label_smoothing)
    cdim, C, safe, wt, w = _class_target(op, input, target, weight, ignore_index)
    dt = _dt.compute_dtype(x.dtype)
    index = np.expand_dims(safe, cdim)
    w_t = np.expand_dims(wt * dt.type(1 - label_smoothing), cdim)
    s = keep = None
    if label_smoothing > 0:    # eps/C of every class's log-probability, where not ignored
        keep = np.expand_dims(target._data != ignore_index, cdim).astype(dt)
        wc = np.ones(C, dt) if w is None else w.astype(dt)
        s = _as_dims(wc * dt.type(label_smoothing / C), cdim, x.ndim)
    if reduction == "none":
        return NllLoss.apply(input, cdim, index, w_t, s, keep)
    divisor = dt.type(1) if reduction == "sum" else wt.sum()
    return NllLoss.apply(input, cdim, index, w_t, s, keep, divisor)


def _cross_entropy_probs(op, input, target, weight, ignore_index, reduction, eps):
    name = op_name(op)
    if not _dt.is_float_dtype(target._data.dtype):
        raise RuntimeError(f"{name}: a target of the input's shape {shape_text(input)} holds class "
                           f"probabilities and must be floating point, got dtype "
                           f"{target.dtype.name}; class indices have shape (N, d1, ...)")
    if ignore_index >= 0:
        raise RuntimeError(f"{name}: ignore_index is not supported for class-probability "
                           f"(floating point) targets")
    x = input._data
    cdim = 1 if x.ndim >= 2 else 0
    C = x.shape[cdim]
    a = target.to(input.dtype)
    if eps > 0:
        a = a * (1 - eps) + eps / C
    w = _class_weight(op, weight, C)
    if w is not None:
        a = a * Tensor._make(_as_dims(w.astype(x.dtype), cdim, x.ndim))
    loss = SoftmaxCrossEntropy.apply(input, a, cdim)
    return apply_reduction(loss, reduction)


# ---- binary targets -----------------------------------------------------------------------------
def _same_shape(op, input, target):
    if input._data.shape != target._data.shape:
        raise ValueError(f"{op_name(op)}: target of shape {shape_text(target)} must have the same "
                         f"shape as input of shape {shape_text(input)}")


def _weighted(loss, weight, op, what="weight"):
    if weight is None:
        return loss
    check_tensor(weight, op, what)
    try:
        np.broadcast_shapes(weight._data.shape, loss._data.shape)
    except ValueError:
        raise RuntimeError(f"{op_name(op)}: {what} of shape {shape_text(weight)} cannot be "
                           f"broadcast to the loss of shape {shape_text(loss)}") from None
    return loss * weight


@autocast_op("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """l = -w (t log p + (1 - t) log(1 - p)) for probabilities `input` p in [0, 1] (logs
    clamped at -100). Prefer binary_cross_entropy_with_logits: it takes logits and is stable."""
    op = "binary_cross_entropy"
    check_tensor(input, op, "input")
    check_tensor(target, op, "target")
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op)
    check_float(input, op)
    _same_shape(op, input, target)
    p = input._data
    if p.size and not ((p >= 0) & (p <= 1)).all():
        raise RuntimeError(f"{op_name(op)}: all elements of input should be between 0 and 1 "
                           f"(got values in [{np.nanmin(p):g}, {np.nanmax(p):g}]"
                           f"{', and nan' if np.isnan(p).any() else ''}); apply sigmoid first or "
                           f"use binary_cross_entropy_with_logits")
    loss = BinaryCrossEntropy.apply(input, target.to(input.dtype))
    return apply_reduction(_weighted(loss, weight, op), reduction)


@autocast_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """l = -w (pw t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))
         = w ((1 - t) x - (1 + (pw - 1) t) logsigmoid(x)),
    stable for any logit x (logsigmoid never forms sigmoid). pos_weight pw broadcasts along
    the last (class) dim."""
    op = "binary_cross_entropy_with_logits"
    check_tensor(input, op, "input")
    check_tensor(target, op, "target")
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op)
    check_float(input, op)
    _same_shape(op, input, target)
    t = target.to(input.dtype)
    log_sig = logsigmoid(input)
    if pos_weight is None:
        loss = (1 - t) * input - log_sig
    else:
        check_tensor(pos_weight, op, "pos_weight")
        try:
            np.broadcast_shapes(pos_weight._data.shape, input._data.shape)
        except ValueError:
            raise RuntimeError(f"{op_name(op)}: pos_weight of shape {shape_text(pos_weight)} "
                               f"cannot be broadcast to input of shape {shape_text(input)} "
                               f"(it should hold one value per class, the last dim)") from None
        loss = (1 - t) * input - (1 + (pos_weight - 1) * t) * log_sig
    return apply_reduction(_weighted(loss, weight, op), reduction)


@autocast_op("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence with `input` given as log-probabilities:
    l = t (log t - input) (0 where t = 0), or with log_target: exp(t) (t - input).
    'batchmean' divides the sum by the batch size input.size(0) (the true KL per sample);
    'mean' divides by the number of elements (PyTorch warns about it, as we do)."""
    op = "kl_div"
    check_tensor(input, op, "input")
    check_tensor(target, op, "target")
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op, ("none", "batchmean", "sum", "mean"))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size. 'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.", UserWarning, stacklevel=2)
    try:
        np.broadcast_shapes(input._data.shape, target._data.shape)
    except ValueError:
        raise RuntimeError(f"{op_name(op)}: input of shape {shape_text(input)} and target of "
                           f"shape {shape_text(target)} cannot be broadcast together") from None
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        if not input._data.ndim:
            return total
        with np.errstate(invalid="ignore", divide="ignore"):   # an empty batch gives nan
            return total / input._data.shape[0]
    return apply_reduction(loss, reduction)

