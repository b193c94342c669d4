"""Activation functions: relu and its relatives, the smooth gates (gelu, silu, mish), softplus.

These are the functional forms; `nn.functional` re-exports them with PyTorch's signatures.
Piecewise functions route the gradient with constant masks built in numpy, and follow PyTorch's
choice at each kink (relu'(0) = 0, hardtanh' = 0 at both bounds, elu'(0) = alpha, ...; each
docstring says which side a kink takes). Backward is written with Tensor ops, so second
derivatives work. Exponentials are only evaluated where they cannot overflow, so softplus,
logsigmoid, silu and mish stay finite, with finite gradients, for inputs of any size.

``inplace=True`` (and relu_, elu_, ...) writes the result into the input through ops/inplace.py,
with PyTorch's checks (no in-place change of a leaf that requires grad). bfloat16 input is
computed in float32 and rounded back once (`dtypes.compute_array` / `result_array`).

Differences from PyTorch: a dtype an activation does not support raises TypeError (PyTorch:
RuntimeError/NotImplementedError); softplus stays finite for beta*x above 88 even with a huge
threshold (PyTorch gives inf there).
"""
import math

import numpy as np

from .. import backend
from .. import dtypes as _dt
from ..autograd.engine import mark_fresh
from ..autograd.function import Function
from ..autograd.grad_mode import _State
from ..tensor import Tensor
from ._util import tensor_method
from .elementwise import where
from .unary import _sigmoid, clamp, erf, exp, sigmoid, tanh

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish",
           "hardswish", "hardsigmoid", "hardtanh", "softplus", "logsigmoid", "softsign",
           "tanhshrink", "threshold", "relu_", "leaky_relu_", "elu_", "selu_", "celu_",
           "hardtanh_", "threshold_"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_INV_SQRT2 = 1 / math.sqrt(2.0)
_INV_SQRT_2PI = 1 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715
_GELU_CLIP = 40.0


def _check(input, op, ints=False):
    """TypeError unless `input` is a Tensor of a dtype the activation supports."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dt = input._data.dtype
    if dt.kind == "b" or (not ints and not _dt.is_float_dtype(dt)):
        raise TypeError(f"{op}(): not supported for {input._data.dtype} tensors; convert with "
                        f".float() first")


def _pick(mask, a, b):
    """a where the numpy bool array `mask` holds, else b (a, b: Tensors or numbers).
    With b == 0 this is a product with the 0/1 mask: ~15x faster than a select in numpy (the one
    difference: a nan gradient in a masked-out position stays nan instead of becoming 0)."""
    if isinstance(b, (int, float)) and b == 0 and isinstance(a, Tensor):
        t = a._data.dtype
        if (_dt.half_inf_bits(t) is not None and a._data.shape == np.shape(mask)
                and not (_State.enabled and a._rg)):   # half, not recorded: on the bits
            return Tensor._make(mark_fresh(_dt.half_masked(a._data, mask)))
        # (bfloat16 recorded: through float32, ml_dtypes' bool cast is slow)
        return a * Tensor._make(_dt.result_array(np.asarray(mask, dtype=_dt.compute_dtype(t)), t))
    return where(Tensor._make(np.asarray(mask)), a, b)


def _softplus_np(z):
    """log(1 + e^z) = max(z, 0) + log1p(e^-|z|): never overflows."""
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


# ---- piecewise linear ---------------------------------------------------------------------------
class Threshold(Function):
    """y = x if x > threshold else value.  dy/dx = 1 where x > threshold, else 0 (also at the
    threshold). relu is threshold(x, 0, 0)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, th, value):
        x = a._data
        above = x > th
        if ctx.needs_input_grad:
            ctx.mask = above
        return np.where(above, x, np.array(value).astype(x.dtype))

    @staticmethod
    def backward(ctx, grad):
        return _pick(ctx.mask, grad, 0.0), None, None


