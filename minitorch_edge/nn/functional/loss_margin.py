"""Margin and embedding losses: push scores or distances apart by at least a margin.

  margin_ranking_loss       l = max(0, -y (x1 - x2) + margin)   (y = +-1: which one ranks higher)
  hinge_embedding_loss      l = x if y = 1, max(0, margin - x) if y = -1  (x: a distance)
  cosine_embedding_loss     l = 1 - cos(x1, x2) if y = 1, max(0, cos(x1, x2) - margin) if y = -1
  triplet_margin_loss       l = max(0, d(a, p) - d(a, n) + margin),  d(x, y) = ||x - y + eps||_p
  multi_margin_loss         l = sum_{j != y} max(0, margin - x_y + x_j)^p / C   (multi-class hinge)
  multilabel_margin_loss    l = sum_{j in Y, k not in Y} max(0, 1 - (x_j - x_k)) / C
  multilabel_soft_margin    l = -mean_c (y_c logsigmoid(x_c) + (1 - y_c) logsigmoid(-x_c))

All are compositions of differentiable Tensor ops; the labels are constants.
"""
from ..._autocast import autocast_op
import numpy as np

from ...ops.activation import logsigmoid
from ...ops.elementwise import minimum, where
from ...ops.sorting import gather
from ...ops.unary import clamp_min
from ...tensor import Tensor
from ._reduction import (apply_reduction, check_reduction, check_tensor, const,
                         legacy_reduction, op_name, shape_text)

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss"]


def _start(op, tensors, names, size_average, reduce, reduction):
    for t, n in zip(tensors, names):
        check_tensor(t, op, n)
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, op)
    return reduction


def _broadcast(op, *pairs):
    try:
        np.broadcast_shapes(*[t._data.shape for _, t in pairs])
    except ValueError:
        shapes = ", ".join(f"{n} {shape_text(t)}" for n, t in pairs)
        raise RuntimeError(f"{op_name(op)}: shapes cannot be broadcast together: {shapes}") \
            from None


def _mask(array):
    return Tensor._make(np.asarray(array))


@autocast_op("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """l = max(0, -y (x1 - x2) + margin): y = 1 asks x1 to rank higher than x2, y = -1 lower."""
    op = "margin_ranking_loss"
    reduction = _start(op, (input1, input2, target), ("input1", "input2", "target"),
                       size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"{op_name(op)}: all input tensors should have the same number of "
                           f"dimensions, got input1 {shape_text(input1)}, input2 "
                           f"{shape_text(input2)}, target {shape_text(target)}")
    _broadcast(op, ("input1", input1), ("input2", input2), ("target", target))
    return apply_reduction(clamp_min(-target * (input1 - input2) + margin, 0.0), reduction)


@autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """For distances x and labels y = +-1: l = x where y = 1, max(0, margin - x) where y = -1
    (other labels contribute only the terms whose condition y != -1 / y != 1 holds)."""
    op = "hinge_embedding_loss"
    reduction = _start(op, (input, target), ("input", "target"), size_average, reduce, reduction)
    _broadcast(op, ("input", input), ("target", target))
    y = target._data
    zero = const(0.0, input)
    margin_part = where(_mask(y != 1), clamp_min(margin - input, 0.0), zero)
    self_part = where(_mask(y != -1), input, zero)
    return apply_reduction(margin_part + self_part, reduction)


@autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """cos = <x1, x2> / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12)) along the feature dim;
    l = 1 - cos where y = 1, max(0, cos - margin) where y = -1. Inputs (N, D) with target (N,),
    or (D,) with a 0-d target."""
    op = "cosine_embedding_loss"
    reduction = _start(op, (input1, input2, target), ("input1", "input2", "target"),
                       size_average, reduce, reduction)
    name = op_name(op)
    if target.ndim > 1:
        raise RuntimeError(f"{name}: expected a 0-d or 1-d target, got target of shape "
                           f"{shape_text(target)} (multi-target is not supported)")
    want = target.ndim + 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{name}: a {target.ndim}-d target expects {want}-d inputs, got input1 "
                           f"{shape_text(input1)} and input2 {shape_text(input2)}")
    _broadcast(op, ("input1", input1), ("input2", input2))
    if target.ndim == 1 and target.shape[0] not in (1, max(input1.shape[0], input2.shape[0])):
        raise RuntimeError(f"{name}: target of shape {shape_text(target)} does not match inputs "
                           f"{shape_text(input1)} and {shape_text(input2)}")
    dim = target.ndim
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + 1e-12
    mag2 = (input2 * input2).sum(dim) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    y = target._data
    zero = const(0.0, cos)
    loss = where(_mask(y == 1), 1 - cos, zero) + \
        where(_mask(y == -1), clamp_min(cos - margin, 0.0), zero)
    return apply_reduction(loss, reduction)


def _pairwise_distance(x1, x2, p=2.0, eps=1e-6):
    """||x1 - x2 + eps||_p along the last dim (PyTorch's pairwise_distance)."""
    return (x1 - x2 + eps).norm(p, dim=-1)


def _triplet(op, anchor, positive, negative, distance, margin, swap, reduction):
    d_ap = distance(anchor, positive)
    d_an = distance(anchor, negative)
    if swap:
        d_an = minimum(d_an, distance(positive, negative))
    return apply_reduction(clamp_min(margin + d_ap - d_an, 0.0), reduction)


def _triplet_checks(op, anchor, positive, negative):
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"{op_name(op)}: anchor, positive and negative must have the same "
                           f"number of dimensions, got anchor {shape_text(anchor)}, positive "
                           f"{shape_text(positive)} and negative {shape_text(negative)}")
    _broadcast(op, ("anchor", anchor), ("positive", positive), ("negative", negative))


