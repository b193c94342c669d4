"""Memory layouts: which strides a copy gets (``clone()``'s memory_format).

PyTorch's ``preserve_format`` (the default of clone, empty_like, ...) keeps the input's layout:

* a *non-overlapping and dense* input (its elements fill a block of memory exactly once, in any
  dim order: a transposed or permuted contiguous tensor) keeps its strides exactly;
* any other input (a strided slice, an expanded view) gets dense strides in the *order* of its
  own strides: dims are sorted by stride (a stable insertion sort, ties broken by size, stride-0
  dims left where they are), the fastest dim gets stride 1 and each next one the product of the
  sizes before it.

``contiguous_format`` is row-major; ``channels_last`` (4-D) / ``channels_last_3d`` (5-D) store
the channel dim (1) fastest: N, H, W, C order.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = []


def c_strides(shape):
    """Row-major strides (in elements) of `shape`."""
    out, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def element_strides(arr):
    return tuple(s // arr.itemsize for s in arr.strides)


def non_overlapping_and_dense(shape, strides):
    """Whether a tensor of `shape`/`strides` covers a dense block with each element once."""
    if len(shape) == 0:
        return True
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: strides[d])
    expected = 1
    for d in dims:
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def dense_strides_like(shape, strides):
    """Dense strides whose dim order follows `strides` (see the module docstring)."""
    n = len(shape)
    perm = list(range(n - 1, -1, -1))          # fastest dim first, as for a contiguous tensor

    def should_swap(d0, d1):
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return 1 if s0 > s1 else -1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out, acc = [0] * n, 1
    for d in perm:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def preserve_strides(arr):
    """The strides (in elements) PyTorch's preserve_format gives a copy of `arr`."""
    shape, strides = arr.shape, element_strides(arr)
    if non_overlapping_and_dense(shape, strides):
        return strides
    return dense_strides_like(shape, strides)


def channels_last_strides(shape):
    """N, spatial..., C order: dim 1 fastest, then the last dims, then the batch dim."""
    order = [1] + list(range(len(shape) - 1, 1, -1)) + [0]     # fastest first
    out, acc = [0] * len(shape), 1
    for d in order:
        out[d] = acc
        acc *= max(shape[d], 1)
    return tuple(out)


def empty_strided(shape, strides, dtype):
    """A new array of `shape` with the given element `strides` (a dense layout)."""
    if strides == c_strides(shape) or 0 in shape:
        return np.empty(shape, dtype)
    buf = np.empty(int(np.prod(shape, dtype=np.int64)), dtype)
    item = buf.itemsize
    return as_strided(buf, shape, tuple(s * item for s in strides))


def copy_with_strides(arr, strides):
    """A copy of `arr` laid out with element `strides`."""
    if strides == c_strides(arr.shape):
        return np.array(arr, copy=True, order="C")
    out = empty_strided(arr.shape, strides, arr.dtype)
    out[...] = arr
    return out


def layout_copy(arr, memory_format=None):
    """clone()'s copy: `memory_format` None/"preserve", "contiguous", "channels_last"."""
    name = getattr(memory_format, "name", memory_format)
    if name in (None, "preserve_format"):
        if arr.flags.c_contiguous and element_strides(arr) == c_strides(arr.shape):
            return arr.copy()
        return copy_with_strides(arr, preserve_strides(arr))
    if name in ("channels_last", "channels_last_3d"):
        return copy_with_strides(arr, channels_last_strides(arr.shape))
    return np.array(arr, copy=True, order="C")
