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
    """Max over kh x kw windows of (N, C, H, W) or (C, H, W) inputs (see F.max_pool2d)."""
    _nd = 2


class MaxPool1d(_MaxPoolNd):
    """Max over windows of (N, C, L) or (C, L) inputs (see F.max_pool1d)."""
    _nd = 1


class AvgPool2d(Module):
    """Average over kh x kw windows of (N, C, H, W) or (C, H, W) inputs (see F.avg_pool2d)."""

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
    """Average over windows of (N, C, L) or (C, L) inputs (see F.avg_pool1d)."""

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
    """Average of each of output_size cells of (N, C, H, W) or (C, H, W) inputs
    (see F.adaptive_avg_pool2d); AdaptiveAvgPool2d(1) is global average pooling."""
    _nd = 2


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average of each of output_size cells of (N, C, L) or (C, L) inputs."""
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
    """Maximum of each of output_size cells of (N, C, H, W) or (C, H, W) inputs
    (see F.adaptive_max_pool2d)."""
    _nd = 2


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Maximum of each of output_size cells of (N, C, L) or (C, L) inputs."""
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
    """Scatter (N, C, H, W) or (C, H, W) maxima back to the positions MaxPool2d(...,
    return_indices=True) took them from, zeros elsewhere (see F.max_unpool2d);
    call it as ``unpool(output, indices, output_size=None)``."""
    _nd = 2


class MaxUnpool1d(_MaxUnpoolNd):
    """Scatter (N, C, L) or (C, L) maxima back to their positions (see F.max_unpool1d)."""
    _nd = 1
