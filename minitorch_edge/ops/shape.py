"""View ops: reshape/view, squeeze/unsqueeze, permute/transpose, expand, narrow, diagonal.
They move or repeat elements, never change them, so each backward is the inverse movement of the
gradient (reshape back, sum over the expanded dims, the inverse permutation, embed a slice into
zeros); those Functions are in _views.py, the argument handling here. Joining/splitting ops
live in join.py, copying rearrangements (flip, pad, ...) in rearrange.py.

Where PyTorch returns a view, so do we: the output's numpy array shares the input's memory and
the output shares the input's version counter (``is_view = True``). The backward of a view op is
again a shape op, so double backward works. `Slice`/`Embed` and `Diagonal`/`DiagEmbed` are
pairs of adjoint linear maps: each one's backward is the other.
"""
import operator

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor
from ._util import int_tuple, norm_dim, norm_dims, tensor_method
from ._views import Diagonal, Expand, Permute, Slice, Squeeze, Transpose, Unsqueeze, View
from .elementwise import Clone

__all__ = ["reshape", "view", "view_as", "reshape_as", "flatten", "unflatten", "ravel",
           "squeeze", "unsqueeze", "permute", "transpose", "swapaxes", "swapdims", "t",
           "movedim", "moveaxis", "expand", "expand_as", "broadcast_to", "broadcast_tensors",
           "broadcast_shapes", "contiguous", "narrow", "diagonal"]


# ---- argument helpers ---------------------------------------------------------------------------
def _shape_args(shape):
    """``f(2, 3)`` and ``f((2, 3))`` both give (2, 3)."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def _infer_shape(shape, numel, op):
    """Resolve one -1 entry so that the shape holds `numel` elements; RuntimeError otherwise."""
    shape = int_tuple(shape, op)
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}(): only one dimension can be inferred, got shape {list(shape)}")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"{op}(): invalid shape dimension {s} in shape {list(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0:
            raise RuntimeError(f"{op}(): cannot reshape tensor of {numel} elements into shape "
                               f"{list(shape)} because the unspecified dimension size -1 can be "
                               f"any value and is ambiguous")
        if numel % known:
            raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size "
                               f"{numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"{op}(): shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _check_tensor(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")


# ---- reshaping ----------------------------------------------------------------------------------
@tensor_method("reshape")
def reshape(input, *shape):
    """The same elements in a new shape (one entry may be -1). A view when the strides allow,
    otherwise a copy."""
    _check_tensor(input, "reshape")
    shape = _infer_shape(_shape_args(shape), input._data.size, "reshape")
    return View.apply(input, shape)


@tensor_method("view")
def view(input, *shape):
    """Like reshape. Differs from PyTorch: where the strides do not allow a view, PyTorch raises
    and we return a copy (as reshape does). ``view(dtype)`` reinterprets the bytes (not
    differentiable)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list)) and \
            not hasattr(shape[0], "__index__"):
        d = _dt.to_dtype(shape[0])
        if d.np == input._data.dtype:
            return View.apply(input, input._data.shape)
        return Tensor._make(input._data.view(d.np), vc=input._vc)
    _check_tensor(input, "view")
    return View.apply(input, _infer_shape(_shape_args(shape), input._data.size, "view"))


@tensor_method("view_as")
def view_as(input, other):
    return view(input, other._data.shape)


@tensor_method("reshape_as")
def reshape_as(input, other):
    return reshape(input, other._data.shape)


