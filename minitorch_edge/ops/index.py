"""Indexing: ``x[...]``, index_put, index_fill, masked_fill/masked_select, take.

Every op here either *gathers* (reads elements at some positions) or *scatters* (writes or adds
elements at positions), and each is the other's gradient:

    y = x[idx]                 ->  dx = zeros(x.shape) with dy added at idx   (IndexAccumulate)
    z = zeros.index_put(idx, g, accumulate=True)   ->  dg = dz[idx]           (a gather again)
    y = x with y[idx] = v      ->  dx = dy with idx zeroed,  dv = dy[idx]

Positions that are read twice get their gradients *added* (np.add.at), so a repeated index
accumulates, as in PyTorch. (Indexing along one dim with an index tensor -- gather, scatter,
index_select -- and the ordering ops live in sorting.py.)

``x[index]`` follows PyTorch's rules, which differ from numpy's in one place: integers are
applied first (as a select), so they never count as advanced indices when deciding where the
broadcast dims of tensor indices go. `normalize_index` therefore splits an index into a *basic*
part (ints, slices, None, Ellipsis: a numpy view) and an *advanced* part (integer arrays) that is
applied to that view: ``x[basic][advanced]``.
"""
import collections.abc
import warnings

import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import check_broadcast, checked_scalar, norm_dim, sum_to, tensor_method

__all__ = ["index_put", "normalize_index", "index_fill", "masked_fill", "masked_select", "take"]

_BAD_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"


# ---- turning an index expression into numpy indices ---------------------------------------
class IndexSpec:
    """A validated index: ``arr[self.basic]`` is a numpy view (ints, slices, None); when
    ``self.advanced`` is not None, ``view[self.advanced]`` (slices and integer arrays) gives the
    result. `get` reads, `put` writes into a numpy array in place."""
    __slots__ = ("basic", "advanced", "in_shape", "_shape")

    def __init__(self, basic, advanced, in_shape):
        self.basic, self.advanced, self.in_shape, self._shape = basic, advanced, in_shape, None

    @property
    def is_view(self):
        return self.advanced is None

    @property
    def shape(self):
        """Shape of the indexed result, computed without touching any data."""
        if self._shape is None:
            view = np.broadcast_to(np.empty((), np.int8), self.in_shape)[self.basic].shape
            self._shape = view if self.advanced is None else _advanced_shape(view, self.advanced)
        return self._shape

    def get(self, arr):
        v = arr[self.basic]
        return v if self.advanced is None else v[self.advanced]

    def put(self, arr, values, accumulate=False):
        """arr[index] = values (or += values; repeated positions then add up), in place."""
        v = arr[self.basic]
        if self.advanced is None:
            if accumulate:
                v += values
            else:
                v[...] = values
        elif accumulate and arr.flags.c_contiguous:
            # np.add.at is fastest on 1-D: index the flat array by each element's position
            pos = self.get(np.arange(arr.size).reshape(arr.shape))
            np.add.at(arr.reshape(-1), pos.reshape(-1),
                      np.broadcast_to(values, pos.shape).reshape(-1))
        elif accumulate:
            np.add.at(v, self.advanced, values)
        else:
            v[self.advanced] = values

    def __repr__(self):
        return f"IndexSpec(basic={self.basic}, advanced={self.advanced})"


def _advanced_shape(shape, adv):
    """numpy's (= PyTorch's) placement: the broadcast shape of the arrays replaces them in
    place when they are adjacent, otherwise it goes first."""
    arrays = [k for k, a in enumerate(adv) if isinstance(a, np.ndarray)]
    b = tuple(np.broadcast_shapes(*(adv[k].shape for k in arrays)))
    first, last = arrays[0], arrays[-1]
    if last - first + 1 == len(arrays):
        return tuple(shape[:first]) + b + tuple(shape[last + 1:])
    return b + tuple(s for k, s in enumerate(shape) if k not in arrays)


def _is_sequence(v):
    """A Python sequence an index may be made of (list, tuple, range, ...; not str/bytes)."""
    return isinstance(v, (list, tuple, range)) or (
        isinstance(v, collections.abc.Sequence) and not isinstance(v, (str, bytes, bytearray)))


