"""Fake quantization: round a float tensor to the int8 grid and back, in float, so that training
sees the error the integer kernels will make; the gradient passes straight through.

    q = clamp(round(x / s) + z, quant_min, quant_max)        round half to even
    y = (q - z) * s

with s, z per tensor or per channel (one pair per slice along `axis`). `FakeQuantizeAffine`
is the op; `FakeQuantize` wraps it with an observer that keeps s and z up to date in training;
`LearnableFakeQuantize` (LSQ, Esser et al. 2020) learns s by gradient descent instead.

Graph export: the tracer records FakeQuantizeAffine as an mte.FakeQuantize node (=
DequantizeLinear(QuantizeLinear(x)), graph/opset_quant.py), reading apply's arguments (x,
scale, zero_point, quant_min, quant_max, axis) in that order; an optional seventh,
grad_factor, only scales the LSQ gradient.
"""
import math

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import Function
from ..backend.prepared import wrote as _wrote
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .observers import Observer
from .observers import observer as _observer

__all__ = [
    "FakeQuantize",
    "FakeQuantizeAffine",
    "LearnableFakeQuantize",
    "fake_quantize",
    "is_fake_quantize",
]

_F32 = np.float32
_OP = "fake_quantize"


def _check(x, scale, zero_point, quant_min, quant_max, axis):
    """Validate the arguments; returns (scale float32, zero point int32, axis normalised)."""
    if not isinstance(x, Tensor) or not _dt.is_float_dtype(x._data.dtype):
        got = f"a Tensor of dtype {x.dtype}" if isinstance(x, Tensor) else type(x).__name__
        raise RuntimeError(f"{_OP}: expected a floating-point input Tensor, got {got}")
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
               for v in (quant_min, quant_max)):
        raise RuntimeError(f"{_OP}: quant_min and quant_max must be ints, got {quant_min!r}, "
                           f"{quant_max!r}")
    if quant_min >= quant_max:
        raise RuntimeError(f"{_OP}: quant_min ({quant_min}) must be less than quant_max "
                           f"({quant_max})")
    s = np.asarray(scale._data if isinstance(scale, Tensor) else scale)
    if s.dtype.kind not in "fiu" or not (s.size and np.all(np.isfinite(s)) and np.all(s > 0)):
        raise RuntimeError(f"{_OP}: scale must be positive and finite, got {s!r}")
    s = s.astype(_F32, copy=False)
    shape = tuple(x._data.shape)
    if axis is None:
        if s.size != 1:
            raise RuntimeError(f"{_OP}: per-tensor quantization (axis=None) takes a scale of one "
                               f"element, got scale of shape {s.shape}; pass axis for "
                               f"per-channel scales")
    else:
        if not isinstance(axis, (int, np.integer)) or not -len(shape) <= axis < len(shape):
            raise RuntimeError(f"{_OP}: axis {axis!r} is out of range for input of shape "
                               f"{shape}")
        axis = int(axis) % len(shape)
        if s.shape != (shape[axis],):
            raise RuntimeError(f"{_OP}: expected scale of shape ({shape[axis]},) for axis {axis} "
                               f"of input of shape {shape}, got scale of shape {s.shape}")
    z = np.asarray(zero_point._data if isinstance(zero_point, Tensor) else zero_point)
    if z.size != s.size or (axis is not None and z.shape != s.shape):
        raise RuntimeError(f"{_OP}: zero_point of shape {z.shape} does not match scale of shape "
                           f"{s.shape}")
    if z.dtype.kind not in "iuf" or (z.dtype.kind == "f" and not np.all(z == np.rint(z))):
        raise RuntimeError(f"{_OP}: zero_point must hold integers, got {z!r}")
    if np.any(z < quant_min) or np.any(z > quant_max):
        raise RuntimeError(f"{_OP}: zero_point {z} must lie in [quant_min, quant_max] = "
                           f"[{quant_min}, {quant_max}]")
    return s, z.astype(np.int32), axis


