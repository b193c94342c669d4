"""Native int8 kernels: the numpy twins of numpy_int8.py computed by libmte through ``_C``.

Same names, signatures and results, bit for bit (TFLite's integer arithmetic); the dispatch
table in backend/__init__.py binds them where libmte's "int8" kernel set is built. Which C
kernel runs (native/include/mte_quant.h), decided in C from the shapes:

    qconv2d, depthwise 3x3 (groups == C == O,        "qdepthwise" kernels: rows of x - x_zp
      stride_w 1 or 2, dilation 1, any padding)      widened to int16 pairs, PMADDWD / SMLAL;
                                                     on VNNI bytes x ^ 0x80, one VPDPBUSD
                                                     per tap row
    qconv2d, 1x1 stride 1 unpadded                   "qgemm" microkernel on rows of x packed
                                                     4 k values per lane
    qconv2d, everything else                         "qgemm" with im2col folded into the
                                                     packing (padding = x_zero_point)
    qlinear                                          "qgemm" on x transposed
    qavg_pool2d, qmax_pool2d, qadd, quantize,        portable C loops (native/src/qpool.c,
      dequantize, requantize                         quant.c), vectorised by the compiler

qgemm's microkernel is the active ISA's: VNNI vpdpbusd (avx512vnni), vpmaddubsw + vpmaddwd
(avx512, avx2), SDOT (neondot), SMULL/SADALP (neon), portable C (generic); requantization
(per-channel multiplier and shift, zero point, clamp) runs on each tile in registers.

The weights of qconv2d / qlinear are packed once per weight array (qconv2d_prepare /
qlinear_prepare: the ISA's panels and the row sums for the zero-point compensation), cached in
backend/prepared.py under the active ISA (dropped when the weight is written), so repeated
inference calls pack nothing but x.

Everything the C kernels do not take goes to the numpy twin, which then computes the result
or raises its error: arrays that are not plain ndarrays of the kernel's dtypes, out= arrays
that are not plain int8 / float32 ndarrays, geometry that is not tuples of ints, empty
weights. Non-C-contiguous inputs are copied to C order first.
"""
import numpy as np

from .. import _C  # ImportError when the extension is not built
from . import numpy_int8 as _ref
from . import prepared

__all__ = [
    "dequantize",
    "qadd",
    "qavg_pool2d",
    "qconv2d",
    "qconv2d_prepare",
    "qlinear",
    "qlinear_prepare",
    "qmax_pool2d",
    "quantize",
    "requantize",
]

_I8, _I32, _F32 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.float32)


def _is(a, dtype):
    return type(a) is np.ndarray and a.dtype == dtype


def _out_ok(out, dtype):
    return out is None or _is(out, dtype)


def _c(a):
    return a if a is None or a.flags.c_contiguous else np.ascontiguousarray(a)


def _ints(v, n):
    """True when v is a tuple/list of n Python or numpy ints (not bools)."""
    return (isinstance(v, (tuple, list)) and len(v) == n and
            all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v))


def _channels_ok(bias, multiplier, shift):
    return (bias is None or _is(bias, _I32)) and _is(multiplier, _I32) and _is(shift, _I32)


def _plan(w, kind, groups, make):
    """w packed once for the active ISA (prepared.py), or None when caching is off."""
    if not prepared.enabled():
        return None
    return prepared.get(w, (kind, _C.active_isa(), groups), make)


def qconv2d(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min, act_max,
            stride, padding, dilation, groups, out=None):
    """numpy_int8.qconv2d, computed natively (with out=, written in place)."""
    if not (_is(x, _I8) and _is(w, _I8) and _channels_ok(bias, multiplier, shift) and
            _out_ok(out, _I8) and _ints(stride, 2) and _ints(padding, 4) and
            _ints(dilation, 2) and x.ndim == 4 and w.ndim == 4 and w.size > 0 and
            isinstance(groups, (int, np.integer)) and not isinstance(groups, bool) and
            groups >= 1 and w.shape[0] % groups == 0):
        return _ref.qconv2d(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min,
                            act_max, stride, padding, dilation, groups, out=out)
    x, w, bias, multiplier, shift = _c(x), _c(w), _c(bias), _c(multiplier), _c(shift)
    if w.shape[1] * w.shape[2] * w.shape[3] > _ref.MAX_REDUCTION:
        plan = None  # the binding raises the twin's error
    else:
        plan = _plan(w, "qconv2d", int(groups), lambda a: _C.qconv2d_prepare(a, int(groups)))
    return _C.qconv2d(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min,
                      act_max, tuple(stride), tuple(padding), tuple(dilation), int(groups),
                      plan=plan, out=out)


