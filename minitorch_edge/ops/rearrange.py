"""Ops that rearrange elements into a new tensor (always a copy): flip/rot90/roll, pad,
repeat_interleave, tril/triu, diag/diag_embed.

Each is a linear map of the input, so each backward is the adjoint map applied to the gradient:
flip and roll undo themselves, tril keeps the same triangle, a gather of slices along a dim
(`Reindex`, used by repeat_interleave and the reflect/replicate/circular pads) becomes a
scatter-add of them (`ReindexBackward`) and back, and the constant pad is undone by slicing.
"""
import operator

import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import int_tuple, norm_dim, norm_dims, shape_str, tensor_method
from ._views import DiagEmbed, Diagonal, Embed, Slice, View
from .elementwise import Clone
from .shape import _diag_dims, _shape_args, transpose

__all__ = ["flip", "fliplr", "flipud", "rot90", "roll", "pad", "repeat_interleave", "tril",
           "triu", "diag", "diag_embed"]


class Flip(Function):
    """y = x reversed along `dims` (a copy, as PyTorch).  dx = dy flipped back."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dims):
        if ctx.needs_input_grad:
            ctx.dims = dims
        return np.flip(a._data, dims).copy()

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, ctx.dims), None


class Roll(Function):
    """y = x shifted cyclically by `shifts` along `dims` (dims None: over the flattened tensor).
    dx = dy rolled back by -shifts."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, shifts, dims):
        if ctx.needs_input_grad:
            ctx.info = (shifts, dims)
        return np.roll(a._data, shifts, dims)

    @staticmethod
    def backward(ctx, grad):
        shifts, dims = ctx.info
        return Roll.apply(grad, tuple(-s for s in shifts), dims), None, None


class Reindex(Function):
    """y = x gathered along `dim` at the constant positions `index` (y.shape[dim] = len(index);
    np.take).  dx = dy scatter-added back to those positions (ReindexBackward)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index):
        if ctx.needs_input_grad:
            ctx.info = (dim, index, a._data.shape[dim])
        return np.take(a._data, index, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        dim, index, n = ctx.info
        return ReindexBackward.apply(grad, dim, index, n), None, None


class ReindexBackward(Function):
    """The adjoint of Reindex: y = zeros with n slots along `dim`; y[index[j]] += x[j] along
    dim.  dx = Reindex(dy)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, dim, index, n):
        if ctx.needs_input_grad:
            ctx.info = (dim, index)
        x = a._data
        out = np.zeros(x.shape[:dim] + (n,) + x.shape[dim + 1:], x.dtype)
        np.add.at(np.moveaxis(out, dim, 0), index, np.moveaxis(x, dim, 0))
        return out

    @staticmethod
    def backward(ctx, grad):
        dim, index = ctx.info
        return Reindex.apply(grad, dim, index), None, None, None