@tensor_method("flatten")
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one (a 0-d tensor becomes shape (1,))."""
    shape = input._data.shape
    if not shape:
        norm_dim(start_dim, 0, "flatten"), norm_dim(end_dim, 0, "flatten")
        return View.apply(input, (1,))
    s, e = norm_dim(start_dim, len(shape), "flatten"), norm_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise RuntimeError(f"flatten(): start_dim ({start_dim}) cannot come after end_dim "
                           f"({end_dim}) for a tensor of shape {tuple(shape)}")
    merged = int(np.prod(shape[s:e + 1], dtype=np.int64))
    return View.apply(input, shape[:s] + (merged,) + shape[e + 1:])


@tensor_method("unflatten")
def unflatten(input, dim, sizes):
    """Split dim into `sizes` (one of them may be -1)."""
    shape = input._data.shape
    d = norm_dim(dim, len(shape), "unflatten")
    if len(sizes) == 0:
        raise RuntimeError("unflatten(): sizes must be non-empty")
    try:
        new = _infer_shape(sizes, shape[d], "unflatten")
    except RuntimeError:
        raise RuntimeError(f"unflatten(): provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({shape[d]}) in the input tensor of shape "
                           f"{tuple(shape)}") from None
    return View.apply(input, shape[:d] + new + shape[d + 1:])


@tensor_method("ravel")
def ravel(input):
    return reshape(input, -1)


@tensor_method("squeeze")
def squeeze(input, dim=None):
    """Remove size-1 dims (all of them, or those among `dim`; other dims are left alone)."""
    shape = input._data.shape
    dims = norm_dims(dim, len(shape), "squeeze")
    return Squeeze.apply(input, tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1)))


@tensor_method("unsqueeze")
def unsqueeze(input, dim):
    """Insert a size-1 dim at position `dim` (in -ndim-1 .. ndim)."""
    shape = input._data.shape
    d = norm_dim(dim, len(shape) + 1, "unsqueeze")
    return Unsqueeze.apply(input, shape[:d] + (1,) + shape[d:])


# ---- reordering dims ----------------------------------------------------------------------------
@tensor_method("permute")
def permute(input, *dims):
    """Reorder the dims: output dim i is input dim dims[i] (a view)."""
    dims = int_tuple(_shape_args(dims), "permute", "dims")
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(): number of dims don't match: the tensor has {n} dims "
                           f"(shape {tuple(input._data.shape)}) but {len(dims)} were given "
                           f"({list(dims)})")
    perm = tuple(norm_dim(d, n, "permute") for d in dims)
    if len(set(perm)) != n:
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {list(dims)}")
    return Permute.apply(input, perm)


@tensor_method("transpose", "swapaxes", "swapdims")
def transpose(input, dim0, dim1):
    """Swap two dims (a view)."""
    n = input._data.ndim
    d0, d1 = norm_dim(dim0, n, "transpose"), norm_dim(dim1, n, "transpose")
    perm = list(range(n))
    if n:
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return Transpose.apply(input, tuple(perm))


swapaxes = swapdims = transpose


@tensor_method("t")
def t(input):
    """Transpose a matrix; 0-d and 1-D tensors come back as they are (a view)."""
    n = input._data.ndim
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but the input has shape "
                           f"{tuple(input._data.shape)} ({n}D); use transpose(dim0, dim1) or .mT")
    return Permute.apply(input, tuple(range(n))[::-1])


@tensor_method("movedim", "moveaxis")
def movedim(input, source, destination):
    """Move dims `source` to positions `destination`; the others keep their order."""
    n = input._data.ndim
    src = (source,) if not isinstance(source, (tuple, list)) else tuple(source)
    dst = (destination,) if not isinstance(destination, (tuple, list)) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim(): invalid source or destination dims: source ({list(src)}) "
                           f"should contain the same number of dims as destination "
                           f"({list(dst)})")
    src = tuple(norm_dim(d, n, "movedim") for d in src)
    dst = tuple(norm_dim(d, n, "movedim") for d in dst)
    for name, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim(): repeated dim in `{name}` ({list(ds)})")
    if n == 0:                               # a 0-d tensor has only "dim 0 -> dim 0"
        return Permute.apply(input, ())
    perm = [None] * n
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(n) if i not in src)
    perm = tuple(p if p is not None else next(rest) for p in perm)
    return Permute.apply(input, perm)


moveaxis = movedim


def _T(self):
    """All dims reversed (PyTorch deprecates .T for ndim != 2 but still does this)."""
    return Permute.apply(self, tuple(range(self._data.ndim))[::-1])


def _mT(self):
    """The last two dims swapped: a batch of matrices transposed."""
    n = self._data.ndim
    if n < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{n}-D tensor.")
    return Transpose.apply(self, tuple(range(n - 2)) + (n - 1, n - 2))


def _H(self):
    if self._data.ndim > 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self._data.ndim}-D tensor.")
    return _T(self)


Tensor.T = property(_T)
Tensor.mT = property(_mT)
Tensor.H = property(_H)     # real tensors only: the conjugate transpose is the transpose
Tensor.mH = property(_mT)


# ---- broadcasting -------------------------------------------------------------------------------
@tensor_method("expand")
def expand(input, *sizes):
    """A read-only view with size-1 dims repeated to `sizes` (-1 keeps a dim's size; new dims
    may be added in front)."""
    sizes = int_tuple(_shape_args(sizes), "expand", "sizes")
    x = input._data
    lead = len(sizes) - x.ndim
    if lead < 0:
        raise RuntimeError(f"expand(): the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({x.ndim})")
    for i in range(lead):
        if sizes[i] < 0:
            raise RuntimeError(f"expand(): the expanded size of the tensor ({sizes[i]}) isn't "
                               f"allowed in a leading, non-existing dimension {i}")
    shape = tuple(x.shape[i - lead] if (s == -1 and i >= lead) else s
                  for i, s in enumerate(sizes))
    for i in range(x.ndim):
        if x.shape[i] != 1 and x.shape[i] != shape[i + lead]:
            raise RuntimeError(f"expand(): the expanded size of the tensor ({shape[i + lead]}) "
                               f"must match the existing size ({x.shape[i]}) at non-singleton "
                               f"dimension {i + lead}.  Target sizes: {list(sizes)}.  Tensor "
                               f"sizes: {list(x.shape)}")
    if any(s < 0 for s in shape):
        raise RuntimeError(f"expand(): invalid size {list(sizes)} for a tensor of shape "
                           f"{list(x.shape)}")
    return Expand.apply(input, shape)


@tensor_method("expand_as")
def expand_as(input, other):
    return expand(input, other._data.shape)


@tensor_method("broadcast_to")
def broadcast_to(input, size):
    return expand(input, size)


def broadcast_shapes(*shapes):
    """The shape all `shapes` broadcast to (RuntimeError naming them if they do not)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        from ..tensor import Size
        return Size(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes(): shapes {', '.join(map(str, shapes))} cannot be "
                           f"broadcast together") from None


