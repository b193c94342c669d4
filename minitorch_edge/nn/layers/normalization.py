"""Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm,
LocalResponseNorm; thin Modules over nn/functional/normalization.py.

BatchNorm keeps running statistics as buffers named as in PyTorch (``running_mean``,
``running_var``, ``num_batches_tracked``), so state_dicts load across. In training mode each
call normalizes with the batch statistics and updates the running ones,

    running = (1 - momentum) * running + momentum * batch      (momentum=None: the cumulative
                                                                average, momentum = 1/batches)

with the unbiased batch variance; in eval mode it normalizes with the running statistics. The
input is checked (number of dims, channels) before anything changes, so a bad batch leaves the
running statistics and the batch counter as they were. Affine parameters: ``weight`` = 1 and
``bias`` = 0 initially (``bias=False`` drops the bias, as PyTorch 2.x).
"""
import numpy as np

from ... import creation
from ... import dtypes as _dt
from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..functional import normalization as N  # the module (no function has that name)
from ...backend.prepared import wrote as _wrote
from ..module import Module
from ..parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _ones_(p):
    with no_grad():
        p.fill_(1.0)


def _zeros_(p):
    with no_grad():
        p.fill_(0.0)


class _NormBase(Module):
    """Per-channel affine parameters and (optionally) running statistics."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = dict(dtype=dtype, device=device)
        if affine:
            self.weight = Parameter(creation.empty(num_features, **kw))
            if bias:
                self.bias = Parameter(creation.empty(num_features, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, **kw))
            self.register_buffer("running_var", creation.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 creation.tensor(0, dtype=_dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean._data[...] = 0
            self.running_var._data[...] = 1
            self.num_batches_tracked._data[...] = 0
            for b in (self.running_mean, self.running_var, self.num_batches_tracked):
                b._vc[0] += 1
                _wrote(b._data)

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            _ones_(self.weight)
            if self.bias is not None:
                _zeros_(self.bias)

    def _check_channels(self, input, dim=1):
        shape = tuple(input.shape)
        if len(shape) <= dim or shape[dim] != self.num_features:
            raise RuntimeError(f"{type(self).__name__}: expected input with {self.num_features} "
                               f"channels (num_features) at dim {dim}, got input of shape "
                               f"{shape}")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    _dims = ()   # allowed numbers of input dims

    def _check_input_dim(self, input):
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor, got "
                            f"{type(input).__name__}")
        if input.dim() not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"{type(self).__name__}: expected {want} input (got {input.dim()}D "
                             f"input of shape {tuple(input.shape)})")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_channels(input)
        shape = tuple(input.shape)
        if self.training and int(np.prod(shape)) // max(shape[1], 1) <= 1:
            raise ValueError(f"{type(self).__name__}: expected more than 1 value per channel "
                             f"when training, got input of shape {shape}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data[...] += 1
            self.num_batches_tracked._vc[0] += 1
            if self.momentum is None:           # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return N.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) input:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    per channel, the mean and the (biased) variance taken over N (and L). In training the batch's
    statistics are used and running estimates are updated (with the unbiased variance); in eval
    mode the running estimates are used.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance for stability (default 1e-5).
        momentum: weight of the new batch in the running statistics (running = (1 - momentum)
            running + momentum batch); None: a cumulative average. Default 0.1.
        affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape (C,).
        track_running_stats: keep running_mean / running_var (buffers) and use them in eval
            mode; without, batch statistics are used in both modes.
        bias: with affine, whether beta is learnt (False: gamma only).

    Shape:
        - Input: (N, C) or (N, C, L).
        - Output: the same shape as the input.
    """
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) input:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    per channel, the mean and the (biased) variance taken over N, H and W. In training the batch's
    statistics are used and running estimates are updated (with the unbiased variance); in eval
    mode the running estimates are used.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance for stability (default 1e-5).
        momentum: weight of the new batch in the running statistics (running = (1 - momentum)
            running + momentum batch); None: a cumulative average. Default 0.1.
        affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape (C,).
        track_running_stats: keep running_mean / running_var (buffers) and use them in eval
            mode; without, batch statistics are used in both modes.
        bias: with affine, whether beta is learnt (False: gamma only).

    Shape:
        - Input: (N, C, H, W).
        - Output: (N, C, H, W).
    """
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) input:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    per channel, the mean and the (biased) variance taken over N, D, H and W. In training the
    batch's statistics are used and running estimates are updated (with the unbiased
    variance); in eval mode the running estimates are used.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance for stability (default 1e-5).
        momentum: weight of the new batch in the running statistics (running = (1 - momentum)
            running + momentum batch); None: a cumulative average. Default 0.1.
        affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape (C,).
        track_running_stats: keep running_mean / running_var (buffers) and use them in eval
            mode; without, batch statistics are used in both modes.
        bias: with affine, whether beta is learnt (False: gamma only).

    Shape:
        - Input: (N, C, D, H, W).
        - Output: (N, C, D, H, W).
    """
    _dims = (5,)