def _seq_as_tuple(seq):
    """PyTorch still reads x[[0, [1, 2]]] (a sequence holding sequences/tensors/slices) as
    x[0, [1, 2]] (numpy's old heuristic)."""
    if len(seq) >= 32:
        return False
    return any(isinstance(v, (Tensor, np.ndarray, slice)) or _is_sequence(v) or v is None
               or v is Ellipsis for v in seq)


def _nested_values(item):
    """A (nested) sequence index with its Tensors replaced by their arrays, for np.asarray."""
    return [v._data if isinstance(v, Tensor) else
            _nested_values(v) if _is_sequence(v) else v for v in item]


def _array_item(data, where):
    """An index array -> ("array", intp array) / ("mask", bool array) / ("int", i) for a 0-d
    integer tensor (a select, as in PyTorch) / ("bool0", b) for a 0-d bool."""
    kind = data.dtype.kind
    if data.dtype == np.uint8:
        warnings.warn("indexing with dtype uint8 is deprecated, please use a dtype bool instead",
                      UserWarning, stacklevel=4)
        data, kind = data.astype(np.bool_), "b"
    if kind == "b":
        return ("bool0", bool(data)) if data.ndim == 0 else ("mask", data)
    if data.ndim == 0 and kind in "iu" and where != "list":
        return "int", int(data)
    if data.dtype not in (np.int64, np.int32) and not (where == "list" and kind in "iu"):
        raise IndexError(f"{_BAD_DTYPE} (got {data.dtype} at {where})")
    return "array", data.astype(np.intp, copy=True)


