"""Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d.

Each holds ``weight`` and an optional ``bias`` and calls the function of the same name in
nn/functional/conv.py, where the math is. Like PyTorch:

* weight has shape (out_channels, in_channels // groups, *kernel_size) for a convolution and
  (in_channels, out_channels // groups, *kernel_size) for a transposed one;
* the default initialisation is kaiming_uniform_(a=sqrt(5)) for the weight, which works out to
  U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = weight.shape[1] * prod(kernel_size), and the
  same uniform for the bias;
* padding_mode 'reflect' / 'replicate' / 'circular' pads the input explicitly with F.pad and
  then convolves without padding ('same' puts an odd extra row/column at the end);
* extra_repr prints ``Conv2d(3, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))``.
"""
import math

import numpy as np

from ... import dtypes as _dt
from ...autograd.grad_mode import no_grad
from ..functional import conv as _F
from ...ops.rearrange import pad as _pad
from ..module import Module
from ..parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _default_init(weight, bias, generator=None):
    """PyTorch's default for conv and linear layers: kaiming_uniform_(weight, a=sqrt(5)) and
    bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)). With a = sqrt(5) the kaiming bound
    gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)), is exactly 1 / sqrt(fan_in)."""
    shape = weight._data.shape
    fan_in = shape[1] * int(np.prod(shape[2:])) if len(shape) > 1 else shape[0]
    if fan_in == 0:
        return
    a = math.sqrt(5)
    bound = math.sqrt(2.0 / (1 + a * a)) * math.sqrt(3.0 / fan_in)
    with no_grad():
        weight.uniform_(-bound, bound, generator=generator)
        if bias is not None:
            b = 1 / math.sqrt(fan_in)
            bias.uniform_(-b, b, generator=generator)


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", output_padding=0,
                 device=None, dtype=None):
        super().__init__()
        nd, name = self._nd, type(self).__name__
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups!r}")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels must be divisible by groups (in_channels="
                             f"{in_channels}, groups={groups})")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels must be divisible by groups (out_channels="
                             f"{out_channels}, groups={groups})")
        kernel_size, stride, dilation = (_tuple(v, nd) for v in (kernel_size, stride, dilation))
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions (stride={stride})")
        else:
            padding = _tuple(padding, nd)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode={padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.transposed = dilation, self._transposed
        self.output_padding = _tuple(output_padding, nd)
        self.groups, self.padding_mode = groups, padding_mode
        # F.pad order: last dim first, (before, after) each
        if padding == "same":
            pads = [p for k, d in zip(kernel_size, dilation)
                    for p in (d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)]
            self._reversed_padding_repeated_twice = [
                p for i in reversed(range(nd)) for p in pads[2 * i:2 * i + 2]]
        elif padding == "valid":
            self._reversed_padding_repeated_twice = [0, 0] * nd
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in "ab"]
        np_dtype = (_dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)).np
        shape = ((in_channels, out_channels // groups) if self._transposed else
                 (out_channels, in_channels // groups)) + kernel_size
        self.weight = Parameter(np.zeros(shape, np_dtype))
        self.bias = Parameter(np.zeros((out_channels,), np_dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        _default_init(self.weight, self.bias)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 0, device, dtype)

    def forward(self, input):
        nd, name = self._nd, type(self).__name__
        w, b = self.weight, self.bias
        if self.padding_mode == "zeros":
            return _F._conv(input, w, b, self.stride, self.padding, self.dilation, self.groups,
                            nd, name)
        # check against the input as given (before padding changes its shape), then pad
        batched = _F._check_tensors(input, w, b, nd, name)
        shape = input._data.shape if batched else (1,) + input._data.shape
        _F._check_channels(shape, w, b, self.groups, name)
        padded = _pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        return _F._conv(padded, w, b, self.stride, 0, self.dilation, self.groups, nd, name)


class Conv2d(_Conv):
    """2-D convolution (cross-correlation, as PyTorch), over a batch of images.

        out(N_i, C_out_j) = bias(C_out_j) + sum over k < C_in / groups of
                            weight(C_out_j, k) * input(N_i, k + g C_in / groups)

    where * is the 2-D cross-correlation, g the group of channel j. The weight has shape
    (C_out, C_in / groups, kH, kW), the bias (C_out,), both initialised uniform in
    +-1/sqrt(C_in / groups * kH * kW) as PyTorch does. The work is done by F.conv2d (the numpy
    im2col + GEMM twin, or libmte's kernels: GEMM, direct, depthwise, Winograd).

    Args:
        in_channels: C_in, channels of the input.
        out_channels: C_out, channels of the output (number of filters).
        kernel_size: the filter's size, an int or a tuple of 2 ints.
        stride: step between windows (default 1).
        padding: implicit padding on every side: an int, a tuple of 2 ints, or "valid" (none)
            / "same" (output as large as the input; stride 1 only). Default 0.
        dilation: spacing between the filter's taps (default 1).
        groups: split the channels into this many independent convolutions; in_channels and
            out_channels must both be divisible by it (groups = C_in: depthwise). Default 1.
        bias: learn an additive bias per output channel (default True).
        padding_mode: "zeros" (default), "reflect", "replicate" or "circular".

    Shape:
        - Input: (N, C_in, H_in, W_in) or (C_in, H_in, W_in).
        - Output: (N, C_out, H_out, W_out) or (C_out, H_out, W_out), where
          H_out = floor((H_in + 2 padding[0] - dilation[0] (kernel_size[0] - 1) - 1)
          / stride[0] + 1), and W_out likewise with index 1.

    Example: ``nn.Conv2d(3, 16, 3, padding=1)(x)`` maps (8, 3, 32, 32) to (8, 16, 32, 32).
    """
    _nd = 2


class Conv1d(_Conv):
    """1-D convolution (cross-correlation, as PyTorch), over a batch of sequences.

        out(N_i, C_out_j) = bias(C_out_j) + sum over k < C_in / groups of
                            weight(C_out_j, k) * input(N_i, k + g C_in / groups)

    with * the 1-D cross-correlation and g the group of channel j. Weight (C_out, C_in / groups,
    K), bias (C_out,). Computed by F.conv1d (as a 2-D convolution of height 1).

    Args:
        in_channels: C_in, channels of the input.
        out_channels: C_out, channels of the output (number of filters).
        kernel_size: the filter's size, an int or a tuple of 1 ints.
        stride: step between windows (default 1).
        padding: implicit padding on every side: an int, a tuple of 1 ints, or "valid" (none)
            / "same" (output as large as the input; stride 1 only). Default 0.
        dilation: spacing between the filter's taps (default 1).
        groups: split the channels into this many independent convolutions; in_channels and
            out_channels must both be divisible by it (groups = C_in: depthwise). Default 1.
        bias: learn an additive bias per output channel (default True).
        padding_mode: "zeros" (default), "reflect", "replicate" or "circular".

    Shape:
        - Input: (N, C_in, L_in) or (C_in, L_in).
        - Output: (N, C_out, L_out) or (C_out, L_out), where
          L_out = floor((L_in + 2 padding - dilation (kernel_size - 1) - 1) / stride + 1).
    """
    _nd = 1


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple, got "
                             f"{padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def _output_padding(self, input, output_size):
        """output_padding that yields `output_size` (the last nd entries count)."""
        if output_size is None:
            return self.output_padding
        nd, name = self._nd, type(self).__name__
        output_size = tuple(output_size)[-nd:]
        if len(output_size) != nd:
            raise ValueError(f"{name}: output_size must have {nd} or {nd + 2} elements, got "
                             f"{len(output_size)}")
        sizes = tuple(input._data.shape[-nd:])
        low = _F.transposed_sizes(sizes, self.kernel_size, self.stride, self.padding,
                                  self.dilation)
        high = tuple(n + s - 1 for n, s in zip(low, self.stride))
        if any(not lo <= o <= hi for o, lo, hi in zip(output_size, low, high)):
            raise ValueError(f"{name}: requested an output size of {output_size}, but valid "
                             f"sizes range from {low} to {high} (for an input of {sizes})")
        return tuple(o - lo for o, lo in zip(output_size, low))

    def forward(self, input, output_size=None):
        name = type(self).__name__
        _F._check_tensors(input, self.weight, self.bias, self._nd, name)
        out_pad = self._output_padding(input, output_size)
        return _F._conv_transpose(input, self.weight, self.bias, self.stride, self.padding,
                                  out_pad, self.groups, self.dilation, self._nd, name)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution: the gradient of Conv2d with respect to its
    input (sometimes called a "deconvolution"); each input pixel scatters a weighted copy of the
    filter into the output, with steps of `stride`.

    The weight has shape (C_in, C_out / groups, kH, kW), the bias (C_out,).
    ``forward(input, output_size=None)``: with `output_size`, the output_padding that gives that
    size is chosen (the size must be reachable).

    Args:
        in_channels: C_in, channels of the input.
        out_channels: C_out, channels of the output.
        kernel_size: the filter's size, an int or a tuple of 2 ints.
        stride: step of the scatter on the output (default 1).
        padding: dilation * (kernel_size - 1) - padding zeros are added on both sides of the
            input in the equivalent convolution, i.e. the output is cropped by `padding`
            (default 0).
        output_padding: extra size added on one side of the output, to pick among the sizes
            that map to one input size when stride > 1 (default 0).
        groups: independent groups of channels (default 1).
        bias: learn an additive bias per output channel (default True).
        dilation: spacing between the filter's taps (default 1).
        padding_mode: only "zeros".

    Shape:
        - Input: (N, C_in, H_in, W_in) or (C_in, H_in, W_in).
        - Output: (N, C_out, H_out, W_out) or (C_out, H_out, W_out), where
          H_out = (H_in - 1) stride[0] - 2 padding[0] + dilation[0] (kernel_size[0] - 1)
          + output_padding[0] + 1, and W_out likewise with index 1.
    """
    _nd = 2


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution: the gradient of Conv1d with respect to its
    input; each input position scatters a weighted copy of the filter into the output, with steps
    of `stride`. Weight (C_in, C_out / groups, K), bias (C_out,). ``forward(input,
    output_size=None)`` picks output_padding for a requested size.

    Args:
        in_channels: C_in, channels of the input.
        out_channels: C_out, channels of the output.
        kernel_size: the filter's size, an int or a tuple of 1 ints.
        stride: step of the scatter on the output (default 1).
        padding: dilation * (kernel_size - 1) - padding zeros are added on both sides of the
            input in the equivalent convolution, i.e. the output is cropped by `padding`
            (default 0).
        output_padding: extra size added on one side of the output, to pick among the sizes
            that map to one input size when stride > 1 (default 0).
        groups: independent groups of channels (default 1).
        bias: learn an additive bias per output channel (default True).
        dilation: spacing between the filter's taps (default 1).
        padding_mode: only "zeros".

    Shape:
        - Input: (N, C_in, L_in) or (C_in, L_in).
        - Output: (N, C_out, L_out) or (C_out, L_out), where
          L_out = (L_in - 1) stride - 2 padding + dilation (kernel_size - 1)
          + output_padding + 1.
    """
    _nd = 1
