"""Linear layers: Linear (y = x W^T + b), Bilinear, and the shape-only layers Identity, Flatten,
Unflatten.

Initialisation follows PyTorch: Linear's weight is kaiming_uniform_(a=sqrt(5)), which works out
to U(-1/sqrt(in_features), 1/sqrt(in_features)), and its bias is drawn from the same range;
Bilinear draws both from U(-1/sqrt(in1_features), 1/sqrt(in1_features)). The draws come from the
default Generator (``minitorch_edge.manual_seed`` makes them repeatable).
"""
import math

from ... import creation
from ...autograd.grad_mode import no_grad
from ...ops.shape import flatten, unflatten
from ..functional.linear import bilinear, linear
from ..module import Module
from ..parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear", "Flatten", "Unflatten"]


def _uniform_(param, bound):
    with no_grad():
        param.uniform_(-bound, bound)


def _check_features(layer, **sizes):
    for name, n in sizes.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{layer}: {name} must be a non-negative int, got {n!r}")


class Identity(Module):
    """Returns its input unchanged: y = x. Any constructor arguments are accepted and
    ignored (as PyTorch's), so it can stand in for a layer being removed.

    Shape:
        - Input: (*), anything.
        - Output: the input itself.
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """An affine map of the last dimension: y = x W^T + b.

    The weight W has shape (out_features, in_features), the bias b (out_features,), both
    initialised uniform in +-1/sqrt(in_features), as PyTorch does.

    Args:
        in_features: size of each input sample (the last dim), H_in.
        out_features: size of each output sample, H_out.
        bias: learn the additive bias b (default True).

    Shape:
        - Input: (*, H_in), any number of leading dims.
        - Output: (*, H_out), the same leading dims.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        _check_features("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(creation.empty(out_features, in_features, dtype=dtype,
                                               device=device))
        if bias:
            self.bias = Parameter(creation.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input):
        shape = tuple(input.shape) if hasattr(input, "shape") else None
        if shape is not None and (not shape or shape[-1] != self.in_features):
            raise RuntimeError(f"Linear: expected input with last dimension {self.in_features} "
                               f"(in_features), got input of shape {shape}")
        return linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """A bilinear map of two inputs: y_k = x1^T W_k x2 + b_k for each output k.

    The weight W has shape (out_features, in1_features, in2_features), the bias b
    (out_features,), both uniform in +-1/sqrt(in1_features).

    Args:
        in1_features: size of each sample of the first input, H_in1.
        in2_features: size of each sample of the second input, H_in2.
        out_features: size of each output sample, H_out.
        bias: learn the additive bias b (default True).

    Shape:
        - Input1: (*, H_in1); Input2: (*, H_in2), the same leading dims.
        - Output: (*, H_out).
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        _check_features("Bilinear", in1_features=in1_features, in2_features=in2_features,
                        out_features=out_features)
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(creation.empty(out_features, in1_features, in2_features,
                                               dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input1, input2):
        s1, s2 = tuple(input1.shape), tuple(input2.shape)
        if not s1 or not s2 or s1[-1] != self.in1_features or s2[-1] != self.in2_features:
            raise RuntimeError(f"Bilinear: expected inputs with last dimensions "
                               f"{self.in1_features} and {self.in2_features} (in1_features, "
                               f"in2_features), got inputs of shape {s1} and {s2}")
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Merges the dims start_dim..end_dim into one (a reshape, no copy where possible):
    (N, C, H, W) -> (N, C*H*W) by default.

    Args:
        start_dim: first dim to flatten (default 1: keep the batch dim).
        end_dim: last dim to flatten (default -1).

    Shape:
        - Input: (*, S_start, ..., S_end, *).
        - Output: (*, S_start * ... * S_end, *).
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits one dim into several: the inverse of Flatten.

    Args:
        dim: the dim to split.
        unflattened_size: the sizes it becomes (their product must equal its size; one entry
            may be -1, inferred).

    Shape:
        - Input: (*, S_dim, *).
        - Output: (*, U_1, ..., U_n, *), with U = unflattened_size and prod(U) = S_dim.
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(unflattened_size, list):
            unflattened_size = tuple(unflattened_size)
        if not isinstance(unflattened_size, tuple) or not all(
                isinstance(s, int) for s in unflattened_size):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, got "
                            f"{unflattened_size!r}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