def qconv2d_prepare(x_shape, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min,
                    act_max, stride, padding, dilation, groups):
    """numpy_int8.qconv2d_prepare: the weights packed once and the kernel bound with every
    argument but x, as run(x, out=None) -> _C.qconv2d (a graph executor's conv step: none of
    qconv2d's per-call checks and cache lookups in Python)."""
    args = (x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min, act_max, stride,
            padding, dilation, groups)
    if not (_is(w, _I8) and _channels_ok(bias, multiplier, shift) and _ints(stride, 2)
            and _ints(padding, 4) and _ints(dilation, 2) and w.ndim == 4 and w.size > 0
            and isinstance(groups, (int, np.integer)) and not isinstance(groups, bool)
            and groups >= 1 and w.shape[0] % groups == 0 and len(x_shape) == 4
            and w.shape[1] * w.shape[2] * w.shape[3] <= _ref.MAX_REDUCTION):
        return _ref.qconv2d_prepare(x_shape, *args)
    w, bias, multiplier, shift = _c(w), _c(bias), _c(multiplier), _c(shift)
    plan = _C.qconv2d_prepare(w, int(groups))
    geom = (tuple(stride), tuple(padding), tuple(dilation), int(groups))

    def run(x, out=None):
        if not (_is(x, _I8) and _out_ok(out, _I8)):
            return _ref.qconv2d(x, *args, out=out)
        return _C.qconv2d(_c(x), x_zero_point, w, bias, multiplier, shift, y_zero_point,
                          act_min, act_max, *geom, plan=plan, out=out)
    return run


def qlinear_prepare(x_shape, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min,
                    act_max):
    """numpy_int8.qlinear_prepare: w packed once, run(x, out=None) -> _C.qlinear."""
    args = (x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min, act_max)
    if not (_is(w, _I8) and _channels_ok(bias, multiplier, shift) and w.ndim == 2
            and w.size > 0 and len(x_shape) == 2 and x_shape[1] == w.shape[1]
            and w.shape[1] <= _ref.MAX_REDUCTION):
        return _ref.qlinear_prepare(x_shape, *args)
    w, bias, multiplier, shift = _c(w), _c(bias), _c(multiplier), _c(shift)
    plan = _C.qlinear_prepare(w)

    def run(x, out=None):
        if not (_is(x, _I8) and _out_ok(out, _I8) and x.ndim == 2):
            return _ref.qlinear(x, *args, out=out)
        return _C.qlinear(_c(x), x_zero_point, w, bias, multiplier, shift, y_zero_point,
                          act_min, act_max, plan=plan, out=out)
    return run


def qlinear(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min, act_max,
            out=None):
    """numpy_int8.qlinear, computed natively."""
    if not (_is(x, _I8) and _is(w, _I8) and _channels_ok(bias, multiplier, shift) and
            _out_ok(out, _I8) and x.ndim == 2 and w.ndim == 2 and w.size > 0):
        return _ref.qlinear(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min,
                            act_max, out=out)
    x, w, bias, multiplier, shift = _c(x), _c(w), _c(bias), _c(multiplier), _c(shift)
    plan = (_plan(w, "qlinear", 1, _C.qlinear_prepare)
            if w.shape[1] == x.shape[1] and w.shape[1] <= _ref.MAX_REDUCTION else None)
    return _C.qlinear(x, x_zero_point, w, bias, multiplier, shift, y_zero_point, act_min,
                      act_max, plan=plan, out=out)


