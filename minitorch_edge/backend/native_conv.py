"""Native convolution: conv2d and its two backward passes computed by libmte through ``_C``.

Same names, signatures and results (to float32 rounding) as the numpy twins in
numpy_backend.py; the dispatch table in backend/__init__.py binds them where libmte's "conv2d"
kernels are built. Which kernel runs, decided here, next to the kernels:

    depthwise K x K (K <= 31), stride 1 or 2,   _C.depthwise          ("depthwise" kernels;
    symmetric padding p < K, dilation 1                               native/src/depthwise.c:
    (forward; no residual)                                            3x3 pad 1 on the 3x3 one)
    depthwise 3x3, padding 1, stride 1 or 2     _C.depthwise3x3_*     ("depthwise3x3" kernels)
    (backward)
    KxK (K >= 3), groups 1, dilation 1,         _C.conv2d_direct      ("conv2d_direct" kernel,
    act None/relu/relu6 (inference=True only)                         when
                                                                      _C.conv2d_direct_should_use:
                                                                      strided convs, and
                                                                      3x3 stride 1 on planes
                                                                      < 12 wide or without
                                                                      Winograd;
                                                                      packed weights cached)
    3x3, stride 1, groups 1, symmetric padding  _C.winograd3x3        ("winograd3x3" kernels,
    (inference=True only)                                             when _C.winograd_should_use;
                                                                      U cached: prepared.py)
    everything else (any stride, padding, dilation, groups; 1x1 as a plain GEMM)
                                                _C.conv2d*            im2col folded into the
                                                                      GEMM's packing (conv.c);
                                                                      with inference=True the
                                                                      weight panels are packed
                                                                      once (prepared.py)

``inference`` is the caller's promise that no gradient will be taken through this call (the
conv Function passes it when it records nothing: under no_grad, or with frozen weights and an
input that needs no grad). Winograd F(4x4, 3x3) has ~1e-5 relative error (im2col: ~4e-7);
train-mode BatchNorm can amplify that into visibly different weight gradients, so Winograd
serves inference only and training keeps im2col + GEMM. Prepacked panels are cached per weight
and dropped when the weight is written, which training does every step.

The epilogue ``act(conv + bias + residual)`` (act None, "relu", "relu6", "gelu", "gelu_tanh",
"silu", "hardswish"; residual None or shaped like the output, ResNet's relu(conv(x) + b +
identity)) is applied by the GEMM's epilogue on each output tile while it is in cache. The
depthwise kernels fuse bias + ReLU/ReLU6, their other activations are one native in-place
pass after it (_epilogue_in_place, 2-3x faster than the im2col path's direct depthwise loops);
a residual there goes to the im2col path (whose direct depthwise loops take every epilogue).
Winograd has no epilogue, so its residual and activation are that in-place pass too (still
faster than im2col for ResNet's 3x3 layers).

``out`` (epilogue.py's rule): every kernel writes the result straight into it; an `out` that
is not a float32 ndarray goes to the numpy twin, which refuses it with a ValueError.

Anything the kernels do not take (a dtype other than float32, array subclasses) goes to the
numpy twin; float32 arrays that are not C-contiguous are copied to C order first.
"""
import numpy as np

from .. import _C  # ImportError when the extension is not built
from . import numpy_backend as _ref
from . import prepared

__all__ = ["conv2d", "conv2d_prepare", "conv2d_backward_input", "conv2d_backward_weight",
           "half_conv2d"]

# the kernel sets the conv route uses besides "conv2d" (which the dispatch table checks)
_DEPTHWISE = "depthwise3x3" in _C.kernels()
_DEPTHWISE_ANY = "depthwise" in _C.kernels()  # the general K x K forward
_DEPTHWISE_MAX_K = 31
_WINOGRAD = "winograd3x3" in _C.kernels()
_DIRECT = "conv2d_direct" in _C.kernels()
_DIRECT_ACTS = (None, "none", "relu", "relu6")
_F32 = np.dtype(np.float32)
_DEPTHWISE_ACTS = (None, "none", "relu", "relu6")  # applied in _C.depthwise3x3's registers


def _native(*arrays):
    """True when every array (None allowed) is a plain float32 ndarray."""
    for a in arrays:
        if a is not None and (type(a) is not np.ndarray or a.dtype != _F32):
            return False
    return True


def _c(a):
    return a if a is None or a.flags.c_contiguous else np.ascontiguousarray(a)


def _geom(stride, padding, dilation):
    return tuple(stride), tuple(padding), tuple(dilation)


# ---- the choice rules ----------------------------------------------------------------------------

