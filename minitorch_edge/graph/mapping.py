"""The mapping table: for each built-in Function that can appear in an inference graph, the
ONNX-named nodes that compute the same thing. `TABLE[FunctionClass](b, out, *args)` gets the
tracer's builder `b` (value names, constants, `emit`), the eager result `out` (for shapes the
op computed) and the Function's own arguments, and returns the value name of each output.

A Function absent from this table cannot be traced: graph.trace raises naming it and the module
path where it ran. Dropout in eval mode and nn.Identity call no Function at all.
"""
import numpy as np

from ..nn.functional.attention import MultiheadSelfAttention, ScaledDotProductAttention
from ..nn.functional.conv import ConvBackwardInput, Convolution
from ..nn.functional.fused import LinearRelu, LinearRelu6
from ..nn.functional.linear import Addmm
from ..nn.functional.normalization import (NativeBatchNorm, NativeGroupNorm, NativeLayerNorm,
                                           Normalize)
from ..nn.functional.pooling import AvgPool2D, MaxPool2DWithIndices
from ..nn.functional.sparse import Embedding
from ..ops import (
    _views,
    activation,
    compare,
    elementwise,
    index,
    join,
    linalg,
    minmax,
    reduce,
    unary,
)
from ..ops.rearrange import ConstantPadNd
from ..ops.softmax import LogSoftmax, SafeSoftmax, Softmax
from ..tensor import Tensor

TABLE = {}


def maps(*classes):
    def register(fn):
        for cls in classes:
            TABLE[cls] = fn
        return fn
    return register


def _shape(t):
    return tuple(t._data.shape)


def _operands(b, out, *args):
    """Value names of a binary op's operands, each in the result's dtype (ONNX's elementwise
    ops take one dtype; a Python number becomes a 0-d constant of that dtype)."""
    dtype = out._data.dtype if out._data.dtype != np.bool_ else None
    names = []
    for a in args:
        if isinstance(a, Tensor):
            names.append(b.value(a, dtype))
        else:
            names.append(b.const(np.asarray(a, dtype)))
    return names


# ---- elementwise --------------------------------------------------------------------------------
def _scalar(b, out, value, hint="scalar"):
    """A 0-d constant in the result's dtype."""
    return b.const(np.asarray(value, out._data.dtype), hint)


def _binary(onnx_op, swap=False):
    def emit(b, out, x, y):
        names = _operands(b, out, x, y)
        return b.emit(onnx_op, names[::-1] if swap else names)
    return emit


for _cls, _op in ((elementwise.Add, "Add"), (elementwise.Sub, "Sub"), (elementwise.Mul, "Mul"),
                  (elementwise.Maximum, "Max"), (elementwise.Minimum, "Min"),
                  (elementwise.Pow, "Pow")):
    TABLE[_cls] = _binary(_op)
TABLE[elementwise.Rsub] = _binary("Sub")   # Rsub.apply(other, input) already computes other - input


@maps(elementwise.Div)
def _div(b, out, x, y):
    if out._data.dtype.kind != "f":
        b.fail("integer division has no exact ONNX equivalent here")
    return b.emit("Div", _operands(b, out, x, y))


for _cls, _op in ((compare.Eq, "Equal"), (compare.Lt, "Less"), (compare.Gt, "Greater"),
                  (compare.Le, "LessOrEqual"), (compare.Ge, "GreaterOrEqual"),
                  (compare.LogicalAnd, "And"), (compare.LogicalOr, "Or"),
                  (compare.LogicalXor, "Xor")):
    def _cmp(b, out, x, y, _op=_op):
        dtype = np.result_type(*[a._data if isinstance(a, Tensor) else np.asarray(a)
                                 for a in (x, y)])
        names = [b.value(a, dtype) if isinstance(a, Tensor) else b.const(np.asarray(a, dtype))
                 for a in (x, y)]
        return b.emit(_op, names)
    TABLE[_cls] = _cmp


@maps(compare.Ne)
def _ne(b, out, x, y):
    return b.emit("Not", [TABLE[compare.Eq](b, out, x, y)])


@maps(compare.LogicalNot)
def _not(b, out, x):
    return b.emit("Not", [b.value(x, np.bool_)])


def _unary(onnx_op, **attrs):
    return lambda b, out, x: b.emit(onnx_op, [b.value(x)], **attrs)


