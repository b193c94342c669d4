"""Neural-network ops of the graph: convolution, GEMM, pooling, normalization, attention, and our
fused ``mte`` ops, each with ONNX's (opset 17) names and attributes where ONNX has the op.

Geometry attributes are ONNX's: ``kernel_shape``, ``strides``, ``dilations``, ``group`` and
``pads`` = [top, left, bottom, right] (begins then ends). The backend kernels take padding as
(top, bottom, left, right); `_pads` converts.

The fused ops, and the ONNX subgraph each replaces (graph/passes/fuse_epilogue.py makes them):

    mte.ConvAct(X, W, B, R)   = act(Conv(X, W, B) + R)     R optional ("" when absent)
    mte.GemmAct(A, W, C, R)   = act(Gemm(A, W, C, transB=1) + R)
    mte.Attention(Q, K, V, M) = MatMul(Softmax(Add(Mul(MatMul(Q, Transpose(K)), scale), M)), V)

where act is the ``activation`` attribute: "none", "relu" (Relu), "relu6" (Clip(0, 6)),
"gelu" / "gelu_tanh" (mte.Gelu), run by the GEMM's epilogue on each output tile while it is in
cache (backend.conv2d / backend.linear with ``act`` and ``residual``).
"""
import numpy as np

from .. import backend
from ..backend import numpy_backend
from ..backend.numpy_backend import conv_output_size, pool_output_size
from .opset import op, same_as_input

ACTIVATIONS = ("none", "relu", "relu6", "gelu", "gelu_tanh") + tuple(  # silu, hardswish: once
    a for a in ("silu", "hardswish") if a in backend.numpy_backend.ACTIVATIONS)  # the backend has


def _pads(attrs):
    """ONNX pads [t, l, b, r] as the backend's (t, b, l, r)."""
    t, left, b, r = attrs.get("pads", (0, 0, 0, 0))
    return (t, b, left, r)


def _pair(attrs, key, default=1):
    return tuple(attrs.get(key, (default, default)))


# ---- convolution ------------------------------------------------------------------------------
def _conv_shape(attrs, ins):
    x, w = ins[0], ins[1]
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ValueError(f"Conv takes 4-D X and W, got X {list(x.shape)} and W {list(w.shape)}")
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    group = attrs.get("group", 1)
    if c != cg * group or o % group:
        raise ValueError(f"Conv: X has {c} channels, W {list(w.shape)} with group={group} "
                         f"expects {cg * group}")
    if tuple(attrs.get("kernel_shape", (kh, kw))) != (kh, kw):
        raise ValueError(f"Conv: kernel_shape {attrs['kernel_shape']} != W's {[kh, kw]}")
    if len(ins) > 2 and ins[2] is not None and ins[2].shape != (o,):
        raise ValueError(f"Conv: B must have shape [{o}], got {list(ins[2].shape)}")
    (sh, sw), (dh, dw) = _pair(attrs, "strides"), _pair(attrs, "dilations")
    t, b, left, r = _pads(attrs)
    ho, wo = conv_output_size(h, kh, sh, t, b, dh), conv_output_size(wd, kw, sw, left, r, dw)
    if ho <= 0 or wo <= 0:
        raise ValueError(f"Conv: the output would be empty ({ho}x{wo})")
    shape = (n, o, ho, wo)
    if len(ins) > 3 and ins[3] is not None and ins[3].shape != shape:
        raise ValueError(f"mte.ConvAct: the residual must have the output's shape {list(shape)}, "
                         f"got {list(ins[3].shape)}")
    return [(shape, x.dtype)]


def _conv(attrs, x, w, b=None, residual=None, act=None, out=None):
    geom = (_pair(attrs, "strides"), _pads(attrs), _pair(attrs, "dilations"),
            attrs.get("group", 1))
    return backend.conv2d(x, w, b, *geom, act=act, residual=residual, inference=True, out=out)


def _conv_prepare(attrs, values, constants):
    """Conv / mte.ConvAct with constant W (and B): the backend picks the kernel and prepares
    the weights once (backend.conv2d_prepare)."""
    w, b = constants[1], constants[2] if len(constants) > 2 else None
    if w is None or (len(values) > 2 and values[2] is not None and b is None):
        return None
    act = attrs.get("activation", "none")
    geom = (_pair(attrs, "strides"), _pads(attrs), _pair(attrs, "dilations"),
            attrs.get("group", 1))
    residual = len(values) > 3 and values[3] is not None
    run = backend.conv2d_prepare(values[0].shape, w, b, *geom,
                                 act=None if act == "none" else act, residual=residual)
    return lambda x, w=None, b=None, r=None, out=None: run(x, r, out)


@op("Conv", _conv_shape, writes_out=True, prepare=_conv_prepare)
def conv(attrs, x, w, b=None, out=None):
    """y = conv2d(X, W) + B (cross-correlation; attrs kernel_shape, strides, pads, dilations,
    group)."""
    return _conv(attrs, x, w, b, out=out)