def _depthwise3x3_stride(c_in, w_shape, stride, padding, dilation, groups):
    """The stride (1 or 2) if the depthwise 3x3 kernels apply, else None."""
    if not (groups == c_in == w_shape[0] and w_shape[1:] == (1, 3, 3)):
        return None
    if padding != (1, 1, 1, 1) or dilation != (1, 1) or stride not in ((1, 1), (2, 2)):
        return None
    return stride[0]


def _depthwise_geom(x_shape, w_shape, stride, padding, dilation, groups):
    """(K, stride, padding) if the general depthwise forward kernel applies (groups == C_in ==
    C_out, w (C, 1, K, K), K <= 31, stride (s, s) with s in {1, 2}, one padding p < K on
    every side, dilation 1, an output that is not empty), else None."""
    c_in = x_shape[1]
    if not (groups == c_in == w_shape[0] and w_shape[1] == 1 and w_shape[2] == w_shape[3]):
        return None
    k = w_shape[2]
    if not 1 <= k <= _DEPTHWISE_MAX_K or dilation != (1, 1) or stride not in ((1, 1), (2, 2)):
        return None
    p = padding[0]
    if padding != (p, p, p, p) or not 0 <= p < k:
        return None
    if min(x_shape[2:]) + 2 * p < k:  # (an empty output: the general path says what it is)
        return None
    return k, stride[0], p


def _dw_out(size, s):
    return (size - 1) // s + 1


def _winograd_tile(x_shape, w_shape, stride, padding, dilation, groups):
    """The Winograd tile (4 or 2) to use for an inference call, or 0 for im2col: Winograd
    needs the kernel built, a 3x3 stride-1 groups-1 conv, and its rule to say it wins (with
    weights transformed once and cached unless caching is off)."""
    if not _WINOGRAD or groups != 1 or w_shape[2:] != (3, 3):
        return 0
    if stride != (1, 1) or dilation != (1, 1):
        return 0
    top, bottom, left, right = padding
    if top != bottom or left != right:
        return 0
    n, c, h, w = x_shape
    ho, wo = h + 2 * top - 2, w + 2 * left - 2
    if ho < 1 or wo < 1 or n == 0:
        return 0
    cached = prepared.enabled()
    if _C.winograd_should_use(n, c, w_shape[0], h, w, top, left, cached=cached):
        return _C.winograd_tile(n, c, w_shape[0], h, w, top, left, cached=cached)
    return 0


def _use_direct(x_shape, w_shape, stride, padding, dilation, groups, act):
    """True when the direct KxK kernel should run this inference conv (its measured rule,
    native/src/conv_direct.c)."""
    if not _DIRECT or groups != 1 or dilation != (1, 1) or act not in _DIRECT_ACTS:
        return False
    if len(x_shape) != 4 or x_shape[0] == 0 or x_shape[1] != w_shape[1] or w_shape[0] == 0:
        return False
    top, bottom, left, right = padding
    if x_shape[2] + top + bottom < w_shape[2] or x_shape[3] + left + right < w_shape[3]:
        return False
    return _C.conv2d_direct_should_use(tuple(x_shape), tuple(w_shape), stride, padding, act)


def _direct_weight(w):
    """w packed for _C.conv2d_direct, once per weight (backend/prepared.py; the packing is
    the same on every ISA); packed per call when caching is off."""
    return prepared.get(w, ("conv2d_direct",), _C.conv2d_direct_pack)


