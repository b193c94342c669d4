"""The model zoo against hand-written PyTorch twins, `models.summary`, and short training runs.

The twins (tests/model_twins.py) are written from the published architectures with torch.nn
(torchvision is not used). For every model: the state_dict keys are equal, torch's weights
(BatchNorm statistics randomised so that eval mode is not the identity) load into ours, and the
outputs agree in eval mode for batch 1 and 4; for MLP, SmallCNN, ResNet-18, a small MobileNetV2,
EfficientNet-Lite0 and the Transformer a train-mode forward + backward gives the same parameter
gradients and BatchNorm buffers. Small inputs (16x16 to 64x64) keep the file fast: a 224x224
forward on numpy takes seconds.
"""
import math

import numpy as np
import pytest

import minitorch_edge as mte
import minitorch_edge.models as models
from minitorch_edge import nn, optim
from harness import import_torch
from model_twins import (TorchEfficientNetLite0, TorchMLP, TorchMobileNetV2, TorchResNet18,
                         TorchSmallCNN, TorchTransformerClassifier)

torch = import_torch()
tnn = torch.nn
F = nn.functional


# ---- helpers ------------------------------------------------------------------------------------
def _np(t):
    return np.array(t.detach().numpy())


def randomise_bn(theirs, seed=0):
    """Give every BatchNorm non-trivial statistics and affine parameters (eval is then not the
    identity), so that a wrong eps, momentum or stat shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in theirs.modules():
            if isinstance(m, tnn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                m.running_var.copy_(0.5 + torch.rand(c, generator=g))
                m.weight.copy_(0.5 + torch.rand(c, generator=g))
                m.bias.copy_(0.1 * torch.randn(c, generator=g))


def load_from_torch(ours, theirs):
    t_state = theirs.state_dict()
    o_state = ours.state_dict()
    assert list(o_state) == list(t_state), \
        f"state_dict keys differ: only ours {sorted(set(o_state) - set(t_state))[:5]}, " \
        f"only torch {sorted(set(t_state) - set(o_state))[:5]}"
    for k, v in t_state.items():
        assert tuple(o_state[k].shape) == tuple(v.shape), k
    ours.load_state_dict({k: mte.tensor(v.detach().numpy().copy()) for k, v in t_state.items()})


def compare_eval(ours, theirs, make_x, batches=(1, 4), rtol=1.3e-6, atol=1e-5, seed=0):
    ours.eval()
    theirs.eval()
    rng = np.random.default_rng(seed)
    for n in batches:
        x = make_x(rng, n)
        with torch.no_grad():
            expected = theirs(torch.from_numpy(x))
        with mte.no_grad():
            got = ours(mte.tensor(x))
        torch.testing.assert_close(torch.from_numpy(_np(got)), expected, rtol=rtol, atol=atol,
                                   msg=lambda m: f"{type(ours).__name__} batch {n}: {m}")


def compare_train_grads(ours, theirs, x, rtol=1.3e-6, atol=1e-5, seed=0):
    """Train-mode forward, backward of a random projection of the output: parameter gradients
    and buffers (BatchNorm running statistics) must agree."""
    ours.train()
    theirs.train()
    t_out = theirs(torch.from_numpy(x))
    o_out = ours(mte.tensor(x))
    torch.testing.assert_close(torch.from_numpy(_np(o_out)), t_out.detach(), rtol=rtol,
                               atol=atol)
    up = np.random.default_rng(seed).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.from_numpy(up)).sum().backward()
    (o_out * mte.tensor(up)).sum().backward()
    o_params = dict(ours.named_parameters())
    for name, tp in theirs.named_parameters():
        og = o_params[name].grad
        assert og is not None, f"no gradient for {name}"
        torch.testing.assert_close(torch.from_numpy(_np(og)), tp.grad, rtol=rtol, atol=atol,
                                   msg=lambda m: f"grad {name}: {m}")
    o_bufs = dict(ours.named_buffers())
    for name, tb in theirs.named_buffers():
        torch.testing.assert_close(torch.from_numpy(_np(o_bufs[name])), tb, rtol=rtol,
                                   atol=atol, check_dtype=False,
                                   msg=lambda m: f"buffer {name}: {m}")


def images(c, s):
    return lambda rng, n: rng.standard_normal((n, c, s, s)).astype(np.float32)


# ---- MLP and SmallCNN ---------------------------------------------------------------------------
def test_mlp_matches_torch():
    torch.manual_seed(0)
    theirs, ours = TorchMLP(), models.MLP()
    load_from_torch(ours, theirs)
    compare_eval(ours, theirs, images(1, 28))
    x = np.random.default_rng(1).standard_normal((8, 784)).astype(np.float32)
    compare_train_grads(ours, theirs, x)


def test_mlp_layout_and_options():
    m = models.MLP(20, hidden=(16, 8), out_features=3, activation="tanh", dropout=0.5)
    assert list(m.state_dict()) == ["layers.0.weight", "layers.0.bias", "layers.3.weight",
                                    "layers.3.bias", "layers.6.weight", "layers.6.bias"]
    assert isinstance(m.layers[1], nn.Tanh) and isinstance(m.layers[2], nn.Dropout)
    assert tuple(m(mte.randn(5, 20)).shape) == (5, 3)
    with pytest.raises(ValueError, match="MLP: expected input with 20 features"):
        m(mte.randn(5, 21))
    with pytest.raises(ValueError, match="unknown activation"):
        models.MLP(activation="swishy")


def test_small_cnn_matches_torch():
    torch.manual_seed(0)
    theirs, ours = TorchSmallCNN(), models.SmallCNN()
    load_from_torch(ours, theirs)
    compare_eval(ours, theirs, images(1, 28))
    compare_train_grads(ours, theirs, images(1, 28)(np.random.default_rng(2), 4))


def test_small_cnn_digits_8x8():
    ours = models.SmallCNN(num_classes=10, input_size=8)
    assert ours.padding == 1 and ours.flat_features == 32 * 2 * 2
    torch.manual_seed(0)
    theirs = TorchSmallCNN(flat=128, padding=1)
    load_from_torch(ours, theirs)
    compare_eval(ours, theirs, images(1, 8))
    with pytest.raises(ValueError, match=r"SmallCNN: expected input of shape \(N, C, 8, 8\)"):
        ours(mte.randn(2, 1, 28, 28))
    with pytest.raises(ValueError, match="leaves no pixels"):
        models.SmallCNN(input_size=8, padding=0)


# ---- deep CNNs ----------------------------------------------------------------------------------
def test_resnet18_matches_torch():
    torch.manual_seed(0)
    theirs, ours = TorchResNet18(7), models.resnet18(num_classes=7)
    randomise_bn(theirs)
    load_from_torch(ours, theirs)
    # 20 conv layers accumulate float32 rounding in different summation orders
    compare_eval(ours, theirs, images(3, 32), rtol=1e-4, atol=1e-4)


def test_resnet18_small_input_train_grads():
    torch.manual_seed(1)
    theirs = TorchResNet18(5, in_channels=2, small_input=True)
    ours = models.resnet18(num_classes=5, in_channels=2, small_input=True)
    assert isinstance(ours.maxpool, nn.Identity) and ours.conv1.kernel_size == (3, 3)
    randomise_bn(theirs)
    load_from_torch(ours, theirs)
    compare_eval(ours, theirs, images(2, 16), batches=(2,), rtol=1e-4, atol=1e-4)
    # 16x16 keeps 2x2 maps in layer4: at 1x1 with batch 2, train-mode BatchNorm normalises two
    # values and is ill-conditioned (torch's own float32 result is 1e-3 off its float64 one)
    x = images(2, 16)(np.random.default_rng(3), 2)
    compare_train_grads(ours, theirs, x, rtol=1e-4, atol=1e-4)


def test_resnet_init_like_torchvision():
    m = models.resnet18(num_classes=10)
    w = _np(m.layer3[0].conv1.weight)            # fan_out = 256 * 3 * 3
    assert abs(w.std() - math.sqrt(2.0 / (256 * 9))) < 0.05 * math.sqrt(2.0 / (256 * 9))
    assert np.all(_np(m.layer1[0].bn1.weight) == 1) and np.all(_np(m.bn1.bias) == 0)
    z = models.resnet18(num_classes=10, zero_init_residual=True)
    assert np.all(_np(z.layer2[1].bn2.weight) == 0)
    keys = list(m.state_dict())
    assert keys[:6] == ["conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean",
                        "bn1.running_var", "bn1.num_batches_tracked"]
    assert "layer2.0.downsample.0.weight" in keys and "layer2.0.downsample.1.running_var" in keys
    assert sum(p.numel() for p in models.resnet18().parameters()) == 11_689_512


def test_mobilenet_v2_matches_torch():
    torch.manual_seed(0)
    theirs, ours = TorchMobileNetV2(6), models.mobilenet_v2(num_classes=6)
    randomise_bn(theirs)
    load_from_torch(ours, theirs)
    assert "features.1.conv.0.0.weight" in ours.state_dict()          # depthwise, t = 1
    assert tuple(ours.features[2].conv[1][0].weight.shape) == (96, 1, 3, 3)
    assert ours.features[2].conv[1][0].groups == 96
    compare_eval(ours, theirs, images(3, 32), rtol=1e-4, atol=1e-4)   # 52 convs deep
    assert sum(p.numel() for p in models.mobilenet_v2().parameters()) == 3_504_872


def test_mobilenet_v2_width_mult_and_train_grads():
    assert models._make_divisible(32 * 0.35, 8) == 16
    assert models._make_divisible(1280 * 0.75, 8) == 960
    assert models._make_divisible(10, 8) == 16       # rounding down would lose over 10%
    setting = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 1, 2)]
    torch.manual_seed(2)
    theirs = TorchMobileNetV2(4, width_mult=0.5, dropout=0.0, setting=setting)
    ours = models.MobileNetV2(num_classes=4, width_mult=0.5, dropout=0.0,
                              inverted_residual_setting=[list(s) for s in setting])
    randomise_bn(theirs)
    load_from_torch(ours, theirs)
    compare_train_grads(ours, theirs, images(3, 16)(np.random.default_rng(4), 3),
                        rtol=1e-4, atol=1e-4)


def test_efficientnet_lite0_matches_torch():
    torch.manual_seed(0)
    theirs = TorchEfficientNetLite0(6)
    ours = models.efficientnet_lite0(num_classes=6)
    randomise_bn(theirs)
    load_from_torch(ours, theirs)
    bn = ours.blocks[2][1].bn2
    assert (bn.eps, bn.momentum) == (1e-3, 0.01)
    assert ours.blocks[2][0].conv_dw.kernel_size == (5, 5)
    compare_eval(ours, theirs, images(3, 32), rtol=1e-4, atol=1e-4)
    # train mode (no dropout): gradients through depthwise convs and BN with momentum 0.01
    theirs.dropout.p = 0.0
    ours.dropout.p = 0.0
    # in float64: backward through 16 train-mode BatchNorms on a batch of 2 is ill-conditioned
    # (torch's own float32 stem gradient is 2% off its float64 one at 64x64, far worse at 32x32
    # where the last stage's maps are 1x1); in float64 at 64x64 they agree to ~1e-12
    compare_train_grads(ours.double(), theirs.double(),
                        images(3, 64)(np.random.default_rng(5), 2).astype(np.float64),
                        rtol=1e-7, atol=1e-7)
    assert sum(p.numel() for p in models.efficientnet_lite0().parameters()) == 4_652_008


def test_efficientnet_drop_path():
    m = models.efficientnet_lite0(num_classes=3, drop_path_rate=0.2)
    rates = [b.drop_path.p for stage in m.blocks for b in stage
             if isinstance(b.drop_path, models.DropPath)]
    assert rates and max(rates) < 0.2 and rates == sorted(rates)
    x = mte.randn(2, 3, 32, 32)
    m.eval()
    with mte.no_grad():
        assert np.allclose(m(x).numpy(), m(x).numpy())   # eval: deterministic


# ---- Transformer classifier ---------------------------------------------------------------------
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_transformer_classifier_matches_torch(pooling):
    torch.manual_seed(0)
    kw = dict(d_model=32, nhead=4, num_layers=2, dim_feedforward=64, max_len=16)
    theirs = TorchTransformerClassifier(50, 3, 32, 4, 2, 64, 16, dropout=0.0, pooling=pooling,
                                        pad_idx=0)
    ours = models.TransformerClassifier(50, 3, dropout=0.0, pooling=pooling, pad_idx=0, **kw)
    load_from_torch(ours, theirs)

    def tokens(rng, n):
        t = rng.integers(1, 50, size=(n, 12))
        t[:, 9:] = 0                       # padded tail
        return t

    compare_eval(ours, theirs, tokens, rtol=1e-5, atol=1e-5)
    compare_train_grads(ours, theirs, tokens(np.random.default_rng(6), 3), rtol=1e-5,
                        atol=1e-5)


def test_transformer_classifier_errors_and_padding():
    m = models.TransformerClassifier(20, 2, d_model=16, nhead=2, num_layers=1, max_len=8,
                                     pad_idx=0, dropout=0.0).eval()
    assert np.all(_np(m.embed.weight)[0] == 0)
    t = mte.tensor([[3, 4, 5, 0, 0]])
    with mte.no_grad():
        # padding at the end changes nothing: masked out of attention and of the mean
        np.testing.assert_allclose(m(t).numpy(), m(mte.tensor([[3, 4, 5]])).numpy(),
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="exceeds max_len=8"):
        m(mte.ones(1, 9, dtype=mte.int64))
    with pytest.raises(ValueError, match="integer tokens"):
        m(mte.randn(1, 4))
    with pytest.raises(ValueError, match="pooling must be 'mean' or 'cls'"):
        models.TransformerClassifier(20, 2, pooling="max")


# ---- summary ------------------------------------------------------------------------------------
def test_summary_small_cnn_macs_and_params(capsys):
    m = models.SmallCNN()
    s = models.summary(m, (1, 1, 28, 28))
    assert str(s) in capsys.readouterr().out
    hand = 3 * 3 * 1 * 16 * 26 * 26 + 3 * 3 * 16 * 32 * 11 * 11 + 800 * 10
    assert s.total_macs == hand == 662_912
    n = sum(p.numel() for p in m.parameters())
    assert s.total_params == s.trainable_params == n
    assert n == sum(p.numel() for p in TorchSmallCNN().parameters())
    assert "Total MACs: 662,912" in s and "[1, 16, 26, 26]" in s and "Conv2d: 2-4" in s
    # batch 4: four times the MACs
    assert models.summary(m, (4, 1, 28, 28), verbose=False).total_macs == 4 * hand


@pytest.mark.parametrize("build, twin, shape", [
    (lambda: models.resnet18(num_classes=10), lambda: TorchResNet18(10), (1, 3, 32, 32)),
    (lambda: models.mobilenet_v2(num_classes=10), lambda: TorchMobileNetV2(10),
     (1, 3, 32, 32)),
    (lambda: models.efficientnet_lite0(num_classes=10), lambda: TorchEfficientNetLite0(10),
     (1, 3, 32, 32)),
], ids=["resnet18", "mobilenet_v2", "efficientnet_lite0"])
def test_summary_param_counts(build, twin, shape):
    m = build()
    s = models.summary(m, shape, depth=2, verbose=False)
    assert s.total_params == sum(p.numel() for p in m.parameters()) == \
        sum(p.numel() for p in twin().parameters())
    assert f"Total params: {s.total_params:,}" in s
    # the shown rows add up to the total (depth 2 rows hold their whole subtree)
    assert sum(r["params"] for r in s.rows if r["params"] is not None) == s.total_params
    assert s.total_macs > 0


def test_summary_resnet18_macs_at_224():
    # the published figure: 1.82 GMACs for ResNet-18 at 224x224 (convs + fc; BN adds ~2.3M)
    m = models.resnet18()
    s = models.summary(m, (1, 3, 224, 224), depth=1, verbose=False)
    conv_fc = sum(r["macs"] for r in s.rows if r["type"] in (nn.Conv2d, nn.Linear))
    assert conv_fc == 1_814_073_344


def test_summary_transformer_macs_hooks_removed_and_mode_restored():
    e, f, n, length, c = 16, 32, 2, 5, 3
    m = models.TransformerClassifier(30, c, d_model=e, nhead=2, num_layers=1,
                                     dim_feedforward=f, max_len=8)
    m.train()
    m.encoder.eval()                       # a mixed-mode model comes back as it was
    s = models.summary(m, (n, length), dtype=mte.int64, verbose=False)
    attn = n * (4 * length * e * e + 2 * length * length * e)
    ffn = 2 * n * length * e * f
    norms = 3 * n * length * e
    assert s.total_macs == attn + ffn + norms + n * e * c
    assert "MultiheadAttention" in s and "[2, 3]" in s
    assert m.training and m.head.training and not m.encoder.training
    assert not m.encoder.layers[0].training
    assert all(not mod._forward_hooks and not mod._forward_pre_hooks for mod in m.modules())


def test_summary_removes_hooks_on_error():
    m = models.SmallCNN()
    with pytest.raises(ValueError, match="SmallCNN: expected input"):
        models.summary(m, (1, 1, 20, 20), verbose=False)
    assert all(not mod._forward_hooks and not mod._forward_pre_hooks for mod in m.modules())
    assert m.training
    with pytest.raises(ValueError, match="input_shape"):
        models.summary(m)


# ---- they train ---------------------------------------------------------------------------------
def _cross_entropy_steps(model, opt, x, y, steps):
    loss = None
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return float(loss.item())


def test_mlp_learns_gaussian_blobs():
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((4, 8)).astype(np.float32) * 3
    labels = rng.integers(0, 4, 256)
    x = centres[labels] + rng.standard_normal((256, 8)).astype(np.float32) * 0.5
    mte.manual_seed(0)
    model = models.MLP(8, hidden=(32,), out_features=4)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss = _cross_entropy_steps(model, opt, mte.tensor(x), mte.tensor(labels), 60)
    assert loss < 0.05
    with mte.no_grad():
        acc = (model(mte.tensor(x)).argmax(1).numpy() == labels).mean()
    assert acc == 1.0


def test_batchnorm_cnn_memorises_random_data():
    rng = np.random.default_rng(1)
    x = mte.tensor(rng.standard_normal((32, 3, 8, 8)).astype(np.float32))
    y = mte.tensor(rng.integers(0, 4, 32))
    mte.manual_seed(0)
    model = models.MobileNetV2(num_classes=4, width_mult=0.5, dropout=0.0,
                               inverted_residual_setting=[[1, 16, 1, 1], [6, 24, 2, 2]])
    opt = optim.Adam(model.parameters(), lr=1e-2)
    loss = _cross_entropy_steps(model, opt, x, y, 20)
    assert loss < 0.05
