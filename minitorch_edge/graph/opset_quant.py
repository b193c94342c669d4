"""Quantized ops of the graph: the int8 half of the opset.

An int8 graph stores what TFLite and ONNX store: for every int8 value a scale and a zero point
(real = scale * (q - zero_point)), as constant inputs of the ops that read or write it. The
fixed-point multipliers and shifts that the integer kernels need are derived from those scales
when a node is prepared (`requant_multipliers`, TFLite's rule, in float64), so the graph has one
source of truth and every runtime (this executor, the C runtime, an ONNX exporter) derives the
same integers.

ONNX ops, with ONNX's inputs (opset 17):

    QuantizeLinear(x, y_scale, y_zero_point)      float -> int8 (per tensor; `axis` per channel)
    DequantizeLinear(x, x_scale, x_zero_point)    int8 (or int32) -> float

Our fused ops, each replacing the QDQ subgraph that graph/passes/fuse_quantized.py matches
(`act` is an optional Relu or Clip(0, 6), folded into the clamp [act_min, act_max]):

    mte.QLinearConv(X, Xs, Xz, W, Ws, Wz, Ys, Yz, B)
        = Q(act(Conv(DQ(X), DQ(W), DQ(B))))            ONNX QLinearConv's inputs, + act_min/max
    mte.QLinearGemm(A, As, Az, W, Ws, Wz, Ys, Yz, C)
        = Q(act(Gemm(DQ(A), DQ(W), DQ(C), transB=1)))
    mte.QLinearAdd(A, As, Az, B, Bs, Bz, Ys, Yz)
        = Q(act(Add(DQ(A), DQ(B))))                     TFLite's int8 ADD
    mte.QLinearGlobalAveragePool(X, Xs, Xz, Ys, Yz)
        = Q(GlobalAveragePool(DQ(X)))                   (also an AveragePool with attributes)
    mte.Requantize(X, Xs, Xz, Ys, Yz)
        = Q(DQ(X)) with other parameters                a per-tensor rescale

MaxPool, Reshape, Flatten, Squeeze and Transpose take int8 values as they are (a max, a
rearrangement: the scale is unchanged); MaxPool runs backend.qmax_pool2d on them.

Weights are int8, symmetric per output channel (zero point 0, values in [-127, 127]); biases
int32 with scale Xs * Ws[o]; activations int8 per tensor (backend/numpy_int8.py has the
arithmetic and its kernels).
"""
import numpy as np

from .. import backend
from .opset import op
from .opset_nn import _conv_shape, _pads, _pair, _pool_params, _pool_shape

__all__ = ["requant_multipliers", "scale_of", "zero_point"]


# ---- quantisation parameters as the kernels want them ----------------------------------------
def scale_of(array, what="scale"):
    """A positive finite float32 scale array (0-d or 1-d) or ValueError."""
    s = np.asarray(array, np.float32)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"{what} must be positive and finite, got {s.tolist()}")
    return s


def zero_point(array, what="zero point"):
    """An int8 zero point (a 0-d or 1-element array) as a Python int."""
    z = np.asarray(array)
    if z.size != 1 or z.dtype.kind not in "iu":
        raise ValueError(f"{what} must be one integer, got {z.dtype.name}{list(z.shape)}")
    z = int(z.reshape(-1)[0])
    if not -128 <= z <= 127:
        raise ValueError(f"{what} {z} is outside int8's [-128, 127]")
    return z


def requant_multipliers(in_scale, w_scale, out_scale, channels):
    """(multiplier, shift) int32 arrays, one per output channel, for the real factor
    in_scale * w_scale[o] / out_scale (computed in float64, as TFLite does) by TFLite's
    QuantizeMultiplier (backend.numpy_int8.quantize_multiplier)."""
    from ..backend.numpy_int8 import quantize_multiplier
    in_scale, out_scale = (float(np.asarray(s).reshape(-1)[0]) for s in (in_scale, out_scale))
    real = (np.float64(in_scale) * np.broadcast_to(np.asarray(w_scale, np.float64), (channels,))
            / np.float64(out_scale))
    pairs = [quantize_multiplier(float(r)) for r in real]
    return (np.array([m for m, _ in pairs], np.int32), np.array([s for _, s in pairs], np.int32))


