"""Native convolution: conv2d and its two backward passes computed by libmte through ``_C``.

Same names, signatures and results (to float32 rounding) as the numpy twins in
numpy_backend.py; native_backend.py merges the names listed in ``KERNELS``. Which kernel runs:

    depthwise 3x3, padding 1, stride 1 or 2     _C.depthwise3x3*      (when built)
    3x3, stride 1, groups 1, symmetric padding  _C.winograd3x3        (when built, when
                                                (inference only)      _C.winograd_should_use,
                                                                      and grad mode is off;
                                                                      U cached: prepared.py)
    everything else (any stride, padding, dilation, groups; 1x1 as a plain GEMM)
                                                _C.conv2d*            im2col folded into the
                                                                      GEMM's packing (conv.c);
                                                                      in inference the weight
                                                                      panels are packed once
                                                                      (prepared.py)

Winograd F(4x4, 3x3) has ~1e-5 relative error (im2col: ~4e-7); train-mode BatchNorm can
amplify that into visibly different weight gradients, so Winograd serves inference (grad mode
off, e.g. under ``no_grad``/``inference_mode``) and training keeps im2col + GEMM.

Anything the kernels do not take (a dtype other than float32, array subclasses) goes to the
numpy twin; float32 arrays that are not C-contiguous are copied to C order first.

``conv2d_act`` is the fused form: bias, an optional residual shaped like the output (ResNet's
relu(conv(x) + b + identity)) and an activation (ReLU, ReLU6, GELU, GELU-tanh) applied while
each output tile is still in cache; the backend contract's conv2d has neither, so it is
separate. The depthwise 3x3 kernel fuses only bias + ReLU/ReLU6, so GELU or a residual there
goes to the im2col path (whose direct depthwise loops take every epilogue).
"""
import numpy as np

from ..autograd.grad_mode import _State

from .. import _C  # ImportError when the extension is not built
from . import numpy_backend as _ref
from . import prepared

__all__ = ["KERNELS", "conv2d", "conv2d_act", "conv2d_backward_input",
           "conv2d_backward_weight"]

_HAVE = all(hasattr(_C, n) for n in ("conv2d", "conv2d_backward_input",
                                      "conv2d_backward_weight"))
KERNELS = frozenset({"conv2d", "conv2d_backward_input", "conv2d_backward_weight"}) \
    if _HAVE else frozenset()


_F32 = np.dtype(np.float32)


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


# ---- hooks into the specialised kernels (each guarded: they may not be built) -------------------

def _depthwise3x3_stride(c_in, w_shape, stride, padding, dilation, groups):
    """The stride (1 or 2) if the depthwise 3x3 kernels apply, else None."""
    if not (groups == c_in == w_shape[0] and w_shape[1:] == (1, 3, 3)):
        return None
    if padding != (1, 1, 1, 1) or dilation != (1, 1) or stride not in ((1, 1), (2, 2)):
        return None
    return stride[0]


def _dw_out(size, s):
    return (size - 1) // s + 1


def _winograd_tile(x_shape, w_shape, stride, padding, dilation, groups):
    """The Winograd tile (4 or 2) to use for inference, or 0 for im2col: Winograd needs grad
    mode off, the kernel built, a 3x3 stride-1 groups-1 conv, and its rule to say it wins
    (with weights transformed once and cached unless caching is off)."""
    if _State.enabled or not hasattr(_C, "winograd3x3") or groups != 1 or w_shape[2:] != (3, 3):
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