class ConstantPadNd(Function):
    """y = full(shape, value) with y[dst] = x[src] (src crops where pads are negative).
    dx = dy[dst] placed at src in zeros of x's shape."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, shape, src, dst, value):
        x = a._data
        if ctx.needs_input_grad:
            ctx.info = (x.shape, src, dst)
        out = np.full(shape, value, x.dtype)
        out[dst] = x[src]
        return out

    @staticmethod
    def backward(ctx, grad):
        in_shape, src, dst = ctx.info
        g = Slice.apply(grad, dst)
        if g._data.shape != in_shape:
            g = Embed.apply(g, in_shape, src)
        return g, None, None, None, None


class Tril(Function):
    """y = x with the elements above diagonal k zeroed.  dx = the same triangle of dy."""
    _builtin = True
    _np = staticmethod(np.tril)

    @classmethod
    def forward(cls, ctx, a, k):
        if ctx.needs_input_grad:
            ctx.k = k
        return cls._np(a._data, k)

    @classmethod
    def backward(cls, ctx, grad):
        return cls.apply(grad, ctx.k), None


class Triu(Tril):
    """y = x with the elements below diagonal k zeroed.  dx = the same triangle of dy."""
    _np = staticmethod(np.triu)


# ---- flips, rotations, rolls ----------------------------------------------------------------
@tensor_method("flip")
def flip(input, *dims, **kwargs):
    """Reverse the order of elements along `dims` (a copy, as PyTorch): ``flip(0, 1)``,
    ``flip((0, 1))`` or ``flip(dims=[0, 1])``.  dx = dy flipped back."""
    if kwargs:
        if set(kwargs) != {"dims"} or dims:
            bad = ", ".join(sorted(set(kwargs) - {"dims"})) or "dims (given twice)"
            raise TypeError(f"flip() got an unexpected keyword argument {bad}")
        dims = kwargs["dims"]
        if not isinstance(dims, (tuple, list)):
            raise TypeError(f"flip(): argument 'dims' must be tuple of ints, not "
                            f"{type(dims).__name__}")
        dims = (tuple(dims),)
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    dims = _shape_args(dims)
    return Flip.apply(input, norm_dims(dims, input._data.ndim, "flip"))


@tensor_method("fliplr")
def fliplr(input):
    if input._data.ndim < 2:
        raise RuntimeError(f"fliplr(): input must be >= 2-d, got shape {tuple(input.shape)}")
    return Flip.apply(input, (1,))


@tensor_method("flipud")
def flipud(input):
    if input._data.ndim < 1:
        raise RuntimeError("flipud(): input must be >= 1-d, got a 0-d tensor")
    return Flip.apply(input, (0,))


@tensor_method("rot90")
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of `dims`, from dims[0] towards dims[1]."""
    n = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"rot90(): expected total rotation dims == 2, but got dims = "
                           f"{len(dims)}")
    if n < 2:
        raise RuntimeError(f"rot90(): expected total dims >= 2, but got total dims = {n}")
    d0, d1 = (norm_dim(d, n, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90(): expected rotation dims to be different, but got dim0 = "
                           f"{dims[0]} and dim1 = {dims[1]}")
    k = operator.index(k) % 4
    if k == 1:
        return transpose(Flip.apply(input, (d1,)), d0, d1)
    if k == 2:
        return Flip.apply(input, (d0, d1))
    if k == 3:
        return transpose(Flip.apply(input, (d0,)), d0, d1)
    return Flip.apply(input, ())


@tensor_method("roll")
def roll(input, shifts, dims=None):
    """Shift elements cyclically by shifts[i] along dims[i]; with dims=None the tensor is
    flattened, rolled and given its shape back."""
    shifts = int_tuple((shifts,) if not isinstance(shifts, (tuple, list)) else shifts, "roll",
                       "shifts")
    n = input._data.ndim
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll(): with dims=None shifts must be a single int, got "
                               f"{list(shifts)}")
        return Roll.apply(input, shifts, None)
    dims = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims: {len(dims)}")
    dims = tuple(norm_dim(d, n, "roll") for d in dims)
    return Roll.apply(input, shifts, dims) if n else Clone.apply(input)