def _act_range(attrs):
    lo, hi = int(attrs.get("act_min", -128)), int(attrs.get("act_max", 127))
    if not -128 <= lo <= hi <= 127:
        raise ValueError(f"act_min {lo} / act_max {hi} must satisfy -128 <= act_min <= act_max "
                         f"<= 127")
    return lo, hi


def _int8_input(x, what):
    if x.dtype != "int8":
        raise ValueError(f"{what} must be int8, got {x.dtype}")


# ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------------
def _per_axis(x, param, axis):
    """`param` shaped to broadcast against x along `axis` (a scalar stays a scalar)."""
    param = np.asarray(param)
    if param.ndim == 0 or param.size == 1:
        return param.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = param.size
    return param.reshape(shape)


def _q_shape(attrs, ins):
    if ins[0].dtype not in ("float32", "float64"):
        raise ValueError(f"QuantizeLinear quantizes float32, got {ins[0].dtype}")
    zdtype = ins[2].dtype if len(ins) > 2 and ins[2] is not None else "uint8"
    if zdtype not in ("int8", "uint8"):
        raise ValueError(f"QuantizeLinear: the zero point must be int8 or uint8, got {zdtype}")
    return [(ins[0].shape, zdtype)]


@op("QuantizeLinear", _q_shape)
def quantize_linear(attrs, x, scale, zp=None):
    """y = saturate(round(x / y_scale) + y_zero_point), int8 (the zero point's dtype). Ties
    round away from zero, TFLite's rule (ONNX says to even: only exact .5 ties differ). A
    1-d scale quantizes per channel along `axis` (default 1)."""
    z = np.zeros((), np.int8) if zp is None else zp
    if np.asarray(scale).size == 1 and np.asarray(z).size == 1 and z.dtype == np.int8 \
            and x.dtype == np.float32:
        return backend.quantize(x, float(np.asarray(scale).reshape(-1)[0]), zero_point(z))
    from ..backend.numpy_int8 import (
        round_half_away,  # per channel: constant folding only
    )
    axis = attrs.get("axis", 1)
    info = np.iinfo(z.dtype)
    q = round_half_away(x / _per_axis(x, scale, axis).astype(x.dtype)) + _per_axis(x, z, axis)
    return np.clip(q, info.min, info.max).astype(z.dtype)


def _dq_shape(attrs, ins):
    if ins[0].dtype not in ("int8", "uint8", "int32"):
        raise ValueError(f"DequantizeLinear takes int8, uint8 or int32, got {ins[0].dtype}")
    return [(ins[0].shape, "float32")]


@op("DequantizeLinear", _dq_shape)
def dequantize_linear(attrs, x, scale, zp=None):
    """y = (x - x_zero_point) * x_scale, float32; per channel along `axis` for a 1-d scale."""
    z = np.zeros((), x.dtype) if zp is None else zp
    if np.asarray(scale).size == 1 and x.dtype == np.int8:
        return backend.dequantize(x, float(np.asarray(scale).reshape(-1)[0]), zero_point(z))
    axis = attrs.get("axis", 1)
    return ((x.astype(np.int64) - _per_axis(x, z, axis)).astype(np.float32)
            * _per_axis(x, scale, axis).astype(np.float32))


# ---- QLinearConv / QLinearGemm ----------------------------------------------------------------
def _qlayer_check(name, ins, x, w, b):
    for i, what in ((x, "X"), (w, "W")):
        _int8_input(ins[i], f"{name}: {what}")
    if ins[w].data is None:
        raise ValueError(f"{name}: W must be a constant")
    wz = ins[w + 2]
    if wz is not None and wz.data is not None and np.any(np.asarray(wz.data) != 0):
        raise ValueError(f"{name}: weights must be symmetric (zero point 0)")
    bias = ins[b] if len(ins) > b else None
    if bias is not None and bias.dtype != "int32":
        raise ValueError(f"{name}: B must be int32 (scale X_scale * W_scale), got {bias.dtype}")


