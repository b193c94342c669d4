"""Pooling layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d, and
MaxUnpool1d/2d (the partial inverse of max pooling, fed the pooling's indices).

They hold no parameters: each stores its arguments (as PyTorch does, so ``extra_repr`` prints
them the same way) and calls the function of the same name in nn/functional/pooling.py, where
the math is. Error messages name the layer.
"""
from ..functional import pooling as _F
from ..module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxUnpool1d",
           "MaxUnpool2d"]


class _MaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return _F._max_pool(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices, self._nd, type(self).__name__)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    """Max over sliding kH x kW windows of each channel:

        out(N_i, C_j, h, w) = max over m < kH, n < kW of
                              input(N_i, C_j, stride[0] h + dilation[0] m,
                                    stride[1] w + dilation[1] n)

    Args:
        kernel_size: the window's size, an int or a tuple of 2 ints.
        stride: step between windows (default: kernel_size).
        padding: -inf padding added on every side (at most half the kernel size; default 0).
        dilation: spacing between the window's taps (default 1).
        return_indices: also return the flat index of each maximum (what MaxUnpool takes).
        ceil_mode: round the output size up instead of down (a last, partial window).

    Shape:
        - Input: (N, C, H_in, W_in) or (C, H_in, W_in).
        - Output: (N, C, H_out, W_out) or (C, H_out, W_out), where
          H_out = floor((H_in + 2 padding[0] - dilation[0] (kernel_size[0] - 1) - 1) / stride[0]
          + 1) (ceil with ceil_mode), W_out likewise; the indices have the output's shape.
    """
    _nd = 2


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of length K of each channel:

        out(N_i, C_j, l) = max over m < K of input(N_i, C_j, stride l + dilation m)

    Args:
        kernel_size: the window's size, an int or a tuple of 1 ints.
        stride: step between windows (default: kernel_size).
        padding: -inf padding added on every side (at most half the kernel size; default 0).
        dilation: spacing between the window's taps (default 1).
        return_indices: also return the flat index of each maximum (what MaxUnpool takes).
        ceil_mode: round the output size up instead of down (a last, partial window).

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out), where
          L_out = floor((L_in + 2 padding - dilation (kernel_size - 1) - 1) / stride + 1).
    """
    _nd = 1


class AvgPool2d(Module):
    """Mean over sliding kH x kW windows of each channel:

        out(N_i, C_j, h, w) = 1 / (kH kW) * sum over m < kH, n < kW of
                              input(N_i, C_j, stride[0] h + m, stride[1] w + n)

    Args:
        kernel_size: the window's size, an int or a tuple of 2 ints.
        stride: step between windows (default: kernel_size).
        padding: zero padding added on every side (at most half the kernel size; default 0).
        ceil_mode: round the output size up instead of down (a last, partial window).
        count_include_pad: count the padding zeros in the divisor (default True).
        divisor_override: divide every window's sum by this instead of its size.

    Shape:
        - Input: (N, C, H_in, W_in) or (C, H_in, W_in).
        - Output: (N, C, H_out, W_out) or (C, H_out, W_out), where
          H_out = floor((H_in + 2 padding[0] - kernel_size[0]) / stride[0] + 1) (ceil with
          ceil_mode), W_out likewise.
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return _F._avg_pool(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override, 2, "AvgPool2d")

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(Module):
    """Mean over sliding windows of length K of each channel:

        out(N_i, C_j, l) = 1 / K * sum over m < K of input(N_i, C_j, stride l + m)

    Args:
        kernel_size: the window's size, an int or a tuple of 1 ints.
        stride: step between windows (default: kernel_size).
        padding: zero padding added on every side (at most half the kernel size; default 0).
        ceil_mode: round the output size up instead of down (a last, partial window).
        count_include_pad: count the padding zeros in the divisor (default True).

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out), L_out = floor((L_in + 2 padding - kernel_size)
          / stride + 1).
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return _F._avg_pool(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, None, 1, "AvgPool1d")

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _single(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class _AdaptiveAvgPoolNd(Module):
    _nd = 2

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return _F._adaptive_avg(input, self.output_size, self._nd, type(self).__name__)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mean over the cells of an output_size grid laid over each channel:
    cell (i, j) of an H x W input covers rows floor(i H / H_out) .. ceil((i + 1) H / H_out) - 1
    (columns likewise), so any input size gives the requested output size.

    Args:
        output_size: (H_out, W_out), or one int for both; None in a place keeps that input size.

    Shape:
        - Input: (N, C, H_in, W_in) or (C, H_in, W_in).
        - Output: (N, C, H_out, W_out) or (C, H_out, W_out).
    """
    _nd = 2


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mean over the cells of output_size equal-as-possible segments of each
    channel: cell i of a length-L input covers floor(i L / L_out) .. ceil((i + 1) L / L_out) - 1.

    Args:
        output_size: L_out.

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out).
    """
    _nd = 1


class _AdaptiveMaxPoolNd(Module):
    _nd = 2

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return _F._adaptive_max(input, self.output_size, self.return_indices, self._nd,
                                type(self).__name__)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max over the cells of an output_size grid laid over each channel (the
    cells of AdaptiveAvgPool2d), so any input size gives the requested output size.

    Args:
        output_size: (H_out, W_out), or one int for both; None in a place keeps that input size.
        return_indices: also return the flat index of each maximum.

    Shape:
        - Input: (N, C, H_in, W_in) or (C, H_in, W_in).
        - Output: (N, C, H_out, W_out) or (C, H_out, W_out).
    """
    _nd = 2


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max over the cells of output_size equal-as-possible segments of each
    channel (the cells of AdaptiveAvgPool1d).

    Args:
        output_size: L_out.
        return_indices: also return the index of each maximum.

    Shape:
        - Input: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out).
    """
    _nd = 1


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._nd)
        self.padding = _ntuple(padding, self._nd)

    def forward(self, input, indices, output_size=None):
        return _F._max_unpool(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size, self._nd, type(self).__name__)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d: ``unpool(input, indices, output_size=None)``
    writes each value at the flat position `indices` gave (MaxPool2d(return_indices=True)) in a
    zero output; everything that was not a maximum is 0.

    Args:
        kernel_size: the pooling's window size (an int or a pair).
        stride: the pooling's stride (default: kernel_size).
        padding: the pooling's padding (default 0).

    Shape:
        - Input and indices: (N, C, H_in, W_in) or (C, H_in, W_in).
        - Output: (N, C, H_out, W_out) or (C, H_out, W_out), where
          H_out = (H_in - 1) stride[0] - 2 padding[0] + kernel_size[0] (W_out likewise), or
          `output_size`.
    """
    _nd = 2


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: ``unpool(input, indices, output_size=None)``
    writes each value at the position `indices` gave (MaxPool1d(return_indices=True)) in a zero
    output; everything that was not a maximum is 0.

    Args:
        kernel_size: the pooling's window size.
        stride: the pooling's stride (default: kernel_size).
        padding: the pooling's padding (default 0).

    Shape:
        - Input and indices: (N, C, L_in) or (C, L_in).
        - Output: (N, C, L_out) or (C, L_out), L_out = (L_in - 1) stride - 2 padding + kernel_size,
          or `output_size`.
    """
    _nd = 1