def _convert(item):
    """One index item -> (kind, value), kind in int/slice/none/ellipsis/array/mask/bool0."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, (bool, np.bool_)):
        return "bool0", bool(item)
    if isinstance(item, Tensor):
        return _array_item(item._data, "tensor")
    if isinstance(item, np.ndarray):
        return _array_item(item, "array")
    if isinstance(item, slice):
        parts = [None if p is None else _to_int(p) for p in (item.start, item.stop, item.step)]
        if parts[2] is not None and parts[2] <= 0:
            raise ValueError("step must be greater than zero")
        return "slice", slice(*parts)
    if isinstance(item, range):        # x[range(2)]: the index tensor [0, 1]
        return _array_item(np.arange(item.start, item.stop, item.step, dtype=np.int64), "list")
    if _is_sequence(item):
        try:
            data = np.asarray(_nested_values(item))
        except ValueError:
            raise IndexError(f"could not use the nested sequence {item!r} as an index (ragged "
                             f"lists are not allowed)") from None
        if data.size == 0:
            data = data.astype(np.int64)
        elif data.dtype.kind == "f":   # PyTorch makes a long index tensor of the list
            data = data.astype(np.int64)
        return _array_item(data, "list")
    if hasattr(item, "__index__"):
        return "int", item.__index__()
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(item).__name__})")


def _to_int(p):
    try:
        return p.__index__()
    except (AttributeError, TypeError):
        raise TypeError(f"slice indices must be integers or None or have an __index__ method "
                        f"(got {type(p).__name__})") from None


def _oob(value, dim, size):
    return IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}")


def normalize_index(input_shape, index):
    """Validate an index expression for a tensor of `input_shape` and return an `IndexSpec`.

    Accepts what ``Tensor.__getitem__`` accepts: ints (negative too), slices with positive
    steps, None, Ellipsis, Python bools, integer (int64/int32) or bool Tensors, numpy arrays,
    lists, ranges and other sequences of ints (nested ones too), in any combination. Raises
    IndexError (out of range, bad mask shape, bad dtype, too many indices) or ValueError
    (non-positive step) before anything is computed.
    ``idx.get(arr)`` == PyTorch's ``x[index]`` on the numpy array, ``idx.put(arr, v)`` its
    assignment; ``idx.is_view`` says whether ``get`` returns a view.
    """
    if isinstance(index, IndexSpec):
        return index
    shape = tuple(input_shape)
    ndim = len(shape)
    if isinstance(index, tuple):
        items = index
    elif _is_sequence(index) and _seq_as_tuple(index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; "
                      "use x[tuple(seq)] instead of x[seq]", UserWarning, stacklevel=3)
        items = tuple(index)
    else:
        items = (index,)
    conv = [_convert(it) for it in items]
    used = sum(v.ndim if k == "mask" else 1 for k, v in conv if k in ("int", "slice", "array",
                                                                      "mask"))
    if sum(k == "ellipsis" for k, _ in conv) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > ndim:
        if ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python to "
                             "convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, adv, dim, arrays = [], [], 0, []
    for kind, v in conv:
        if kind == "ellipsis":
            k = ndim - used
            basic += [slice(None)] * k
            adv += [slice(None)] * k
            dim += k
        elif kind == "none":
            basic.append(None)
            adv.append(slice(None))
        elif kind == "bool0":          # a new dim of size 1, indexed by [0] (True) or [] (False)
            basic.append(None)
            adv.append(np.zeros(1 if v else 0, np.intp))
            arrays.append(adv[-1])
        elif kind == "int":
            if not -shape[dim] <= v < shape[dim]:
                raise _oob(v, dim, shape[dim])
            basic.append(v)
            dim += 1
        elif kind == "slice":
            basic.append(v)
            adv.append(slice(None))
            dim += 1
        elif kind == "array":
            if v.size:
                lo, hi = int(v.min()), int(v.max())
                if lo < -shape[dim] or hi >= shape[dim]:
                    raise _oob(hi if hi >= shape[dim] else lo, dim, shape[dim])
            basic.append(slice(None))
            adv.append(v)
            arrays.append(v)
            dim += 1
        else:                          # a bool mask over the next v.ndim dims
            want = shape[dim:dim + v.ndim]
            for j, (m, s) in enumerate(zip(v.shape, want)):
                if m != s:
                    raise IndexError(f"The shape of the mask {list(v.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor {list(shape)} "
                                     f"at index {dim + j}")
            nz = np.nonzero(v)
            basic += [slice(None)] * v.ndim
            adv += nz
            arrays += nz
            dim += v.ndim
    if arrays:
        try:
            np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            shapes = ", ".join(str(list(a.shape)) for a in arrays)
            raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together "
                             f"with shapes {shapes}") from None
    return IndexSpec(tuple(basic) + (Ellipsis,), tuple(adv) if arrays else None, shape)


# ---- x[index] and index_put ------------------------------------------------------------------
class Select(Function):
    """y = x[ints, slices, None, ...]: a numpy view of x (shares x's memory and version).
    dx = zeros(x.shape) with dy written at the indexed positions (IndexAccumulate).
    Named after PyTorch's grad_fn of x[int] (SelectBackward0); for x[slice] and x[None] PyTorch
    records SliceBackward0 and UnsqueezeBackward0 instead."""
    _builtin = True
    is_view = True

    @staticmethod
    def forward(ctx, a, idx):
        if ctx.needs_input_grad:
            ctx.idx = idx
        return idx.get(a._data)

    @staticmethod
    def backward(ctx, grad):
        return IndexAccumulate.apply(grad, ctx.idx), None


class Index(Select):
    """y = x[index] with integer/bool arrays (advanced indexing): a copy.
    dx = zeros(x.shape) with dy *added* at the indexed positions (repeats accumulate)."""
    is_view = False


class Take(Index):
    """Index of the flattened input (take())."""


class IndexAccumulate(Function):
    """z = zeros(idx.in_shape); z[idx] += g  (index_put with accumulate=True into zeros).
    This is the gradient of x[idx]; its own gradient is a gather again: dg = dz[idx]."""
    _builtin = True

    @staticmethod
    def forward(ctx, g, idx):
        if ctx.needs_input_grad:
            ctx.idx = idx
        out = np.zeros(idx.in_shape, g._data.dtype)
        idx.put(out, g._data, accumulate=True)
        return out

    @staticmethod
    def backward(ctx, grad):
        return _getitem(grad, ctx.idx), None


class IndexPut(Function):
    """y = x with y[idx] = v (y[idx] += v when accumulate).
    dx = dy with the indexed positions zeroed (dy itself when accumulate);
    dv = dy[idx] summed down to v's shape (v was broadcast to the indexed shape)."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, idx, values, accumulate):
        out = a._data.copy()
        v = values._data if isinstance(values, Tensor) else values
        idx.put(out, np.asarray(v).astype(out.dtype, copy=False), accumulate)
        if ctx.needs_input_grad:
            ctx.idx, ctx.accumulate = idx, accumulate
            ctx.v_shape = np.shape(v)
        return out

    @staticmethod
    def backward(ctx, grad):
        idx, need = ctx.idx, ctx.needs_input_grad
        g_in = g_v = None
        if need[0]:
            g_in = grad if ctx.accumulate else IndexPut.apply(grad, idx, 0.0, False)
        if need[2]:
            g_v = _getitem(grad, idx)
            vs = ctx.v_shape
            core = vs[max(len(vs) - len(g_v.shape), 0):]   # leading 1s beyond the result's dims
            g_v = sum_to(g_v, core)
            if core != vs:
                g_v = g_v.reshape(vs)
        return g_in, None, g_v, None


class IndexFill(IndexPut):
    """IndexPut of one value at whole slices along a dim (index_fill())."""


def _getitem(t, idx):
    return (Select if idx.is_view else Index).apply(t, idx)


def getitem(input, index):
    """input[index] with PyTorch's semantics (see `normalize_index`); a view for basic
    indexing, a copy when tensors/lists/bools index."""
    return _getitem(input, normalize_index(input._data.shape, index))


Tensor.__getitem__ = getitem


@tensor_method("index_put")
def index_put(input, index, values, accumulate=False):
    """Out of place ``x[index] = values`` (``+=`` when accumulate): returns a new tensor.

    `index` is any ``__getitem__`` expression (a tuple of index tensors, as in torch.index_put,
    works too); `values` a Tensor or number, broadcastable to the indexed shape (extra leading
    size-1 dims are allowed). As in PyTorch, a values tensor must have input's dtype when
    tensors index (RuntimeError); otherwise it is cast. Differentiable in input and values.
    """
    idx = normalize_index(input._data.shape, index)
    if isinstance(values, Tensor):
        vd = values._data
        if vd.dtype != input._data.dtype and not idx.is_view and not _is_mask_index(index):
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{input.dtype} for the destination and {values.dtype} for the "
                               f"source.")
        vs = vd.shape
        while len(vs) > len(idx.shape) and vs[0] == 1:
            vs = vs[1:]
        try:
            ok = np.broadcast_shapes(vs, idx.shape) == idx.shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(vd.shape)} cannot be "
                               f"broadcast to indexing result of shape {list(idx.shape)}")
    elif not isinstance(values, (int, float, bool, np.number, np.bool_)):
        raise TypeError(f"index_put(): values must be a Tensor or a number, got "
                        f"{type(values).__name__}")
    return IndexPut.apply(input, idx, values, bool(accumulate))


