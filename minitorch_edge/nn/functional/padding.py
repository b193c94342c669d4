"""Padding: ``pad(input, pad, mode, value)``, PyTorch's F.pad, for every mode.

``pad`` lists (left, right) amounts for the last dims, last dim first:
``(left_W, right_W, left_H, right_H, ...)``. A negative amount crops. Along one padded dim of
size n, output position i (0 <= i < n + left + right) reads input position j = i - left, taken
back into the input by the mode:

* constant: positions outside [0, n) hold `value` (0 by default);
* reflect: mirror at the edges without repeating them, j -> |j|, then 2(n - 1) - j past the
  end (… 2 1 | 0 1 2 3 | 2 1 …); each amount must be less than n;
* replicate: clamp to the edge, j -> min(max(j, 0), n - 1) (… 0 0 | 0 1 2 3 | 3 3 …);
* circular: wrap around. As in PyTorch, the input is first cropped by the negative amounts and
  the positive ones wrap around what is left (c elements), j -> j mod c, so no amount may
  exceed c.

reflect, replicate and circular are one gather per padded dim at those constant positions
(`Reindex`); the gradient scatter-adds back (positions read several times add up), and is
itself a gather, so double backward works. constant mode is `ops.rearrange.pad`.

Differs from PyTorch: the non-constant modes accept any number of padded dims on any input
rank (PyTorch: 1 to 3 padded dims on an input with one or two more dims); circular mode raises
where PyTorch would read uninitialised memory (a pad wider than the cropped dim).
"""
import operator

import numpy as np

from ... import _autocast
from ...ops import rearrange as _R
from ...ops._util import shape_str
from ...ops.elementwise import Clone
from ...ops.rearrange import Reindex

__all__ = ["pad"]

MODES = ("constant", "reflect", "replicate", "circular")


def _amounts(pad, shape):
    """The pad sequence as (left, right) per dim of `shape` (0, 0 for dims not padded)."""
    try:
        pads = tuple(operator.index(p) for p in pad)
    except TypeError:
        raise TypeError(f"pad(): pad must be a sequence of ints, got {tuple(pad)!r}") from None
    if len(pads) % 2:
        raise RuntimeError(f"pad(): Padding length must be divisible by 2, got {list(pads)}")
    if len(pads) // 2 > len(shape):
        raise RuntimeError(f"pad(): Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pads)} and input of "
                           f"dimension {len(shape)} (shape {shape_str(shape)})")
    lr = [(0, 0)] * len(shape)
    for k in range(len(pads) // 2):
        lr[len(shape) - 1 - k] = (pads[2 * k], pads[2 * k + 1])
    return lr


def _positions(n, left, right, mode, d, shape):
    """For one dim of size n padded by (left, right): the input position each output position
    reads (an int64 array of length n + left + right); RuntimeError where the mode cannot."""
    out = n + left + right
    if mode == "circular":
        lo, hi = max(-left, 0), n - max(-right, 0)    # the part negative amounts keep
        c = hi - lo
        if left > n or right > n:
            raise RuntimeError(f"pad(): Padding value causes wrapping around more than once: "
                               f"padding ({left}, {right}) at dimension {d} of input "
                               f"{list(shape)}; in circular mode each pad can be at most the "
                               f"size of the dimension")
        if out < 0:
            raise RuntimeError(f"pad(): Negative padding value is resulting in an empty "
                               f"dimension: padding ({left}, {right}) at dimension {d} of input "
                               f"{list(shape)}")
        if out == 0:                                  # (PyTorch raises for some of these)
            return np.zeros(0, np.int64)
        if max(left, 0) > c or max(right, 0) > c:
            raise RuntimeError(f"pad(): Padding value causes wrapping around more than once: "
                               f"padding ({left}, {right}) at dimension {d} of input "
                               f"{list(shape)} wraps around {c} element(s); in circular mode "
                               f"each pad can be at most the size of the (cropped) dimension")
        return lo + np.arange(-max(left, 0), c + max(right, 0)) % max(c, 1)
    if mode == "reflect" and (left >= n or right >= n):
        raise RuntimeError(f"pad(): Padding size should be less than the corresponding input "
                           f"dimension, but got: padding ({left}, {right}) at dimension {d} of "
                           f"input {list(shape)} (reflect mode mirrors inside the input: each "
                           f"pad can be at most {n - 1} there)")
    if out < 1 or n < 1:
        raise RuntimeError(f"pad(): input (size {n} at dimension {d}) is too small. Calculated "
                           f"output size: {out}; {mode} mode needs a non-empty input and output "
                           f"(check the negative padding)")
    j = np.arange(-left, n + right)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    j = np.abs(j)
    return np.where(j >= n, 2 * (n - 1) - j, j)


def pad(input, pad, mode="constant", value=None):
    """Pad (or, with negative amounts, crop) the last len(pad) // 2 dims of `input`; pad =
    (left_last, right_last, left_2nd_last, ...). Modes: constant (fill `value`, default 0),
    reflect (mirror, edge not repeated), replicate (repeat the edge), circular (wrap around);
    see the module docstring for the positions each reads. Gradient: dy summed back onto the
    input position each output element read (zero for constant fill)."""
    if mode not in MODES:
        raise NotImplementedError(f"pad(): Unrecognised padding mode {mode}; use one of "
                                  f"{', '.join(MODES)}")
    if mode == "constant":
        return _R.pad(input, pad, mode, value)
    if _autocast.State.active is not None and mode in ("reflect", "replicate"):
        # the ATen op PyTorch runs (reflection_pad2d, ...) decides autocast's policy
        op = f"{'reflection' if mode == 'reflect' else 'replication'}_pad{len(pad) // 2}d"
        return _autocast.call_as(op, _pad_by_index, input, pad, mode, value)
    return _pad_by_index(input, pad, mode, value)


def _pad_by_index(input, pad, mode, value):
    """pad() for the modes that read input positions (reflect, replicate, circular)."""
    shape = tuple(input._data.shape)
    lr = _amounts(pad, shape)
    if value is not None and value != 0:
        raise RuntimeError(f"pad(): Padding mode \"{mode}\" doesn't take in value argument "
                           f"(got value={value}); only constant mode fills with a value")
    plans = [(d, _positions(n, l, r, mode, d, shape))
             for d, ((l, r), n) in enumerate(zip(lr, shape)) if l or r]
    out = input
    for d, index in plans:
        out = Reindex.apply(out, d, index)
    return out if plans else Clone.apply(input)
