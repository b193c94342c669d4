"""Observers (quant/observers.py) against torch.ao.quantization's observers of the same name:
the statistics they keep and the (scale, zero point) they compute, exactly, on int8 ranges;
the histogram methods on hand-made data; the errors."""
import numpy as np
import pytest
from harness import import_torch
from hypothesis import given
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge import quant

torch = import_torch()
tq = torch.ao.quantization

RANGES = [(-128, 127, False), (-128, 127, True), (-127, 127, True), (-127, 127, False)]


def _torch_scheme(symmetric, per_channel=False):
    if per_channel:
        return torch.per_channel_symmetric if symmetric else torch.per_channel_affine
    return torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine


def _batches(seed, shape=(4, 3, 5, 5), n=3):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * rng.uniform(0.1, 3) + rng.uniform(-1, 1))
            .astype(np.float32) for _ in range(n)]


def _assert_same_qparams(ours, theirs, per_channel=False):
    scale, zp = ours
    t_scale, t_zp = (t.numpy() for t in theirs)
    assert scale.dtype == np.float32 and zp.dtype == np.int32
    assert scale.shape == (() if not per_channel else t_scale.shape)
    np.testing.assert_array_equal(scale.reshape(-1), t_scale.reshape(-1))
    np.testing.assert_array_equal(zp.reshape(-1), t_zp.reshape(-1))


@pytest.mark.parametrize("quant_min,quant_max,symmetric", RANGES)
def test_minmax_matches_torch(quant_min, quant_max, symmetric):
    ours = quant.MinMaxObserver(quant_min, quant_max, symmetric)
    theirs = tq.MinMaxObserver(dtype=torch.qint8, qscheme=_torch_scheme(symmetric),
                               quant_min=quant_min, quant_max=quant_max)
    for b in _batches(0):
        assert ours(mte.tensor(b))._data is not None
        theirs(torch.tensor(b))
    assert ours.min_val == theirs.min_val.item() and ours.max_val == theirs.max_val.item()
    _assert_same_qparams(ours.calculate_qparams(), theirs.calculate_qparams())


@pytest.mark.parametrize("quant_min,quant_max,symmetric", RANGES)
def test_moving_average_matches_torch(quant_min, quant_max, symmetric):
    ours = quant.MovingAverageMinMaxObserver(0.1, quant_min, quant_max, symmetric)
    theirs = tq.MovingAverageMinMaxObserver(0.1, dtype=torch.qint8,
                                            qscheme=_torch_scheme(symmetric),
                                            quant_min=quant_min, quant_max=quant_max)
    for b in _batches(1, n=5):
        ours(b)                               # numpy arrays are observed too
        theirs(torch.tensor(b))
    assert ours.min_val == theirs.min_val.item() and ours.max_val == theirs.max_val.item()
    _assert_same_qparams(ours.calculate_qparams(), theirs.calculate_qparams())


@pytest.mark.parametrize("moving", [False, True])
@pytest.mark.parametrize("ch_axis", [0, 1, -1])
@pytest.mark.parametrize("quant_min,quant_max,symmetric", [(-127, 127, True),
                                                           (-128, 127, False)])
def test_per_channel_matches_torch(moving, ch_axis, quant_min, quant_max, symmetric):
    kw = {"ch_axis": ch_axis, "quant_min": quant_min, "quant_max": quant_max,
          "symmetric": symmetric}
    t_kw = {"ch_axis": ch_axis, "dtype": torch.qint8, "quant_min": quant_min,
            "quant_max": quant_max, "qscheme": _torch_scheme(symmetric, per_channel=True)}
    if moving:
        ours = quant.MovingAveragePerChannelMinMaxObserver(0.2, **kw)
        theirs = tq.MovingAveragePerChannelMinMaxObserver(0.2, **t_kw)
    else:
        ours, theirs = quant.PerChannelMinMaxObserver(**kw), tq.PerChannelMinMaxObserver(**t_kw)
    for b in _batches(2, shape=(6, 4, 3, 3), n=3):
        ours(mte.tensor(b))
        theirs(torch.tensor(b))
    np.testing.assert_array_equal(ours.min_val, theirs.min_val.numpy())
    np.testing.assert_array_equal(ours.max_val, theirs.max_val.numpy())
    _assert_same_qparams(ours.calculate_qparams(), theirs.calculate_qparams(), per_channel=True)


