"""Observers: watch the tensors flowing through a point of the network and turn what they saw
into int8 quantization parameters (scale, zero point).

An observer is a Module that returns its input unchanged and keeps numpy statistics (float32,
as torch.ao.quantization keeps its buffers). ``calculate_qparams()`` maps the observed range
[lo, hi] to parameters for the integer range [quant_min, quant_max] exactly as torch's
``_calculate_qparams`` does (float32 arithmetic, round half to even):

    lo' = min(lo, 0), hi' = max(hi, 0)                  (0 must be exactly representable)
    asymmetric: scale = max((hi' - lo') / (quant_max - quant_min), eps)
                zero_point = clamp(quant_min - round(lo' / scale), quant_min, quant_max)
    symmetric:  scale = max(max(-lo', hi') / ((quant_max - quant_min) / 2), eps)
                zero_point = 0          (torch's qint8 rule; an unsigned range [0, N] gets the
                                         midpoint (quant_min + quant_max + 1) // 2, 128 for uint8)

The TFLite int8 scheme used by the integer kernels: weights symmetric per output channel in
[-127, 127] (PerChannelMinMaxObserver's defaults), activations asymmetric per tensor in
[-128, 127] (the per-tensor observers' defaults).

Observers here, with torch's names and arguments:

    MinMaxObserver                         running min / max
    MovingAverageMinMaxObserver            min/max smoothed: m += c * (batch_m - m)
    PerChannelMinMaxObserver               running min / max per slice along ch_axis
    MovingAveragePerChannelMinMaxObserver  the same, smoothed (torch's QAT weight default)
    HistogramObserver                      a histogram of |x|, clipped by one of three methods:
        "percentile": the threshold T is the `percentile` (99.99) of |x|;
        "entropy":    TensorRT's KL calibration: T minimises KL(P || Q) where P is the
                      histogram cut at T (the tail folded into its last bin) and Q is P merged
                      into `quantized_bins` (128) levels and spread back;
        "mse":        T minimises the expected squared error: clipping error above T plus
                      step^2 / 12 below it, with the step the actual scale would have.
      The range is then [max(min, -T), min(max, T)]. (torch's HistogramObserver searches an
      L2 criterion differently; its ranges are not reproduced.)

Differences from torch, on purpose: an observer that saw nothing raises ValueError (torch warns
and returns scale 1); non-finite values (NaN, inf) raise ValueError when observed (torch lets
them through into a NaN or infinite scale); per-tensor scales have shape () (torch: (1,)).
Empty tensors are ignored, as in torch.
"""
import numpy as np

from ..nn.module import Module
from ..tensor import Tensor

__all__ = [
    "FLOAT32_EPS",
    "OBSERVERS",
    "HistogramObserver",
    "MinMaxObserver",
    "MovingAverageMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver",
    "Observer",
    "PerChannelMinMaxObserver",
    "calculate_qparams",
    "observer",
]

FLOAT32_EPS = float(np.finfo(np.float32).eps)
_F32 = np.float32


def calculate_qparams(min_val, max_val, quant_min=-128, quant_max=127, symmetric=False,
                      eps=FLOAT32_EPS):
    """(scale float32, zero_point int32) for the range [min_val, max_val] (scalars or per-channel
    arrays), by the formula in the module docstring."""
    if quant_min >= quant_max:
        raise ValueError(f"calculate_qparams: quant_min ({quant_min}) must be less than "
                         f"quant_max ({quant_max})")
    lo = np.minimum(np.asarray(min_val, _F32), _F32(0))
    hi = np.maximum(np.asarray(max_val, _F32), _F32(0))
    if np.any(lo > hi):
        raise ValueError(f"calculate_qparams: min {min_val} is larger than max {max_val}")
    eps = _F32(eps)
    if symmetric:
        scale = np.maximum(np.maximum(-lo, hi) / _F32((quant_max - quant_min) / 2), eps)
        zp = 0 if quant_min < 0 else (quant_min + quant_max + 1) // 2
        zero_point = np.full(scale.shape, zp, np.int32)
    else:
        scale = np.maximum((hi - lo) / _F32(quant_max - quant_min), eps)
        zero_point = quant_min - np.round(lo / scale).astype(np.int64)
        zero_point = np.clip(zero_point, quant_min, quant_max).astype(np.int32)
    return scale.astype(_F32), zero_point


