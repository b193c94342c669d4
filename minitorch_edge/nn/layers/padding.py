"""Padding layers: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and CircularPad, each in
1-D, 2-D and 3-D, as Modules over ``F.pad`` (nn/functional/padding.py, where the modes are
explained).

An N-d layer pads the last N dims of a (C, *spatial) or (B, C, *spatial) input. ``padding`` is
an int (the same amount on every side) or a tuple (left, right[, top, bottom[, front, back]]),
last dim first, as F.pad takes it; negative amounts crop. The layers hold no parameters; like
PyTorch they store ``padding`` as a tuple (and ``value``), which ``extra_repr`` prints.
"""
import operator

from ..functional.padding import pad
from ..module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _ntuple(padding, n, layer):
    """An int -> n copies; a sequence is kept as given (as PyTorch's _ntuple)."""
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    try:
        return (operator.index(padding),) * n
    except TypeError:
        raise TypeError(f"{layer}: padding must be an int or a tuple of {n} ints, got "
                        f"{padding!r}") from None


class _PadNd(Module):
    """Pads the last `_nd` dims in `_mode`."""
    _nd = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._nd, type(self).__name__)

    def _check_input_dim(self, input):
        """Reflection and replication take (C, *spatial) or (B, C, *spatial) inputs, where
        `spatial` has len(padding) // 2 dims (NotImplementedError otherwise, as F.pad in
        PyTorch)."""
        k = len(self.padding) // 2
        if input.dim() not in (k + 1, k + 2):
            raise NotImplementedError(
                f"{type(self).__name__}: padding size {len(self.padding)} is not supported for "
                f"{input.dim()}D input tensor of shape {tuple(input.shape)}; it pads {k} dim(s) "
                f"of a {k + 1}D (unbatched) or {k + 2}D (batched) input")

    def forward(self, input):
        self._check_input_dim(input)
        return pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


# ---- constant -----------------------------------------------------------------------------------
class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last 1 dim (W) with `value`.

    Args:
        padding: an int (the same on every side) or a 2-tuple (left, right).
        value: the fill value.

    Shape:
        - Input: (*, W_in).
        - Output: the same leading dims, W_out = W_in + left + right.
    """
    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims (H, W) with `value`.

    Args:
        padding: an int (the same on every side) or a 4-tuple (left, right, top, bottom).
        value: the fill value.

    Shape:
        - Input: (*, H_in, W_in).
        - Output: the same leading dims, H_out = H_in + top + bottom, W_out = W_in + left +
          right.
    """
    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims (D, H, W) with `value`.

    Args:
        padding: an int (the same on every side) or a 6-tuple
            (left, right, top, bottom, front, back).
        value: the fill value.

    Shape:
        - Input: (*, D_in, H_in, W_in).
        - Output: the same leading dims, D_out = D_in + front + back, H_out = H_in + top +
          bottom, W_out = W_in + left + right.
    """
    _nd = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last 1 dim (W) with zeros.

    Args:
        padding: an int (the same on every side) or a 2-tuple (left, right).

    Shape:
        - Input: (*, W_in).
        - Output: the same leading dims, W_out = W_in + left + right.
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims (H, W) with zeros.

    Args:
        padding: an int (the same on every side) or a 4-tuple (left, right, top, bottom).

    Shape:
        - Input: (*, H_in, W_in).
        - Output: the same leading dims, H_out = H_in + top + bottom, W_out = W_in + left +
          right.
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims (D, H, W) with zeros.

    Args:
        padding: an int (the same on every side) or a 6-tuple
            (left, right, top, bottom, front, back).

    Shape:
        - Input: (*, D_in, H_in, W_in).
        - Output: the same leading dims, D_out = D_in + front + back, H_out = H_in + top +
          bottom, W_out = W_in + left + right.
    """

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


