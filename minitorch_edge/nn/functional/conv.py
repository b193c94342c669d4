"""Convolutions: conv1d / conv2d and their transposes, as autograd Functions over the backend's
conv kernels.

A 2-D convolution (cross-correlation, as in every deep-learning framework) of x (N, C, H, W)
with w (O, C/groups, kh, kw) is

    y[n, o, r, s] = b[o] + sum_{c, i, j} w[o, c, i, j] * xpad[n, c, r*sh + i*dh, s*sw + j*dw]

with c running over the input channels of o's group. y is linear in x and in w, so its
gradients are two more convolution-like maps, each a Function here:

    Convolution(x, w, b)       y  = conv(x; w) + b                 (backend.conv2d)
    ConvBackwardInput(gy, w)   gx = conv^T(gy; w), the x-adjoint   (backend.conv2d_backward_input)
    ConvBackwardWeight(gy, x)  gw = the w-adjoint applied to gy    (backend.conv2d_backward_weight)

and db = sum of gy over (n, r, s). All three maps are bilinear, so the backward of each one is
written with the other two: the double backward (Hessian-vector products, gradient penalties)
needs nothing else. A transposed convolution is ConvBackwardInput run forward.

1-D convolutions are 2-D ones over a height-1 image. The kernels take padding as
(top, bottom, left, right), so padding='same' with an even kernel (extra zero at the end, as in
PyTorch) needs no extra copy. bfloat16 is convolved in float32 and rounded back once.
"""
from ..._autocast import autocast_op
import operator

from ... import backend
from ... import dtypes as _dt
from ...autograd.function import Function
from ...ops._util import ntuple, shape_str

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


# ---- the Functions ------------------------------------------------------------------------------
# geom = (stride (sh, sw), padding (top, bottom, left, right), dilation (dh, dw), groups)

def _crop_to(y, shape):
    """y cut to `shape` on its spatial dims (a transposed conv with output_padding >= stride
    has input rows whose forward conv produces one more output than its gradient has)."""
    if tuple(y._data.shape) == tuple(shape):
        return y
    return y[:, :, :shape[2], :shape[3]]


