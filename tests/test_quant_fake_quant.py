"""Fake quantization (quant/fake_quant.py) against torch: FakeQuantizeAffine's forward equals
torch.fake_quantize_per_tensor_affine / per_channel_affine exactly, its STE gradient equals
theirs, its learnable-scale gradient matches torch._fake_quantize_learnable_*; the FakeQuantize
module follows torch.ao.quantization.FakeQuantize step by step; LSQ learns its scale."""
import math

import numpy as np
import pytest
from harness import import_torch
from hypothesis import given
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge import quant
from minitorch_edge.quant import FakeQuantizeAffine

torch = import_torch()
tq = torch.ao.quantization


def _case(seed, shape=(3, 4, 5)):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * rng.uniform(0.5, 4)).astype(np.float32)
    return rng, x


def _both(x):
    return mte.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


_ranges = st.sampled_from([(-128, 127), (-127, 127), (0, 255), (-8, 7)])


@given(seed=st.integers(0, 2 ** 31), qrange=_ranges)
def test_per_tensor_forward_and_ste_match_torch(seed, qrange):
    rng, x = _case(seed)
    quant_min, quant_max = qrange
    scale = np.float32(rng.uniform(0.005, 0.2))
    zp = int(rng.integers(quant_min, quant_max + 1))
    a, t = _both(x)
    y = quant.fake_quantize(a, scale, zp, quant_min, quant_max)
    ty = torch.fake_quantize_per_tensor_affine(t, float(scale), zp, quant_min, quant_max)
    np.testing.assert_array_equal(y._data, ty.detach().numpy())
    g = rng.standard_normal(x.shape).astype(np.float32)
    y.backward(mte.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(a.grad._data, t.grad.numpy())
    assert y.grad_fn.name() == "FakeQuantizeAffineBackward0"


@given(seed=st.integers(0, 2 ** 31), axis=st.sampled_from([0, 1, 2, -1]), qrange=_ranges)
def test_per_channel_forward_and_ste_match_torch(seed, axis, qrange):
    rng, x = _case(seed)
    quant_min, quant_max = qrange
    c = x.shape[axis]
    scale = rng.uniform(0.005, 0.2, c).astype(np.float32)
    zp = rng.integers(quant_min, quant_max + 1, c).astype(np.int32)
    a, t = _both(x)
    y = FakeQuantizeAffine.apply(a, mte.tensor(scale), zp, quant_min, quant_max, axis)
    ty = torch.fake_quantize_per_channel_affine(t, torch.tensor(scale), torch.tensor(zp),
                                                axis % 3, quant_min, quant_max)
    np.testing.assert_array_equal(y._data, ty.detach().numpy())
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(a.grad._data, t.grad.numpy())


def test_ties_round_to_even_and_clip():
    scale = np.float32(0.25)                      # x = (k + 1/2) * scale exactly
    x = ((np.arange(-140, 140) + 0.5) * scale).astype(np.float32)
    a, t = _both(x)
    y = quant.fake_quantize(a, scale, 3, -128, 127)
    ty = torch.fake_quantize_per_tensor_affine(t, 0.25, 3, -128, 127)
    np.testing.assert_array_equal(y._data, ty.detach().numpy())
    q = y._data / scale
    assert np.all(q == np.clip(np.rint(x / scale) + 3, -128, 127) - 3)
    y.sum().backward()
    inside = (np.rint(x / scale) + 3 >= -128) & (np.rint(x / scale) + 3 <= 127)
    np.testing.assert_array_equal(a.grad._data, inside.astype(np.float32))
    assert not inside.all() and inside.any()


def test_ste_is_identity_inside_and_output_is_piecewise_constant():
    """Numerical gradcheck is meaningless on a step function: check the two facts directly.
    Inside the range small moves that cross no rounding boundary leave y unchanged, yet the
    estimator's gradient is exactly dy; outside it both are 0."""
    scale = 0.1
    x = np.array([-20.0, -3.0, -0.42, 0.0, 0.13, 2.51, 12.7, 13.0], np.float64)
    a = mte.tensor(x, requires_grad=True)
    y = quant.fake_quantize(a, scale, 0, -128, 127)
    assert y.dtype == mte.float64
    moved = quant.fake_quantize(mte.tensor(x + 1e-4), scale, 0, -128, 127)
    np.testing.assert_array_equal(y._data, moved._data)
    g = np.arange(1.0, 9.0)
    y.backward(mte.tensor(g))
    assert a.grad.dtype == mte.float64
    np.testing.assert_array_equal(a.grad._data, g * [0, 1, 1, 1, 1, 1, 1, 0])


@pytest.mark.parametrize("grad_factor", [1.0, 0.03])
@pytest.mark.parametrize("zp", [0, 17])
def test_learnable_per_tensor_grads_match_torch(grad_factor, zp):
    rng, x = _case(7, (4, 6, 5))
    a, t = _both(x)
    scale = mte.tensor(np.float32(0.05), requires_grad=True)
    ts = torch.tensor([0.05], requires_grad=True)
    y = FakeQuantizeAffine.apply(a, scale, np.int32(zp), -128, 127, None, grad_factor)
    ty = torch._fake_quantize_learnable_per_tensor_affine(t, ts, torch.tensor([float(zp)]),
                                                          -128, 127, grad_factor)
    np.testing.assert_array_equal(y._data, ty.detach().numpy())
    g = rng.standard_normal(x.shape).astype(np.float32)
    y.backward(mte.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(a.grad._data, t.grad.numpy())
    assert scale.grad.shape == ()
    np.testing.assert_allclose(scale.grad._data, ts.grad.numpy()[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_learnable_per_channel_grads_match_torch(axis):
    rng, x = _case(8, (4, 6, 5))
    c = x.shape[axis]
    s = rng.uniform(0.02, 0.1, c).astype(np.float32)
    zp = rng.integers(-5, 5, c).astype(np.int32)
    a, t = _both(x)
    scale, ts = mte.tensor(s, requires_grad=True), torch.tensor(s, requires_grad=True)
    y = FakeQuantizeAffine.apply(a, scale, zp, -128, 127, axis, 0.1)
    ty = torch._fake_quantize_learnable_per_channel_affine(
        t, ts, torch.tensor(zp, dtype=torch.float32), axis % 3, -128, 127, 0.1)
    np.testing.assert_array_equal(y._data, ty.detach().numpy())
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(a.grad._data, t.grad.numpy())
    np.testing.assert_allclose(scale.grad._data, ts.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_learnable_scale_gradient_is_the_lsq_formula():
    x = np.array([0.26, -0.74, 9.0, -9.0], np.float32)     # two inside, one above, one below
    a = mte.tensor(x)
    scale = mte.tensor(np.float32(0.5), requires_grad=True)
    FakeQuantizeAffine.apply(a, scale, np.int32(0), -8, 7).sum().backward()
    inside = [np.rint(v / 0.5) - v / 0.5 for v in x[:2]]    # (q - z) - x / s
    assert scale.grad.item() == pytest.approx(sum(inside) + 7 + -8, rel=1e-6)


BAD = [
    ({"scale": 0.0}, r"scale must be positive and finite"),
    ({"scale": -0.1}, r"scale must be positive and finite"),
    ({"scale": float("nan")}, r"scale must be positive and finite"),
    ({"scale": np.ones(3, np.float32)}, (r"per-tensor quantization \(axis=None\) takes a scale "
                                         r"of one element, got scale of shape \(3,\)")),
    ({"scale": np.ones(3, np.float32), "zp": np.zeros(3, np.int32), "axis": 2},
     (r"expected scale of shape \(5,\) for axis 2 of input of shape \(2, 3, 5\), got scale of "
     r"shape \(3,\)")),
    ({"scale": np.ones(3, np.float32), "zp": np.zeros(3, np.int32), "axis": 3},
     r"axis 3 is out of range for input of shape \(2, 3, 5\)"),
    ({"scale": np.ones(3, np.float32), "zp": np.zeros(2, np.int32), "axis": 1},
     r"zero_point of shape \(2,\) does not match scale of shape \(3,\)"),
    ({"qmin": 5, "qmax": 5}, r"quant_min \(5\) must be less than quant_max \(5\)"),
    ({"qmin": 5, "qmax": -5}, r"quant_min \(5\) must be less than quant_max \(-5\)"),
    ({"zp": 200}, r"zero_point 200 must lie in \[quant_min, quant_max\] = \[-128, 127\]"),
    ({"zp": 1.5}, r"zero_point must hold integers"),
]


@pytest.mark.parametrize("bad,message", BAD)
def test_bad_arguments_name_the_op(bad, message):
    x = mte.ones(2, 3, 5)
    args = {"scale": 0.1, "zp": 0, "qmin": -128, "qmax": 127, "axis": None} | bad
    with pytest.raises(RuntimeError, match=r"^fake_quantize: " + message):
        quant.fake_quantize(x, args["scale"], args["zp"], args["qmin"], args["qmax"],
                            args["axis"])


def test_non_float_input():
    with pytest.raises(RuntimeError, match=r"^fake_quantize: expected a floating-point input "
                                           r"Tensor, got a Tensor of dtype"):
        quant.fake_quantize(mte.tensor([1, 2]), 0.1, 0)


# ---- the modules ------------------------------------------------------------------------------
def _torch_fq(per_channel):
    if per_channel:
        return tq.FakeQuantize(observer=tq.MovingAveragePerChannelMinMaxObserver, ch_axis=0,
                               quant_min=-127, quant_max=127, dtype=torch.qint8,
                               qscheme=torch.per_channel_symmetric, averaging_constant=0.1)
    return tq.FakeQuantize(observer=tq.MovingAverageMinMaxObserver, quant_min=-128,
                           quant_max=127, dtype=torch.qint8, qscheme=torch.per_tensor_affine,
                           averaging_constant=0.1)


@pytest.mark.parametrize("per_channel", [False, True])
def test_fake_quantize_module_follows_torch(per_channel):
    ours = (quant.FakeQuantize("moving_average", -127, 127, ch_axis=0, averaging_constant=0.1)
            if per_channel else quant.FakeQuantize(averaging_constant=0.1))
    theirs = _torch_fq(per_channel)
    rng = np.random.default_rng(9)
    for step in range(4):
        x = (rng.standard_normal((6, 3, 4)) * (1 + step) + 0.3).astype(np.float32)
        a, t = _both(x)
        y, ty = ours(a), theirs(t)
        np.testing.assert_array_equal(y._data, ty.detach().numpy())
        np.testing.assert_array_equal(ours.scale._data.reshape(-1), theirs.scale.numpy())
        np.testing.assert_array_equal(ours.zero_point._data.reshape(-1),
                                      theirs.zero_point.numpy())
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_array_equal(a.grad._data, t.grad.numpy())
    assert ours.scale.dtype == mte.float32 and ours.zero_point.dtype == mte.int32
    assert ours.scale.shape == ((6,) if per_channel else ())


def test_eval_freezes_and_switches():
    fq = quant.FakeQuantize()
    x = mte.tensor(np.linspace(-1, 3, 50, dtype=np.float32))
    fq(x)
    scale = fq.scale._data.copy()
    fq.eval()
    y = fq(x * 10)                                       # not observed in eval
    np.testing.assert_array_equal(fq.scale._data, scale)
    assert y.max().item() <= 3.0 + 1e-6
    fq.train().disable_observer()
    fq(x * 10)
    np.testing.assert_array_equal(fq.scale._data, scale)
    fq.disable_fake_quant()
    assert fq(x) is x
    fq.enable_observer().enable_fake_quant()
    fq(x * 10)
    assert fq.scale._data > scale
    assert "observer_enabled=True" in repr(fq)


def test_uncalibrated_eval_raises_and_state_dict_round_trip():
    fq = quant.FakeQuantize().eval()
    assert not fq.calibrated
    with pytest.raises(ValueError, match="FakeQuantize observed no data; run calibration"):
        fq(mte.ones(3))
    src = quant.FakeQuantize()
    src(mte.tensor(np.linspace(-1, 1, 9, dtype=np.float32)))
    fq.load_state_dict(src.state_dict())
    assert fq.calibrated
    np.testing.assert_array_equal(fq(mte.ones(3))._data, src.eval()(mte.ones(3))._data)


def test_observer_instance_and_names():
    obs = quant.HistogramObserver(method="entropy")
    fq = quant.FakeQuantize(obs)
    assert fq.activation_post_process is obs and fq.ch_axis is None
    assert type(quant.FakeQuantize("minmax", ch_axis=1).activation_post_process) is \
        quant.PerChannelMinMaxObserver
    with pytest.raises(ValueError, match="per-channel .* takes 'minmax' or 'moving_average'"):
        quant.FakeQuantize("entropy", ch_axis=0)
    with pytest.raises(ValueError, match="unknown observer"):
        quant.FakeQuantize("nope")


def test_learnable_init_and_grad_match_torch():
    _rng, x = _case(10, (8, 16))
    lsq = quant.LearnableFakeQuantize()                  # minmax observer, per tensor
    a = mte.tensor(x, requires_grad=True)
    y = lsq(a)
    scale, zp = quant.calculate_qparams(x.min(), x.max())
    assert isinstance(lsq.scale, mte.nn.Parameter) and lsq.scale.item() == scale
    assert lsq.zero_point.item() == zp and not lsq.observer_enabled
    y.sum().backward()
    t = torch.tensor(x, requires_grad=True)
    ts = torch.tensor([float(scale)], requires_grad=True)
    g = 1.0 / math.sqrt(x.size * 127)                    # torch's use_grad_scaling factor
    ty = torch._fake_quantize_learnable_per_tensor_affine(t, ts, torch.tensor([float(zp)]),
                                                          -128, 127, g)
    ty.sum().backward()
    np.testing.assert_array_equal(y._data, ty.detach().numpy())
    np.testing.assert_allclose(lsq.scale.grad._data, ts.grad.numpy()[0], rtol=1e-5, atol=1e-7)


def test_lsq_init_and_per_channel():
    _rng, w = _case(11, (4, 3, 3, 3))
    lsq = quant.LearnableFakeQuantize(quant_min=-127, quant_max=127, ch_axis=0, channels=4,
                                      init="lsq")
    assert lsq.scale.shape == (4,) and lsq.symmetric
    lsq(mte.tensor(w))
    expect = 2 * np.abs(w).reshape(4, -1).mean(1) / math.sqrt(127)
    np.testing.assert_allclose(lsq.scale._data, expect, rtol=1e-6)
    assert lsq.zero_point._data.tolist() == [0, 0, 0, 0]
    lazy = quant.LearnableFakeQuantize(quant_min=-127, quant_max=127, ch_axis=0)
    lazy(mte.tensor(w))
    assert lazy.scale.shape == (4,)


def test_lsq_learns_a_better_scale():
    """Start from a scale 8x too large; Adam on the fake-quantization error shrinks it."""
    x = mte.tensor(np.random.default_rng(12).standard_normal(4000).astype(np.float32))
    lsq = quant.LearnableFakeQuantize(quant_min=-127, quant_max=127, symmetric=True)
    lsq(x)                                               # init from min/max
    with mte.no_grad():
        lsq.scale.mul_(8.0)
    opt = mte.optim.Adam([lsq.scale], lr=0.02)      # (the LSQ grad factor is tiny here)
    errors = []
    for _ in range(30):
        loss = ((lsq(x) - x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        errors.append(loss.item())
    assert errors[-1] < 0.2 * errors[0]


def test_lsq_scale_clamped_to_eps():
    lsq = quant.LearnableFakeQuantize()
    x = mte.tensor(np.linspace(-1, 1, 11, dtype=np.float32))
    lsq(x)
    with mte.no_grad():
        lsq.scale.fill_(-1.0)
    lsq(x)
    assert lsq.scale.item() == np.float32(quant.FLOAT32_EPS)