def test_per_channel_defaults_are_the_int8_weight_scheme():
    obs = quant.PerChannelMinMaxObserver()
    assert (obs.ch_axis, obs.quant_min, obs.quant_max, obs.symmetric) == (0, -127, 127, True)
    w = np.array([[1.0, -2.54], [0.5, 0.25]], np.float32)
    scale, zp = obs(w) is w and obs.calculate_qparams()
    np.testing.assert_array_equal(scale, np.float32([2.54, 0.5]) / np.float32(127))
    assert zp.tolist() == [0, 0] and scale.shape == (2,)
    a = quant.MinMaxObserver()
    assert (a.ch_axis, a.quant_min, a.quant_max, a.symmetric) == (None, -128, 127, False)


_bound = st.floats(-1e4, 1e4, width=32) | st.floats(-2.0 ** -20, 2.0 ** -20, width=32)


@given(lo=_bound, hi=_bound, scheme=st.sampled_from(RANGES + [(0, 255, False), (-8, 7, False)]))
def test_qparams_formula_matches_torch(lo, hi, scheme):
    lo, hi = min(lo, hi), max(lo, hi)
    quant_min, quant_max, symmetric = scheme
    scale, zp = quant.calculate_qparams(lo, hi, quant_min, quant_max, symmetric)
    dtype = torch.quint8 if quant_min >= 0 else torch.qint8
    obs = tq.MinMaxObserver(dtype=dtype, qscheme=_torch_scheme(symmetric), quant_min=quant_min,
                            quant_max=quant_max)
    t_scale, t_zp = obs._calculate_qparams(torch.tensor(lo), torch.tensor(hi))
    assert scale == t_scale.item() and zp == t_zp.item()
    assert scale.dtype == np.float32 and scale.shape == () and zp.dtype == np.int32


def test_all_zeros_gives_eps_scale():
    obs = quant.MinMaxObserver()
    obs(np.zeros((3, 3), np.float32))
    scale, zp = obs.calculate_qparams()
    assert scale == np.float32(quant.FLOAT32_EPS) and zp == -128


def test_reset_and_empty_input():
    obs = quant.MinMaxObserver()
    obs(np.zeros((0, 3), np.float32))            # ignored, as in torch
    assert not obs.observed
    obs(np.ones(3, np.float32))
    assert obs.observed
    obs.reset()
    with pytest.raises(ValueError, match="observed no data; run calibration batches"):
        obs.calculate_qparams()


@pytest.mark.parametrize("name", ["minmax", "moving_average", "per_channel", "histogram",
                                  "entropy", "moving_average_per_channel"])
def test_no_data_raises(name):
    with pytest.raises(ValueError, match=r"Observer observed no data; run calibration batches "
                                         r"through it first"):
        quant.observer(name).calculate_qparams()


def test_errors():
    with pytest.raises(ValueError, match=r"unknown observer 'max'.*'entropy'.*'minmax'"):
        quant.observer("max")
    with pytest.raises(ValueError, match=r"MinMaxObserver: observed non-finite values"):
        quant.MinMaxObserver()(np.array([1.0, np.nan], np.float32))
    with pytest.raises(ValueError, match=r"quant_min \(5\) must be less than quant_max \(5\)"):
        quant.MinMaxObserver(5, 5)
    with pytest.raises(ValueError, match="averaging_constant must be in"):
        quant.MovingAverageMinMaxObserver(0.0)
    with pytest.raises(ValueError, match="ch_axis 2 is out of range"):
        quant.PerChannelMinMaxObserver(ch_axis=2)(np.ones((2, 2), np.float32))
    obs = quant.PerChannelMinMaxObserver()
    obs(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="saw 2 channels before"):
        obs(np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match="unknown method 'l2'"):
        quant.HistogramObserver(method="l2")