def _is_mask_index(index):
    """A lone bool mask (PyTorch then takes its masked_fill/copy path, which casts)."""
    return isinstance(index, Tensor) and index._data.dtype == np.bool_


def _check_index(index, op, dtypes=(np.int32, np.int64)):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): index must be a Tensor, got {type(index).__name__}")
    if index._data.dtype not in dtypes:
        names = "/".join(np.dtype(d).name for d in dtypes)
        raise RuntimeError(f"{op}(): Expected dtype {names} for index, got {index.dtype}")


# ---- index_fill and masks ------------------------------------------------------------------
@tensor_method("index_fill")
def index_fill(input, dim, index, value):
    """Out of place: input with every slice at position index[k] along dim set to `value` (a
    number or a 0-dim tensor, which then gets the sum of those slices' gradients)."""
    _check_index(index, "index_fill", (np.int64,))
    i = index._data
    if i.ndim > 1:
        raise IndexError(f"index_fill(): Index has to be a vector/scalar, got {i.ndim} dims")
    x = input._data
    dim = norm_dim(dim, x.ndim, "index_fill")
    size = x.shape[dim] if x.ndim else 1
    if i.size and (int(i.max()) >= size or int(i.min()) < -size):
        raise _oob(int(i.max()) if int(i.max()) >= size else int(i.min()), dim, size)
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError(f"index_fill(): only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._data.ndim} dimension(s).")
    lead = (slice(None),) * dim
    idx = IndexSpec(lead + (None,) * (x.ndim == 0) + (Ellipsis,),
                    lead + (i.reshape(-1).astype(np.intp),), x.shape)
    if isinstance(value, Tensor):
        checked_scalar(value, x.dtype)       # a value the dtype cannot hold raises
        value = value.to(input.dtype)
    elif isinstance(value, (bool, int, float, np.number, np.bool_)):
        value = checked_scalar(value, x.dtype)
    return IndexFill.apply(input, idx, value, False)