def _packed_weight(w, groups):
    """For inference (grad mode off), w packed once into the GEMM panels _C.conv2d would
    build on every call (backend/prepared.py; keyed by the ISA, whose microkernel sets the
    layout); None in training, or when conv2d packs nothing for w (depthwise-like)."""
    if _State.enabled or not prepared.enabled() or not hasattr(_C, "conv2d_pack_weight"):
        return None
    if w.size == 0 or (w.shape[1] == 1 and w.shape[0] // groups <= 4):
        return None
    return prepared.get(w, ("conv2d_packed", _C.active_isa(), groups),
                        lambda a: _C.conv2d_pack_weight(a, groups))


def _winograd_u(w, tile):
    """Winograd's transformed weights for w, made once per weight (backend/prepared.py)."""
    return prepared.get(w, ("winograd", tile), lambda a: _C.winograd_transform_weight(a, tile))


# ---- the backend contract ----------------------------------------------------------------------

def conv2d(x, w, bias, stride, padding, dilation, groups):
    """numpy_backend.conv2d (same arguments and result), computed natively."""
    if not _native(x, w, bias):
        return _ref.conv2d(x, w, bias, stride, padding, dilation, groups)
    stride, padding, dilation = _geom(stride, padding, dilation)
    x, w, bias = _c(x), _c(w), _c(bias)
    s = _depthwise3x3_stride(x.shape[1], w.shape, stride, padding, dilation, groups)
    if s is not None and hasattr(_C, "depthwise3x3"):
        return _C.depthwise3x3(x, w, bias, s)
    tile = _winograd_tile(x.shape, w.shape, stride, padding, dilation, groups)
    if tile:
        return _C.winograd3x3(x, w, bias, padding[0], padding[2], U=_winograd_u(w, tile),
                              tile=tile)
    return _C.conv2d(x, w, bias, stride, padding, dilation, groups,
                     packed_w=_packed_weight(w, groups))


def conv2d_act(x, w, bias, stride, padding, dilation, groups, act=None, residual=None):
    """act(conv2d(...) + residual): act None, "relu", "relu6", "gelu" or "gelu_tanh" and
    residual None or shaped like the output, both fused into the GEMM's epilogue (float32
    only; other dtypes run the numpy twin, then the residual and activation after it)."""
    if act not in _ref.ACTIVATIONS:
        _ref.epilogue_activation(np.zeros(0, np.float32), act, "conv2d_act")  # raises
    if not _native(x, w, bias, residual):
        y = _ref.conv2d(x, w, bias, stride, padding, dilation, groups)
        if residual is not None:
            if residual.shape != y.shape:
                raise ValueError(f"conv2d_act: residual has shape {residual.shape}, expected "
                                 f"the output's shape {y.shape}")
            y = y + residual
        return _ref.epilogue_activation(y, act, "conv2d_act")
    stride, padding, dilation = _geom(stride, padding, dilation)
    x, w, bias, residual = _c(x), _c(w), _c(bias), _c(residual)
    s = _depthwise3x3_stride(x.shape[1], w.shape, stride, padding, dilation, groups)
    if (s is not None and hasattr(_C, "depthwise3x3") and residual is None
            and act in (None, "none", "relu", "relu6")):
        return _C.depthwise3x3(x, w, bias, s, act or "none")
    return _C.conv2d(x, w, bias, stride, padding, dilation, groups, act, residual,
                     packed_w=_packed_weight(w, groups))


def conv2d_backward_input(grad_y, w, x_shape, stride, padding, dilation, groups):
    """numpy_backend.conv2d_backward_input, computed natively."""
    if not _native(grad_y, w):
        return _ref.conv2d_backward_input(grad_y, w, x_shape, stride, padding, dilation, groups)
    stride, padding, dilation = _geom(stride, padding, dilation)
    grad_y, w = _c(grad_y), _c(w)
    x_shape = tuple(int(d) for d in x_shape)
    s = _depthwise3x3_stride(x_shape[1], w.shape, stride, padding, dilation, groups)
    if s is not None and hasattr(_C, "depthwise3x3_backward_input"):
        h, wd = x_shape[2:]
        if grad_y.shape[2:] == (_dw_out(h, s), _dw_out(wd, s)):
            return _C.depthwise3x3_backward_input(grad_y, w, s, h, wd)
    return _C.conv2d_backward_input(grad_y, w, x_shape, stride, padding, dilation, groups)


def conv2d_backward_weight(grad_y, x, w_shape, stride, padding, dilation, groups):
    """numpy_backend.conv2d_backward_weight, computed natively."""
    if not _native(grad_y, x):
        return _ref.conv2d_backward_weight(grad_y, x, w_shape, stride, padding, dilation, groups)
    stride, padding, dilation = _geom(stride, padding, dilation)
    grad_y, x = _c(grad_y), _c(x)
    w_shape = tuple(int(d) for d in w_shape)
    s = _depthwise3x3_stride(x.shape[1], w_shape, stride, padding, dilation, groups)
    if s is not None and hasattr(_C, "depthwise3x3_backward_weight"):
        h, wd = x.shape[2:]
        if grad_y.shape[2:] == (_dw_out(h, s), _dw_out(wd, s)):
            return _C.depthwise3x3_backward_weight(grad_y, x, s)
    return _C.conv2d_backward_weight(grad_y, x, w_shape, stride, padding, dilation, groups)


if not _HAVE:  # an extension built without conv: only the twin-less names stay importable
    del conv2d, conv2d_act, conv2d_backward_input, conv2d_backward_weight
    __all__ = ["KERNELS"]
