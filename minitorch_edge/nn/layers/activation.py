"""Activation layers: thin Modules over the functions in ops/activation.py and ops/softmax.py
(ReLU -> relu, GELU -> gelu, Softmax -> softmax, ...), with PyTorch's constructor arguments
(``inplace=`` included) and ``extra_repr`` text.

PReLU is the one activation with a parameter: y = x for x > 0, else a*x, with one learnable
slope `a` (``weight``) per channel (dim 1) or one shared slope. Its functional form `prelu` lives
here and is composed of Tensor ops (a where and a multiply), so it needs no Function.

GLU (gated linear unit) halves its input along a dim into (a, b) and gives a * sigmoid(b); its
functional form `glu` lives here too, one Function (`Glu`, PyTorch's GluBackward0) whose
backward is written with Tensor ops.
"""
from ..._autocast import autocast_op
import warnings

import numpy as np

from ... import creation
from ... import dtypes as _dt
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops import activation as A
from ...ops._util import norm_dim
from ...ops.join import cat
from ...ops.elementwise import where
from ...ops.softmax import log_softmax, softmax
from ...ops.unary import _sigmoid, sigmoid, tanh
from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid",
           "Tanh", "Softmax", "LogSoftmax", "Softmin", "Hardswish", "Hardsigmoid", "Hardtanh",
           "Softplus", "LogSigmoid", "Softsign", "Tanhshrink", "Threshold", "PReLU", "GLU"]
# prelu, softmin and glu (below) are functional forms: nn.functional re-exports them, not nn


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class _Inplace(Module):
    """An activation whose only option is ``inplace``."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class _Plain(Module):
    """An activation with no options."""
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class ReLU(_Inplace):
    """ReLU(x) = max(x, 0), elementwise.

    Args:
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.relu)


class ReLU6(_Inplace):
    """ReLU6(x) = min(max(x, 0), 6), elementwise.

    Args:
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.relu6)


class SELU(_Inplace):
    """SELU(x) = scale * (max(0, x) + min(0, alpha (e^x - 1))), elementwise, with the
    self-normalising constants alpha = 1.6732632423543772, scale = 1.0507009873554805.

    Args:
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.selu)


class SiLU(_Inplace):
    """SiLU(x) = x * sigmoid(x) (the swish), elementwise.

    Args:
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.silu)


class Mish(_Inplace):
    """Mish(x) = x * tanh(softplus(x)), elementwise.

    Args:
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.mish)


class Hardswish(_Inplace):
    """Hardswish(x) = x * relu6(x + 3) / 6: 0 for x <= -3, x for x >= 3.

    Args:
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.hardswish)

    def extra_repr(self):   # PyTorch prints nothing here, even for inplace=True
        return ""


class Hardsigmoid(_Inplace):
    """Hardsigmoid(x) = relu6(x + 3) / 6: 0 for x <= -3, 1 for x >= 3, linear
    between.

    Args:
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.hardsigmoid)

    def extra_repr(self):
        return ""


class Sigmoid(_Plain):
    """Sigmoid(x) = 1 / (1 + e^-x), elementwise, in (0, 1).
    Its gradient is sigmoid(x) (1 - sigmoid(x)), computed from the output.

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(sigmoid)


class Tanh(_Plain):
    """Tanh(x) = (e^x - e^-x) / (e^x + e^-x), elementwise, in (-1, 1).
    Its gradient is 1 - tanh(x)^2, computed from the output.

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(tanh)


class LogSigmoid(_Plain):
    """LogSigmoid(x) = log(1 / (1 + e^-x)) = -softplus(-x), elementwise (computed
    without overflow).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.logsigmoid)


class Softsign(_Plain):
    """Softsign(x) = x / (1 + |x|), elementwise, in (-1, 1).
    Its gradient is 1 / (1 + |x|)^2.

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.softsign)


class Tanhshrink(_Plain):
    """Tanhshrink(x) = x - tanh(x), elementwise.
    Its gradient is tanh(x)^2.

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(A.tanhshrink)


class LeakyReLU(Module):
    """LeakyReLU(x) = x for x > 0, else negative_slope * x, elementwise.

    Args:
        negative_slope: the slope for x < 0 (default 0.01).
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return A.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """ELU(x) = x for x > 0, else alpha (e^x - 1), elementwise.

    Args:
        alpha: the value approached for x -> -inf is -alpha (default 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return A.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """CELU(x) = max(0, x) + min(0, alpha (e^(x / alpha) - 1)), elementwise.

    Args:
        alpha: the scale of the negative part (default 1; not 0).
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """

    def forward(self, input):
        return A.celu(input, self.alpha, self.inplace)


class GELU(Module):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF (approximate='none'), or
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (approximate='tanh').

    Args:
        approximate: 'none' (exact, erf) or 'tanh'.

    Shape: input (*), any shape; output (*), the same shape.
    """

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return A.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Hardtanh(Module):
    """Hardtanh(x) = clamp(x, min_val, max_val), elementwise.

    Args:
        min_val: the lower bound (default -1).
        max_val: the upper bound (default 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) cannot be greater than max_val "
                             f"({max_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return A.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return (f"min_val={self.min_val}, max_val={self.max_val}" +
                (", inplace=True" if self.inplace else ""))


class Softplus(Module):
    """Softplus(x) = log(1 + e^(beta x)) / beta, elementwise; x itself where
    beta x > threshold (where the two agree to float precision).

    Args:
        beta: the sharpness (default 1).
        threshold: above beta x > threshold the result is x (default 20).

    Shape: input (*), any shape; output (*), the same shape.
    """

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return A.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    """Threshold(x) = x where x > threshold, else value, elementwise.

    Args:
        threshold: the cut.
        value: what replaces x <= threshold.
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return A.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return (f"threshold={self.threshold}, value={self.value}" +
                (", inplace=True" if self.inplace else ""))