@autocast_op("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """l = max(0, d(a, p) - d(a, n) + margin) with d(x, y) = ||x - y + eps||_p over the last dim;
    swap uses min(d(a, n), d(p, n)) as the negative distance."""
    op = "triplet_margin_loss"
    reduction = _start(op, (anchor, positive, negative), ("anchor", "positive", "negative"),
                       size_average, reduce, reduction)
    _triplet_checks(op, anchor, positive, negative)
    return _triplet(op, anchor, positive, negative,
                    lambda x, y: _pairwise_distance(x, y, p, eps), margin, swap, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance_function(x, y) (default: pairwise L2 distance)."""
    op = "triplet_margin_with_distance_loss"
    reduction = _start(op, (anchor, positive, negative), ("anchor", "positive", "negative"),
                       None, None, reduction)
    if margin <= 0:
        raise ValueError(f"{op_name(op)}: expected margin to be greater than 0, got {margin}")
    _triplet_checks(op, anchor, positive, negative)
    return _triplet(op, anchor, positive, negative, distance_function or _pairwise_distance,
                    margin, swap, reduction)


def _rows(op, input, target):
    """(N, C) input and (N,) integer target; 1-d input (C,) takes a 0-d or 1-element target."""
    name = op_name(op)
    if input.ndim not in (1, 2):
        raise ValueError(f"{name}: expected input of shape (C,) or (N, C), got "
                         f"{shape_text(input)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target._data.reshape(-1) if input.ndim == 1 else target._data
    if t.shape != (x.shape[0],) or target._data.dtype.kind not in "iu":
        raise ValueError(f"{name}: expected an integer target of shape "
                         f"{(x.shape[0],) if input.ndim == 2 else '()'} for input of shape "
                         f"{shape_text(input)}, got {target.dtype.name} target of shape "
                         f"{shape_text(target)}")
    C = x.shape[1]
    bad = (t < 0) | (t >= C)
    if bad.any():
        raise IndexError(f"{name}: target {int(t[bad][0])} is out of bounds for {C} classes")
    return x, t.astype(np.int64), C


@autocast_op("multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge: l_i = sum_{j != y_i} w[y_i] max(0, margin - x[y_i] + x[j])^p / C."""
    op = "multi_margin_loss"
    reduction = _start(op, (input, target), ("input", "target"), size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"{op_name(op)}: only p == 1 and p == 2 are supported, got p={p}")
    x, t, C = _rows(op, input, target)
    rows = np.arange(x.shape[0])
    xy = gather(x, 1, Tensor._make(t[:, None]))
    z = clamp_min(margin - xy + x, 0.0)
    if p == 2:
        z = z * z
    others = np.ones(x.shape, x._data.dtype)
    others[rows, t] = 0
    if weight is not None:
        check_tensor(weight, op, "weight")
        if weight._data.shape != (C,):
            raise RuntimeError(f"{op_name(op)}: weight of shape {shape_text(weight)} should have "
                               f"one entry per class ({C},)")
        z = z * weight[Tensor._make(t)].unsqueeze(1)
    loss = (z * const(others, x)).sum(1) / C
    return apply_reduction(loss if input.ndim == 2 else loss.squeeze(0), reduction)


@autocast_op("multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge. target holds class indices, ended by the first -1:
    l = sum_{j in Y} sum_{k not in Y} max(0, 1 - (x[j] - x[k])) / C."""
    op = "multilabel_margin_loss"
    reduction = _start(op, (input, target), ("input", "target"), size_average, reduce, reduction)
    if target._data.shape != input._data.shape or input.ndim not in (1, 2) or \
            target._data.dtype.kind not in "iu":
        raise ValueError(f"{op_name(op)}: expected an integer target of the input's shape "
                         f"{shape_text(input)} ((C,) or (N, C)), got {target.dtype.name} target "
                         f"of shape {shape_text(target)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target._data.reshape(x.shape).astype(np.int64)
    N, C = x.shape
    valid = np.cumprod(t >= 0, axis=1).astype(bool)          # entries before the first -1
    if (valid & (t >= C)).any():
        raise IndexError(f"{op_name(op)}: target {int(t[valid & (t >= C)][0])} is out of "
                         f"bounds for {C} classes")
    count = np.zeros((N, C), x._data.dtype)                   # how often class j is listed
    np.add.at(count, (np.nonzero(valid)[0], t[valid]), 1)
    pairs = count[:, :, None] * (count == 0)[:, None, :]      # (j listed) x (k not listed)
    z = clamp_min(1 - x.unsqueeze(2) + x.unsqueeze(1), 0.0)   # z[i, j, k] = 1 - (x_j - x_k)
    loss = (z * const(pairs, x)).sum((1, 2)) / C
    return apply_reduction(loss if input.ndim == 2 else loss.squeeze(0), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """One logistic loss per class, averaged over the C classes (the last dim):
    l = -sum_c w_c (y_c logsigmoid(x_c) + (1 - y_c) logsigmoid(-x_c)) / C."""
    op = "multilabel_soft_margin_loss"
    reduction = _start(op, (input, target), ("input", "target"), size_average, reduce, reduction)
    _broadcast(op, ("input", input), ("target", target))
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        check_tensor(weight, op, "weight")
        _broadcast(op, ("input", input), ("weight", weight))
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return apply_reduction(loss, reduction)