for _cls, _op in ((unary.Neg, "Neg"), (unary.Abs, "Abs"), (unary.Exp, "Exp"), (unary.Log, "Log"),
                  (unary.Sqrt, "Sqrt"), (unary.Reciprocal, "Reciprocal"), (unary.Tanh, "Tanh"),
                  (unary.Sigmoid, "Sigmoid"), (unary.Erf, "Erf"), (unary.Sin, "Sin"),
                  (unary.Cos, "Cos"), (unary.Floor, "Floor"), (unary.Ceil, "Ceil"),
                  (activation.Relu, "Relu"), (activation.Hardswish, "HardSwish"),
                  (activation.Silu, "mte.Silu")):
    TABLE[_cls] = _unary(_op)
TABLE[activation.Hardsigmoid] = _unary("HardSigmoid", alpha=1 / 6, beta=0.5)


@maps(unary.Rsqrt)
def _rsqrt(b, out, x):
    return b.emit("Reciprocal", [b.emit("Sqrt", [b.value(x)])])


@maps(activation.Gelu)
def _gelu(b, out, x, approximate):
    return b.emit("mte.Gelu", [b.value(x)], approximate=approximate)


@maps(activation.LeakyRelu)
def _leaky(b, out, x, slope):
    return b.emit("LeakyRelu", [b.value(x)], alpha=float(slope))


@maps(activation.Elu, activation.Celu)
def _elu(b, out, x, alpha, scale, input_scale):
    """scale * (x if x > 0 else alpha (e^(s x) - 1)) (selu, celu) = (scale / s) Elu(s x) with
    Elu's alpha = alpha s: Elu between two Muls."""
    s = input_scale
    y = b.value(x)
    if s != 1:
        y = b.emit("Mul", [y, _scalar(b, out, s, "input_scale")])
    y = b.emit("Elu", [y], alpha=float(alpha * s))
    if scale / s != 1:
        y = b.emit("Mul", [y, _scalar(b, out, scale / s, "scale")])
    return y


@maps(activation.Softplus)
def _softplus(b, out, x, beta, threshold):
    """log(1 + e^(beta x)) / beta (ONNX Softplus has beta 1; the threshold, where the eager
    op returns x itself, differs from the formula by less than float32 rounding)."""
    if beta == 1:
        return b.emit("Softplus", [b.value(x)])
    y = b.emit("Softplus", [b.emit("Mul", [b.value(x), _scalar(b, out, beta, "beta")])])
    return b.emit("Mul", [y, _scalar(b, out, 1 / beta, "inv_beta")])





def _bound(b, v, dtype):
    if v is None:
        return ""
    return b.value(v, dtype) if isinstance(v, Tensor) else b.const(np.asarray(v, dtype), "bound")


@maps(activation.Hardtanh, unary.Clamp, unary.ClampMin, unary.ClampMax)
def _clip(b, out, x, lo, hi):
    dtype = out._data.dtype
    for v in (lo, hi):
        if isinstance(v, Tensor) and v._data.size != 1:
            b.fail("clamp with tensor bounds maps to Max/Min, which is not done yet")
    return b.emit("Clip", [b.value(x, dtype), _bound(b, lo, dtype), _bound(b, hi, dtype)])


@maps(elementwise.Where)
def _where(b, out, cond, x, y):
    dtype = out._data.dtype
    return b.emit("Where", [b.value(cond, np.bool_)] + _operands(b, out, x, y)
                  if dtype != np.bool_ else [b.value(cond, np.bool_), b.value(x), b.value(y)])


@maps(index.MaskedFill)
def _masked_fill(b, out, x, mask, value):
    dtype = out._data.dtype
    v = b.value(value, dtype) if isinstance(value, Tensor) else b.const(np.asarray(value, dtype))
    return b.emit("Where", [b.value(mask, np.bool_), v, b.value(x)])


@maps(elementwise.ToCopy)
def _to(b, out, x, dtype):
    return b.emit("Cast", [b.value(x)], to=out._data.dtype.name)


@maps(elementwise.Clone)
def _clone(b, out, x, memory_format="contiguous_format"):
    return b.emit("Identity", [b.value(x)])


# ---- shape ops ----------------------------------------------------------------------------------
@maps(_views.View, _views.Squeeze, _views.Unsqueeze)
def _reshape(b, out, x, shape):
    return b.emit("Reshape", [b.value(x), b.ints(_shape(out))])