def _mask_shape(input, mask, op):
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {got}")
    return tuple(check_broadcast(input._data.shape, mask._data.shape, op))


class MaskedFill(Function):
    """y = mask ? value : x (mask and x broadcast together).
    dx = dy where not mask (summed to x's shape);  dvalue = sum of dy where mask."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, mask, value):
        x = a._data
        # the value (a number or a 0-d tensor) is a Scalar argument: checked against x's dtype
        v = checked_scalar(value, x.dtype)
        if ctx.needs_input_grad:
            ctx.save_for_backward(mask)
            ctx.in_shape = x.shape
        return np.where(mask._data, v, x)

    @staticmethod
    def backward(ctx, grad):
        from .elementwise import where
        mask, = ctx.saved_tensors
        need = ctx.needs_input_grad
        g_in = sum_to(where(mask, 0.0, grad), ctx.in_shape) if need[0] else None
        g_v = where(mask, grad, 0.0).sum() if need[2] else None
        return g_in, None, g_v


class MaskedSelect(Function):
    """y = the elements of x (broadcast with mask) where mask is True, as a 1-D tensor.
    dx = zeros with dy written back at the mask positions, summed to x's shape."""
    _builtin = True

    @staticmethod
    def forward(ctx, a, mask, shape):
        m = np.broadcast_to(mask._data, shape)
        if ctx.needs_input_grad:
            ctx.idx = _mask_index(m)
            ctx.in_shape = a._data.shape
        return np.broadcast_to(a._data, shape)[m]

    @staticmethod
    def backward(ctx, grad):
        return sum_to(IndexAccumulate.apply(grad, ctx.idx), ctx.in_shape), None, None


def _mask_index(m):
    """The IndexSpec of the True positions of bool array m (for 0-d m: [0] or [] on a new dim)."""
    if m.ndim == 0:
        return IndexSpec((None, Ellipsis), (np.zeros(int(m), np.intp),), ())
    return IndexSpec((Ellipsis,), np.nonzero(m), m.shape)


@tensor_method("masked_fill")
def masked_fill(input, mask, value):
    """input with `value` (a number or a 0-dim tensor) where `mask` (bool, broadcast) is True."""
    _mask_shape(input, mask, "masked_fill")
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
    elif not isinstance(value, (int, float, bool, np.number, np.bool_)):
        raise TypeError(f"masked_fill(): value must be a number or a 0-dim tensor, got "
                        f"{type(value).__name__}")
    return MaskedFill.apply(input, mask, value)


@tensor_method("masked_select")
def masked_select(input, mask):
    """1-D tensor of the elements of input (broadcast with mask) where mask is True."""
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return MaskedSelect.apply(input, mask, _mask_shape(input, mask, "masked_select"))


# ---- flat take -------------------------------------------------------------------------------
@tensor_method("take")
def take(input, index):
    """input treated as 1-D, read at `index` (negative counts from the end); index's shape."""
    _check_index(index, "take", (np.int64,))
    n = input._data.size
    i = index._data
    if i.size and (int(i.max()) >= n or int(i.min()) < -n):
        bad = int(i.max()) if int(i.max()) >= n else int(i.min())
        raise IndexError(f"take(): out of range: tried to access index {bad} on a tensor of {n} "
                         f"elements.")
    return Take.apply(input.reshape(-1), IndexSpec((Ellipsis,), (i.astype(np.intp),), (n,)))