class Relu(Function):
    """y = max(x, 0) (nan stays nan).  dy/dx = 1 where x > 0, else 0 (0 at 0, as PyTorch)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        if _dt.half_inf_bits(a._data.dtype) is not None:   # bfloat16 / float16: on the bits
            y, mask = _dt.half_relu(a._data, bool(ctx.needs_input_grad))
            if ctx.needs_input_grad:
                ctx.mask = mask
            return y
        x = a._data
        if ctx.needs_input_grad:
            ctx.mask = x > 0
        return np.maximum(x, x.dtype.type(0))

    @staticmethod
    def backward(ctx, grad):
        return _pick(ctx.mask, grad, 0.0)


class Hardtanh(Function):
    """y = clamp(x, lo, hi).  dy/dx = 1 where lo < x < hi, else 0 (0 at both bounds, unlike
    clamp, as PyTorch). relu6 is hardtanh(x, 0, 6)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, lo, hi):
        x = a._data
        if ctx.needs_input_grad:
            ctx.mask = (x > lo) & (x < hi)
        lo_v, hi_v = np.array(lo).astype(x.dtype), np.array(hi).astype(x.dtype)
        return np.minimum(np.maximum(x, lo_v), hi_v)

    @staticmethod
    def backward(ctx, grad):
        return _pick(ctx.mask, grad, 0.0), None, None