def _qconv_shape(attrs, ins):
    _qlayer_check("mte.QLinearConv", ins, 0, 3, 8)
    _act_range(attrs)
    shape = _conv_shape(attrs, [ins[0], ins[3], ins[8] if len(ins) > 8 else None])[0][0]
    return [(shape, "int8")]


def _qconv_args(attrs, constants):
    """Everything of a QLinearConv but X, from its constant inputs: the kernel's arguments."""
    xs, xz, w, ws, _, ys, yz = constants[1:8]
    b = constants[8] if len(constants) > 8 else None
    o = w.shape[0]
    mult, shift = requant_multipliers(scale_of(xs), scale_of(ws), scale_of(ys), o)
    lo, hi = _act_range(attrs)
    geom = (_pair(attrs, "strides"), _pads(attrs), _pair(attrs, "dilations"),
            attrs.get("group", 1))
    return (zero_point(xz), w, b, mult, shift, zero_point(yz), lo, hi) + geom


def _layer_params_constant(values, constants):
    """Whether a QLinearConv / QLinearGemm has every input but X constant (what prepare
    needs: scales, zero points, W and, when given, B)."""
    return all(c is not None for c in constants[1:8]) and not (
        len(values) > 8 and values[8] is not None and constants[8] is None)


def _qconv_prepare(attrs, values, constants):
    if not _layer_params_constant(values, constants):
        return None
    run = backend.qconv2d_prepare(values[0].shape, *_qconv_args(attrs, constants))
    return lambda x, *rest, out=None: run(x, out)


@op("mte.QLinearConv", _qconv_shape, writes_out=True, prepare=_qconv_prepare)
def qlinear_conv(attrs, x, xs, xz, w, ws, wz, ys, yz, b=None, out=None):
    """y = clamp(requant(bias + sum (x - Xz) * w) + Yz, act_min, act_max): an int8 Conv with
    its activation (attrs: Conv's, act_min, act_max)."""
    args = _qconv_args(attrs, [x, xs, xz, w, ws, wz, ys, yz, b])
    return backend.qconv2d(x, *args, out=out)


def _qgemm_shape(attrs, ins):
    _qlayer_check("mte.QLinearGemm", ins, 0, 3, 8)
    _act_range(attrs)
    (rows, k), (m, kw) = ins[0].shape, ins[3].shape
    if k != kw or len(ins[0].shape) != 2:
        raise ValueError(f"mte.QLinearGemm: A {list(ins[0].shape)} and W {list(ins[3].shape)} "
                         f"(transB=1) cannot be multiplied")
    return [((rows, m), "int8")]


def _qgemm_args(attrs, constants):
    xs, xz, w, ws, _, ys, yz = constants[1:8]
    b = constants[8] if len(constants) > 8 else None
    mult, shift = requant_multipliers(scale_of(xs), scale_of(ws), scale_of(ys), w.shape[0])
    lo, hi = _act_range(attrs)
    return zero_point(xz), w, b, mult, shift, zero_point(yz), lo, hi


def _qgemm_prepare(attrs, values, constants):
    if not _layer_params_constant(values, constants):
        return None
    run = backend.qlinear_prepare(values[0].shape, *_qgemm_args(attrs, constants))
    return lambda a, *rest, out=None: run(a, out)


@op("mte.QLinearGemm", _qgemm_shape, writes_out=True, prepare=_qgemm_prepare)
def qlinear_gemm(attrs, a, xs, xz, w, ws, wz, ys, yz, c=None, out=None):
    """y = clamp(requant(C + (A - Az) W^T) + Yz, act_min, act_max): an int8 Linear layer."""
    return backend.qlinear(a, *_qgemm_args(attrs, [a, xs, xz, w, ws, wz, ys, yz, c]), out=out)


