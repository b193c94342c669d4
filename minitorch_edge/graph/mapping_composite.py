"""The mapping table's composite entries: Functions that ONNX (or the C runtime) has no single
node for, each written with the nodes the runtime has, in the order the eager op computes
(mish = x tanh(softplus(x)), upsampling = weighted Gathers, var = ReduceMean of squares, a
flip or roll = a Gather, adaptive max pooling over uneven cells = Slice + ReduceMax per cell
row, autocast's linear = Casts + Gemm + activation). Imported by trace.py next to mapping.py,
into whose TABLE they register; same conventions.
"""
import numpy as np

from ..nn.functional.autocast_linear import AutocastLinear
from ..nn.functional.pooling import AdaptiveMaxPool2D
from ..nn.functional.upsampling import Resample
from ..ops import activation, join, minmax, reduce
from ..ops.rearrange import Flip, Reindex, Roll
from .mapping import _amax, _dims, _scalar, _shape, maps


@maps(activation.Mish)
def _mish(b, out, x):
    """x tanh(softplus(x))."""
    xv = b.value(x)
    return b.emit("Mul", [xv, b.emit("Tanh", [b.emit("Softplus", [xv])])])


@maps(activation.LogSigmoid)
def _log_sigmoid(b, out, x):
    """-softplus(-x)."""
    return b.emit("Neg", [b.emit("Softplus", [b.emit("Neg", [b.value(x)])])])


@maps(activation.Threshold)
def _threshold(b, out, x, th, value):
    """x where x > threshold, else value."""
    xv = b.value(x)
    above = b.emit("Greater", [xv, _scalar(b, out, th, "threshold")])
    return b.emit("Where", [above, xv, _scalar(b, out, value, "value")])


@maps(minmax.Amin, minmax.MinAll)
def _amin(b, out, x, dims, keepdim):
    """min = -max(-x) (the runtime has ReduceMax)."""
    y = b.emit("ReduceMax", [b.emit("Neg", [b.value(x)])], axes=_dims(x, dims),
               keepdims=int(bool(keepdim)))
    return b.emit("Neg", [y])


@maps(minmax.MaxDim)
def _max_dim(b, out, x, dim, keepdim):
    """x.max(dim): the values; the indices have no graph value (using them fails in b.value,
    as max pooling's)."""
    return [_amax(b, out[0], x, (dim,), keepdim), None]


@maps(minmax.MinDim)
def _min_dim(b, out, x, dim, keepdim):
    """x.min(dim): the values (indices as in x.max(dim))."""
    return [_amin(b, out[0], x, (dim,), keepdim), None]


@maps(reduce.Var)
def _var(b, out, x, dims, correction, keepdim):
    """sum((x - mean)^2) / max(N - correction, 0) over dims."""
    axes = _dims(x, dims)
    dtype = out._data.dtype
    xv = b.value(x, dtype)
    count = int(np.prod([_shape(x)[a] for a in axes])) if axes else 1
    d = b.emit("Sub", [xv, b.emit("ReduceMean", [xv], axes=axes, keepdims=1)])
    ss = b.emit("ReduceSum", [b.emit("Mul", [d, d])], axes=axes, keepdims=int(bool(keepdim)))
    divisor = max(count - correction, 0)
    return b.emit("Div", [ss, b.const(np.asarray(divisor, dtype), "count")])


@maps(reduce.Std)
def _std(b, out, x, dims, correction, keepdim):
    return b.emit("Sqrt", [_var(b, out, x, dims, correction, keepdim)])


@maps(AdaptiveMaxPool2D)
def _adaptive_max_pool(b, out, x, kernel, params):
    """Max over adaptive cells: MaxPool when the cells tile the plane evenly, else one max per
    dim (a rectangle's max is the max over its rows of the max over its columns): a Slice and
    ReduceMax per output row / column, joined by Concat."""
    (n, c, h, w), (oh, ow) = _shape(x), params
    y = b.value(x)
    if h % oh == 0 and w % ow == 0:
        kh, kw = h // oh, w // ow
        y = b.emit("MaxPool", [y], kernel_shape=[kh, kw], strides=[kh, kw], pads=[0, 0, 0, 0])
        return [y, None]
    for axis, size, cells in ((2, h, oh), (3, w, ow)):
        if cells == size:
            continue
        parts = []
        for i in range(cells):
            start, stop = (i * size) // cells, -((-(i + 1) * size) // cells)
            piece = b.emit("Slice", [y, b.ints([start], "starts"), b.ints([stop], "ends"),
                                     b.ints([axis], "axes")])
            parts.append(b.emit("ReduceMax", [piece], axes=[axis], keepdims=1))
        y = parts[0] if cells == 1 else b.emit("Concat", parts, axis=axis)
    return [y, None]