@maps(_views.Expand)
def _expand(b, out, x, shape):
    return b.emit("Expand", [b.value(x), b.ints(_shape(out))])


@maps(_views.Permute, _views.Transpose)
def _transpose(b, out, x, perm):
    return b.emit("Transpose", [b.value(x)], perm=[int(p) for p in perm])


def _basic_index(b, x, shape, basic, out_shape):
    """x[basic] for ints, slices, None and Ellipsis: one Slice over the sliced dims, then a
    Reshape to the result's shape (which drops the int dims and adds the None ones)."""
    basic = basic if isinstance(basic, tuple) else (basic,)
    n_real = sum(1 for k in basic if k is not None and k is not Ellipsis)
    if Ellipsis in basic:
        at = basic.index(Ellipsis)
        basic = basic[:at] + (slice(None),) * (len(shape) - n_real) + basic[at + 1:]
    starts, ends, axes, steps = [], [], [], []
    dim = 0
    for k in basic:
        if k is None:
            continue
        if isinstance(k, slice):
            s, e, st = k.indices(shape[dim])
            if (s, e, st) != (0, shape[dim], 1):
                if st < 0 and e < 0:
                    e = -(2 ** 62)      # "to the beginning" (ONNX clamps to -1 for steps < 0)
                starts.append(s), ends.append(e), axes.append(dim), steps.append(st)
        else:
            i = int(k) % shape[dim]
            starts.append(i), ends.append(i + 1), axes.append(dim), steps.append(1)
        dim += 1
    name = x
    if axes:
        name = b.emit("Slice", [x, b.ints(starts, "starts"), b.ints(ends, "ends"),
                                b.ints(axes, "axes"), b.ints(steps, "steps")])
    if b.shape(name) != tuple(out_shape):
        name = b.emit("Reshape", [name, b.ints(out_shape)])
    elif name == x:
        name = b.emit("Identity", [x])
    return name


@maps(_views.Slice)
def _slice(b, out, x, key):
    return _basic_index(b, b.value(x), _shape(x), key, _shape(out))


@maps(index.Select, index.Index)
def _select(b, out, x, spec):
    if spec.advanced is None:
        return _basic_index(b, b.value(x), _shape(x), spec.basic, _shape(out))
    view_shape = np.broadcast_to(np.empty((), np.int8), _shape(x))[spec.basic].shape
    name = _basic_index(b, b.value(x), _shape(x), spec.basic, view_shape)
    adv = spec.advanced if isinstance(spec.advanced, tuple) else (spec.advanced,)
    arrays = [k for k in adv if isinstance(k, np.ndarray)]
    if len(arrays) != 1 or arrays[0].dtype == np.bool_ or any(
            not isinstance(k, (slice, np.ndarray)) or (isinstance(k, slice) and
                                                       k != slice(None)) for k in adv):
        b.fail("only indexing by one integer array along one dim maps to Gather")
    axis = next(i for i, k in enumerate(adv) if isinstance(k, np.ndarray))
    return b.emit("Gather", [name, b.const(arrays[0].astype(np.int64), "indices")], axis=axis)


@maps(join.Cat, join.Stack)      # stack() hands Stack its inputs already unsqueezed
def _cat(b, out, dim, dtype, *tensors):
    names = [b.value(t, out._data.dtype) for t in tensors if t._data.size or t._data.ndim != 1]
    return b.emit("Concat", names, axis=int(dim) % out._data.ndim)


@maps(join.Split, join.SplitWithSizes)
def _split(b, out, x, dim, bounds):
    sizes = [e - s for s, e in bounds]
    if sum(sizes) != x._data.shape[dim] or any(bounds[i][1] != bounds[i + 1][0]
                                               for i in range(len(bounds) - 1)):
        b.fail("a split that does not cover the dim in order")
    names = b.emit("Split", [b.value(x), b.ints(sizes, "split")], n_out=len(sizes),
                   axis=int(dim) % x._data.ndim)
    return names if len(sizes) > 1 else [names]


@maps(join.Unbind)
def _unbind(b, out, x, dim):
    dim = int(dim) % x._data.ndim
    n = x._data.shape[dim]
    parts = b.emit("Split", [b.value(x), b.ints([1] * n, "split")], n_out=n, axis=dim)
    parts = parts if n > 1 else [parts]
    return [b.emit("Squeeze", [p, b.ints([dim], "axes")]) for p in parts]