class _InstanceNorm(_NormBase):
    """Normalize each sample's channels separately. Defaults as PyTorch: affine=False,
    track_running_stats=False. An input without batch dim is accepted."""
    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias)

    def forward(self, input):
        nd, name = input.dim(), type(self).__name__
        k = self._spatial
        if nd not in (k + 1, k + 2):
            raise ValueError(f"{name}: expected {k + 1}D or {k + 2}D input (got {nd}D input of "
                             f"shape {tuple(input.shape)})")
        feature_dim = nd - k - 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine or self.track_running_stats:
                self._check_channels(input, feature_dim)
            import warnings
            warnings.warn(f"{name}: input's size at dim={feature_dim} does not match "
                          f"num_features ({self.num_features}); it is not used because "
                          f"affine=False", stacklevel=2)
        batched = input if nd == k + 2 else input.unsqueeze(0)
        out = N.instance_norm(batched, self.running_mean, self.running_var, self.weight,
                              self.bias, self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out if nd == k + 2 else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L) input:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    with the mean and variance taken over L of each sample and channel separately (no
    statistics shared across the batch). Defaults as PyTorch: affine=False,
    track_running_stats=False.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance for stability (default 1e-5).
        momentum: weight of the new batch in the running statistics (running = (1 - momentum)
            running + momentum batch); None: a cumulative average. Default 0.1.
        affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape (C,).
        track_running_stats: keep running_mean / running_var (buffers) and use them in eval
            mode; without, batch statistics are used in both modes.
        bias: with affine, whether beta is learnt (False: gamma only).

    Shape:
        - Input: (N, C, L) or (C, L).
        - Output: the same shape as the input.
    """
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W) input:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    with the mean and variance taken over H and W of each sample and channel separately (no
    statistics shared across the batch). Defaults as PyTorch: affine=False,
    track_running_stats=False.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance for stability (default 1e-5).
        momentum: weight of the new batch in the running statistics (running = (1 - momentum)
            running + momentum batch); None: a cumulative average. Default 0.1.
        affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape (C,).
        track_running_stats: keep running_mean / running_var (buffers) and use them in eval
            mode; without, batch statistics are used in both modes.
        bias: with affine, whether beta is learnt (False: gamma only).

    Shape:
        - Input: (N, C, H, W) or (C, H, W).
        - Output: the same shape as the input.
    """
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W) input:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    with the mean and variance taken over D, H and W of each sample and channel separately (no
    statistics shared across the batch). Defaults as PyTorch: affine=False,
    track_running_stats=False.

    Args:
        num_features: C, the number of channels.
        eps: added to the variance for stability (default 1e-5).
        momentum: weight of the new batch in the running statistics (running = (1 - momentum)
            running + momentum batch); None: a cumulative average. Default 0.1.
        affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape (C,).
        track_running_stats: keep running_mean / running_var (buffers) and use them in eval
            mode; without, batch statistics are used in both modes.
        bias: with affine, whether beta is learnt (False: gamma only).

    Shape:
        - Input: (N, C, D, H, W) or (C, D, H, W).
        - Output: the same shape as the input.
    """
    _spatial = 3


def _shape_arg(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Layer normalization over the last len(normalized_shape) dims of each sample:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    the mean and (biased) variance taken over those dims; the same in training and eval.

    Args:
        normalized_shape: the trailing shape to normalize over (an int for the last dim).
        eps: added to the variance for stability (default 1e-5).
        elementwise_affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape
            normalized_shape (default True).
        bias: with elementwise_affine, whether beta is learnt (default True).

    Shape:
        - Input: (*, normalized_shape).
        - Output: the same shape as the input.
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape_arg(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        kw = dict(dtype=dtype, device=device)
        if elementwise_affine:
            self.weight = Parameter(creation.empty(self.normalized_shape, **kw))
            if bias:
                self.bias = Parameter(creation.empty(self.normalized_shape, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            _ones_(self.weight)
        if self.bias is not None:
            _zeros_(self.bias)

    def forward(self, input):
        k = len(self.normalized_shape)
        shape = tuple(input.shape)
        if shape[len(shape) - k:] != self.normalized_shape or len(shape) < k:
            raise RuntimeError(f"LayerNorm: expected input with shape [*, "
                               f"{', '.join(map(str, self.normalized_shape))}] "
                               f"(normalized_shape), got input of shape {shape}")
        return N.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Group normalization: the C channels of each sample are split into num_groups
    groups, each normalized over its channels and spatial positions:

        y = (x - E[x]) / sqrt(Var[x] + eps) * gamma + beta

    gamma, beta per channel; the same in training and eval.

    Args:
        num_groups: the number of groups (must divide num_channels).
        num_channels: C.
        eps: added to the variance for stability (default 1e-5).
        affine: learn gamma (``weight``, ones) and beta (``bias``, zeros) of shape (C,).
        bias: with affine, whether beta is learnt (default True).

    Shape:
        - Input: (N, C, *).
        - Output: the same shape as the input.
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None,
                 bias=True):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        kw = dict(dtype=dtype, device=device)
        if affine:
            self.weight = Parameter(creation.empty(num_channels, **kw))
            if bias:
                self.bias = Parameter(creation.empty(num_channels, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            _ones_(self.weight)
            if self.bias is not None:
                _zeros_(self.bias)

    def forward(self, input):
        shape = tuple(input.shape)
        if len(shape) < 2 or shape[1] != self.num_channels:
            raise RuntimeError(f"GroupNorm: expected input with {self.num_channels} channels "
                               f"(num_channels) at dim 1, got input of shape {shape}")
        return N.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalization over the last len(normalized_shape) dims:

        y = x / sqrt(mean(x^2) + eps) * gamma

    (no centring, no shift).

    Args:
        normalized_shape: the trailing shape to normalize over (an int for the last dim).
        eps: added inside the square root; None (default) uses the input dtype's machine epsilon.
        elementwise_affine: learn gamma (``weight``, ones) of shape normalized_shape.

    Shape:
        - Input: (*, normalized_shape).
        - Output: the same shape as the input.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape = _shape_arg(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.empty(self.normalized_shape, dtype=dtype,
                                                   device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            _ones_(self.weight)

    def forward(self, input):
        return N.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Local response normalization across channels (AlexNet's):

        y_c = x_c / (k + alpha / n * sum over the n = size channels around c of x_c'^2)^beta

    (channels beyond the edges count as zeros).

    Args:
        size: n, the number of neighbouring channels summed.
        alpha: the multiplicative factor (default 1e-4).
        beta: the exponent (default 0.75).
        k: the additive constant (default 1).

    Shape:
        - Input: (N, C, *).
        - Output: the same shape as the input.
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return N.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
