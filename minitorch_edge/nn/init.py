"""nn.init: fill a weight tensor in place with a chosen distribution, as PyTorch does.

Why the scale matters: a layer computes sums of fan_in products, so with weights of variance v
the output variance is about fan_in * v times the input's. Keeping it near 1 through many layers
gives the standard recipes:

* Xavier/Glorot (tanh/linear nets):  Var(w) = gain^2 * 2 / (fan_in + fan_out);
* Kaiming/He (ReLU nets):            Var(w) = gain^2 / fan (fan_in keeps forward activations,
                                     fan_out keeps backward gradients at unit scale);
* uniform(-b, b) has variance b^2 / 3, so the uniform variants use b = sqrt(3) * std.

For a weight of shape (out, in, k1, k2, ...): fan_in = in * k1 * k2 * ..., fan_out = out * k1 *
k2 * .... The gain corrects for what the nonlinearity does to the variance (calculate_gain).

Every function runs without recording gradients, changes the tensor in place and returns it;
the random ones draw from `generator` (default: the global one that manual_seed seeds).
"""
import math
import warnings

import numpy as np

from .._special import erfinv as _erfinv
from ..autograd.grad_mode import no_grad
from ..backend.prepared import wrote as _wrote
from ..random import np_rng
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu (slope = param, default 0.01),
    3/4 for selu (self-normalising nets)."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _check(tensor, fn):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn}: expected a Tensor, got {type(tensor).__name__}")


def _fill(tensor, values, name):
    """Write `values` (numpy, broadcastable) into tensor's memory and bump its version."""
    np.copyto(tensor._data, values, casting="unsafe")
    tensor._vc[0] += 1
    tensor._vc[1] = name
    _wrote(tensor._data)
    return tensor


# ---- plain distributions ----------------------------------------------------------------------
def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    _check(tensor, "uniform_")
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    _check(tensor, "normal_")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b] (a and b are absolute bounds, not in units
    of std), exactly, by inverse-CDF sampling: draw u ~ U(Phi(alpha), Phi(beta)) with
    alpha = (a - mean)/std, beta = (b - mean)/std, return mean + std * sqrt(2) erfinv(2u - 1),
    clamped to [a, b] against rounding. Computed in float64."""
    _check(tensor, "trunc_normal_")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    lo, hi = _norm_cdf((a - mean) / std), _norm_cdf((b - mean) / std)
    u = np_rng(generator).uniform(2 * lo - 1, 2 * hi - 1, tensor._data.shape)
    x = _erfinv(np.asarray(u, np.float64)) * (std * math.sqrt(2.0)) + mean
    with no_grad():
        return _fill(tensor, np.clip(x, a, b), "trunc_normal")


def constant_(tensor, val):
    """Fill with the value `val`."""
    _check(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0."""
    _check(tensor, "zeros_")
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill a 2-D tensor with the identity (ones on the diagonal; rectangular allowed): a
    Linear layer initialised so keeps its inputs."""
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported (nn.init.eye_ got shape "
                         f"{tuple(tensor.shape)})")
    with no_grad():
        return _fill(tensor, np.eye(*tensor._data.shape), "eye")


def dirac_(tensor, groups=1):
    """Fill a {3, 4, 5}-D conv weight (out, in, k...) with the Dirac delta: each of the first
    min(out/groups, in) output channels of each group copies its input channel through the
    kernel centre, so a conv layer starts as the identity."""
    _check(tensor, "dirac_")
    shape = tensor._data.shape
    if len(shape) not in (3, 4, 5):
        raise ValueError(f"Only tensors with 3, 4, or 5 dimensions are supported (nn.init.dirac_ "
                         f"got shape {tuple(shape)})")
    if shape[0] % groups != 0:
        raise ValueError(f"dim 0 must be divisible by groups (got {shape[0]} and groups={groups})")
    per_group = shape[0] // groups
    n = min(per_group, shape[1])
    values = np.zeros(shape, tensor._data.dtype)
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(n):
            values[(g * per_group + d, d) + centre] = 1
    with no_grad():
        return _fill(tensor, values, "dirac")


# ---- variance-scaling recipes -----------------------------------------------------------------
def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) = (size(1) * k, size(0) * k) with k = the product of sizes 2.. (the
    receptive field of a conv kernel; 1 for a Linear weight)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {tuple(tensor.shape)})")
    shape = tensor._data.shape
    receptive = 1
    for s in shape[2:]:
        receptive *= s
    return shape[1] * receptive, shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))  (Glorot & Bengio, 2010)."""
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator=generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    if 0 in tensor._data.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan)  (He et al., 2015); gain from calculate_gain
    (nonlinearity, a), fan = fan_in or fan_out by `mode`. nn.Linear's default init is this
    with a = sqrt(5)."""
    _check(tensor, "kaiming_uniform_")
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2) with std = gain / sqrt(fan)  (He et al., 2015)."""
    _check(tensor, "kaiming_normal_")
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator=generator)


# ---- structured matrices ----------------------------------------------------------------------
def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix (Saxe et al., 2013): QR of a Gaussian matrix, with Q's column
    signs fixed by R's diagonal so Q is uniformly (Haar) distributed. The tensor is viewed as
    (size(0), rest); rows <= cols gives orthonormal rows (W W^T = I), else orthonormal columns.
    Scaled by `gain`."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(f"Only tensors with 2 or more dimensions are supported (nn.init."
                         f"orthogonal_ got shape {tuple(tensor.shape)})")
    if tensor.numel() == 0:
        return tensor
    rows = tensor._data.shape[0]
    cols = tensor.numel() // rows
    flat = np_rng(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    d = np.sign(np.diag(r))
    q = q * np.where(d == 0, 1.0, d)
    if rows < cols:
        q = q.T
    with no_grad():
        return _fill(tensor, (q * gain).reshape(tensor._data.shape), "orthogonal")


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D matrix drawn from N(0, std^2) with ceil(sparsity * rows) zeros in every column
    (Martens, 2010), the zero rows chosen at random per column."""
    _check(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported (nn.init.sparse_ got "
                         f"shape {tuple(tensor.shape)})")
    rows, cols = tensor._data.shape
    num_zeros = int(math.ceil(sparsity * rows))
    rng = np_rng(generator)
    values = rng.normal(0.0, std, (rows, cols))
    for c in range(cols):
        values[rng.permutation(rows)[:num_zeros], c] = 0
    with no_grad():
        return _fill(tensor, values, "sparse")