class LeakyRelu(Function):
    """y = x if x > 0 else slope*x.  dy/dx = 1 where x > 0, else slope (slope at 0)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, slope):
        x = _dt.compute_array(a._data)         # bfloat16: in float32, rounded once
        pos = x > 0
        if ctx.needs_input_grad:
            ctx.mask, ctx.slope = pos, slope
        return _dt.result_array(np.where(pos, x, x * x.dtype.type(slope)), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _pick(ctx.mask, grad, grad * ctx.slope), None


class Hardsigmoid(Function):
    """y = clamp(x + 3, 0, 6) / 6.  dy/dx = 1/6 where -3 < x < 3, else 0 (0 at +-3)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        x = _dt.compute_array(a._data)
        if ctx.needs_input_grad:
            ctx.mask = (x > -3) & (x < 3)
        return _dt.result_array(np.clip(x + 3, 0, 6) / x.dtype.type(6), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _pick(ctx.mask, grad / 6, 0.0)


class Hardswish(Function):
    """y = x * clamp(x + 3, 0, 6) / 6.
    dy/dx = 0 for x <= -3, x/3 + 1/2 for -3 < x < 3, 1 for x >= 3 (as PyTorch at the kinks)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        x = _dt.compute_array(a._data)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.masks = ((x > -3) & (x < 3), x >= 3)
        return _dt.result_array(x * np.clip(x + 3, 0, 6) / x.dtype.type(6), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        mid, high = ctx.masks
        return _pick(mid, grad * (x / 3 + 0.5), _pick(high, grad, 0.0))


# ---- exponential family (elu, selu, celu) -------------------------------------------------------
class Elu(Function):
    """y = scale*x for x > 0, else scale*alpha*(e^(x*s) - 1) with s = input_scale.
    dy/dx = scale for x > 0, else scale*alpha*s*e^(x*s) (the x <= 0 side at 0, as PyTorch).
    elu: (alpha, 1, 1); selu: (1.6733, 1.0507, 1); celu: (alpha, 1, 1/alpha)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, alpha, scale, s):
        x = _dt.compute_array(a._data)
        pos = x > 0
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.mask, ctx.coef = pos, (alpha, scale, s)
        f = x.dtype.type
        neg = f(scale * alpha) * np.expm1(np.minimum(x, 0) * f(s))  # exp only of x <= 0
        return _dt.result_array(np.where(pos, x * f(scale), neg), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        alpha, scale, s = ctx.coef
        # clamp(x, max=0) keeps e^(x*s) finite on the positive side (which `where` discards)
        neg = grad * exp(clamp(x, max=0) * s) * (scale * alpha * s)
        return _pick(ctx.mask, grad * scale, neg), None, None, None


class Celu(Elu):
    """Elu with input scale 1/alpha (celu())."""


# ---- smooth gates and softplus ------------------------------------------------------------------
class Gelu(Function):
    """y = x * Phi(x), Phi the standard normal CDF: Phi(x) = (1 + erf(x/sqrt2)) / 2.
    dy/dx = Phi(x) + x * phi(x), phi(x) = e^(-x^2/2) / sqrt(2 pi).
    With approximate='tanh': y = x/2 * (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3);
    dy/dx = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) sqrt(2/pi) (1 + 3*0.044715 x^2).
    Forward and backward are the backend kernels ``backend.gelu`` / ``gelu_backward`` (for
    float32 one native pass with erf as a float32 polynomial; numpy_backend has the readable
    version); under create_graph the backward is written with Tensor ops."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, approximate):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.approximate = approximate
        x = a._data                             # bfloat16: in float32, rounded once
        return _dt.result_array(backend.gelu(_dt.compute_array(x), approximate), x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        if not _State.enabled:             # nothing recorded: the kernel on the arrays
            g = backend.gelu_backward(_dt.compute_array(grad._data), _dt.compute_array(x._data),
                                      ctx.approximate)
            return Tensor._make(mark_fresh(_dt.result_array(g, grad._data.dtype))), None
        # beyond |x| = 40 the terms with e^(-x^2/2) or 1 - tanh^2 are exactly 0; clamping x
        # there keeps x^2, x^3 from overflowing (inf * 0 would give nan)
        xc = clamp(x, -_GELU_CLIP, _GELU_CLIP)
        if ctx.approximate == "tanh":
            t = tanh((xc + xc * xc * xc * _GELU_C) * _SQRT_2_OVER_PI)
            du = (xc * xc * (3 * _GELU_C) + 1) * _SQRT_2_OVER_PI
            return grad * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * du), None
        cdf = (erf(x * _INV_SQRT2) + 1) * 0.5
        pdf = exp(xc * xc * -0.5) * _INV_SQRT_2PI
        return grad * (cdf + x * pdf), None


class Silu(Function):
    """y = x * sigmoid(x).  dy/dx = s (1 + x (1 - s)), s = sigmoid(x)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
        x = _dt.compute_array(a._data)
        return _dt.result_array(x * _sigmoid(x), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        s = sigmoid(x)
        return grad * s * (x * (1 - s) + 1)


class Softplus(Function):
    """y = log(1 + e^(beta x)) / beta, and y = x where beta*x > threshold.
    dy/dx = sigmoid(beta x), and 1 where beta*x > threshold."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, beta, threshold):
        x = _dt.compute_array(a._data)
        f = x.dtype.type
        z = x * f(beta)
        linear = z > threshold
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
            ctx.mask, ctx.beta = linear, beta
        return _dt.result_array(np.where(linear, x, _softplus_np(z) / f(beta)), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return _pick(ctx.mask, grad, grad * sigmoid(x * ctx.beta)), None, None


class LogSigmoid(Function):
    """y = log sigmoid(x) = -softplus(-x).  dy/dx = sigmoid(-x) = 1 - sigmoid(x)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
        return _dt.result_array(-_softplus_np(-_dt.compute_array(a._data)), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * sigmoid(-x)


class Mish(Function):
    """y = x tanh(softplus(x)).  dy/dx = t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x))."""
    _builtin = True

    @staticmethod
    def forward(ctx, a):
        x = _dt.compute_array(a._data)
        if ctx.needs_input_grad:
            ctx.save_for_backward(a)
        return _dt.result_array(x * np.tanh(_softplus_np(x)), a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        t = tanh(softplus(x))
        return grad * (t + x * sigmoid(x) * (1 - t * t))


# ---- functional forms ---------------------------------------------------------------------------
def _run(input, inplace, name, compute, *args):
    """compute(input, *args), or with inplace=True the same written back into `input` (through
    ops/inplace.py: version bump, PyTorch's checks, a correct graph)."""
    if not inplace:
        return compute(input, *args)
    from .inplace import apply_inplace
    return apply_inplace(input, name, compute, args)


@tensor_method("relu")
def relu(input, inplace=False):
    """max(x, 0); the gradient at 0 is 0. Integer tensors stay integer."""
    _check(input, "relu", ints=True)
    return _run(input, inplace, "relu", Relu.apply)


def relu6(input, inplace=False):
    """min(max(x, 0), 6); the gradient is 0 at 0 and at 6."""
    _check(input, "relu6", ints=True)
    return _run(input, inplace, "relu6", Hardtanh.apply, 0, 6)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) with gradient 0 at both bounds."""
    _check(input, "hardtanh", ints=True)
    if min_val > max_val:
        raise ValueError(f"hardtanh(): min_val cannot be greater than max_val (got min_val="
                         f"{min_val}, max_val={max_val})")
    return _run(input, inplace, "hardtanh", Hardtanh.apply, min_val, max_val)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    _check(input, "threshold", ints=True)
    return _run(input, inplace, "threshold", Threshold.apply, threshold, value)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, else negative_slope * x; see LeakyRelu."""
    _check(input, "leaky_relu")
    return _run(input, inplace, "leaky_relu", LeakyRelu.apply, float(negative_slope))


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, else alpha (e^x - 1); see Elu."""
    _check(input, "elu")
    return _run(input, inplace, "elu", Elu.apply, float(alpha), 1.0, 1.0)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants of Klambauer et al. (2017)."""
    _check(input, "selu")
    return _run(input, inplace, "selu", Elu.apply, _SELU_ALPHA, _SELU_SCALE, 1.0)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha (e^(x/alpha) - 1))."""
    _check(input, "celu")
    if alpha == 0:
        raise RuntimeError("celu(): alpha cannot be 0 (it divides x); use alpha != 0")
    return _run(input, inplace, "celu", Celu.apply, float(alpha), 1.0, 1.0 / alpha)


def gelu(input, approximate="none"):
    """x * Phi(x) (Phi: standard normal CDF), or its tanh approximation; see Gelu."""
    _check(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu(): approximate argument must be either 'none' or 'tanh', got "
                           f"{approximate!r}")
    return Gelu.apply(input, approximate)


def silu(input, inplace=False):
    """x * sigmoid(x) (also called swish); see Silu."""
    _check(input, "silu")
    return _run(input, inplace, "silu", Silu.apply)


def mish(input, inplace=False):
    """x * tanh(softplus(x)); see Mish."""
    _check(input, "mish")
    return _run(input, inplace, "mish", Mish.apply)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6; see Hardswish."""
    _check(input, "hardswish")
    return _run(input, inplace, "hardswish", Hardswish.apply)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6; see Hardsigmoid."""
    _check(input, "hardsigmoid")
    return _run(input, inplace, "hardsigmoid", Hardsigmoid.apply)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + e^(beta x)) / beta, linear above threshold; see Softplus."""
    _check(input, "softplus")
    return Softplus.apply(input, beta, threshold)


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow; see LogSigmoid."""
    _check(input, "logsigmoid")
    return LogSigmoid.apply(input)


def softsign(input):
    """x / (1 + |x|), composed of Tensor ops (integers give floats, as PyTorch)."""
    _check(input, "softsign", ints=True)
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x), composed of Tensor ops."""
    _check(input, "tanhshrink", ints=True)
    return input - tanh(input)


# in-place spellings of torch.nn.functional (relu_, elu_, ...) and torch (relu_, selu_, ...)
def relu_(input):
    return relu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, inplace=True)


_threshold = threshold