def broadcast_tensors(*tensors):
    """Expand every tensor to their common broadcast shape; returns a tuple of views."""
    tensors = _shape_args(tensors)
    shape = broadcast_shapes(*[t._data.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


@tensor_method("contiguous")
def contiguous(input, memory_format=None):
    """`input` itself if C-contiguous, else a C-ordered copy (a Clone, as in PyTorch)."""
    if input._data.flags.c_contiguous:
        return input
    return Clone.apply(input)


# ---- slices and diagonals -----------------------------------------------------------------------
@tensor_method("narrow")
def narrow(input, dim, start, length):
    """input[..., start:start+length, ...] along `dim` (a view)."""
    shape = input._data.shape
    if not shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, len(shape), "narrow")
    start, length = operator.index(start), operator.index(length)
    size = shape[d]
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start out of range (expected to be in range of [{-size}, "
                         f"{size}], but got {start}) for dim {d} of shape {tuple(shape)}")
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative, got {length}")
    start = start + size if start < 0 else start
    if start + length > size:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension "
                           f"size ({size}) of dim {d} in shape {tuple(shape)}")
    index = (slice(None),) * d + (slice(start, start + length),)
    return Slice.apply(input, index)


def _diag_dims(ndim, dim1, dim2, op):
    d1, d2 = norm_dim(dim1, ndim, op), norm_dim(dim2, ndim, op)
    if d1 == d2:
        raise RuntimeError(f"{op}(): diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


@tensor_method("diagonal")
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal x[..., i, i + offset] of dims (dim1, dim2), appended as the last dim (a
    view)."""
    n = input._data.ndim
    if n < 2:
        raise RuntimeError(f"diagonal(): expected a tensor with at least 2 dims, got shape "
                           f"{tuple(input._data.shape)}")
    d1, d2 = _diag_dims(n, dim1, dim2, "diagonal")
    return Diagonal.apply(input, operator.index(offset), d1, d2)