class Convolution(Function):
    """y = conv2d(x, w) + b.  dx = ConvBackwardInput(dy, w), dw = ConvBackwardWeight(dy, x),
    db = dy summed over batch and space."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, w, b, geom):
        recorded = bool(ctx.needs_input_grad)
        if recorded:
            ctx.geom = geom
            ctx.save_for_backward(x, w)
        # nothing recorded (no_grad, or frozen weights and an input without grad): the backend
        # may take its inference paths (Winograd, prepared weights)
        # bfloat16/float16 go to the backend's half conv (float32 sums, rounded once)
        y = backend.conv2d(x._data, w._data, None if b is None else _dt.compute_array(b._data),
                           *geom, inference=not recorded)
        return _dt.result_array(y, x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = ConvBackwardInput.apply(grad, w, x._data.shape, ctx.geom) if need[0] else None
        gw = ConvBackwardWeight.apply(grad, x, w._data.shape, ctx.geom) if need[1] else None
        gb = grad.sum((0, 2, 3)) if need[2] else None
        return gx, gw, gb, None


class ConvBackwardInput(Function):
    """gx = conv^T(gy; w): every output gradient spread back over the input window it came from
    (the forward of conv_transpose2d). Bilinear in (gy, w):
    d/dgy = conv2d(ggx, w), d/dw = ConvBackwardWeight(gy, ggx)."""
    _builtin = True

    @staticmethod
    def forward(ctx, gy, w, x_shape, geom):
        if ctx.needs_input_grad:
            ctx.geom = geom
            ctx.save_for_backward(gy, w)
        gx = backend.conv2d_backward_input(gy._data, w._data, x_shape, *geom)
        return _dt.result_array(gx, gy._data.dtype)

    @staticmethod
    def backward(ctx, ggx):
        gy, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        dgy = _crop_to(Convolution.apply(ggx, w, None, ctx.geom), gy._data.shape) if need[0] \
            else None
        dw = ConvBackwardWeight.apply(gy, ggx, w._data.shape, ctx.geom) if need[1] else None
        return dgy, dw, None, None


class ConvBackwardWeight(Function):
    """gw = the adjoint of w -> conv2d(x, w) applied to gy (the correlation of gy with x).
    Bilinear in (gy, x): d/dgy = conv2d(x, ggw), d/dx = ConvBackwardInput(gy, ggw)."""
    _builtin = True

    @staticmethod
    def forward(ctx, gy, x, w_shape, geom):
        if ctx.needs_input_grad:
            ctx.geom = geom
            ctx.save_for_backward(gy, x)
        gw = backend.conv2d_backward_weight(gy._data, x._data, w_shape, *geom)
        return _dt.result_array(gw, gy._data.dtype)

    @staticmethod
    def backward(ctx, ggw):
        gy, x = ctx.saved_tensors
        need = ctx.needs_input_grad
        dgy = _crop_to(Convolution.apply(x, ggw, None, ctx.geom), gy._data.shape) if need[0] \
            else None
        dx = ConvBackwardInput.apply(gy, ggw, x._data.shape, ctx.geom) if need[1] else None
        return dgy, dx, None, None


# ---- argument checking --------------------------------------------------------------------------
def _check_tensors(input, weight, bias, nd, op):
    """Rank and dtype checks shared by every convolution; returns True when batched."""
    shape = tuple(input._data.shape)
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) "
                           f"input, got input of shape {shape}")
    if weight._data.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 2}-D weight, got weight of shape "
                           f"{tuple(weight._data.shape)}")
    dt, wdt = input._data.dtype, weight._data.dtype
    if not _dt.is_float_dtype(dt) or dt != wdt or (bias is not None and bias._data.dtype != dt):
        got = f"input {input.dtype}, weight {weight.dtype}" + \
            ("" if bias is None else f", bias {bias.dtype}")
        raise RuntimeError(f"{op}: expected floating-point input, weight and bias of one dtype, "
                           f"got {got}; convert them (e.g. input.float())")
    return len(shape) == nd + 2


def _check_channels(shape, weight, bias, groups, op, transposed=False):
    """Input channels and bias against the weight and groups (shape: the batched input
    shape)."""
    ws = weight._data.shape
    if groups < 1:
        raise RuntimeError(f"{op}: groups must be a positive integer, got {groups}")
    if ws[0] < groups:     # no output (or, transposed, input) channels: PyTorch's message
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(ws)} instead")
    if transposed and 0 in ws[1:]:
        raise RuntimeError(f"non-empty 2D or 4D weight tensor expected, but got: {list(ws)}")
    if transposed:
        expected = ws[0]
        if expected % groups:
            raise RuntimeError(f"{op}: weight {shape_str(ws)} has {expected} input channels, "
                               f"which is not divisible by groups={groups}")
    else:
        expected = ws[1] * groups
        if ws[0] % groups:
            raise RuntimeError(f"{op}: weight {shape_str(ws)} has {ws[0]} output channels, "
                               f"which is not divisible by groups={groups}")
    if shape[1] != expected:
        g = f", groups={groups}" if groups != 1 else ""
        raise RuntimeError(f"{op}: expected input with {expected} channels (weight "
                           f"{shape_str(ws)}{g}), got input of shape {tuple(shape)}")
    out_ch = ws[1] * groups if transposed else ws[0]
    if bias is not None and tuple(bias._data.shape) != (out_ch,):
        raise RuntimeError(f"{op}: expected bias of shape ({out_ch},) for weight "
                           f"{shape_str(ws)}, got bias of shape {tuple(bias._data.shape)}")


def _same_pads(kernel, dilation):
    """padding='same': total d*(k-1) per dim, the odd one at the end (as PyTorch)."""
    return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                 for k, d in zip(kernel, dilation))


def _conv_pads(padding, kernel, stride, dilation, nd, op):
    """padding (int, tuple, 'same', 'valid') -> ((before, after), ...) per spatial dim."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding != "same":
            raise RuntimeError(f"{op}: invalid padding string {padding!r}; use 'same', 'valid', "
                               f"an int or a tuple of {nd} ints")
        if any(s != 1 for s in stride):
            raise RuntimeError(f"{op}: padding='same' is not supported for strided "
                               f"convolutions (stride={stride})")
        return _same_pads(kernel, dilation)
    pads = ntuple(padding, nd, "padding", op)
    if any(p < 0 for p in pads):
        raise RuntimeError(f"{op}: negative padding is not supported, got padding={pads}")
    return tuple((p, p) for p in pads)


def _check_positive(values, what, op):
    if any(v < 1 for v in values):
        raise RuntimeError(f"{op}: {what} must be positive, got {what}={values}")


def _lift(input, weight, nd):
    """1-D convolutions run as 2-D ones over height-1 images: unsqueeze the spatial dims."""
    if nd == 2:
        return input, weight
    return input.unsqueeze(-2), weight.unsqueeze(-2)


def _geom(stride, pads, dilation, groups, nd):
    if nd == 1:
        return (1, stride[0]), (0, 0) + pads[0], (1, dilation[0]), groups
    return tuple(stride), pads[0] + pads[1], tuple(dilation), groups