# ---- reductions ---------------------------------------------------------------------------------
def _dims(x, dims):
    if dims is None or dims == ():
        return list(range(x._data.ndim))
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    return sorted(int(d) % max(x._data.ndim, 1) for d in dims)


@maps(reduce.Mean)
def _mean(b, out, x, dims, keepdim):
    return b.emit("ReduceMean", [b.value(x)], axes=_dims(x, dims), keepdims=int(bool(keepdim)))


@maps(reduce.Sum)
def _sum(b, out, x, dims, keepdim, dtype=None):
    return b.emit("ReduceSum", [b.value(x, out._data.dtype)], axes=_dims(x, dims),
                  keepdims=int(bool(keepdim)))


@maps(minmax.Amax, minmax.MaxAll)
def _amax(b, out, x, dims, keepdim):
    return b.emit("ReduceMax", [b.value(x)], axes=_dims(x, dims), keepdims=int(bool(keepdim)))







@maps(Softmax, SafeSoftmax)
def _softmax(b, out, x, dim):
    return b.emit("Softmax", [b.value(x)], axis=int(dim) % x._data.ndim)


@maps(LogSoftmax)
def _log_softmax(b, out, x, dim):
    return b.emit("LogSoftmax", [b.value(x)], axis=int(dim) % x._data.ndim)


# ---- layers -------------------------------------------------------------------------------------
@maps(Convolution)
def _convolution(b, out, x, w, bias, geom):
    stride, (t, bottom, left, right), dilation, groups = geom
    return b.emit("Conv", [b.value(x), b.value(w), "" if bias is None else b.value(bias)],
                  kernel_shape=list(w._data.shape[2:]), strides=list(stride),
                  pads=[t, left, bottom, right], dilations=list(dilation), group=int(groups))


@maps(ConvBackwardInput)
def _conv_transpose(b, out, x, w, out_shape, geom):
    """conv_transpose1d/2d (a 1-D one arrives lifted to 2-D): ONNX ConvTranspose, whose
    output_padding gives the exact output size the eager op computed."""
    stride, (t, bottom, left, right), dilation, groups = geom
    kernel, ins = _shape(w)[2:], _shape(x)[2:]
    full = [s * (i - 1) + (k - 1) * d + 1 - p0 - p1
            for s, i, k, d, (p0, p1) in zip(stride, ins, kernel, dilation,
                                           ((t, bottom), (left, right)))]
    return b.emit("ConvTranspose", [b.value(x), b.value(w)], kernel_shape=list(kernel),
                  strides=list(stride), pads=[t, left, bottom, right],
                  dilations=list(dilation), group=int(groups),
                  output_padding=[int(o - f) for o, f in zip(out_shape[2:], full)])


def _linear_node(b, x, w, bias, act=lambda y: y):
    """A Linear is one Gemm (y = x W^T + b) on 2-D rows, its activation `act` (a function of
    the Gemm's value name) right after it; an input of more dims is folded into rows around
    them (Reshape -> Gemm -> act -> Reshape), so that every Linear is the same node to the
    passes, the int8 quantizer and the runtime. A 1-D input stays MatMul."""
    if x._data.ndim > 2 and w._data.ndim == 2:
        lead = _shape(x)[:-1]
        rows = b.emit("Reshape", [b.value(x), b.ints((-1, _shape(x)[-1]))])
        y = b.emit("Gemm", [rows, b.value(w), "" if bias is None else b.value(bias)], transB=1)
        return b.emit("Reshape", [act(y), b.ints(lead + (w._data.shape[0],))])
    if x._data.ndim == 2:
        return act(b.emit("Gemm", [b.value(x), b.value(w),
                                   "" if bias is None else b.value(bias)], transB=1))
    y = b.emit("MatMul", [b.value(x), b.emit("Transpose", [b.value(w)], perm=[1, 0])])
    return act(y if bias is None else b.emit("Add", [y, b.value(bias)]))


@maps(Addmm)
def _addmm(b, out, x, w, bias):
    return _linear_node(b, x, w, bias)


@maps(LinearRelu)
def _linear_relu(b, out, x, w, bias):
    return _linear_node(b, x, w, bias, act=lambda y: b.emit("Relu", [y]))