# ---- QLinearAdd -------------------------------------------------------------------------------
def _qadd_shape(attrs, ins):
    _int8_input(ins[0], "mte.QLinearAdd: A")
    _int8_input(ins[3], "mte.QLinearAdd: B")
    if ins[0].shape != ins[3].shape:
        raise ValueError(f"mte.QLinearAdd: A {list(ins[0].shape)} and B {list(ins[3].shape)} "
                         f"must have one shape (no broadcasting)")
    _act_range(attrs)
    return [(ins[0].shape, "int8")]


def _qadd_args(attrs, asc, az, bsc, bz, ysc, yz):
    from ..backend.numpy_int8 import add_multipliers
    am, ash, bm, bsh, ym, ysh = add_multipliers(float(scale_of(asc)), float(scale_of(bsc)),
                                                float(scale_of(ysc)))
    lo, hi = _act_range(attrs)
    return (zero_point(az), am, ash), (zero_point(bz), bm, bsh), (zero_point(yz), ym, ysh, lo, hi)


def _qadd_prepare(attrs, values, constants):
    c = constants
    if any(x is None for x in (c[1], c[2], c[4], c[5], c[6], c[7])):
        return None
    pa, pb, py = _qadd_args(attrs, c[1], c[2], c[4], c[5], c[6], c[7])
    run = backend.qadd_prepare(*pa, *pb, *py)
    return lambda a, _as, _az, b, *rest, out=None: run(a, b, out=out)


@op("mte.QLinearAdd", _qadd_shape, writes_out=True, prepare=_qadd_prepare)
def qlinear_add(attrs, a, asc, az, b, bsc, bz, ysc, yz, out=None):
    """y = clamp(requant(rescale(A - Az) + rescale(B - Bz)) + Yz, act_min, act_max): TFLite's
    int8 ADD (both inputs brought to a common scale with 20 bits of headroom)."""
    pa, pb, py = _qadd_args(attrs, asc, az, bsc, bz, ysc, yz)
    return backend.qadd(a, *pa, b, *pb, *py, out=out)


# ---- average pooling, requantize --------------------------------------------------------------
def _rescaled(x, xs, xz, ys, yz):
    """x (an int8 array with parameters xs, xz) in the parameters (ys, yz)."""
    xs, ys, xz, yz = scale_of(xs), scale_of(ys), zero_point(xz), zero_point(yz)
    if float(xs) == float(ys) and xz == yz:
        return x
    mult, shift = requant_multipliers(xs, 1.0, ys, 1)
    return backend.requantize(x, xz, int(mult[0]), int(shift[0]), yz)


def _qgap_shape(attrs, ins):
    _int8_input(ins[0], "mte.QLinearGlobalAveragePool: X")
    if len(ins[0].shape) != 4:
        raise ValueError(f"mte.QLinearGlobalAveragePool takes 4-D X, got {list(ins[0].shape)}")
    return [(ins[0].shape[:2] + (1, 1), "int8")]


def _qgap_params(x_shape, xs, xz, ys, yz):
    """(multiplier, shift, Xz, Yz) of a global average pool: the per-channel factor
    Xs / (H W Ys) of the int32 sum (one rounding, so the mean keeps the full resolution of
    its own, narrower, output range)."""
    c, h, w = x_shape[1:]
    mult, shift = requant_multipliers(scale_of(xs), 1.0 / (h * w), scale_of(ys), c)
    return mult.astype(np.int64), shift.astype(np.int64), zero_point(xz), zero_point(yz)