# ---- convolution --------------------------------------------------------------------------------
@autocast_op("_convolution")   # what F.conv*d and the Conv layers run
def _conv(input, weight, bias, stride, padding, dilation, groups, nd, op):
    """conv1d/conv2d (nd = 1, 2); `op` names the caller in error messages."""
    batched = _check_tensors(input, weight, bias, nd, op)
    shape = tuple(input._data.shape) if batched else (1,) + tuple(input._data.shape)
    groups = operator.index(groups)
    _check_channels(shape, weight, bias, groups, op)
    kernel = tuple(weight._data.shape[2:])
    stride = ntuple(stride, nd, "stride", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    _check_positive(stride, "stride", op)
    _check_positive(dilation, "dilation", op)
    pads = _conv_pads(padding, kernel, stride, dilation, nd, op)
    padded = tuple(s + a + b for s, (a, b) in zip(shape[2:], pads))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(e > p for e, p in zip(span, padded)):
        dilated = f" (dilated: {shape_str(span)})" if span != kernel else ""
        raise RuntimeError(f"{op}: kernel {shape_str(kernel)}{dilated} is larger than the "
                           f"padded input {shape_str(padded)} (input of shape "
                           f"{tuple(input._data.shape)}, padding {pads})")
    x = input if batched else input.unsqueeze(0)
    x, w = _lift(x, weight, nd)
    y = Convolution.apply(x, w, bias, _geom(stride, pads, dilation, groups, nd))
    if nd == 1:
        y = y.squeeze(-2)
    return y if batched else y.squeeze(0)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of input (N, C, H, W) or (C, H, W) with weight (O, C/groups, kh, kw):
    y[n, o] = b[o] + sum over o's group of channels c of cross_correlate(x[n, c], w[o, c]).

    padding: int, (ph, pw), 'valid' (0) or 'same' (output size = input size; stride 1 only;
    an odd total padding puts the extra zero at the bottom/right, as PyTorch). groups splits
    the channels into independent blocks (groups = C: depthwise). The output has
    (H + 2*ph - dh*(kh-1) - 1) // sh + 1 rows. Gradients: see the module docstring."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of input (N, C, L) or (C, L) with weight (O, C/groups, k); as conv2d
    (which it runs on a height-1 image)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


# ---- transposed convolution -------------------------------------------------------------------
def transposed_sizes(in_sizes, kernel, stride, padding, dilation):
    """The smallest output size per dim of a transposed convolution (output_padding 0)."""
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + 1
                 for n, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation))


@autocast_op("_convolution")
def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd,
                    op):
    """conv_transpose1d/2d: the input gradient of the convolution with the same arguments."""
    batched = _check_tensors(input, weight, bias, nd, op)
    shape = tuple(input._data.shape) if batched else (1,) + tuple(input._data.shape)
    groups = operator.index(groups)
    _check_channels(shape, weight, bias, groups, op, transposed=True)
    kernel = tuple(weight._data.shape[2:])
    stride = ntuple(stride, nd, "stride", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    pads = ntuple(padding, nd, "padding", op)
    out_pad = ntuple(output_padding, nd, "output_padding", op)
    _check_positive(stride, "stride", op)
    _check_positive(dilation, "dilation", op)
    if any(p < 0 for p in pads + out_pad):
        raise RuntimeError(f"{op}: negative padding is not supported, got padding={pads}, "
                           f"output_padding={out_pad}")
    if any(o >= s and o >= d for o, s, d in zip(out_pad, stride, dilation)):
        raise RuntimeError(f"{op}: output_padding must be smaller than either stride or "
                           f"dilation, got output_padding={out_pad}, stride={stride}, "
                           f"dilation={dilation}")
    sizes = tuple(n + o for n, o in zip(transposed_sizes(shape[2:], kernel, stride, pads,
                                                         dilation), out_pad))
    if any(n < 1 for n in sizes):
        raise RuntimeError(f"{op}: input of shape {tuple(input._data.shape)} with kernel "
                           f"{shape_str(kernel)}, stride {stride}, padding {pads} gives an "
                           f"empty output {shape_str(sizes)}")
    x = input if batched else input.unsqueeze(0)
    x, w = _lift(x, weight, nd)
    out_shape = (shape[0], weight._data.shape[1] * groups) + ((1,) if nd == 1 else ()) + sizes
    y = ConvBackwardInput.apply(x, w, out_shape,
                                _geom(stride, tuple((p, p) for p in pads), dilation, groups, nd))
    if bias is not None:
        y = y + bias.reshape((1, -1, 1, 1))
    if nd == 1:
        y = y.squeeze(-2)
    return y if batched else y.squeeze(0)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-D convolution ("deconvolution") of input (N, Cin, H, W) with weight
    (Cin, Cout/groups, kh, kw): the gradient of conv2d w.r.t. its input, used forward. Each input
    pixel scatters w-weighted copies into a stride-spaced output grid of
    (H - 1)*sh - 2*ph + dh*(kh-1) + output_padding + 1 rows. Gradients: dx = conv2d(dy, w),
    dw = ConvBackwardWeight(x, dy), db = dy summed."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 1-D convolution of input (N, Cin, L) with weight (Cin, Cout/groups, k)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")