@maps(LinearRelu6)
def _linear_relu6(b, out, x, w, bias):
    dtype = out._data.dtype
    return _linear_node(b, x, w, bias, act=lambda y: b.emit(
        "Clip", [y, b.const(np.asarray(0, dtype), "bound"), b.const(np.asarray(6, dtype), "bound")]))


@maps(Normalize, NativeGroupNorm)
def _normalize(b, out, x, weight, bias, dims, eps, stats_out):
    """Statistics of the input itself (instance_norm, group_norm, batch_norm on batch
    statistics), as the eager op computes them: xc = x - mean(x), var = mean(xc^2),
    y = xc * (1 / sqrt(var + eps)) (* w) (+ b), the means over `dims`."""
    dtype = out._data.dtype
    axes = _dims(x, dims)
    xv = b.value(x, dtype)
    mean = b.emit("ReduceMean", [xv], axes=axes, keepdims=1)
    xc = b.emit("Sub", [xv, mean])
    var = b.emit("ReduceMean", [b.emit("Mul", [xc, xc])], axes=axes, keepdims=1)
    std = b.emit("Sqrt", [b.emit("Add", [var, b.const(np.asarray(eps, dtype), "eps")])])
    y = b.emit("Mul", [xc, b.emit("Reciprocal", [std])])
    if weight is not None:
        y = b.emit("Mul", [y, b.value(weight, dtype)])
    if bias is not None:
        y = b.emit("Add", [y, b.value(bias, dtype)])
    return y


@maps(NativeBatchNorm)
def _batch_norm(b, out, x, weight, bias, dims, eps, stats_out, running=None):
    if running is None:           # batch statistics: instance_norm, or batch_norm in training
        return _normalize(b, out, x, weight, bias, dims, eps, stats_out)
    c = x._data.shape[1]
    dtype = x._data.dtype
    scale = b.value(weight) if weight is not None else b.const(np.ones(c, dtype), "scale")
    shift = b.value(bias) if bias is not None else b.const(np.zeros(c, dtype), "bias")
    return b.emit("BatchNormalization", [b.value(x), scale, shift, b.value(running[0]),
                                         b.value(running[1])], epsilon=float(eps))


@maps(NativeLayerNorm)
def _layer_norm(b, out, x, weight, bias, dims, eps, stats_out):
    tail = x._data.shape[x._data.ndim - len(dims):]
    w = b.value(weight.reshape(tail) if weight is not None and _shape(weight) != tail else weight) \
        if weight is not None else ""
    bb = b.value(bias.reshape(tail) if bias is not None and _shape(bias) != tail else bias) \
        if bias is not None else ""
    return b.emit("LayerNormalization", [b.value(x), w, bb], axis=-len(dims), epsilon=float(eps))


@maps(MaxPool2DWithIndices)
def _max_pool(b, out, x, kernel, params):
    if kernel != "max_pool2d":
        b.fail("adaptive max pooling does not map to ONNX MaxPool")
    k, s, (ph, pw), d, ceil = params
    y = b.emit("MaxPool", [b.value(x)], kernel_shape=list(k), strides=list(s),
               pads=[ph, pw, ph, pw], dilations=list(d), ceil_mode=int(ceil))
    return [y, None]       # the indices have no graph value: using them fails in b.value



@maps(linalg.SwapLast)
def _swap_last(b, out, x):
    perm = list(range(x._data.ndim))
    perm[-2:] = perm[-1], perm[-2]
    return b.emit("Transpose", [b.value(x)], perm=perm)





@maps(linalg.Mm, linalg.Bmm, linalg.Mv, linalg.Dot)
def _mm(b, out, x, y):
    """matmul of two tensors (np.matmul's broadcasting and 1-D rules, as ONNX MatMul)."""
    return b.emit("MatMul", _operands(b, out, x, y))


@maps(AvgPool2D)
def _avg_pool(b, out, x, params):
    k, s, (ph, pw), ceil, include_pad, divisor = params
    if divisor is not None:
        b.fail("avg_pool2d's divisor_override has no ONNX equivalent")
    return b.emit("AveragePool", [b.value(x)], kernel_shape=list(k), strides=list(s),
                  pads=[ph, pw, ph, pw], ceil_mode=int(ceil), count_include_pad=int(include_pad))