def _as_array(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


class Observer(Module):
    """Base class: ``obs(x)`` records x (a Tensor or numpy array) and returns it unchanged;
    ``calculate_qparams()`` gives (scale, zero_point); ``reset()`` forgets everything.
    Subclasses implement ``_observe(array)`` and ``_range() -> (min, max)``."""
    ch_axis = None
    _takes_arrays = True          # numpy arrays are observed as they are (nn/_inputs.py)

    def __init__(self, quant_min=-128, quant_max=127, symmetric=False, eps=FLOAT32_EPS):
        super().__init__()
        if not (isinstance(quant_min, (int, np.integer)) and isinstance(quant_max,
                                                                         (int, np.integer))):
            raise TypeError(f"{type(self).__name__}: quant_min and quant_max must be ints, got "
                             f"{quant_min!r}, {quant_max!r}")
        if quant_min >= quant_max:
            raise ValueError(f"{type(self).__name__}: quant_min ({quant_min}) must be less than "
                             f"quant_max ({quant_max})")
        self.quant_min, self.quant_max = int(quant_min), int(quant_max)
        self.symmetric, self.eps = bool(symmetric), float(eps)
        self.reset()

    def forward(self, x):
        a = _as_array(x)
        if a.size:
            a = a.astype(_F32, copy=False)
            if not np.isfinite(a).all():
                raise ValueError(f"{type(self).__name__}: observed non-finite values (NaN or "
                                 f"inf) in a tensor of shape {a.shape}")
            self._observe(a)
        return x

    @property
    def observed(self):
        """True once a non-empty tensor has been observed."""
        return self._seen

    def _require_data(self):
        if not self._seen:
            raise ValueError(f"{type(self).__name__} observed no data; run calibration batches "
                             f"through it first")

    def calculate_qparams(self):
        self._require_data()
        lo, hi = self._range()
        return calculate_qparams(lo, hi, self.quant_min, self.quant_max, self.symmetric,
                                 self.eps)

    def reset(self):
        self._seen = False
        self.min_val = self.max_val = None

    def _range(self):
        return self.min_val, self.max_val

    def extra_repr(self):
        return (f"quant_min={self.quant_min}, quant_max={self.quant_max}, "
                f"symmetric={self.symmetric}, min_val={self.min_val}, max_val={self.max_val}")


class MinMaxObserver(Observer):
    """The running minimum and maximum of everything observed (per tensor)."""

    def _observe(self, a):
        lo, hi = a.min(), a.max()
        if self._seen:
            lo, hi = min(lo, self.min_val), max(hi, self.max_val)
        self.min_val, self.max_val, self._seen = _F32(lo), _F32(hi), True


class MovingAverageMinMaxObserver(Observer):
    """min/max of the first batch, then m = m + averaging_constant * (batch_m - m)."""

    def __init__(self, averaging_constant=0.01, quant_min=-128, quant_max=127, symmetric=False,
                 eps=FLOAT32_EPS):
        if not 0 < averaging_constant <= 1:
            raise ValueError(f"{type(self).__name__}: averaging_constant must be in (0, 1], got "
                             f"{averaging_constant}")
        self.averaging_constant = float(averaging_constant)
        super().__init__(quant_min, quant_max, symmetric, eps)

    def _observe(self, a):
        lo, hi = self._batch_range(a)
        if self._seen:
            c = _F32(self.averaging_constant)
            lo = self.min_val + c * (lo - self.min_val)
            hi = self.max_val + c * (hi - self.max_val)
        self.min_val, self.max_val, self._seen = lo, hi, True

    def _batch_range(self, a):
        return _F32(a.min()), _F32(a.max())


class PerChannelMinMaxObserver(Observer):
    """Running min/max of each slice along ``ch_axis`` (weights: axis 0, the output channels).
    Defaults: the int8 weight scheme, symmetric in [-127, 127]."""

    def __init__(self, ch_axis=0, quant_min=-127, quant_max=127, symmetric=True,
                 eps=FLOAT32_EPS):
        if not isinstance(ch_axis, (int, np.integer)):
            raise TypeError(f"{type(self).__name__}: ch_axis must be an int, got {ch_axis!r}")
        self.ch_axis = int(ch_axis)
        super().__init__(quant_min, quant_max, symmetric, eps)

    def _batch_range(self, a):
        if not -a.ndim <= self.ch_axis < a.ndim:
            raise ValueError(f"{type(self).__name__}: ch_axis {self.ch_axis} is out of range "
                             f"for a tensor of shape {a.shape}")
        rows = np.moveaxis(a, self.ch_axis, 0).reshape(a.shape[self.ch_axis], -1)
        if self._seen and rows.shape[0] != self.min_val.shape[0]:
            raise ValueError(f"{type(self).__name__}: saw {self.min_val.shape[0]} channels "
                             f"before, now a tensor of shape {a.shape} with {rows.shape[0]} "
                             f"along axis {self.ch_axis}")
        if rows.shape[1] == 0:
            raise ValueError(f"{type(self).__name__}: tensor of shape {a.shape} has channels "
                             f"with no elements")
        return rows.min(1), rows.max(1)

    def _observe(self, a):
        lo, hi = self._batch_range(a)
        if self._seen:
            lo, hi = np.minimum(lo, self.min_val), np.maximum(hi, self.max_val)
        self.min_val, self.max_val, self._seen = lo, hi, True


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel min/max smoothed as in MovingAverageMinMaxObserver."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, quant_min=-127, quant_max=127,
                 symmetric=True, eps=FLOAT32_EPS):
        if not 0 < averaging_constant <= 1:
            raise ValueError(f"{type(self).__name__}: averaging_constant must be in (0, 1], got "
                             f"{averaging_constant}")
        self.averaging_constant = float(averaging_constant)
        super().__init__(ch_axis, quant_min, quant_max, symmetric, eps)

    _observe = MovingAverageMinMaxObserver._observe