# ---- reflection and replication -----------------------------------------------------------------
class ReflectionPad1d(_PadNd):
    """Pads the last 1 dim (W) by mirroring at the edge (the edge not repeated: [1 2 3] padded by 2
    on the left gives [3 2 1 2 3]).

    Args:
        padding: an int (the same on every side) or a 2-tuple (left, right).

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: the same leading dims, W_out = W_in + left + right.
    """
    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims (H, W) by mirroring at the edge (the edge not repeated: [1 2 3] padded
    by 2 on the left gives [3 2 1 2 3]).

    Args:
        padding: an int (the same on every side) or a 4-tuple (left, right, top, bottom).

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: the same leading dims, H_out = H_in + top + bottom, W_out = W_in + left +
          right.
    """
    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims (D, H, W) by mirroring at the edge (the edge not repeated: [1 2 3]
    padded by 2 on the left gives [3 2 1 2 3]).

    Args:
        padding: an int (the same on every side) or a 6-tuple
            (left, right, top, bottom, front, back).

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: the same leading dims, D_out = D_in + front + back, H_out = H_in + top +
          bottom, W_out = W_in + left + right.
    """
    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last 1 dim (W) by repeating the edge value ([1 2 3] padded by 2 on the left gives
    [1 1 1 2 3]).

    Args:
        padding: an int (the same on every side) or a 2-tuple (left, right).

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: the same leading dims, W_out = W_in + left + right.
    """
    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims (H, W) by repeating the edge value ([1 2 3] padded by 2 on the left
    gives [1 1 1 2 3]).

    Args:
        padding: an int (the same on every side) or a 4-tuple (left, right, top, bottom).

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: the same leading dims, H_out = H_in + top + bottom, W_out = W_in + left +
          right.
    """
    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims (D, H, W) by repeating the edge value ([1 2 3] padded by 2 on the left
    gives [1 1 1 2 3]).

    Args:
        padding: an int (the same on every side) or a 6-tuple
            (left, right, top, bottom, front, back).

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: the same leading dims, D_out = D_in + front + back, H_out = H_in + top +
          bottom, W_out = W_in + left + right.
    """
    _nd, _mode = 3, "replicate"


# ---- circular -----------------------------------------------------------------------------------
class _CircularPadNd(_PadNd):
    _mode = "circular"

    def _check_input_dim(self, input):
        lo, hi = self._nd + 1, self._nd + 2
        if input.dim() not in (lo, hi):
            raise ValueError(f"expected {lo}D or {hi}D input (got {input.dim()}D input) in "
                             f"{type(self).__name__}, shape {tuple(input.shape)}")


class CircularPad1d(_CircularPadNd):
    """Pads the last 1 dim (W) by wrapping around ([1 2 3] padded by 2 on the left gives [2 3 1 2
    3]).

    Args:
        padding: an int (the same on every side) or a 2-tuple (left, right).

    Shape:
        - Input: (C, W_in) or (N, C, W_in).
        - Output: the same leading dims, W_out = W_in + left + right.
    """
    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims (H, W) by wrapping around ([1 2 3] padded by 2 on the left gives [2 3 1
    2 3]).

    Args:
        padding: an int (the same on every side) or a 4-tuple (left, right, top, bottom).

    Shape:
        - Input: (C, H_in, W_in) or (N, C, H_in, W_in).
        - Output: the same leading dims, H_out = H_in + top + bottom, W_out = W_in + left +
          right.
    """
    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims (D, H, W) by wrapping around ([1 2 3] padded by 2 on the left gives [2
    3 1 2 3]).

    Args:
        padding: an int (the same on every side) or a 6-tuple
            (left, right, top, bottom, front, back).

    Shape:
        - Input: (C, D_in, H_in, W_in) or (N, C, D_in, H_in, W_in).
        - Output: the same leading dims, D_out = D_in + front + back, H_out = H_in + top +
          bottom, W_out = W_in + left + right.
    """
    _nd = 3