@maps(Embedding)
def _embedding(b, out, weight, idx, factors):
    indices = b.value(idx, np.int64)
    return b.emit("Gather", [b.value(weight), indices], axis=0)


def _mask_value(b, mask):
    return "" if mask is None else b.value(mask)


@maps(ScaledDotProductAttention)
def _sdpa(b, out, q, k, v, mask, scale, causal):
    names = [b.value(t) for t in (q, k, v)]
    lead = _shape(q)[:-2]
    if len(lead) != 2:                      # the op takes (B, H, L, D): view other ranks so
        names = [b.emit("Reshape", [n, b.ints((-1, 1) + _shape(t)[-2:])])
                 for n, t in zip(names, (q, k, v))]
        if mask is not None:
            b.fail("attention with a mask on inputs that are not 4-D does not map yet")
    y = b.emit("mte.Attention", names + [_mask_value(b, mask)], scale=float(scale),
               causal=int(bool(causal)))
    return y if len(lead) == 2 else b.emit("Reshape", [y, b.ints(_shape(out))])


@maps(MultiheadSelfAttention)
def _mhsa(b, out, qkv, heads, mask, scale, causal, batch_first):
    """qkv (N, L, 3E) (or (L, N, 3E)) -> q, k, v (N, H, L, hd) -> attention -> (N, L, E)."""
    a, b0 = _shape(qkv)[:2]
    e3 = _shape(qkv)[-1]
    hd = e3 // 3 // heads
    x = b.emit("Reshape", [b.value(qkv), b.ints((a, b0, 3, heads, hd))])
    perm = (2, 0, 3, 1, 4) if batch_first else (2, 1, 3, 0, 4)       # (3, N, H, L, hd)
    x = b.emit("Transpose", [x], perm=list(perm))
    q, k, v = b.emit("Split", [x, b.ints([1, 1, 1], "split")], n_out=3, axis=0)
    q, k, v = [b.emit("Squeeze", [t, b.ints([0], "axes")]) for t in (q, k, v)]
    y = b.emit("mte.Attention", [q, k, v, _mask_value(b, mask)], scale=float(scale),
               causal=int(bool(causal)))                                # (N, H, L, hd)
    y = b.emit("Transpose", [y], perm=[0, 2, 1, 3] if batch_first else [2, 0, 1, 3])
    return b.emit("Reshape", [y, b.ints(_shape(out))])




@maps(ConstantPadNd)
def _constant_pad(b, out, x, shape, src, dst, value):
    """F.pad(x, pads, "constant", value): ONNX Pad with begins then ends per dim."""
    in_shape = _shape(x)
    if any((s.start, s.stop) != (0, n) for s, n in zip(src, in_shape)):
        b.fail("padding with negative pads (cropping) does not map to Pad yet")
    begins = [d.start for d in dst]
    ends = [n - d.stop for n, d in zip(shape, dst)]
    fill = b.const(np.asarray(value, out._data.dtype), "value")
    return b.emit("Pad", [b.value(x), b.ints(begins + ends, "pads"), fill], mode="constant")


# ---- quantization -------------------------------------------------------------------------------
def _fake_quantize(b, out, x, scale, zero_point, quant_min, quant_max, axis=None, grad_factor=1.0):
    """A QAT fake quantizer: mte.FakeQuantize (= DequantizeLinear(QuantizeLinear(x)) with the
    range [quant_min, quant_max]); quant.convert reads its scale and zero point."""
    if not -128 <= quant_min < quant_max <= 127:
        b.fail(f"fake quantization to [{quant_min}, {quant_max}] is not int8")
    s = b.value(scale) if isinstance(scale, Tensor) else b.const(np.asarray(scale, np.float32),
                                                                   "scale")
    z = zero_point._data if isinstance(zero_point, Tensor) else np.asarray(zero_point)
    z = b.const(np.asarray(z).astype(np.int8).reshape(np.shape(b.graph.constants.get(s, z))),
                "zero_point")
    attrs = {"quant_min": int(quant_min), "quant_max": int(quant_max)}
    if axis is not None:
        attrs["axis"] = int(axis)
    return b.emit("mte.FakeQuantize", [b.value(x), s, z], **attrs)


def _register_quantization():
    from ..quant.fake_quant import FakeQuantizeAffine
    TABLE[FakeQuantizeAffine] = _fake_quantize


_register_quantization()