class HistogramObserver(Observer):
    """A `bins`-bin histogram of |x| over [0, hist_max] plus the running min and max; the
    clipping threshold comes from `method` (see the module docstring). When a batch exceeds
    hist_max the range doubles (as often as needed) and adjacent bins merge pairwise, so the
    counts stay exact. `bins` must be even and at least `quantized_bins`."""
    METHODS = ("percentile", "entropy", "mse")

    def __init__(self, bins=2048, method="percentile", percentile=99.99, quantized_bins=128,
                 quant_min=-128, quant_max=127, symmetric=False, eps=FLOAT32_EPS):
        name = type(self).__name__
        if method not in self.METHODS:
            raise ValueError(f"{name}: unknown method {method!r}; expected one of "
                             f"{list(self.METHODS)}")
        if not (isinstance(bins, int) and bins % 2 == 0 and bins >= quantized_bins >= 2):
            raise ValueError(f"{name}: bins must be an even int >= quantized_bins "
                             f"({quantized_bins}), got {bins!r}")
        if not 0 < percentile <= 100:
            raise ValueError(f"{name}: percentile must be in (0, 100], got {percentile}")
        self.bins, self.method, self.percentile = bins, method, float(percentile)
        self.quantized_bins = int(quantized_bins)
        super().__init__(quant_min, quant_max, symmetric, eps)

    def reset(self):
        super().reset()
        self.histogram = np.zeros(self.bins, np.float64)
        self.hist_max = 0.0

    def _observe(self, a):
        lo, hi = _F32(a.min()), _F32(a.max())
        if self._seen:
            lo, hi = min(lo, self.min_val), max(hi, self.max_val)
        self.min_val, self.max_val, self._seen = lo, hi, True
        mag = np.abs(a).ravel()
        amax = float(mag.max())
        if self.hist_max == 0.0:            # zeros seen so far stay in bin 0; the max is
            self.hist_max = amax * (1 + 2.0 ** -16)  # kept off the edges of later doublings
        while amax > self.hist_max:         # double the range, merging bins pairwise
            merged = self.histogram.reshape(-1, 2).sum(1)
            self.histogram = np.concatenate([merged, np.zeros(self.bins - merged.size)])
            self.hist_max *= 2.0
        if self.hist_max == 0.0:
            self.histogram[0] += mag.size
            return
        counts, _ = np.histogram(mag, self.bins, range=(0.0, self.hist_max))
        self.histogram += counts

    def _range(self):
        if self.hist_max == 0.0:
            return self.min_val, self.max_val
        threshold = {"percentile": self._percentile_threshold, "entropy": self._kl_threshold,
                     "mse": self._mse_threshold}[self.method]()
        return _F32(max(self.min_val, -threshold)), _F32(min(self.max_val, threshold))

    def _width(self):
        return self.hist_max / self.bins

    def _percentile_threshold(self):
        """The upper edge of the first bin where the cumulative count reaches the percentile."""
        cum = np.cumsum(self.histogram)
        i = int(np.searchsorted(cum, cum[-1] * self.percentile / 100.0))
        return min(i + 1, self.bins) * self._width()

    def _kl_threshold(self):
        """TensorRT's entropy calibration over thresholds of `quantized_bins` .. `bins` bins."""
        hist, nq = self.histogram, self.quantized_bins
        best_i, best_kl = self.bins, np.inf
        for i in range(nq, self.bins + 1):
            p = hist[:i].copy()
            p[-1] += hist[i:].sum()         # the clipped tail lands in the last bin
            if p.sum() == 0:
                continue
            present = p > 0
            starts = (np.arange(nq) * i) // nq
            totals = np.add.reduceat(hist[:i], starts)     # Q before its tail is added
            filled = np.add.reduceat(present.astype(np.float64), starts)
            per_bin = np.divide(totals, filled, out=np.zeros(nq), where=filled > 0)
            q = np.repeat(per_bin, np.diff(np.append(starts, i))) * present
            q = np.where(present & (q == 0), 1e-12, q)    # smooth: KL needs q > 0 where p > 0
            p, q = p / p.sum(), q / q.sum()
            kl = float(np.sum(p[present] * np.log(p[present] / q[present])))
            if kl < best_kl:
                best_i, best_kl = i, kl
        return best_i * self._width()

    def _mse_threshold(self):
        """The threshold with the least expected squared error, 256 candidates."""
        centers = (np.arange(self.bins) + 0.5) * self._width()
        best_t, best_err = self.hist_max, np.inf
        for k in np.unique(np.linspace(self.quantized_bins // 4, self.bins, 256).astype(int)):
            t = k * self._width()
            lo, hi = max(self.min_val, -t), min(self.max_val, t)
            scale = float(calculate_qparams(lo, hi, self.quant_min, self.quant_max,
                                            self.symmetric, self.eps)[0])
            clip = np.maximum(centers - t, 0.0)
            err = float(np.sum(self.histogram * np.where(centers > t, clip * clip,
                                                         scale * scale / 12)))
            if err < best_err:
                best_t, best_err = t, err
        return best_t

    def extra_repr(self):
        return f"bins={self.bins}, method={self.method!r}, " + super().extra_repr()


def _histogram(method):
    return lambda **kw: HistogramObserver(method=method, **kw)


OBSERVERS = {
    "minmax": MinMaxObserver, "moving_average": MovingAverageMinMaxObserver,
    "per_channel": PerChannelMinMaxObserver,
    "moving_average_per_channel": MovingAveragePerChannelMinMaxObserver,
    "histogram": HistogramObserver, "percentile": _histogram("percentile"),
    "entropy": _histogram("entropy"), "kl": _histogram("entropy"), "mse": _histogram("mse"),
}


def observer(name, **kwargs):
    """An observer by name: "minmax", "moving_average", "per_channel",
    "moving_average_per_channel", "histogram" (= "percentile"), "entropy" (= "kl"), "mse";
    keyword arguments go to its constructor."""
    make = OBSERVERS.get(name) if isinstance(name, str) else None
    if make is None:
        raise ValueError(f"observer: unknown observer {name!r}; expected one of "
                         f"{sorted(OBSERVERS)}")
    return make(**kwargs)