def qavg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, act_min, act_max,
                out=None):
    """numpy_int8.qavg_pool2d, computed natively."""
    if not (_is(x, _I8) and x.ndim == 4 and _out_ok(out, _I8) and _ints(kernel, 2) and
            _ints(stride, 2) and _ints(padding, 2)):
        return _ref.qavg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad,
                                act_min, act_max, out=out)
    return _C.qavg_pool2d(_c(x), tuple(kernel), tuple(stride), tuple(padding), bool(ceil_mode),
                          bool(count_include_pad), act_min, act_max, out=out)


def qmax_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out=None):
    """numpy_int8.qmax_pool2d, computed natively."""
    if not (_is(x, _I8) and x.ndim == 4 and _out_ok(out, _I8) and _ints(kernel, 2) and
            _ints(stride, 2) and _ints(padding, 2) and _ints(dilation, 2)):
        return _ref.qmax_pool2d(x, kernel, stride, padding, dilation, ceil_mode, out=out)
    return _C.qmax_pool2d(_c(x), tuple(kernel), tuple(stride), tuple(padding), tuple(dilation),
                          bool(ceil_mode), out=out)


def qadd(a, a_zero_point, a_multiplier, a_shift, b, b_zero_point, b_multiplier, b_shift,
         y_zero_point, y_multiplier, y_shift, act_min, act_max, left_shift=20, out=None):
    """numpy_int8.qadd, computed natively."""
    if not (_is(a, _I8) and _is(b, _I8) and _out_ok(out, _I8)):
        return _ref.qadd(a, a_zero_point, a_multiplier, a_shift, b, b_zero_point, b_multiplier,
                         b_shift, y_zero_point, y_multiplier, y_shift, act_min, act_max,
                         left_shift, out=out)
    return _C.qadd(_c(a), a_zero_point, a_multiplier, a_shift, _c(b), b_zero_point,
                   b_multiplier, b_shift, y_zero_point, y_multiplier, y_shift, act_min, act_max,
                   left_shift, out=out)


def qadd_prepare(a_zero_point, a_multiplier, a_shift, b_zero_point, b_multiplier, b_shift,
                 y_zero_point, y_multiplier, y_shift, act_min, act_max, left_shift=20):
    """numpy_int8.qadd_prepare: the 65,536 results of every int8 pair computed once
    (_C.qadd_table, 64 KiB), then each call is one lookup per element (_C.qadd with table)."""
    params = (a_zero_point, a_multiplier, a_shift, b_zero_point, b_multiplier, b_shift,
              y_zero_point, y_multiplier, y_shift, act_min, act_max, left_shift)
    table = _C.qadd_table(*params)

    def run(a, b, out=None):
        if not (_is(a, _I8) and _is(b, _I8) and _out_ok(out, _I8)):
            return _ref.qadd(a, *params[:3], b, *params[3:], out=out)
        return _C.qadd(_c(a), *params[:3], _c(b), *params[3:], out=out, table=table)
    return run


def quantize(x, scale, zero_point, out=None):
    """numpy_int8.quantize, computed natively."""
    if not (_is(x, _F32) and _out_ok(out, _I8)):
        return _ref.quantize(x, scale, zero_point, out=out)
    return _C.quantize(_c(x), scale, zero_point, out=out)


def dequantize(q, scale, zero_point, out=None):
    """numpy_int8.dequantize, computed natively."""
    if not (_is(q, _I8) and _out_ok(out, _F32)):
        return _ref.dequantize(q, scale, zero_point, out=out)
    return _C.dequantize(_c(q), scale, zero_point, out=out)


def requantize(q, in_zero_point, multiplier, shift, out_zero_point, out=None):
    """numpy_int8.requantize, computed natively."""
    if not (_is(q, _I8) and _out_ok(out, _I8)):
        return _ref.requantize(q, in_zero_point, multiplier, shift, out_zero_point, out=out)
    return _C.requantize(_c(q), in_zero_point, multiplier, shift, out_zero_point, out=out)