def _check_act(attrs):
    act = attrs.get("activation", "none")
    if act not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {act!r}")
    return act


@op("mte.ConvAct", lambda attrs, ins: (_check_act(attrs), _conv_shape(attrs, ins))[1],
    writes_out=True, prepare=_conv_prepare)
def conv_act(attrs, x, w, b=None, residual=None, out=None):
    """y = act(conv2d(X, W) + B + R): Conv, the residual Add and the activation in one pass."""
    act = attrs.get("activation", "none")
    return _conv(attrs, x, w, b, residual, None if act == "none" else act, out=out)


# ---- GEMM ---------------------------------------------------------------------------------------
def _gemm_shape(attrs, ins):
    a, w = ins[0].shape, ins[1].shape
    if len(a) != 2 or len(w) != 2:
        raise ValueError(f"Gemm takes 2-D A and B, got {list(a)} and {list(w)}")
    m, k = (a[1], a[0]) if attrs.get("transA", 0) else a
    kb, n = (w[1], w[0]) if attrs.get("transB", 0) else w
    if k != kb:
        raise ValueError(f"Gemm: A {list(a)} and B {list(w)} (transA={attrs.get('transA', 0)}, "
                         f"transB={attrs.get('transB', 0)}) cannot be multiplied")
    if len(ins) > 2 and ins[2] is not None:
        np.broadcast_shapes(ins[2].shape, (m, n))
    if len(ins) > 3 and ins[3] is not None and ins[3].shape != (m, n):
        raise ValueError(f"mte.GemmAct: the residual must have shape {[m, n]}")
    return [((m, n), ins[0].dtype)]


def _gemm(attrs, a, w, c=None, residual=None, act=None):
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if attrs.get("transA", 0):
        a = a.T
    if attrs.get("transB", 0) and alpha == 1.0 and beta == 1.0 and residual is None and (
            c is None or c.ndim == 1):
        return backend.linear(np.ascontiguousarray(a), w, c, act=act)   # the fused Linear
    y = backend.matmul(a, w.T if attrs.get("transB", 0) else w)
    if alpha != 1.0:
        y = y * y.dtype.type(alpha)
    if c is not None:
        y = y + (c if beta == 1.0 else c * c.dtype.type(beta))
    if residual is not None:
        y = y + residual
    return numpy_backend.epilogue_activation(y, act, "Gemm") if act else y


@op("Gemm", _gemm_shape)
def gemm(attrs, a, w, c=None):
    """y = alpha A' B' + beta C, A' = A^T if transA, B' = B^T if transB (a Linear layer is
    Gemm(x, weight, bias, transB=1))."""
    return _gemm(attrs, a, w, c)


@op("mte.GemmAct", lambda attrs, ins: (_check_act(attrs), _gemm_shape(attrs, ins))[1])
def gemm_act(attrs, a, w, c=None, residual=None):
    """y = act(Gemm(A, W, C) + R) in one pass (the GEMM's epilogue)."""
    act = attrs.get("activation", "none")
    return _gemm(attrs, a, w, c, residual, None if act == "none" else act)


# ---- pooling ------------------------------------------------------------------------------------
def _pool_shape(attrs, ins, dilated=True):
    n, c, h, w = ins[0].shape
    (kh, kw), (sh, sw) = attrs["kernel_shape"], _pair(attrs, "strides")
    (dh, dw) = _pair(attrs, "dilations") if dilated else (1, 1)
    t, b, left, r = _pads(attrs)
    if t != b or left != r:
        raise ValueError(f"pooling takes symmetric pads only, got {attrs['pads']}")
    ceil = bool(attrs.get("ceil_mode", 0))
    return [((n, c, pool_output_size(h, kh, sh, t, dh, ceil),
              pool_output_size(w, kw, sw, left, dw, ceil)), ins[0].dtype)]


def _pool_params(attrs):
    t, _, left, _ = _pads(attrs)
    return tuple(attrs["kernel_shape"]), _pair(attrs, "strides"), (t, left)


@op("MaxPool", _pool_shape, writes_out=True)
def max_pool(attrs, x, out=None):
    """y = the max of each window (attrs kernel_shape, strides, pads, dilations, ceil_mode);
    an int8 X stays int8 with its scale (opset_quant.qmax_pool)."""
    if x.dtype == np.int8:
        from .opset_quant import qmax_pool
        return qmax_pool(attrs, x, out=out)
    k, s, p = _pool_params(attrs)
    return backend.max_pool2d_inference(x, k, s, p, _pair(attrs, "dilations"),
                                        bool(attrs.get("ceil_mode", 0)), out=out)