# ---- softmax family -----------------------------------------------------------------------------
def _implicit_dim(name, ndim):
    """PyTorch's legacy choice when no dim is given: 0 for 0-, 1- and 3-D input, else 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, dtype=None):
    """softmax(-x) along dim."""
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim)
    return softmax(-input, dim, dtype=dtype)


class _SoftmaxBase(Module):
    _fn, _name = None, ""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _implicit_dim(self._name, input.ndim)
        return type(self)._fn(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax(x)_i = e^(x_i) / sum_j e^(x_j) along `dim`: each slice along dim is
    non-negative and sums to 1 (computed as e^(x - max) for stability).

    Args:
        dim: the dim to normalize over (None: PyTorch's legacy choice, with a warning).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn, _name = staticmethod(softmax), "softmax"


class LogSoftmax(_SoftmaxBase):
    """LogSoftmax(x)_i = x_i - log(sum_j e^(x_j)) along `dim`, computed without forming
    the softmax (stable for large |x|).

    Args:
        dim: the dim to normalize over (None: PyTorch's legacy choice, with a warning).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn, _name = staticmethod(log_softmax), "log_softmax"


class Softmin(_SoftmaxBase):
    """Softmin(x) = softmax(-x) along `dim`: the smallest entries get the most weight.

    Args:
        dim: the dim to normalize over (None: PyTorch's legacy choice, with a warning).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn, _name = staticmethod(softmin), "softmin"


# ---- PReLU --------------------------------------------------------------------------------------
@autocast_op("prelu")
def prelu(input, weight):
    """y = x where x > 0, else weight * x; weight has one entry (shared) or one per channel
    (dim 1 of the input; an input with fewer than 2 dims has one channel).

    Gradients (from the where/mul it is built of): dx = dy where x > 0, else weight * dy (the
    x <= 0 side at 0, as PyTorch); dweight = sum of x * dy over x <= 0, per channel."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("prelu(): input and weight must be Tensors")
    n = weight._data.size
    nd = input._data.ndim
    channels = input._data.shape[1] if nd >= 2 else 1
    if n != 1 and n != channels:
        raise RuntimeError(f"prelu: mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {n} and channel size = {channels} (input of "
                           f"shape {tuple(input._data.shape)}).")
    if n == 1:
        w = weight.reshape(())
    else:
        w = weight.reshape((channels,) + (1,) * (nd - 2))
    return where(input > 0, input, w * input)


class PReLU(Module):
    """PReLU(x) = x for x > 0, else a * x, with learnable slopes a (``weight``): one shared
    slope or one per channel (dim 1 of the input).

    Args:
        num_parameters: 1 (one slope for all) or the number of channels C (default 1).
        init: the slopes' initial value (default 0.25).

    Shape: input (*), any shape (channels on dim 1); output (*), the same shape.
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(creation.empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


# ---- GLU ----------------------------------------------------------------------------------------
class Glu(Function):
    """y = a * sigmoid(b), where (a, b) are the two halves of x along `dim`.
    dx = cat(dy * s, dy * a * s * (1 - s)) along dim, with s = sigmoid(b); written with Tensor
    ops, so it is differentiable again."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, dim):
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
            ctx.dim = dim
        a, b = np.split(_dt.compute_array(x._data), 2, axis=dim)   # bfloat16: in float32
        return _dt.result_array(a * _sigmoid(b), x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        a, b = x.chunk(2, ctx.dim)
        s = sigmoid(b)
        gs = grad * s
        return cat([gs, gs * a * (1 - s)], ctx.dim), None


def glu(input, dim=-1):
    """Gated linear unit: split `input` in two halves (a, b) along `dim` (its size must be even)
    and return a * sigmoid(b), half the size along dim. Gradient: da = dy * sigmoid(b),
    db = dy * a * sigmoid(b) * (1 - sigmoid(b))."""
    if not isinstance(input, Tensor):
        raise TypeError(f"glu(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if input._data.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = norm_dim(dim, input._data.ndim, "glu")
    n = input._data.shape[d]
    if n % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {d} is size {n} "
                           f"(input of shape {tuple(input._data.shape)})")
    if not _dt.is_float_dtype(input._data.dtype):
        raise NotImplementedError(f"glu: not implemented for {input.dtype.name} input; convert "
                                  f"it with .float()")
    return Glu.apply(input, d)


class GLU(Module):
    """GLU(x) = a * sigmoid(b), where a and b are the two halves of x along `dim` (the gated
    linear unit).

    Args:
        dim: the dim split in half (default -1; its size must be even).

    Shape: input (*, 2M, *); output (*, M, *), halved along dim.
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