def test_factory_names():
    assert type(quant.observer("minmax")) is quant.MinMaxObserver
    assert quant.observer("moving_average", averaging_constant=0.5).averaging_constant == 0.5
    assert quant.observer("per_channel", ch_axis=1).ch_axis == 1
    assert quant.observer("histogram").method == "percentile"
    assert quant.observer("percentile").method == "percentile"
    assert quant.observer("kl").method == "entropy" == quant.observer("entropy").method
    assert quant.observer("mse").method == "mse"


# ---- histogram ---------------------------------------------------------------------------------
def _gaussian_with_outliers(seed=0, n=100_000, outlier=50.0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    x[:5], x[5:10] = outlier, -outlier
    return x


def test_percentile_clips_outliers():
    x = _gaussian_with_outliers()
    obs = quant.HistogramObserver(method="percentile", percentile=99.9)
    obs(x[:50_000])
    obs(x[50_000:])
    lo, hi = obs._range()
    expected = np.percentile(np.abs(x), 99.9)            # 3.29 for N(0, 1)
    width = obs.hist_max / obs.bins
    assert expected <= hi <= expected + 2 * width and lo == -hi
    scale, zp = obs.calculate_qparams()
    assert scale < 0.05 and zp == 0                      # minmax would give 100 / 255
    assert obs.min_val == -50 and obs.max_val == 50


def test_percentile_of_one_sided_data_keeps_min():
    x = np.abs(_gaussian_with_outliers(1))
    obs = quant.HistogramObserver(percentile=99.99)
    obs(x)
    lo, hi = obs._range()
    assert lo == x.min() and 3.0 < hi < 5.0
    assert obs.calculate_qparams()[1] == -128


def test_entropy_picks_threshold_below_outliers():
    x = _gaussian_with_outliers(2)
    obs = quant.observer("entropy")
    obs(x)
    lo, hi = obs._range()
    assert 2.0 < hi < 10.0 and lo == -hi
    # uniform data has nothing to clip: the threshold stays near the maximum
    u = np.random.default_rng(3).uniform(-1, 1, 50_000).astype(np.float32)
    obs = quant.observer("entropy")
    obs(u)
    assert obs._range()[1] > 0.9


def _fq_error(x, lo, hi):
    scale, zp = quant.calculate_qparams(lo, hi)
    q = np.clip(np.rint(x / scale) + zp, -128, 127)
    return float(np.mean(((q - zp) * scale - x) ** 2))


def test_mse_minimises_the_actual_error():
    """Laplace data (a heavy tail): the chosen clip is below the maximum and its real
    fake-quantization error is within 5% of the best threshold found by brute force."""
    x = np.random.default_rng(4).laplace(0, 1, 100_000).astype(np.float32)
    obs = quant.observer("mse")
    obs(x)
    lo, hi = obs._range()
    amax = np.abs(x).max()
    assert hi < 0.9 * amax
    best = min(_fq_error(x, max(x.min(), -t), min(x.max(), t))
               for t in np.linspace(1, amax, 200))
    assert _fq_error(x, lo, hi) <= 1.05 * best < _fq_error(x, x.min(), x.max())


def test_histogram_growth_is_exact():
    rng = np.random.default_rng(5)
    small = rng.uniform(-1, 1, 1000).astype(np.float32)
    large = rng.uniform(-7, 7, 1000).astype(np.float32)
    obs = quant.HistogramObserver(bins=64, quantized_bins=16)
    obs(small)
    first_max = obs.hist_max
    obs(large)
    assert obs.hist_max == first_max * 8 >= np.abs(large).max()
    expected, _ = np.histogram(np.abs(np.concatenate([small, large])), 64,
                               range=(0, obs.hist_max))
    np.testing.assert_array_equal(obs.histogram, expected)


def test_histogram_all_zeros_then_data():
    obs = quant.HistogramObserver()
    obs(np.zeros(10, np.float32))
    assert obs.calculate_qparams()[0] == np.float32(quant.FLOAT32_EPS)
    obs(np.ones(10, np.float32))
    assert obs.histogram.sum() == 20 and obs.histogram[0] == 10