@op("AveragePool", lambda attrs, ins: _pool_shape(attrs, ins, dilated=False))
def average_pool(attrs, x):
    """y = the mean of each window (attrs kernel_shape, strides, pads, ceil_mode,
    count_include_pad)."""
    k, s, p = _pool_params(attrs)
    return backend.avg_pool2d(x, k, s, p, bool(attrs.get("ceil_mode", 0)),
                              bool(attrs.get("count_include_pad", 0)), None)


@op("GlobalAveragePool", lambda attrs, ins: [(ins[0].shape[:2] + (1,) * (len(ins[0].shape) - 2),
                                              ins[0].dtype)])
def global_average_pool(attrs, x):
    """y = the mean over all positions, keeping them as size-1 dims."""
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True, dtype=x.dtype)


# ---- normalization ------------------------------------------------------------------------------
def _bn_shape(attrs, ins):
    c = ins[0].shape[1]
    for i, what in zip(ins[1:5], ("scale", "B", "input_mean", "input_var")):
        if i is None or i.shape != (c,):
            raise ValueError(f"BatchNormalization: {what} must have shape [{c}]")
    return [(ins[0].shape, ins[0].dtype)]


@op("BatchNormalization", _bn_shape, elementwise=True)
def batch_norm(attrs, x, scale, bias, mean, var):
    """y = (x - mean) / sqrt(var + epsilon) * scale + B per channel (axis 1): inference mode,
    with the running statistics."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    f = x.dtype.type
    k = (scale / np.sqrt(var + f(attrs.get("epsilon", 1e-5)))).astype(x.dtype)
    return x * k.reshape(shape) + (bias - mean * k).astype(x.dtype).reshape(shape)


def _ln_shape(attrs, ins):
    axis = attrs.get("axis", -1) % len(ins[0].shape)
    tail = ins[0].shape[axis:]
    for i in ins[1:3]:
        if i is not None and i.shape != tail:
            raise ValueError(f"LayerNormalization: Scale and B must have shape {list(tail)}")
    return [(ins[0].shape, ins[0].dtype)]


@op("LayerNormalization", _ln_shape)
def layer_norm(attrs, x, scale=None, bias=None):
    """y = (x - mean) / sqrt(var + epsilon) * Scale + B, statistics over the dims from `axis`
    (default -1) on."""
    axis = attrs.get("axis", -1) % x.ndim
    n = int(np.prod(x.shape[axis:]))
    y = backend.layer_norm(np.ascontiguousarray(x).reshape(-1, n),
                           None if scale is None else scale.reshape(n),
                           None if bias is None else bias.reshape(n),
                           attrs.get("epsilon", 1e-5))[0]
    return y.reshape(x.shape)


# ---- attention ----------------------------------------------------------------------------------
def _attention_shape(attrs, ins):
    q, k, v = ins[0].shape, ins[1].shape, ins[2].shape
    if len(q) != 4 or len(k) != 4 or len(v) != 4 or q[-1] != k[-1] or k[-2] != v[-2]:
        raise ValueError(f"mte.Attention takes Q (B,H,L,D), K (B,H,S,D), V (B,H,S,Dv), got "
                         f"{list(q)}, {list(k)}, {list(v)}")
    return [(tuple(np.broadcast_shapes(q[:2], k[:2], v[:2])) + (q[2], v[3]), ins[0].dtype)]


@op("mte.Attention", _attention_shape)
def attention(attrs, q, k, v, mask=None):
    """y = softmax(scale Q K^T + M) V per (batch, head), M an optional additive mask
    (attrs scale, causal: -inf above the diagonal)."""
    return backend.attention(q, k, v, mask, attrs.get("scale", 1.0),
                             bool(attrs.get("causal", 0)))[0]


# ---- padding ------------------------------------------------------------------------------------
def _pad_shape(attrs, ins):
    pads = [int(p) for p in ins[1].data]
    rank = len(ins[0].shape)
    if len(pads) != 2 * rank:
        raise ValueError(f"Pad: pads has {len(pads)} entries, expected {2 * rank}")
    return [(tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(ins[0].shape)),
             ins[0].dtype)]


@op("Pad", _pad_shape)
def pad(attrs, x, pads, value=None):
    """y = x padded by `pads` (begins then ends per dim, an int64 input); mode "constant" (with
    constant_value), "reflect" or "edge"."""
    rank = x.ndim
    widths = [(int(pads[i]), int(pads[i + rank])) for i in range(rank)]
    mode = attrs.get("mode", "constant")
    if mode == "constant":
        fill = 0 if value is None else value.item()
        return np.pad(x, widths, constant_values=fill)
    return np.pad(x, widths, mode={"reflect": "reflect", "edge": "edge"}[mode])


@op("Dropout", same_as_input, alias=True)
def dropout(attrs, x):
    """y = x (inference: ONNX Dropout with training_mode false is the identity)."""
    return x