# ---- padding --------------------------------------------------------------------------------
def _pad_index(n, left, right, mode):
    """Source positions for the output of padding a dim of size n by (left, right) >= 0."""
    p = np.arange(-left, n + right)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"pad(): padding size should be less than the corresponding input "
                               f"dimension in 'reflect' mode, but got padding ({left}, {right}) "
                               f"for a dim of size {n}")
        p = np.abs(p)
        return np.where(p >= n, 2 * (n - 1) - p, p)
    if n == 0:
        raise RuntimeError(f"pad(): cannot pad an empty dim in '{mode}' mode")
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    if left > n or right > n:
        raise RuntimeError(f"pad(): padding ({left}, {right}) for a dim of size {n} in 'circular' "
                           f"mode wraps around more than once")
    return p % n


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad)//2 dims: pad = (left_last, right_last, left_2nd_last, ...), as
    torch.nn.functional.pad. Negative pads crop. Modes: 'constant' (with `value`, default 0),
    'reflect' (mirror without repeating the edge), 'replicate' (repeat the edge), 'circular'
    (wrap around). Unlike PyTorch, the non-constant modes accept any number of padded dims."""
    shape = input._data.shape
    pads = int_tuple(pad, "pad", "pad")
    if len(pads) % 2:
        raise RuntimeError(f"pad(): padding length must be divisible by 2, got {list(pads)}")
    if len(pads) // 2 > len(shape):
        raise RuntimeError(f"pad(): padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pads)} and input of "
                           f"shape {shape_str(shape)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad(): unrecognised padding mode {mode!r}; use 'constant', "
                                  f"'reflect', 'replicate' or 'circular'")
    if mode != "constant" and value is not None:
        raise RuntimeError(f"pad(): padding mode \"{mode}\" doesn't take in value argument")
    nd = len(shape)
    lr = [(0, 0)] * nd                       # (left, right) per dim; pads list the last dim first
    for k in range(len(pads) // 2):
        lr[nd - 1 - k] = (pads[2 * k], pads[2 * k + 1])
    for d, ((l, r), s) in enumerate(zip(lr, shape)):
        if s + min(l, 0) + min(r, 0) < 0 or s + l + r < 0:
            raise RuntimeError(f"pad(): the input size {s}, plus negative padding {l} and {r} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of the input (shape {shape_str(shape)}).")
    # negative pads crop: `src` is the part of the input that is kept
    src = tuple(slice(max(-l, 0), s - max(-r, 0)) for (l, r), s in zip(lr, shape))
    if mode == "constant":
        out_shape = tuple(s + l + r for (l, r), s in zip(lr, shape))
        dst = tuple(slice(max(l, 0), max(l, 0) + c.stop - c.start) for (l, _), c in zip(lr, src))
        return ConstantPadNd.apply(input, out_shape, src, dst, 0 if value is None else value)
    out = Slice.apply(input, src) if any(l < 0 or r < 0 for l, r in lr) else input
    copied = False                          # crop first (a view), then pad (copies)
    for d, (l, r) in enumerate(lr):
        if l > 0 or r > 0:
            index = _pad_index(out._data.shape[d], max(l, 0), max(r, 0), mode)
            out, copied = Reindex.apply(out, d, index), True
    return out if copied else Clone.apply(out)


# ---- repeat_interleave ----------------------------------------------------------------------
@tensor_method("repeat_interleave")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element `repeats` times (an int, or one count per element along `dim`),
    consecutively: [a, b] -> [a, a, b, b]. dim=None works on the flattened tensor.
    repeat_interleave(counts) alone gives arange(len(counts)) repeated by counts."""
    if repeats is None:
        counts = input._data
        if counts.ndim != 1 or counts.dtype.kind not in "iu":
            raise RuntimeError("repeat_interleave(repeats): repeats must be a 1-D integer tensor")
        return Tensor._make(np.repeat(np.arange(counts.size, dtype=np.int64), counts))
    if dim is None:
        input, d = View.apply(input, (input._data.size,)), 0
    else:
        d = norm_dim(dim, input._data.ndim, "repeat_interleave")
    n = input._data.shape[d] if input._data.ndim else 1
    if input._data.ndim == 0:
        input = View.apply(input, (1,))
    if isinstance(repeats, Tensor):
        reps = repeats._data.reshape(-1) if repeats._data.ndim <= 1 else None
        if reps is None or reps.dtype.kind not in "iu":
            raise RuntimeError(f"repeat_interleave(): repeats must be an int or a 0-d/1-D integer "
                               f"tensor, got {repeats.dtype} of shape {shape_str(repeats.shape)}")
        if reps.size not in (1, n):
            raise RuntimeError(f"repeat_interleave(): repeats must have the same size as input "
                               f"along dim {d}, but got {reps.size} repeats and input.size({d}) = "
                               f"{n}")
    else:
        reps = np.array([operator.index(repeats)], np.int64)
    if (reps < 0).any():
        raise RuntimeError(f"repeat_interleave(): repeats can not be negative, got {reps.tolist()}")
    index = np.repeat(np.arange(n), np.broadcast_to(reps, (n,)))
    return Reindex.apply(input, d, index)


# ---- triangles and diagonals ----------------------------------------------------------------
def _tri(input, diagonal, upper):
    if input._data.ndim < 2:
        raise RuntimeError(f"{'triu' if upper else 'tril'}(): input tensor must have at least 2 "
                           f"dimensions, got shape {shape_str(input._data.shape)}")
    return (Triu if upper else Tril).apply(input, operator.index(diagonal))


@tensor_method("tril")
def tril(input, diagonal=0):
    """Keep the lower triangle of the last two dims: x[..., i, j] for j <= i + diagonal."""
    return _tri(input, diagonal, False)


@tensor_method("triu")
def triu(input, diagonal=0):
    """Keep the upper triangle of the last two dims: x[..., i, j] for j >= i + diagonal."""
    return _tri(input, diagonal, True)


@tensor_method("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor of zeros whose diagonal (offset, dim1, dim2) holds input's last dim."""
    shape = input._data.shape
    if not shape:
        raise RuntimeError("diag_embed(): expected a tensor with at least 1 dim, got a 0-d one")
    n = len(shape) + 1
    d1, d2 = _diag_dims(n, dim1, dim2, "diag_embed")
    offset = operator.index(offset)
    size = shape[-1] + abs(offset)
    rest = iter(shape[:-1])
    out_shape = tuple(size if i in (d1, d2) else next(rest) for i in range(n))
    return DiagEmbed.apply(input, out_shape, offset, d1, d2)


@tensor_method("diag")
def diag(input, diagonal=0):
    """1-D v -> the square matrix with v on diagonal `diagonal`; 2-D -> that diagonal (a copy)."""
    n = input._data.ndim
    k = operator.index(diagonal)
    if n == 1:
        size = input._data.shape[0] + abs(k)
        return DiagEmbed.apply(input, (size, size), k, 0, 1)
    if n == 2:
        return Clone.apply(Diagonal.apply(input, k, 0, 1))
    raise RuntimeError(f"diag(): supports 1D or 2D tensors, got shape {tuple(input._data.shape)} "
                       f"({n}D); use diagonal() or diag_embed() for batches")
