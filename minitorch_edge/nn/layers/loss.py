"""Loss layers: Modules that hold a loss's options (reduction, weights, margins) and call the
function of the same name in nn/functional/loss*.py, where the math and its docstring live.

``criterion = nn.CrossEntropyLoss(label_smoothing=0.1); loss = criterion(logits, target)``.
Class weights are buffers (``weight``, ``pos_weight``), so they appear in ``state_dict`` and
move with ``.to()`` exactly as in PyTorch. Errors name the layer (``CrossEntropyLoss: target 7
is out of bounds for 5 classes``).
"""
from .. import functional as F
from ..functional.loss import legacy_reduction, loss_name
from ..module import Module

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss", "MultiMarginLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss"]


class _Loss(Module):
    """Base of the losses: keeps ``reduction`` ('none' | 'mean' | 'sum')."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)

    def _call(self, fn, *args, **kwargs):
        """fn(*args, **kwargs) with errors naming this layer."""
        with loss_name(type(self).__name__):
            return fn(*args, **kwargs)


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


# ---- regression -------------------------------------------------------------------------------
class L1Loss(_Loss):
    """The mean absolute error: l_i = |x_i - y_i|, then reduced.

    Args:
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def forward(self, input, target):
        return self._call(F.l1_loss, input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """The mean squared error: l_i = (x_i - y_i)^2, then reduced.

    Args:
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def forward(self, input, target):
        return self._call(F.mse_loss, input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1: l_i = 0.5 (x_i - y_i)^2 / beta where |x_i - y_i| < beta, else
    |x_i - y_i| - 0.5 beta; then reduced (quadratic near 0, linear beyond).

    Args:
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).
        beta: where the loss turns from quadratic to linear (default 1; 0: plain L1).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return self._call(F.smooth_l1_loss, input, target, reduction=self.reduction,
                          beta=self.beta)


class HuberLoss(_Loss):
    """Huber: l_i = 0.5 (x_i - y_i)^2 where |x_i - y_i| < delta, else
    delta (|x_i - y_i| - 0.5 delta); then reduced (SmoothL1Loss times delta).

    Args:
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        delta: where the loss turns from quadratic to linear (default 1).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return self._call(F.huber_loss, input, target, reduction=self.reduction,
                          delta=self.delta)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss: l_i = log(1 + e^(-y_i x_i)) with targets
    y_i in {1, -1}; then reduced.

    Args:
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def forward(self, input, target):
        return self._call(F.soft_margin_loss, input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson target: l_i = e^(x_i) - y_i x_i
    with log_input (x the log-rate), else x_i - y_i log(x_i + eps); full adds Stirling's
    approximation of log(y_i!) for y_i > 1. Then reduced.

    Args:
        log_input: the input is the log of the rate (default True).
        full: add the Stirling term.
        eps: keeps log(x) finite when log_input is False (default 1e-8).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return self._call(F.poisson_nll_loss, log_input, target, log_input=self.log_input,
                          full=self.full, eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target, ``loss(input, target,
    var)``: l_i = 0.5 (log(max(var_i, eps)) + (x_i - y_i)^2 / max(var_i, eps)), plus
    0.5 log(2 pi) with full; then reduced.

    Args:
        full: add the constant 0.5 log(2 pi).
        eps: the smallest variance used (default 1e-6).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).

    Shape:
        - Input: (N, *) or (*); Target: the same shape; var: the same shape, or one dim of size 1
          fewer/smaller (one variance per sample, broadcast).
        - Output: a scalar, or the input's shape with reduction='none'.
    """
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return self._call(F.gaussian_nll_loss, input, target, var, full=self.full, eps=self.eps,
                          reduction=self.reduction)


# ---- classification ---------------------------------------------------------------------------
class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class targets, on log-probabilities (the output of
    LogSoftmax): l_n = -w[y_n] x[n, y_n]; 'mean' divides the sum by the sum of the weights w[y_n]
    of the counted targets (those not equal to ignore_index).

    Args:
        weight: a (C,) rescaling of each class (default: all 1).
        ignore_index: a target value that contributes neither loss nor gradient (default -100).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (N, C) or (C,), or (N, C, d1, ..., dK) per position.
        - Target: (N,) or (), or (N, d1, ..., dK): class indices in [0, C).
        - Output: a scalar, or the target's shape with reduction='none'.
    """
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return self._call(F.nll_loss, input, target, weight=self.weight,
                          ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and targets: log_softmax over the class
    dim, then NLLLoss, l_n = -w[y_n] log(softmax(x_n)[y_n]). Targets are class indices, or class
    probabilities of the input's shape (then l_n = -sum_c w_c p_nc log softmax(x_n)_c).
    label_smoothing = e mixes the target with the uniform distribution: (1 - e) y + e / C.

    Args:
        weight: a (C,) rescaling of each class (default: all 1).
        ignore_index: a target index that contributes neither loss nor gradient (default -100).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).
        label_smoothing: e in [0, 1] (default 0).

    Shape:
        - Input: (N, C) or (C,), or (N, C, d1, ..., dK).
        - Target: class indices (N,), () or (N, d1, ..., dK) in [0, C); or probabilities of the
          input's shape.
        - Output: a scalar, or the target's batch shape with reduction='none'.
    """
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return self._call(F.cross_entropy, input, target, weight=self.weight,
                          ignore_index=self.ignore_index, reduction=self.reduction,
                          label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy on probabilities: l_i = -w_i (y_i log x_i + (1 - y_i)
    log(1 - x_i)), the logs clamped at -100 (as PyTorch); then reduced. Prefer
    BCEWithLogitsLoss on logits (stable).

    Args:
        weight: a rescaling of each element, broadcast to the input's shape.
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def forward(self, input, target):
        return self._call(F.binary_cross_entropy, input, target, weight=self.weight,
                          reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy on logits, sigmoid folded in stably:
    l_i = -w_i (p_c y_i log sigmoid(x_i) + (1 - y_i) log(1 - sigmoid(x_i))), with p_c the
    pos_weight of the element's class; then reduced.

    Args:
        weight: a rescaling of each element, broadcast to the input's shape.
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).
        pos_weight: a weight of the positive examples per class (broadcast along the last dim).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return self._call(F.binary_cross_entropy_with_logits, input, target, self.weight,
                          pos_weight=self.pos_weight, reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence, on log-probabilities x: l_i = y_i (log y_i -
    x_i) (targets as probabilities; 0 where y_i = 0), or e^(y_i) (y_i - x_i) with log_target.
    Then reduced; 'batchmean' divides the sum by the batch size (the true KL divergence).

    Args:
        reduction: 'mean' (default: the mean of the per-element losses), 'batchmean', 'sum' or
            'none' (the per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).
        log_target: the target is given as log-probabilities.

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return self._call(F.kl_div, input, target, reduction=self.reduction,
                          log_target=self.log_target)


# ---- margins and embeddings -------------------------------------------------------------------
class MarginRankingLoss(_Loss):
    """Ranking of pairs, ``loss(x1, x2, y)`` with y in {1, -1} (x1 should
    rank higher when y = 1): l_i = max(0, -y_i (x1_i - x2_i) + margin); then reduced.

    Args:
        margin: the required gap (default 0).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input1, Input2: (N,) or (); Target: the same shape.
        - Output: a scalar, or (N,) with reduction='none'.
    """
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return self._call(F.margin_ranking_loss, input1, input2, target, margin=self.margin,
                          reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge embedding: l_i = x_i where y_i = 1, max(0, margin - x_i) where
    y_i = -1 (x a distance, y whether the pair is similar); then reduced.

    Args:
        margin: the required distance for dissimilar pairs (default 1).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (*), any shape; Target: (*), the same shape.
        - Output: a scalar, or (*) with reduction='none'.
    """
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return self._call(F.hinge_embedding_loss, input, target, margin=self.margin,
                          reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine embedding, ``loss(x1, x2, y)``: l_i = 1 - cos(x1_i, x2_i)
    where y_i = 1, max(0, cos(x1_i, x2_i) - margin) where y_i = -1; then reduced.

    Args:
        margin: in [-1, 1], the cosine dissimilar pairs must go below (default 0).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input1, Input2: (N, D) or (D,); Target: (N,) or ().
        - Output: a scalar, or (N,) with reduction='none'.
    """
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return self._call(F.cosine_embedding_loss, input1, input2, target, margin=self.margin,
                          reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss, ``loss(anchor, positive, negative)``:
    l_i = max(d(a_i, p_i) - d(a_i, n_i) + margin, 0), d the p-norm pairwise distance; then
    reduced.

    Args:
        margin: the required gap between the distances (default 1).
        p: the norm's degree (default 2).
        eps: added to the differences in the distance (default 1e-6).
        swap: use min(d(a, n), d(p, n)) as the negative distance (the distance swap).
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - anchor, positive, negative: (N, D) or (D,).
        - Output: a scalar, or (N,) with reduction='none'.
    """
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin}")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return self._call(F.triplet_margin_loss, anchor, positive, negative, margin=self.margin,
                          p=self.p, eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance:
    l_i = max(d(a_i, p_i) - d(a_i, n_i) + margin, 0); then reduced.

    Args:
        distance_function: d(x1, x2) -> (N,) distances (default: PairwiseDistance()).
        margin: the required gap between the distances (default 1).
        swap: use min(d(a, n), d(p, n)) as the negative distance.
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).

    Shape:
        - anchor, positive, negative: (N, *) (what distance_function takes).
        - Output: a scalar, or (N,) with reduction='none'.
    """
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than "
                             f"0, got {margin}")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return self._call(F.triplet_margin_with_distance_loss, anchor, positive, negative,
                          distance_function=self.distance_function, margin=self.margin,
                          swap=self.swap, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: for each sample x with class y,
    l = sum over i != y of w[y] max(0, margin - x[y] + x[i])^p / C; then reduced.

    Args:
        p: 1 or 2 (default 1).
        margin: the required margin (default 1).
        weight: a (C,) rescaling of each class.
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (N, C) or (C,); Target: (N,) or (), class indices.
        - Output: a scalar, or (N,) with reduction='none'.
    """
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return self._call(F.multi_margin_loss, input, target, p=self.p, margin=self.margin,
                          weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss: y lists the target classes of each sample
    (ended by the first -1); l = sum over targets j and non-targets i of max(0, 1 - (x[j] - x[i]))
    / C; then reduced.

    Args:
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (N, C) or (C,); Target: the same shape, class indices padded with -1.
        - Output: a scalar, or (N,) with reduction='none'.
    """
    def forward(self, input, target):
        return self._call(F.multilabel_margin_loss, input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss, with y in {0, 1}
    per class: l = -1/C sum_c w_c (y_c log sigmoid(x_c) + (1 - y_c) log sigmoid(-x_c)); then
    reduced.

    Args:
        weight: a (C,) rescaling of each class.
        reduction: 'mean' (default: the mean of the per-element losses), 'sum' or 'none' (the
            per-element losses, in the input's shape).
        size_average, reduce: PyTorch's deprecated spelling of `reduction` (leave them None).

    Shape:
        - Input: (N, C) or (C,); Target: the same shape.
        - Output: a scalar, or (N,) with reduction='none'.
    """
    def forward(self, input, target):
        return self._call(F.multilabel_soft_margin_loss, input, target, weight=self.weight,
                          reduction=self.reduction)
