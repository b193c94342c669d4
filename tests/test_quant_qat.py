"""Quantization-aware training (quant/qat.py): QATConvBn2d against the fold formula by hand and
against torch.ao.nn.intrinsic.qat.ConvBn2d; prepare_qat on the zoo (which modules it swaps,
that the float model is untouched, that with fake quant off it is the float model, that with
it on it stays close, and that it trains)."""
import numpy as np
import pytest
from harness import import_torch, randomize_bn

import minitorch_edge as mte
from minitorch_edge import nn, quant
from minitorch_edge.nn import functional as F

torch = import_torch()


def _x(shape, seed=0):
    return mte.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _conv_bn(rng, groups=1, bias=False):
    conv = nn.Conv2d(4, 6 if groups == 1 else 4, 3, padding=1, groups=groups, bias=bias)
    bn = nn.BatchNorm2d(conv.out_channels)
    randomize_bn(nn.Sequential(conv, bn), rng)
    return conv, bn


def _rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-12))


# ---- QATConvBn2d ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [False, True])
def test_convbn_eval_is_the_fold_formula(bias):
    rng = np.random.default_rng(1)
    conv, bn = _conv_bn(rng, bias=bias)
    m = quant.QATConvBn2d.from_float(conv, bn, activation=nn.ReLU6())
    x = _x((2, 4, 5, 5))
    m(x)                                                 # one training step: observers
    m.eval()
    y = m(x)
    # by hand: g = gamma / sqrt(var + eps); W' = fq_w(W * g); b' = beta + (b - mean) * g
    g = bn.weight._data / np.sqrt(bn.running_var._data + bn.eps)
    w = conv.weight._data * g[:, None, None, None]
    wq = quant.fake_quantize(mte.tensor(w), m.weight_fake_quant.scale, 0, -127, 127, axis=0)
    b = bn.bias._data + ((conv.bias._data if bias else 0) - bn.running_mean._data) * g
    fin, fout = m.input_fake_quant, m.output_fake_quant
    xq = quant.fake_quantize(x, fin.scale, fin.zero_point._data)
    ref = F.conv2d(xq, wq, mte.tensor(b.astype(np.float32)), padding=1).clamp(0, 6)
    ref = quant.fake_quantize(ref, fout.scale, fout.zero_point._data)
    np.testing.assert_allclose(y._data, ref._data, atol=1e-6)