def _packed_weight(w, groups):
    """w packed once into the GEMM panels _C.conv2d would build on every call, for inference
    calls (backend/prepared.py; keyed by the ISA, whose microkernel sets the layout); None
    when caching is off, or when conv2d packs nothing for w (depthwise-like)."""
    if not prepared.enabled():
        return None
    if w.size == 0 or (w.shape[1] == 1 and w.shape[0] // groups <= 4):
        return None
    return prepared.get(w, ("conv2d_packed", _C.active_isa(), groups),
                        lambda a: _C.conv2d_pack_weight(a, groups))


def _winograd_u(w, tile):
    """Winograd's transformed weights for w, made once per weight (backend/prepared.py)."""
    return prepared.get(w, ("winograd", tile), lambda a: _C.winograd_transform_weight(a, tile))


# ---- the backend contract ----------------------------------------------------------------------

def conv2d(x, w, bias, stride, padding, dilation, groups, act=None, residual=None,
           inference=False, out=None):
    """numpy_backend.conv2d (same arguments and result), computed natively; with `out` the
    kernels write the result there (no allocation)."""
    if (_ref.is_half_pair(x, w) and act in _ref.ACTIVATIONS and residual is None and out is None
            and x.ndim == 4 and w.ndim == 4):
        # bfloat16 / float16: im2col + libmte's half-precision GEMM; an activation on the
        # float32 result, then the one rounding (the twin's rule)
        y = _C.half_conv2d(_c(x), _c(w), None if bias is None else _c(bias.astype(_F32)),
                           tuple(stride), tuple(padding), tuple(dilation), groups,
                           out_float32=act is not None)
        return y if act is None else _ref.epilogue_activation(y, act, "conv2d").astype(x.dtype)
    if act not in _ref.ACTIVATIONS or not _native(x, w, bias, residual, out):
        return _ref.conv2d(x, w, bias, stride, padding, dilation, groups, act, residual,
                           out=out)
    stride, padding, dilation = _geom(stride, padding, dilation)
    x, w, bias, residual = _c(x), _c(w), _c(bias), _c(residual)
    if residual is None:
        # 3x3 padding 1 first (the same kernel _C.depthwise would run, one check less)
        s = _depthwise3x3_stride(x.shape[1], w.shape, stride, padding, dilation, groups)
        if s is not None and _DEPTHWISE:
            return _depthwise3x3(x, w, bias, s, act, out)
        dw = _depthwise_geom(x.shape, w.shape, stride, padding, dilation, groups) \
            if _DEPTHWISE_ANY else None
        if dw is not None:
            return _depthwise_any(x, w, bias, dw, act, out)
    if inference and _use_direct(x.shape, w.shape, stride, padding, dilation, groups, act):
        return _C.conv2d_direct(x, _direct_weight(w), w.shape, bias, stride, padding, act,
                                residual, out=out)
    tile = (_winograd_tile(x.shape, w.shape, stride, padding, dilation, groups)
            if inference else 0)
    if tile:
        y = _C.winograd3x3(x, w, bias, padding[0], padding[2], U=_winograd_u(w, tile), tile=tile,
                           out=out)
        if residual is not None and residual.shape != y.shape:
            raise ValueError(f"conv2d: residual has shape {residual.shape}, expected the "
                             f"output's shape {y.shape}")
        return _epilogue_in_place(y, act, residual)  # Winograd has no epilogue: one pass
    packed = _packed_weight(w, groups) if inference else None
    return _C.conv2d(x, w, bias, stride, padding, dilation, groups, act, residual,
                     packed_w=packed, out=out)


def conv2d_prepare(x_shape, w, bias, stride, padding, dilation, groups, act=None,
                   residual=False):
    """numpy_backend.conv2d_prepare: the route of an inference conv2d for inputs of shape
    `x_shape` and this constant w, chosen once (the same choice conv2d makes on every call),
    with its prepared weights (packed panels or Winograd's U) fetched once, as a function
    run(x, residual=None, out=None) that calls the kernel directly."""
    stride, padding, dilation = _geom(stride, padding, dilation)
    if act not in _ref.ACTIVATIONS or not _native(w, bias) or len(x_shape) != 4:
        return _ref.conv2d_prepare(x_shape, w, bias, stride, padding, dilation, groups, act,
                                   residual)
    w, bias = _c(w), _c(bias)
    s = _depthwise3x3_stride(x_shape[1], w.shape, stride, padding, dilation, groups)
    if s is not None and _DEPTHWISE and not residual:
        return lambda x, residual=None, out=None: _depthwise3x3(x, w, bias, s, act, out)
    dw = _depthwise_geom(tuple(x_shape), w.shape, stride, padding, dilation, groups) \
        if _DEPTHWISE_ANY and not residual else None
    if dw is not None:
        return lambda x, residual=None, out=None: _depthwise_any(x, w, bias, dw, act, out)
    if _use_direct(tuple(x_shape), w.shape, stride, padding, dilation, groups, act):
        pw, ws = _direct_weight(w), w.shape
        return lambda x, residual=None, out=None: _C.conv2d_direct(
            x, pw, ws, bias, stride, padding, act, residual, out=out)
    tile = _winograd_tile(tuple(x_shape), w.shape, stride, padding, dilation, groups)
    if tile:
        u = _winograd_u(w, tile)

        def winograd(x, residual=None, out=None):
            y = _C.winograd3x3(x, w, bias, padding[0], padding[2], U=u, tile=tile, out=out)
            return _epilogue_in_place(y, act, residual)
        return winograd
    packed = _packed_weight(w, groups)
    return lambda x, residual=None, out=None: _C.conv2d(
        x, w, bias, stride, padding, dilation, groups, act, residual, packed_w=packed, out=out)


def _depthwise_any(x, w, bias, geom, act, out):
    """_C.depthwise (K x K, geom = (K, stride, padding)) with any epilogue activation, as
    _depthwise3x3 does."""
    _, stride, pad = geom
    if act in _DEPTHWISE_ACTS:
        return _C.depthwise(x, w, bias, stride, pad, act or "none", out=out)
    return _epilogue_in_place(_C.depthwise(x, w, bias, stride, pad, "none", out=out), act)


def _depthwise3x3(x, w, bias, stride, act, out):
    """_C.depthwise3x3 with any epilogue activation: ReLU / ReLU6 in its registers, the others
    one native in-place pass after it (as fast as applying them plane by plane in C: the
    activation's arithmetic, not the memory pass, is what they cost)."""
    if act in _DEPTHWISE_ACTS:
        return _C.depthwise3x3(x, w, bias, stride, act or "none", out=out)
    return _epilogue_in_place(_C.depthwise3x3(x, w, bias, stride, "none", out=out), act)


_NO_ROWS = np.empty((1, 0), _F32)


def _epilogue_in_place(y, act, residual=None):
    """y = act(y + residual) written into y (a C-contiguous float32 array), returned: one
    native pass, the GEMM's epilogue alone (_C.sgemm with K = 0 and beta = 1 computes
    out = act(out + residual)) on y viewed as one long row."""
    if y.size == 0 or (act in (None, "none") and residual is None):
        return y
    n = y.size
    _C.sgemm(_NO_ROWS, np.empty((0, n), _F32), beta=1.0, out=y.reshape(1, n), act=act,
             residual=None if residual is None else residual.reshape(1, n))
    return y


def _depthwise3x3_backward_stride(x_shape, w_shape, grad_shape, stride, padding, dilation,
                                  groups):
    """The stride if a backward pass can use the depthwise 3x3 kernels (built, the shapes
    they take, and grad_y of exactly their output size), else None."""
    s = _depthwise3x3_stride(x_shape[1], w_shape, stride, padding, dilation, groups)
    h, w = x_shape[2:]
    if s is None or not _DEPTHWISE or tuple(grad_shape[2:]) != (_dw_out(h, s), _dw_out(w, s)):
        return None
    return s


def conv2d_backward_input(grad_y, w, x_shape, stride, padding, dilation, groups):
    """numpy_backend.conv2d_backward_input, computed natively (bfloat16 / float16: by the
    float32 kernels on widened copies, rounded once, as the twin)."""
    if _ref.is_half_pair(grad_y, w):
        return _C.float32_to_half(conv2d_backward_input(
            _C.half_to_float32(_c(grad_y)), _C.half_to_float32(_c(w)), x_shape, stride,
            padding, dilation, groups), w.dtype)
    if not _native(grad_y, w):
        return _ref.conv2d_backward_input(grad_y, w, x_shape, stride, padding, dilation, groups)
    geom = _geom(stride, padding, dilation) + (groups,)
    grad_y, w, x_shape = _c(grad_y), _c(w), tuple(int(d) for d in x_shape)
    s = _depthwise3x3_backward_stride(x_shape, w.shape, grad_y.shape, *geom)
    if s is not None:
        return _C.depthwise3x3_backward_input(grad_y, w, s, *x_shape[2:])
    return _C.conv2d_backward_input(grad_y, w, x_shape, *geom)


def conv2d_backward_weight(grad_y, x, w_shape, stride, padding, dilation, groups):
    """numpy_backend.conv2d_backward_weight, computed natively (bfloat16 / float16: by the
    float32 kernels on widened copies, rounded once, as the twin)."""
    if _ref.is_half_pair(grad_y, x):
        return _C.float32_to_half(conv2d_backward_weight(
            _C.half_to_float32(_c(grad_y)), _C.half_to_float32(_c(x)), w_shape, stride,
            padding, dilation, groups), x.dtype)
    if not _native(grad_y, x):
        return _ref.conv2d_backward_weight(grad_y, x, w_shape, stride, padding, dilation, groups)
    geom = _geom(stride, padding, dilation) + (groups,)
    grad_y, x, w_shape = _c(grad_y), _c(x), tuple(int(d) for d in w_shape)
    s = _depthwise3x3_backward_stride(x.shape, w_shape, grad_y.shape, *geom)
    return (_C.depthwise3x3_backward_weight(grad_y, x, s) if s is not None
            else _C.conv2d_backward_weight(grad_y, x, w_shape, *geom))


def half_conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, out_float32=False):
    """numpy_backend.half_conv2d (same arguments; values to float32 accumulation order) as
    libmte's mte_half_conv2d: im2col on the 16-bit values, then the half-precision GEMM per
    image and group (native/include/mte_bf16.h)."""
    _ref._check_half_pair("half_conv2d", x, w, "x", "w")
    bias = None if bias is None else _c(np.asarray(bias).astype(_F32))
    return _C.half_conv2d(_c(x), _c(w), bias, stride, padding, dilation, groups,
                          out_float32=bool(out_float32))
