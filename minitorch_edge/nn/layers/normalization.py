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
    """BatchNorm over (N, C) or (N, C, L) input."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """BatchNorm over (N, C, H, W) input."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """BatchNorm over (N, C, D, H, W) input."""
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
    """InstanceNorm over (N, C, L) or (C, L) input."""
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """InstanceNorm over (N, C, H, W) or (C, H, W) input."""
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """InstanceNorm over (N, C, D, H, W) or (C, D, H, W) input."""
    _spatial = 3


def _shape_arg(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(Module):
    """Normalize over the last len(normalized_shape) dims; ``weight`` (ones) and ``bias``
    (zeros) of shape normalized_shape when elementwise_affine."""

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
    """Normalize each sample over groups of num_channels / num_groups channels; per-channel
    ``weight`` (ones) and ``bias`` (zeros) when affine."""

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
    """x / sqrt(mean(x^2) + eps) * weight over the last len(normalized_shape) dims;
    eps=None uses the input dtype's machine epsilon."""

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
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return N.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