def fake_quantize_array(xf, s, z, quant_min, quant_max, axis=None):
    """The forward on float32 arrays (also the graph's mte.FakeQuantize): returns y and the
    pieces the backward needs, (y, x / s, q, s, z, 1 / s) with s, z shaped to broadcast."""
    view = (-1,) + (1,) * (xf.ndim - 1 - axis) if axis is not None else ()
    s = np.asarray(s, _F32).reshape(view)
    zf = np.asarray(z).reshape(view).astype(_F32)
    inv = _F32(1) / s
    x_inv = xf * inv
    q = np.rint(x_inv) + zf
    return (np.clip(q, quant_min, quant_max) - zf) * s, x_inv, q, s, zf, inv


class FakeQuantizeAffine(Function):
    """y = (clamp(nearbyint(x * (1/s)) + z, qmin, qmax) - z) * s, computed in float32 as
    torch.fake_quantize_per_tensor_affine / fake_quantize_per_channel_affine do on the CPU
    (1/s rounded to float32 first; ties to even). s: a float32 Tensor of shape () or (1,)
    with axis=None, of shape (C,) with `axis` (C = x.shape[axis]); z: integers of s's shape.

    Gradients (the clipped straight-through estimator):
        dx = dy  where qmin <= nearbyint(x/s) + z <= qmax, else 0
        ds = grad_factor * sum dy * { (q - z) - x/s    inside the range    (LSQ)
                                    { qmin - z or qmax - z   below / above it }
    summed to s's shape: torch._fake_quantize_learnable_per_tensor_affine /
    _per_channel_affine's backward, which for ds (and for the dx mask, when s requires grad)
    rounds nearbyint(z + x/s) as they do. z gets no gradient: a learnable zero point is left
    out. The backward is itself not differentiable further (the STE has no curvature)."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max, axis=None, grad_factor=1.0):
        s, z, axis = _check(x, scale, zero_point, quant_min, quant_max, axis)
        xa = x._data
        xf = xa.astype(_F32, copy=False) if xa.dtype != _F32 else xa
        y, x_inv, q, s, zf, inv = fake_quantize_array(xf, s, z, quant_min, quant_max, axis)
        need = ctx.needs_input_grad
        if need:
            ctx.meta = (len(ctx.needs_input_grad), axis, scale._data.shape if
                        isinstance(scale, Tensor) else None)
            if len(need) > 1 and need[1]:          # learnable scale: torch's LSQ backward
                qi = np.rint(x_inv + zf)           # (z added before rounding, as torch)
                inside = (qi >= quant_min) & (qi <= quant_max)
                fq = (np.clip(qi, quant_min, quant_max) - zf) * s
                edge = np.where(qi < quant_min, _F32(quant_min) - zf, _F32(quant_max) - zf)
                ctx.coef = np.where(inside, (fq - xf) * inv, edge) * _F32(grad_factor)
                ctx.mask = inside
            else:
                ctx.mask = (q >= quant_min) & (q <= quant_max)
        return _dt.result_array(y.astype(xa.dtype, copy=False) if xa.dtype.kind == "f" else y,
                                xa.dtype)

    @staticmethod
    def backward(ctx, grad):
        nargs, axis, scale_shape = ctx.meta
        need = ctx.needs_input_grad
        gdt = grad._data.dtype
        gx = grad * Tensor._make(ctx.mask.astype(gdt)) if need[0] else None
        gs = None
        if need[1]:
            gs = grad * Tensor._make(ctx.coef.astype(gdt, copy=False))
            if axis is None:
                gs = gs.sum().reshape(scale_shape)
            else:
                gs = gs.sum(tuple(d for d in range(grad._data.ndim) if d != axis))
        return (gx, gs) + (None,) * (nargs - 2)


def fake_quantize(x, scale, zero_point=0, quant_min=-128, quant_max=127, axis=None):
    """FakeQuantizeAffine on x; `scale` may be a Tensor (a learnable one gets its LSQ gradient),
    a number or an array, `zero_point` an int (for every channel) or an int array."""
    if not isinstance(scale, Tensor):
        scale = Tensor._make(np.asarray(scale, _F32))
    zero_point = np.asarray(zero_point._data if isinstance(zero_point, Tensor) else zero_point)
    if zero_point.size == 1 and axis is not None:
        zero_point = np.broadcast_to(zero_point.reshape(()), scale._data.shape)
    return FakeQuantizeAffine.apply(x, scale, zero_point, quant_min, quant_max, axis)


def is_fake_quantize(module):
    return isinstance(module, FakeQuantize)


# ---- modules -------------------------------------------------------------------------------
_PER_CHANNEL = {"minmax": "per_channel", "moving_average": "moving_average_per_channel"}


def _make_observer(spec, quant_min, quant_max, ch_axis, symmetric, kwargs, where):
    """An Observer from a name (per-channel variants when ch_axis is given) or as given."""
    if isinstance(spec, Observer):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"{where}: observer must be a name or an Observer, got "
                        f"{type(spec).__name__}")
    kw = dict(quant_min=quant_min, quant_max=quant_max,
              symmetric=(ch_axis is not None) if symmetric is None else symmetric, **kwargs)
    if ch_axis is not None:
        spec = _PER_CHANNEL.get(spec, spec)
        if spec not in ("per_channel", "moving_average_per_channel"):
            raise ValueError(f"{where}: observer {spec!r} is per tensor; per-channel "
                             f"(ch_axis={ch_axis}) takes 'minmax' or 'moving_average'")
        kw["ch_axis"] = ch_axis
    return _observer(spec, **kw)


class FakeQuantize(Module):
    """Observe, then fake-quantize, as torch.ao.quantization.FakeQuantize.

    In training, with the observer enabled, each call first records x in the observer
    (``activation_post_process``) and refreshes the ``scale`` / ``zero_point`` buffers from it;
    then, with fake quant enabled, returns FakeQuantizeAffine(x) with those parameters. In eval
    mode the parameters are frozen: nothing is observed (torch observes in eval too). Before any
    observation the buffers hold NaN and a forward that needs them raises ValueError.

    observer: a name ("moving_average" default, "minmax", "histogram", "entropy", ...; with
    ch_axis, the per-channel variant of "minmax" / "moving_average") or an Observer, whose
    quant_min / quant_max / symmetric / ch_axis then win. symmetric=None: False per tensor,
    True per channel. `channels` sizes per-channel buffers up front (so that a state_dict
    loads into a fresh module); without it they take their size from the first batch."""

    def __init__(self, observer="moving_average", quant_min=-128, quant_max=127, ch_axis=None,
                 symmetric=None, channels=None, **observer_kwargs):
        super().__init__()
        self.activation_post_process = _make_observer(observer, quant_min, quant_max, ch_axis,
                                                      symmetric, observer_kwargs,
                                                      type(self).__name__)
        self.observer_enabled = True
        self.fake_quant_enabled = True
        shape = () if self.ch_axis is None else (0 if channels is None else channels,)
        self.register_buffer("scale", Tensor._make(np.full(shape, np.nan, _F32)))
        self.register_buffer("zero_point", Tensor._make(np.zeros(shape, np.int32)))

    # what the observer decides
    quant_min = property(lambda self: self.activation_post_process.quant_min)
    quant_max = property(lambda self: self.activation_post_process.quant_max)
    ch_axis = property(lambda self: self.activation_post_process.ch_axis)
    symmetric = property(lambda self: self.activation_post_process.symmetric)

    @property
    def calibrated(self):
        """True once scale and zero_point hold parameters (observed or loaded)."""
        s = self.scale._data
        return bool(s.size) and bool(np.all(np.isfinite(s)))

    def enable_observer(self, enabled=True):
        self.observer_enabled = bool(enabled)
        return self

    def disable_observer(self):
        return self.enable_observer(False)

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled = bool(enabled)
        return self

    def disable_fake_quant(self):
        return self.enable_fake_quant(False)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def observe(self, x):
        """Record x and refresh scale / zero_point (whatever the mode)."""
        self.activation_post_process(x)
        scale, zero_point = self.calculate_qparams()
        self.scale = Tensor._make(scale)      # new tensors: a graph that saved the old ones
        self.zero_point = Tensor._make(zero_point)   # stays valid

    def _require_qparams(self):
        if not self.calibrated:
            raise ValueError(f"{type(self).__name__} observed no data; run calibration batches "
                             f"through it first (in train mode, with the observer enabled)")

    def forward(self, x):
        if self.training and self.observer_enabled:
            self.observe(x)
        if not self.fake_quant_enabled:
            return x
        self._require_qparams()
        return FakeQuantizeAffine.apply(x, self.scale, self.zero_point._data, self.quant_min,
                                        self.quant_max, self.ch_axis)

    def extra_repr(self):
        ch = "" if self.ch_axis is None else f", ch_axis={self.ch_axis}"
        return (f"quant_min={self.quant_min}, quant_max={self.quant_max}{ch}, "
                f"symmetric={self.symmetric}, observer_enabled={self.observer_enabled}, "
                f"fake_quant_enabled={self.fake_quant_enabled}")


class LearnableFakeQuantize(FakeQuantize):
    """LSQ: the scale is an nn.Parameter learned with the network (Esser et al., "Learned Step
    Size Quantization", 2020), as torch.ao.quantization._LearnableFakeQuantize.

    Initialisation: the first `init_batches` training batches (default 1) set the scale as the
    observer sees fit (init="observer": from min/max; init="lsq": the paper's
    2 * mean|x| / sqrt(quant_max), per channel for per-channel scales); the observer then
    switches itself off and the scale is learned. The zero point is not learned: 0 when
    symmetric, else fixed from the observed minimum and the initial scale. ``enable_observer()``
    goes back to re-estimating the scale every training batch (torch's static estimate).

    The scale's gradient is scaled by grad_factor = 1 / sqrt(x.numel() * quant_max) (the paper's
    g; torch's use_grad_scaling=True), and the scale is clamped to >= eps before each use.
    Per-channel scales need `channels` (or get their size from the first batch)."""

    def __init__(self, observer="minmax", quant_min=-128, quant_max=127, ch_axis=None,
                 symmetric=None, channels=None, init="observer", init_batches=1,
                 use_grad_scaling=True, **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, ch_axis, symmetric, channels,
                         **observer_kwargs)
        if init not in ("observer", "lsq"):
            raise ValueError(f"LearnableFakeQuantize: init must be 'observer' or 'lsq', got "
                             f"{init!r}")
        self.init, self.use_grad_scaling = init, bool(use_grad_scaling)
        self._observe_left = init_batches
        shape = self.scale._data.shape
        del self.scale
        self.scale = Parameter(np.full(shape, np.nan, _F32))

    def enable_observer(self, enabled=True, batches=None):
        """Re-estimate the scale from the observer for `batches` training batches (None: until
        disabled)."""
        self._observe_left = batches
        return super().enable_observer(enabled)

    def observe(self, x):
        obs = self.activation_post_process
        obs(x)
        scale, zero_point = obs.calculate_qparams()
        if self.init == "lsq":
            a = np.abs((x._data if isinstance(x, Tensor) else np.asarray(x)).astype(np.float64))
            if obs.ch_axis is not None:
                a = np.moveaxis(a, obs.ch_axis, 0).reshape(a.shape[obs.ch_axis], -1)
                mean = a.mean(1)
            else:
                mean = a.mean()
            scale = np.maximum(2 * mean / math.sqrt(max(self.quant_max, 1)), obs.eps)
            scale = scale.astype(_F32)
            if not obs.symmetric:
                lo = np.minimum(np.asarray(obs.min_val, _F32), 0)
                zero_point = np.clip(self.quant_min - np.round(lo / scale), self.quant_min,
                                     self.quant_max).astype(np.int32)
        p = self.scale
        if p._data.shape == scale.shape:
            p._data[...] = scale
        else:                                  # per-channel size learned from the first batch
            p._data = scale.copy()
        p._vc[0] += 1
        _wrote(p._data)
        self.zero_point = Tensor._make(zero_point)

    def forward(self, x):
        if self.training and self.observer_enabled:
            self.observe(x)
            if self._observe_left is not None:
                self._observe_left -= 1
                if self._observe_left <= 0:
                    self.observer_enabled = False
        if not self.fake_quant_enabled:
            return x
        self._require_qparams()
        eps = _F32(self.activation_post_process.eps)
        if np.any(self.scale._data < eps):      # an optimizer step pushed it below eps
            np.maximum(self.scale._data, eps, out=self.scale._data)
            self.scale._vc[0] += 1
        grad_factor = (1.0 / math.sqrt(x._data.size * max(self.quant_max, 1))
                       if self.use_grad_scaling and x._data.size else 1.0)
        return FakeQuantizeAffine.apply(x, self.scale, self.zero_point._data, self.quant_min,
                                        self.quant_max, self.ch_axis, grad_factor)

    def extra_repr(self):
        return super().extra_repr() + f", init={self.init!r}, learnable scale"