def _qgap(x, params, out=None):
    """clamp(mbqm(sum over H, W of (x - Xz)) + Yz): TFLite's MEAN, in integers."""
    from ..backend.numpy_int8 import _requantize
    mult, shift, xz, yz = params
    n, c = x.shape[:2]
    acc = x.reshape(n, c, -1).sum(-1, dtype=np.int64) - np.int64(xz) * (x.size // (n * c))
    y = _requantize(acc, mult, shift, yz, -128, 127).reshape(n, c, 1, 1)
    if out is None:
        return y
    out[...] = y
    return out


def _qgap_prepare(attrs, values, constants):
    if any(c is None for c in constants[1:5]):
        return None
    params = _qgap_params(values[0].shape, *constants[1:5])
    return lambda x, *rest, out=None: _qgap(x, params, out)


@op("mte.QLinearGlobalAveragePool", _qgap_shape, writes_out=True, prepare=_qgap_prepare)
def qlinear_global_average_pool(attrs, x, xs, xz, ys, yz, out=None):
    """y = clamp(requant(sum over H, W of (x - Xz)) + Yz): the mean over all positions in
    int8 with its own parameters Ys, Yz (one int32 sum a channel, one requantisation)."""
    return _qgap(x, _qgap_params(x.shape, xs, xz, ys, yz), out)


def _qavg_shape(attrs, ins):
    _int8_input(ins[0], "mte.QLinearAveragePool: X")
    return [(_pool_shape(attrs, ins[:1], dilated=False)[0][0], "int8")]


@op("mte.QLinearAveragePool", _qavg_shape)
def qlinear_average_pool(attrs, x, xs, xz, ys, yz):
    """y = the rounded mean of each window (AveragePool's attributes), rescaled to Ys/Yz."""
    k, s, p = _pool_params(attrs)
    y = backend.qavg_pool2d(x, k, s, p, bool(attrs.get("ceil_mode", 0)),
                            bool(attrs.get("count_include_pad", 0)), -128, 127)
    return _rescaled(y, xs, xz, ys, yz)


def _requant_shape(attrs, ins):
    _int8_input(ins[0], "mte.Requantize: X")
    return [(ins[0].shape, "int8")]


@op("mte.Requantize", _requant_shape, elementwise=True)
def requantize(attrs, x, xs, xz, ys, yz):
    """y = clamp(round(x - Xz) * Xs / Ys) + Yz) in fixed point: one int8 value in new
    parameters."""
    return _rescaled(x, xs, xz, ys, yz)


def qmax_pool(attrs, x, out=None):
    """MaxPool on an int8 X (called by opset_nn's MaxPool): the max of the real elements."""
    k, s, p = _pool_params(attrs)
    return backend.qmax_pool2d(x, k, s, p, _pair(attrs, "dilations"),
                               bool(attrs.get("ceil_mode", 0)), out=out)



# ---- fake quantization (what a traced QAT model holds) ----------------------------------------
def _fq_shape(attrs, ins):
    lo, hi = int(attrs.get("quant_min", -128)), int(attrs.get("quant_max", 127))
    if not -128 <= lo < hi <= 127:
        raise ValueError(f"mte.FakeQuantize: quant_min {lo} / quant_max {hi} must lie in int8 "
                         f"with quant_min < quant_max")
    return [(ins[0].shape, ins[0].dtype)]


@op("mte.FakeQuantize", _fq_shape, elementwise=True)
def fake_quantize(attrs, x, scale, zp):
    """y = (clamp(nearbyint(x / scale) + zp, quant_min, quant_max) - zp) * scale, in float (the
    QAT modules' FakeQuantizeAffine; `axis` per channel, absent per tensor) = DequantizeLinear(
    QuantizeLinear(x)) with the range [quant_min, quant_max]. quant.convert turns these nodes
    into the int8 graph's parameters."""
    from ..quant.fake_quant import fake_quantize_array
    axis = attrs.get("axis")
    xf = x.astype(np.float32, copy=False)
    y = fake_quantize_array(xf, scale, zp, attrs.get("quant_min", -128),
                            attrs.get("quant_max", 127), None if axis is None else axis % x.ndim)[0]
    return y.astype(x.dtype, copy=False)