@maps(join.Repeat)
def _repeat(b, out, x, reps):
    """x tiled reps[i] times along dim i: leading 1-dims first, then one Concat of copies per
    repeated dim."""
    y, shape = b.value(x), _shape(x)
    reps = tuple(int(r) for r in reps)
    if len(reps) > len(shape):
        shape = (1,) * (len(reps) - len(shape)) + shape
        y = b.emit("Reshape", [y, b.ints(shape)])
    for axis, r in enumerate(reps):
        if r == 0:
            b.fail("repeat with a zero count has no graph form")
        if r > 1:
            y = b.emit("Concat", [y] * r, axis=axis)
    return y


@maps(Flip)
def _flip(b, out, x, dims):
    """x reversed along dims: a Gather of the reversed positions per dim."""
    y, nd = b.value(x), x._data.ndim
    for d in sorted({int(d) % nd for d in (dims if isinstance(dims, (list, tuple)) else (dims,))}):
        y = b.emit("Gather", [y, b.ints(np.arange(_shape(x)[d])[::-1], "index")], axis=d)
    return y


@maps(Roll)
def _roll(b, out, x, shifts, dims):
    """A cyclic shift: a Gather of the rolled positions per dim (dims None: of the
    flattened tensor, viewed back to x's shape)."""
    shifts = shifts if isinstance(shifts, (list, tuple)) else (shifts,)
    y, flat = b.value(x), dims is None
    if flat:
        y = b.emit("Reshape", [y, b.ints([-1])])
        dims, sizes = [0], [x._data.size]
    else:
        dims = [int(d) % x._data.ndim for d in (dims if isinstance(dims, (list, tuple))
                                                else (dims,))]
        sizes = [_shape(x)[d] for d in dims]
    for shift, d, n in zip(shifts, dims, sizes):
        if n:
            y = b.emit("Gather", [y, b.ints((np.arange(n) - int(shift)) % n, "index")], axis=d)
    return b.emit("Reshape", [y, b.ints(_shape(x))]) if flat else y


@maps(Reindex)
def _reindex(b, out, x, dim, index):
    """x taken at constant positions along dim (reflect/replicate/circular padding,
    repeat_interleave): one Gather."""
    return b.emit("Gather", [b.value(x), b.ints(np.asarray(index).ravel(), "index")],
                  axis=int(dim) % x._data.ndim)


@maps(Resample)
def _resample(b, out, x, dim, taps, in_size):
    """Upsample / interpolate along one dim: sum over taps of w_k * Gather(x, idx_k) (nearest:
    one Gather; linear: two, weighted), the same sum in the same order as the eager op."""
    if not taps:
        b.fail("an interpolation to an empty size has no graph form")
    d = int(dim) % x._data.ndim
    dtype = out._data.dtype
    xv, total = b.value(x, dtype), None
    for idx, w in taps:
        part = b.emit("Gather", [xv, b.ints(np.asarray(idx).ravel(), "index")], axis=d)
        if w is not None:
            bshape = [1] * x._data.ndim
            bshape[d] = -1
            part = b.emit("Mul", [part, b.const(np.asarray(w, dtype).reshape(bshape), "weight")])
        total = part if total is None else b.emit("Add", [total, part])
    return total


@maps(AutocastLinear)
def _autocast_linear(b, out, x, w, bias, lower, act):
    """Linear under autocast as the unfused ops: x, W and b cast to the lower dtype, the Gemm
    (the leading dims of x folded into rows), then Relu / Clip(0, 6). (The eager op adds the
    rounded bias in float32 before its one rounding; the Gemm of the graph adds it in the lower
    dtype, as autocast's addmm does.)"""
    low = lower.np
    xs = _shape(x)
    rows = b.value(x, low)
    if len(xs) != 2:
        rows = b.emit("Reshape", [rows, b.ints((-1, xs[-1]))])
    y = b.emit("Gemm", [rows, b.value(w, low), "" if bias is None else b.value(bias, low)],
               transB=1)
    if act == "relu":
        y = b.emit("Relu", [y])
    elif act == "relu6":
        y = b.emit("Clip", [y, b.const(np.asarray(0, low), "bound"),
                            b.const(np.asarray(6, low), "bound")])
    return y if len(xs) == 2 else b.emit("Reshape", [y, b.ints(xs[:-1] + (w._data.shape[0],))])