def test_convbn_train_is_conv_then_bn_when_fake_quant_is_off():
    rng = np.random.default_rng(2)
    conv, bn = _conv_bn(rng, bias=True)
    ref_conv, ref_bn = _conv_bn(rng, bias=True)
    ref_conv.load_state_dict(conv.state_dict())
    ref_bn.load_state_dict(bn.state_dict())
    m = quant.QATConvBn2d.from_float(conv, bn)
    quant.disable_fake_quant(m)
    x = _x((3, 4, 5, 5), 3)
    np.testing.assert_allclose(m(x)._data, ref_bn(ref_conv(x))._data, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean._data, ref_bn.running_mean._data, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(bn.running_var._data, ref_bn.running_var._data, rtol=1e-5)


def test_freeze_bn_uses_running_stats_and_stops_updating():
    rng = np.random.default_rng(3)
    m = quant.QATConvBn2d.from_float(*_conv_bn(rng))
    x = _x((2, 4, 5, 5), 4)
    m(x)
    quant.freeze_bn(m)
    mean = m.bn.running_mean._data.copy()
    quant.freeze_observers(m)
    y_train = m(x)
    np.testing.assert_array_equal(m.bn.running_mean._data, mean)
    np.testing.assert_allclose(y_train._data, m.eval()(x)._data, atol=1e-6)


def _torch_convbn(conv, bn, with_relu):
    tq = torch.ao.quantization
    weight = tq.FakeQuantize.with_args(
        observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
        dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
    qconfig = tq.QConfig(activation=tq.FakeQuantize.with_args(
        observer=tq.MovingAverageMinMaxObserver), weight=weight)
    cls = (torch.ao.nn.intrinsic.qat.ConvBnReLU2d if with_relu
           else torch.ao.nn.intrinsic.qat.ConvBn2d)
    t = cls(conv.in_channels, conv.out_channels, 3, padding=1, groups=conv.groups,
            bias=conv.bias is not None, qconfig=qconfig)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(conv.weight._data))
        for name in ("weight", "bias", "running_mean", "running_var"):
            getattr(t.bn, name).copy_(torch.tensor(getattr(bn, name)._data))
    return t


@pytest.mark.parametrize("with_relu,groups", [(False, 1), (True, 4)])
def test_convbn_matches_torch(with_relu, groups):
    """Our QATConvBn2d without activation quantizers is torch's ConvBn2d / ConvBnReLU2d: the
    same outputs in training (two steps) and eval, the same running statistics and grads."""
    rng = np.random.default_rng(5)
    conv, bn = _conv_bn(rng, groups=groups)
    t = _torch_convbn(conv, bn, with_relu)
    wfq = quant.FakeQuantize("moving_average", -127, 127, ch_axis=0)
    m = quant.QATConvBn2d(conv, bn, wfq, activation=nn.ReLU() if with_relu else None)
    for step in range(2):
        x = _x((3, 4, 6, 6), 10 + step).requires_grad_()
        tx = torch.tensor(x._data, requires_grad=True)
        y, ty = m(x), t(tx)
        np.testing.assert_allclose(y._data, ty.detach().numpy(), rtol=1e-4, atol=1e-4)
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(x.grad._data, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(bn.weight.grad._data, t.bn.weight.grad.numpy(), rtol=1e-3,
                                   atol=1e-3)
        np.testing.assert_allclose(conv.weight.grad._data, t.weight.grad.numpy(), rtol=1e-3,
                                   atol=1e-3)
    np.testing.assert_allclose(bn.running_var._data, t.bn.running_var.numpy(), rtol=1e-5)
    # the scales come from the BN-scaled weights, whose last bit follows torch's vectorized
    # variance on this CPU (1 ulp apart on some machines): equal to a few ulps
    np.testing.assert_allclose(wfq.scale._data, t.weight_fake_quant.scale.numpy(), rtol=5e-7,
                               atol=0)
    x = _x((2, 4, 6, 6), 20)
    t.eval().apply(torch.ao.quantization.disable_observer)   # (torch observes in eval too)
    np.testing.assert_allclose(m.eval()(x)._data, t(torch.tensor(x._data)).detach().numpy(),
                               rtol=1e-4, atol=1e-4)


# ---- prepare_qat ---------------------------------------------------------------------------------
def _count(model):
    counts = {}
    for _, m in quant.qat_modules(model):
        key = type(m).__name__ + ("+" + type(m.activation).__name__ if m.activation else "")
        counts[key] = counts.get(key, 0) + 1
    return counts


def _resnet():
    return randomize_bn(mte.models.resnet18(num_classes=5, small_input=True),
                        np.random.default_rng(0))


def _mobilenet():
    return randomize_bn(mte.models.mobilenet_v2(num_classes=5, dropout=0.0),  # (deterministic)
                        np.random.default_rng(0))


def _seeded(make):
    def seeded():
        mte.manual_seed(0)
        return make()
    return seeded


ZOO = {
    "small_cnn": (_seeded(lambda: mte.models.SmallCNN(input_size=8)), (4, 1, 8, 8),
                  {"QATConv2d+ReLU": 2, "QATLinear": 1}),
    "mlp": (_seeded(lambda: mte.models.MLP(64, (32, 16), 10)), (4, 64),
            {"QATLinear+ReLU": 2, "QATLinear": 1}),
    "resnet18": (_seeded(_resnet), (2, 3, 16, 16), {"QATConvBn2d": 20, "QATLinear": 1}),
    "mobilenet_v2": (_seeded(_mobilenet), (8, 3, 32, 32),   # (batch 8: BN of 1x1 maps)
                     {"QATConvBn2d+ReLU6": 35, "QATConvBn2d": 17, "QATLinear": 1}),
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_prepare_qat_swaps_and_leaves_the_original(name):
    make, _, expected = ZOO[name]
    model = make()
    before = {k: v._data.copy() for k, v in model.state_dict().items()}
    q = quant.prepare_qat(model.eval())
    assert _count(q) == expected and q.training
    assert not quant.qat_modules(model) and not model.training
    left = [n for n, m in q.named_modules() if type(m) in (nn.Conv2d, nn.Linear,
                                                           nn.BatchNorm2d)]
    assert left == [n + ".bn" for n, m in quant.qat_modules(q) if hasattr(m, "bn")]
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v._data, before[k])
    qp = {id(p) for p in q.parameters()}
    assert not any(id(p) in qp for p in model.parameters())


def test_resnet_block_fuses_bn_but_not_the_shared_relu():
    q = quant.prepare_qat(_resnet())
    block = q.layer1[0]
    assert isinstance(block.conv1, quant.QATConvBn2d) and block.conv1.activation is None
    assert type(block.bn1) is nn.Identity and type(block.relu) is nn.ReLU
    assert isinstance(q.layer2[0].downsample[0], quant.QATConvBn2d)
    assert type(q.layer2[0].downsample[1]) is nn.Identity


def test_sequential_with_its_own_forward_fuses_no_activation():
    class Reversed(nn.Sequential):
        def forward(self, x):
            return next(iter(self._modules.values()))(x)

    q = quant.prepare_qat(nn.Sequential(Reversed(nn.Linear(3, 3), nn.ReLU())))
    assert type(q[0][1]) is nn.ReLU and q[0][0].activation is None


@pytest.mark.parametrize("name", sorted(ZOO))
def test_without_fake_quant_it_is_the_float_model(name):
    make, shape, _ = ZOO[name]
    model = make()
    q = quant.disable_fake_quant(quant.prepare_qat(model))
    x = _x(shape, 1)
    np.testing.assert_allclose(q(x)._data, model.train()(x)._data, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(q.eval()(x)._data, model.eval()(x)._data, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_fake_quant_stays_close_to_float(name):
    """Calibrate with BN frozen (the float model's running statistics), then compare in eval on
    the first calibration batch (whose range the moving averages start from, so that little is
    clipped): the int8 rounding of weights and activations costs a few percent at most."""
    make, shape, _ = ZOO[name]
    model = make()
    q = quant.freeze_bn(quant.prepare_qat(model))
    for seed in range(3):
        q(_x(shape, seed))
    x = _x(shape, 0)
    assert _rel_err(q.eval()(x)._data, model.eval()(x)._data) < 0.06   # (0.006 - 0.024 seen)


def _train(model, shape, steps, lr=0.05, seed=0):
    rng = np.random.default_rng(seed)
    x = mte.tensor(rng.standard_normal(shape).astype(np.float32))
    n_out = model(x).shape[-1]
    target = mte.tensor(rng.integers(0, n_out, shape[0]))
    opt = mte.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("name,qconfig,steps", [
    ("small_cnn", None, 10), ("small_cnn", "lsq", 10), ("mlp", None, 10), ("mlp", "lsq", 10),
    ("mobilenet_v2", None, 4), ("resnet18", None, 3)])
def test_qat_trains(name, qconfig, steps):
    make, shape, _ = ZOO[name]
    q = quant.prepare_qat(make(), qconfig)
    losses = _train(q, (16,) + shape[1:] if name in ("small_cnn", "mlp") else shape, steps,
                    lr=0.05 if name in ("small_cnn", "mlp") else 0.01)
    assert losses[-1] < losses[0]
    assert all(np.isfinite(losses))


def test_lsq_qconfig_learns_scales():
    q = quant.prepare_qat(mte.models.MLP(16, (8,), 4), "lsq")
    fqs = [m for m in q.modules() if isinstance(m, quant.LearnableFakeQuantize)]
    assert len(fqs) == 3 * 2
    scales = {id(m.scale) for m in fqs}
    assert scales <= {id(p) for p in q.parameters()}
    _train(q, (8, 16), 3)
    w = q.layers[0].weight_fake_quant
    assert w.scale.shape == (8,) and w.scale.grad is not None
    assert not w.observer_enabled and q.layers[0].input_fake_quant.scale.grad is not None


def test_freeze_observers_freezes_scales():
    q = quant.prepare_qat(mte.models.SmallCNN(input_size=8))
    q(_x((4, 1, 8, 8)))
    quant.freeze_observers(q)
    scale = q.fc.output_fake_quant.scale._data.copy()
    q(_x((4, 1, 8, 8), 1) * 5)
    np.testing.assert_array_equal(q.fc.output_fake_quant.scale._data, scale)
    quant.enable_observers(q)
    q(_x((4, 1, 8, 8), 1) * 5)
    assert q.fc.output_fake_quant.scale._data != scale


def test_eval_before_calibration_asks_for_it():
    q = quant.prepare_qat(mte.models.MLP(16, (8,), 4)).eval()
    with pytest.raises(ValueError, match="observed no data; run calibration batches"):
        q(_x((2, 16)))


def test_inplace_and_errors():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
    assert quant.prepare_qat(model, inplace=True) is model
    assert _count(model) == {"QATConvBn2d+ReLU": 1}
    assert [type(m).__name__ for m in model] == ["QATConvBn2d", "Identity", "Identity"]
    quant.prepare_qat(model, inplace=True)                # already prepared: unchanged
    assert _count(model) == {"QATConvBn2d+ReLU": 1}
    with pytest.raises(ValueError, match=r"unknown qconfig 'int4'; expected one of"):
        quant.prepare_qat(model, "int4")
    with pytest.raises(TypeError, match="expected an nn.Module"):
        quant.prepare_qat(3)


def test_shared_module_is_swapped_once():
    lin = nn.Linear(4, 4)
    q = quant.prepare_qat(nn.Sequential(lin, nn.Sequential(lin)))
    assert q[0] is q[1][0] and isinstance(q[0], quant.QATLinear)


@pytest.mark.parametrize("qconfig", [None, "lsq"])
def test_state_dict_loads_into_a_fresh_prepared_model(qconfig):
    make, shape, _ = ZOO["small_cnn"]
    q = quant.prepare_qat(make(), qconfig)
    _train(q, shape, 2)
    fresh = quant.prepare_qat(make(), qconfig)
    fresh.load_state_dict(q.state_dict())
    x = _x(shape, 3)
    np.testing.assert_array_equal(fresh.eval()(x)._data, q.eval()(x)._data)
