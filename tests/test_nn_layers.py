"""Linear, activation, normalization, dropout, embedding and upsampling layers (nn/layers) and
their functional forms: checked against PyTorch through the layer harness (train and eval,
input, parameter and buffer values), the op harness for the functions (gradcheck,
gradgradcheck), statistical tests of dropout and of the default initialisations, and error
tests (bad input changes nothing)."""
import math

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn
from minitorch_edge.autograd import gradcheck
from minitorch_edge.nn import functional as F
from minitorch_edge.nn.layers.activation import prelu, softmin
from harness import Row, fixed, import_torch, make_tests
from layer_harness import LayerRow, make_layer_tests, randn

torch = import_torch()


def ints(high, *shape, zero=False):
    """Integer inputs in [0, high), with a 0 guaranteed when zero=True (padding rows)."""
    def make(rng):
        a = rng.integers(0, high, shape)
        if zero:
            a.reshape(-1)[0] = 0
        return [a]
    return make


def twice(m, x):
    """Two calls (the running statistics must accumulate)."""
    return [m(x), m(x * 2 + 1)]


def fresh(m, x):
    """For inplace=True layers: feed a non-leaf copy (in-place ops refuse leaves)."""
    return m(x * 1)


def _implicit_softmax(lib_nn):
    return lib_nn.Softmax()


L = LayerRow
LAYERS = [
    # ---- linear --------------------------------------------------------------------------------
    L("Linear", lambda nn: nn.Linear(4, 3), randn(2, 4)),
    L("Linear-3d-input", lambda nn: nn.Linear(4, 3), randn(2, 5, 4)),
    L("Linear-1d-input", lambda nn: nn.Linear(4, 3), randn(4)),
    L("Linear-nobias", lambda nn: nn.Linear(4, 3, bias=False), randn(3, 4)),
    L("Bilinear", lambda nn: nn.Bilinear(3, 4, 5), lambda r: randn(2, 3)(r) + randn(2, 4)(r)),
    L("Bilinear-nobias-3d", lambda nn: nn.Bilinear(3, 2, 4, bias=False),
      lambda r: randn(2, 5, 3)(r) + randn(2, 5, 2)(r)),
    L("Identity", lambda nn: nn.Identity(7, a=1), randn(2, 3)),
    L("Flatten", lambda nn: nn.Flatten(), randn(2, 3, 4, 5)),
    L("Flatten-0-2", lambda nn: nn.Flatten(0, 2), randn(2, 3, 4, 5)),
    L("Unflatten", lambda nn: nn.Unflatten(1, (2, -1)), randn(2, 6, 4)),
    # ---- activations ---------------------------------------------------------------------------
    *[L(name, build, randn(3, 4, 5)) for name, build in [
        ("ReLU", lambda nn: nn.ReLU()), ("ReLU6", lambda nn: nn.ReLU6()),
        ("LeakyReLU", lambda nn: nn.LeakyReLU(0.2)), ("ELU", lambda nn: nn.ELU(0.5)),
        ("SELU", lambda nn: nn.SELU()), ("CELU", lambda nn: nn.CELU(0.7)),
        ("GELU", lambda nn: nn.GELU()), ("GELU-tanh", lambda nn: nn.GELU("tanh")),
        ("SiLU", lambda nn: nn.SiLU()), ("Mish", lambda nn: nn.Mish()),
        ("Sigmoid", lambda nn: nn.Sigmoid()), ("Tanh", lambda nn: nn.Tanh()),
        ("Softmax", lambda nn: nn.Softmax(dim=1)), ("LogSoftmax", lambda nn: nn.LogSoftmax(-1)),
        ("Softmin", lambda nn: nn.Softmin(dim=0)), ("Hardswish", lambda nn: nn.Hardswish()),
        ("Hardsigmoid", lambda nn: nn.Hardsigmoid()),
        ("Hardtanh", lambda nn: nn.Hardtanh(-0.5, 0.7)),
        ("Softplus", lambda nn: nn.Softplus(2.0, 1.0)), ("LogSigmoid", lambda nn: nn.LogSigmoid()),
        ("Softsign", lambda nn: nn.Softsign()), ("Tanhshrink", lambda nn: nn.Tanhshrink()),
        ("Threshold", lambda nn: nn.Threshold(0.1, 20.0)),
        ("PReLU", lambda nn: nn.PReLU()), ("PReLU-channels", lambda nn: nn.PReLU(4, init=0.1)),
    ]],
    L("Softmax-implicit-dim", _implicit_softmax, randn(3, 4)),
    *[L(name + "-inplace", build, randn(3, 4, 5), call=fresh) for name, build in [
        ("ReLU", lambda nn: nn.ReLU(True)), ("ReLU6", lambda nn: nn.ReLU6(inplace=True)),
        ("LeakyReLU", lambda nn: nn.LeakyReLU(0.1, True)),
        ("ELU", lambda nn: nn.ELU(inplace=True)),
        ("SELU", lambda nn: nn.SELU(True)), ("CELU", lambda nn: nn.CELU(inplace=True)),
        ("SiLU", lambda nn: nn.SiLU(True)), ("Mish", lambda nn: nn.Mish(True)),
        ("Hardswish", lambda nn: nn.Hardswish(True)), ("Hardtanh", lambda nn: nn.Hardtanh(
            inplace=True)), ("Threshold", lambda nn: nn.Threshold(0.0, -1.0, True)),
    ]],
    # ---- batch norm ----------------------------------------------------------------------------
    L("BatchNorm1d-2d", lambda nn: nn.BatchNorm1d(3), randn(8, 3)),
    L("BatchNorm1d-3d", lambda nn: nn.BatchNorm1d(3), randn(4, 3, 5)),
    L("BatchNorm2d", lambda nn: nn.BatchNorm2d(3), randn(4, 3, 5, 5),
      modes=("train", "train", "eval")),
    L("BatchNorm2d-twice", lambda nn: nn.BatchNorm2d(3, momentum=0.3), randn(4, 3, 5, 5),
      call=twice),
    L("BatchNorm2d-momentum-None", lambda nn: nn.BatchNorm2d(3, momentum=None),
      randn(2, 3, 4, 4), call=twice, modes=("train", "train", "eval")),
    L("BatchNorm2d-affine-False", lambda nn: nn.BatchNorm2d(3, affine=False),
      randn(2, 3, 4, 4)),
    L("BatchNorm2d-bias-False", lambda nn: nn.BatchNorm2d(3, bias=False), randn(2, 3, 4, 4)),
    L("BatchNorm2d-no-running-stats", lambda nn: nn.BatchNorm2d(3, track_running_stats=False),
      randn(2, 3, 4, 4)),
    L("BatchNorm2d-eval-only", lambda nn: nn.BatchNorm2d(3, eps=1e-3), randn(1, 3, 2, 2),
      modes=("eval",)),
    L("BatchNorm3d", lambda nn: nn.BatchNorm3d(2, momentum=0.5), randn(2, 2, 3, 3, 3)),
    # ---- instance / layer / group / rms / local-response norm -----------------------------------
    L("InstanceNorm2d", lambda nn: nn.InstanceNorm2d(3), randn(2, 3, 4, 5)),
    L("InstanceNorm2d-unbatched", lambda nn: nn.InstanceNorm2d(3), randn(3, 4, 5)),
    L("InstanceNorm2d-affine-tracked",
      lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
      randn(2, 3, 4, 4), call=twice, modes=("train", "eval")),
    L("InstanceNorm1d-affine", lambda nn: nn.InstanceNorm1d(3, affine=True), randn(2, 3, 6)),
    L("LayerNorm-1", lambda nn: nn.LayerNorm(5), randn(2, 3, 5)),
    L("LayerNorm-2", lambda nn: nn.LayerNorm((4, 5)), randn(2, 3, 4, 5)),
    L("LayerNorm-3", lambda nn: nn.LayerNorm([3, 4, 5], eps=1e-3), randn(2, 3, 4, 5)),
    L("LayerNorm-no-affine", lambda nn: nn.LayerNorm(5, elementwise_affine=False),
      randn(4, 5)),
    L("LayerNorm-no-bias", lambda nn: nn.LayerNorm(5, bias=False), randn(4, 5)),
    L("GroupNorm-2", lambda nn: nn.GroupNorm(2, 4), randn(2, 4, 3, 3)),
    L("GroupNorm-1", lambda nn: nn.GroupNorm(1, 4), randn(2, 4, 5)),
    L("GroupNorm-per-channel", lambda nn: nn.GroupNorm(4, 4, affine=False), randn(3, 4, 2, 3)),
    L("GroupNorm-2d-input", lambda nn: nn.GroupNorm(2, 8), randn(4, 8)),
    L("RMSNorm", lambda nn: nn.RMSNorm(5), randn(2, 3, 5)),
    L("RMSNorm-2-eps", lambda nn: nn.RMSNorm((4, 5), eps=1e-3), randn(2, 4, 5)),
    L("RMSNorm-no-affine", lambda nn: nn.RMSNorm(5, elementwise_affine=False), randn(3, 5)),
    L("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(3), randn(2, 5, 3, 3)),
    L("LocalResponseNorm-3d", lambda nn: nn.LocalResponseNorm(2, 1e-2, 0.5, 2.0), randn(2, 6, 4)),
    # ---- dropout -------------------------------------------------------------------------------
    L("Dropout", lambda nn: nn.Dropout(0.3), randn(4, 5), deterministic=False),
    L("Dropout-eval", lambda nn: nn.Dropout(0.3), randn(4, 5), modes=("eval",)),
    L("Dropout-p0", lambda nn: nn.Dropout(0.0), randn(4, 5)),
    L("Dropout2d", lambda nn: nn.Dropout2d(0.5), randn(2, 3, 4, 4), deterministic=False),
    L("Dropout1d", lambda nn: nn.Dropout1d(0.5), randn(2, 3, 4), deterministic=False),
    L("AlphaDropout", lambda nn: nn.AlphaDropout(0.2), randn(4, 5), deterministic=False),
    L("AlphaDropout-eval", lambda nn: nn.AlphaDropout(0.2), randn(4, 5), modes=("eval",)),
    # ---- embedding (integer inputs: no input gradient) -----------------------------------------
    L("Embedding", lambda nn: nn.Embedding(10, 3), ints(10, 2, 5), grad_inputs=()),
    L("Embedding-padding", lambda nn: nn.Embedding(10, 3, padding_idx=0),
      ints(10, 4, 6, zero=True), grad_inputs=()),
    L("Embedding-padding-neg", lambda nn: nn.Embedding(6, 2, padding_idx=-1), ints(6, 12),
      grad_inputs=()),
    L("Embedding-freq", lambda nn: nn.Embedding(5, 3, scale_grad_by_freq=True), ints(5, 3, 4),
      grad_inputs=()),
    L("Embedding-max-norm", lambda nn: nn.Embedding(8, 4, max_norm=1.0), ints(8, 2, 3),
      grad_inputs=()),
    # ---- upsampling ----------------------------------------------------------------------------
    L("Upsample-nearest-x2", lambda nn: nn.Upsample(scale_factor=2), randn(2, 3, 4, 5)),
    L("Upsample-nearest-size", lambda nn: nn.Upsample(size=(7, 3)), randn(1, 2, 4, 5)),
    L("Upsample-nearest-down", lambda nn: nn.Upsample(scale_factor=0.5), randn(1, 2, 7, 6)),
    L("Upsample-nearest-1d", lambda nn: nn.Upsample(scale_factor=2.5), randn(2, 3, 5)),
    L("Upsample-nearest-3d", lambda nn: nn.Upsample(size=(3, 5, 2)), randn(1, 2, 2, 3, 4)),
    L("Upsample-nearest-exact", lambda nn: nn.Upsample(scale_factor=1.7, mode="nearest-exact"),
      randn(1, 2, 5, 4)),
    *[L(f"Upsample-bilinear-{how}-ac{ac}", (lambda kw, ac: lambda nn: nn.Upsample(
        mode="bilinear", align_corners=ac, **kw))(kw, ac), randn(2, 2, 5, 4))
      for ac in (False, True)
      for how, kw in [("x2", dict(scale_factor=2)), ("size-up", dict(size=(9, 7))),
                      ("down", dict(scale_factor=0.6)), ("size-down", dict(size=(3, 2))),
                      ("mixed", dict(scale_factor=(1.5, 0.5)))]],
    L("Upsample-bicubic", lambda nn: nn.Upsample(scale_factor=1.5, mode="bicubic"),
      randn(1, 2, 4, 5)),
    L("Upsample-bicubic-ac", lambda nn: nn.Upsample(size=(3, 7), mode="bicubic",
                                                     align_corners=True), randn(1, 2, 5, 4)),
    L("Upsample-linear", lambda nn: nn.Upsample(scale_factor=1.8, mode="linear"), randn(2, 3, 6)),
    L("Upsample-trilinear", lambda nn: nn.Upsample(size=(3, 4, 2), mode="trilinear"),
      randn(1, 2, 2, 3, 4)),
    L("Upsample-area", lambda nn: nn.Upsample(size=(3, 2), mode="area"), randn(1, 2, 7, 5)),
    L("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(scale_factor=3),
      randn(1, 2, 3, 2)),
    L("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(size=(5, 6)), randn(1, 2, 3, 4)),
    L("PixelShuffle", lambda nn: nn.PixelShuffle(2), randn(2, 8, 3, 4)),
    L("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(3), randn(1, 2, 6, 3)),
]
make_layer_tests(LAYERS, globals())
# nn.Softmax() warns about the implicit dim (in both libraries)
pytestmark = pytest.mark.filterwarnings("ignore:Implicit dimension choice")


# ---- functional forms through the op harness (gradcheck, double backward, non-contiguous) -------
def _bn(lib, x, w, b):
    return lib.nn.functional.batch_norm(x, None, None, w, b, True)


def _int_rows(high):
    def make(rng, shapes, dtype):
        return [rng.integers(0, high, shapes[0]), rng.standard_normal(shapes[1]).astype(dtype)]
    return make


FUNCS = [
    Row("linear", lambda lib, x, w, b: lib.nn.functional.linear(x, w, b),
        shapes=fixed((2, 3, 4), (5, 4), (5,)), double=True),
    Row("bilinear", lambda lib, x, y, w, b: lib.nn.functional.bilinear(x, y, w, b),
        shapes=fixed((2, 3), (2, 2), (2, 3, 2), (2,)), double=True),
    Row("batch_norm", _bn, shapes=fixed((3, 2, 4), (2,), (2,)), double=True),
    Row("batch_norm-2d", _bn, shapes=fixed((5, 3), (3,), (3,)), double=True),
    Row("layer_norm", lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (3, 4), w, b),
        shapes=fixed((2, 3, 4), (3, 4), (3, 4)), double=True),
    Row("group_norm", lambda lib, x, w, b: lib.nn.functional.group_norm(x, 2, w, b),
        shapes=fixed((2, 4, 3), (4,), (4,)), double=True),
    Row("instance_norm", lambda lib, x: lib.nn.functional.instance_norm(x),
        shapes=fixed((2, 3, 5)), double=True),
    Row("rms_norm", lambda lib, x, w: lib.nn.functional.rms_norm(x, (4,), w, 1e-5),
        shapes=fixed((3, 4), (4,)), double=True),
    Row("normalize", lambda lib, x: lib.nn.functional.normalize(x, dim=-1),
        shapes=fixed((3, 4)), double=True),
    Row("local_response_norm", lambda lib, x: lib.nn.functional.local_response_norm(x, 3),
        shapes=fixed((2, 4, 3)), double=True),
    Row("interpolate-bilinear", lambda lib, x: lib.nn.functional.interpolate(
        x, scale_factor=1.5, mode="bilinear"), shapes=fixed((1, 2, 3, 3)), double=True),
    Row("interpolate-bilinear-ac", lambda lib, x: lib.nn.functional.interpolate(
        x, size=(2, 5), mode="bilinear", align_corners=True), shapes=fixed((1, 2, 3, 3)),
        double=True),
    Row("interpolate-bicubic", lambda lib, x: lib.nn.functional.interpolate(
        x, size=(5, 2), mode="bicubic"), shapes=fixed((1, 1, 3, 4)), double=True),
    Row("interpolate-nearest", lambda lib, x: lib.nn.functional.interpolate(
        x, scale_factor=1.6), shapes=fixed((2, 2, 5)), double=True),
    Row("interpolate-area", lambda lib, x: lib.nn.functional.interpolate(
        x, size=4, mode="area"), shapes=fixed((2, 2, 7)), double=True),
    Row("pixel_shuffle", lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2),
        shapes=fixed((1, 4, 2, 3)), double=True),
    # (no padding_idx here: its zero gradient is a convention, not the derivative)
    Row("embedding", lambda lib, i, w: lib.nn.functional.embedding(i, w),
        shapes=fixed((2, 5), (4, 3)), make=_int_rows(4), int_inputs=(0,), double=True),
    Row("prelu", lambda lib, x, w: (prelu if lib is mte else lib.nn.functional.prelu)(x, w),
        shapes=fixed((2, 3, 4), (3,)), double=True),
    Row("softmin", lambda lib, x: (softmin if lib is mte else lib.nn.functional.softmin)(x, 1),
        shapes=fixed((3, 4)), double=True),
]
make_tests(FUNCS, globals())


def test_interpolate_matches_torch_on_many_sizes():
    """Forward equality over many size/scale combinations, up and down, every mode."""
    rng = np.random.default_rng(0)
    sizes = [1, 2, 3, 5, 8, 13]
    cases = 0
    for mode, nd in [("nearest", 3), ("nearest", 4), ("nearest", 5), ("nearest-exact", 4),
                     ("linear", 3), ("bilinear", 4), ("bicubic", 4), ("trilinear", 5),
                     ("area", 4)]:
        for _ in range(25):
            spatial = tuple(int(rng.choice(sizes)) for _ in range(nd - 2))
            x = rng.standard_normal((2, 2) + spatial).astype(np.float32)
            kw = dict(mode=mode)
            if mode in ("linear", "bilinear", "bicubic", "trilinear"):
                kw["align_corners"] = bool(rng.integers(2))
            if rng.integers(2):
                kw["size"] = tuple(int(rng.choice(sizes + [20])) for _ in spatial)
            else:
                kw["scale_factor"] = tuple(float(rng.choice([0.5, 0.7, 1.1, 1.5, 2.0, 3.0]))
                                           for _ in spatial)
                kw["recompute_scale_factor"] = bool(rng.integers(2)) or mode == "area"
            try:
                want = torch.nn.functional.interpolate(torch.from_numpy(x), **kw)
            except RuntimeError:        # an output size of 0
                with pytest.raises(RuntimeError):
                    F.interpolate(mte.tensor(x), **kw)
                continue
            got = F.interpolate(mte.tensor(x), **kw)
            torch.testing.assert_close(torch.from_numpy(got.numpy()), want,
                                       msg=lambda m: f"{x.shape} {kw}: {m}")
            cases += 1
    assert cases > 150


def test_interpolate_gradient_is_adjoint_of_forward():
    """nearest with a scale that keeps the size (PyTorch's backward treats that as a copy, its
    forward does not): our gradient is the exact one of our forward."""
    x = mte.tensor(np.random.default_rng(1).standard_normal((1, 2, 5)), requires_grad=True)
    f = lambda t: F.interpolate(t, scale_factor=1.1)  # noqa: E731
    want = torch.nn.functional.interpolate(torch.from_numpy(x.detach().numpy()),
                                           scale_factor=1.1)
    np.testing.assert_array_equal(f(x).detach().numpy(), want.numpy())
    assert gradcheck(f, [x])


# ---- dropout statistics -------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    mte.manual_seed(0)
    n = 200_000
    x = mte.ones(n, requires_grad=True)
    y = F.dropout(x, p)
    zeros = float((y.detach().numpy() == 0).mean())
    assert abs(zeros - p) < 5 * math.sqrt(p * (1 - p) / n)
    kept = y.detach().numpy()[y.detach().numpy() != 0]
    np.testing.assert_allclose(kept, 1 / (1 - p), rtol=1e-6)
    assert abs(float(y.detach().numpy().mean()) - 1) < 5 * math.sqrt(p / (1 - p) / n)
    y.sum().backward()               # the gradient is the same mask times 1/(1-p)
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


def test_dropout_reproducible_and_edge_cases():
    x = mte.randn(50, 20)
    mte.manual_seed(3)
    a = F.dropout(x, 0.5).numpy()
    mte.manual_seed(3)
    np.testing.assert_array_equal(a, F.dropout(x, 0.5).numpy())
    assert not np.array_equal(a, F.dropout(x, 0.5).numpy())
    assert F.dropout(x, 0.5, training=False) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), np.zeros((50, 20), np.float32))
    np.testing.assert_array_equal(F.dropout(x, 0.0).numpy(), x.numpy())
    m = nn.Dropout(0.5).eval()
    assert m(x) is x
    y = x.clone()
    out = F.dropout(y, 0.5, inplace=True)
    assert out is y and y._version == 1


def test_dropout2d_drops_whole_channels():
    mte.manual_seed(1)
    y = nn.Dropout2d(0.4)(mte.ones(400, 50, 3, 3)).numpy()
    per_channel = y.reshape(400, 50, 9)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))   # a channel is all 0 or all kept
    frac = float((per_channel[..., 0] == 0).mean())
    assert abs(frac - 0.4) < 5 * math.sqrt(0.24 / 20000)
    with pytest.warns(UserWarning):
        y3 = F.dropout2d(mte.ones(100, 30, 4), 0.5).numpy()     # 3-D: channel-wise 1-D dropout
    assert np.all(y3.min(-1) == y3.max(-1))


def test_alpha_dropout_keeps_mean_and_variance():
    mte.manual_seed(2)
    x = mte.randn(400_000)
    y = F.alpha_dropout(x, 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    assert F.alpha_dropout(x, 0.3) is x                          # training=False by default


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_p_out_of_range(p):
    for make in (lambda: F.dropout(mte.ones(3), p), lambda: nn.Dropout(p),
                 lambda: nn.Dropout2d(p), lambda: F.dropout2d(mte.ones(1, 2, 2, 2), p)):
        with pytest.raises(ValueError, match="between 0 and 1"):
            make()


# ---- default initialisation ---------------------------------------------------------------------
def _ks(sample, cdf):
    """Kolmogorov-Smirnov statistic of `sample` against the continuous `cdf`."""
    s = np.sort(np.asarray(sample, np.float64).ravel())
    c = cdf(s)
    n = s.size
    return max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n))


def _ks_bound(n):
    return 1.95 / math.sqrt(n)        # the 0.1% critical value


def test_linear_default_init_is_uniform_1_over_sqrt_in():
    mte.manual_seed(0)
    m = nn.Linear(50, 300)
    bound = 1 / math.sqrt(50)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    uniform = lambda s: np.clip((s + bound) / (2 * bound), 0, 1)  # noqa: E731
    assert _ks(w, uniform) < _ks_bound(w.size)
    assert _ks(b, uniform) < _ks_bound(b.size) * 1.2
    assert abs(w.var() - bound ** 2 / 3) < 0.05 * bound ** 2 / 3
    # torch gives the same distribution (its own draws)
    t = torch.nn.Linear(50, 300).weight.detach().numpy()
    assert abs(t.var() - w.var()) < 0.05 * bound ** 2 / 3
    mte.manual_seed(0)
    np.testing.assert_array_equal(nn.Linear(50, 300).weight.detach().numpy(), w)


def test_bilinear_default_init():
    mte.manual_seed(0)
    m = nn.Bilinear(16, 5, 40)
    bound = 1 / 4
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound
    assert _ks(w, lambda s: np.clip((s + bound) / (2 * bound), 0, 1)) < _ks_bound(w.size)


def test_embedding_default_init_is_standard_normal():
    mte.manual_seed(0)
    m = nn.Embedding(400, 30, padding_idx=3)
    w = m.weight.detach().numpy()
    assert np.all(w[3] == 0)
    rest = np.delete(w, 3, axis=0)
    normal = np.vectorize(lambda s: 0.5 * (1 + math.erf(s / math.sqrt(2))))
    assert _ks(rest, normal) < _ks_bound(rest.size)
    assert abs(rest.mean()) < 0.03 and abs(rest.std() - 1) < 0.03


def test_prelu_and_norm_init():
    assert np.all(nn.PReLU(5).weight.detach().numpy() == 0.25)
    assert np.all(nn.PReLU(2, init=-0.5).weight.detach().numpy() == -0.5)
    bn = nn.BatchNorm2d(4)
    assert np.all(bn.weight.detach().numpy() == 1) and np.all(bn.bias.detach().numpy() == 0)
    assert np.all(bn.running_mean.numpy() == 0) and np.all(bn.running_var.numpy() == 1)
    assert bn.num_batches_tracked.dtype == mte.int64 and bn.num_batches_tracked.item() == 0
    ln = nn.LayerNorm((2, 3))
    assert ln.weight.shape == (2, 3) and np.all(ln.weight.detach().numpy() == 1)


# ---- behaviour ----------------------------------------------------------------------------------
def test_batchnorm_cumulative_average_and_eval():
    m = nn.BatchNorm1d(3, momentum=None)
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) * (k + 1) + k for k in range(3)]
    for b in batches:
        m(mte.tensor(b))
    np.testing.assert_allclose(m.running_mean.numpy(), np.mean([b.mean(0) for b in batches], 0),
                               rtol=1e-5)
    np.testing.assert_allclose(m.running_var.numpy(),
                               np.mean([b.var(0, ddof=1) for b in batches], 0), rtol=1e-5)
    assert m.num_batches_tracked.item() == 3
    m.eval()
    x = rng.standard_normal((2, 3)).astype(np.float32)
    want = (x - m.running_mean.numpy()) / np.sqrt(m.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(m(mte.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    assert m.num_batches_tracked.item() == 3             # eval does not count


def test_norm_state_dict_keys_match_torch():
    for build in (lambda nn: nn.BatchNorm2d(3), lambda nn: nn.BatchNorm1d(3, affine=False),
                  lambda nn: nn.BatchNorm2d(3, track_running_stats=False),
                  lambda nn: nn.BatchNorm2d(3, bias=False),
                  lambda nn: nn.InstanceNorm2d(3, track_running_stats=True),
                  lambda nn: nn.LayerNorm(4, bias=False), lambda nn: nn.GroupNorm(2, 4),
                  lambda nn: nn.RMSNorm(4), lambda nn: nn.Embedding(4, 2),
                  lambda nn: nn.Linear(2, 3), lambda nn: nn.Bilinear(2, 3, 4),
                  lambda nn: nn.PReLU()):
        assert list(build(nn).state_dict()) == list(build(torch.nn).state_dict())


def test_extra_repr_matches_torch():
    builds = [
        lambda nn: nn.ReLU(), lambda nn: nn.ReLU(True), lambda nn: nn.LeakyReLU(0.2, True),
        lambda nn: nn.ELU(0.5), lambda nn: nn.GELU("tanh"), lambda nn: nn.Softmax(1),
        lambda nn: nn.Softmax(), lambda nn: nn.Hardtanh(-2, 3, True), lambda nn: nn.Softplus(),
        lambda nn: nn.Threshold(0.1, 20), lambda nn: nn.PReLU(3), lambda nn: nn.Hardswish(True),
        lambda nn: nn.SiLU(True), lambda nn: nn.Linear(4, 3, bias=False),
        lambda nn: nn.Bilinear(2, 3, 4), lambda nn: nn.Identity(), lambda nn: nn.Flatten(),
        lambda nn: nn.Unflatten(1, (2, 5)), lambda nn: nn.BatchNorm1d(3),
        lambda nn: nn.BatchNorm2d(3, momentum=None, affine=False, track_running_stats=False),
        lambda nn: nn.LayerNorm((3, 4), elementwise_affine=False), lambda nn: nn.GroupNorm(2, 4),
        lambda nn: nn.InstanceNorm2d(3), lambda nn: nn.RMSNorm([3, 4], eps=1e-3),
        lambda nn: nn.LocalResponseNorm(3), lambda nn: nn.Dropout(), lambda nn: nn.Dropout2d(
            0.2, True), lambda nn: nn.AlphaDropout(0.3), lambda nn: nn.Embedding(10, 3),
        lambda nn: nn.Embedding(10, 3, padding_idx=0, max_norm=1.0, scale_grad_by_freq=True),
        lambda nn: nn.Upsample(scale_factor=2), lambda nn: nn.Upsample(size=(3, 4),
                                                                       mode="bilinear"),
        lambda nn: nn.UpsamplingBilinear2d(size=5), lambda nn: nn.UpsamplingNearest2d(
            scale_factor=2), lambda nn: nn.PixelShuffle(2), lambda nn: nn.PixelUnshuffle(2),
        lambda nn: nn.Upsample(scale_factor=(2, 3)),
    ]
    for build in builds:
        assert repr(build(nn)) == repr(build(torch.nn))


def test_embedding_padding_row_gets_no_gradient_and_one_hot():
    m = nn.Embedding(5, 3, padding_idx=2)
    idx = mte.tensor([[2, 0, 2], [1, 2, 4]])
    m(idx).sum().backward()
    g = m.weight.grad.numpy()
    np.testing.assert_array_equal(g[2], 0)
    np.testing.assert_array_equal(g[[0, 1, 4]], 1)
    np.testing.assert_array_equal(g[3], 0)
    t = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(F.one_hot(mte.tensor(t)).numpy(),
                                  torch.nn.functional.one_hot(torch.from_numpy(t)).numpy())
    assert F.one_hot(mte.tensor(t), 6).shape == (2, 2, 6)
    assert F.one_hot(mte.tensor(np.zeros(0, np.int64)), 3).shape == (0, 3)


def test_embedding_from_pretrained():
    w = mte.randn(4, 3)
    m = nn.Embedding.from_pretrained(w)
    assert not m.weight.requires_grad
    np.testing.assert_array_equal(m(mte.tensor([3])).numpy(), w.numpy()[[3]])


def test_batch_norm_double_backward_through_module():
    """create_graph=True takes the Tensor-op backward: second derivatives exist and match."""
    x = np.random.default_rng(0).standard_normal((4, 3, 2)).astype(np.float64)
    ours, theirs = nn.BatchNorm1d(3).double(), torch.nn.BatchNorm1d(3).double()
    xo = mte.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    go, = mte.autograd.grad((ours(xo) ** 3).sum(), [xo], create_graph=True)
    gt, = torch.autograd.grad((theirs(xt) ** 3).sum(), [xt], create_graph=True)
    (go ** 2).sum().backward()
    (gt ** 2).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10)


# ---- errors: clear messages, nothing changed ----------------------------------------------------
def test_linear_wrong_features():
    with pytest.raises(RuntimeError) as e:
        nn.Linear(4, 3)(mte.randn(2, 5))
    assert str(e.value) == ("Linear: expected input with last dimension 4 (in_features), got "
                            "input of shape (2, 5)")
    with pytest.raises(RuntimeError, match="last dimension 4"):
        F.linear(mte.randn(2, 5), mte.randn(3, 4))
    with pytest.raises(RuntimeError, match="Bilinear: expected inputs"):
        nn.Bilinear(2, 3, 4)(mte.randn(5, 2), mte.randn(5, 2))


@pytest.mark.parametrize("layer,shape", [
    (lambda: nn.BatchNorm2d(3), (2, 4, 5, 5)),
    (lambda: nn.BatchNorm1d(3, momentum=None), (2, 4)),
])
def test_batchnorm_wrong_channels_leaves_running_stats(layer, shape):
    m = layer()
    m(mte.randn(*((4, 3) + shape[2:])))
    before = {k: v.numpy().copy() for k, v in m.named_buffers()}
    with pytest.raises(RuntimeError, match=r"expected input with 3 channels .* got input of "
                                           r"shape " + str(shape).replace("(", r"\(")
                       .replace(")", r"\)")):
        m(mte.randn(*shape))
    for k, v in m.named_buffers():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_batchnorm_bad_dims_and_single_value():
    m = nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input"):
        m(mte.randn(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(mte.randn(2, 3, 4))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        m(mte.randn(1, 3))
    assert m.num_batches_tracked.item() == 0 and np.all(m.running_mean.numpy() == 0)
    m.eval()
    assert m(mte.randn(1, 3)).shape == (1, 3)             # fine in eval
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        F.batch_norm(mte.randn(2, 3), None, None, training=False)


def test_other_norm_errors():
    with pytest.raises(RuntimeError, match=r"LayerNorm: expected input with shape \[\*, 4\]"):
        nn.LayerNorm(4)(mte.randn(2, 5))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(mte.randn(2, 5), (4,))
    with pytest.raises(ValueError, match=r"num_channels \(3\) must be divisible by num_groups"):
        nn.GroupNorm(2, 3)
    with pytest.raises(RuntimeError, match="GroupNorm: expected input with 4 channels"):
        nn.GroupNorm(2, 4)(mte.randn(2, 6, 3))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(mte.randn(2, 6, 3), 4)
    with pytest.raises(RuntimeError, match="InstanceNorm2d: expected input with 3 channels"):
        nn.InstanceNorm2d(3, affine=True)(mte.randn(2, 4, 3, 3))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm2d(3)(mte.randn(2, 4, 3, 3))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        nn.InstanceNorm2d(3)(mte.randn(2, 3, 1, 1))
    with pytest.raises(RuntimeError, match="rms_norm"):
        F.rms_norm(mte.randn(2, 5), (4,))


def test_embedding_errors():
    m = nn.Embedding(10, 3)
    w = m.weight.detach().numpy().copy()
    with pytest.raises(IndexError, match=r"Embedding: index 10 is out of range \[0, 10\)"):
        m(mte.tensor([1, 10]))
    with pytest.raises(IndexError, match=r"index -1 is out of range \[0, 10\)"):
        m(mte.tensor([-1]))
    with pytest.raises(TypeError, match="integer"):
        m(mte.tensor([1.0]))
    np.testing.assert_array_equal(m.weight.detach().numpy(), w)
    with pytest.raises(IndexError, match="embedding"):
        F.embedding(mte.tensor([7]), mte.randn(5, 2))
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(10, 3, padding_idx=10)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(mte.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(mte.tensor([1, 3]), 3)
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(mte.tensor([1.0]))


def test_upsampling_and_activation_errors():
    x = mte.randn(2, 3, 4)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D"):
        F.interpolate(x, scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(x, size=(3, 4))
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(NotImplementedError, match="unknown mode"):
        F.interpolate(x, scale_factor=2, mode="foo")
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        nn.PixelShuffle(2)(mte.randn(1, 5, 2, 2))
    with pytest.raises(RuntimeError, match="height to be divisible by downscale_factor"):
        F.pixel_unshuffle(mte.randn(1, 5, 3, 2), 2)
    with pytest.raises(RuntimeError, match="parameter numbers = 2 and channel size = 3"):
        nn.PReLU(2)(mte.randn(2, 3, 4))
    with pytest.raises(ValueError, match="min_val"):
        nn.Hardtanh(1.0, -1.0)


def test_batch_norm_eval_is_one_function_with_exact_gradients():
    """Eval-mode batch_norm is one NativeBatchNorm node over the running statistics: its
    gradients (input, weight, bias) pass gradcheck and gradgradcheck in float64, and equal
    torch's for random statistics."""
    from minitorch_edge.autograd import gradgradcheck
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4, 5, 2))
    mean, var = rng.normal(0, 0.5, 4), rng.uniform(0.5, 2.0, 4)
    w, b = rng.uniform(0.5, 1.5, 4), rng.normal(0, 0.3, 4)
    xs, ws, bs = (mte.tensor(a, requires_grad=True) for a in (x, w, b))
    rm, rv = mte.tensor(mean), mte.tensor(var)

    def f(x_, w_, b_):
        return F.batch_norm(x_, rm, rv, w_, b_, training=False, eps=1e-3)
    assert f(xs, ws, bs).grad_fn.name() == "NativeBatchNormBackward0"
    assert gradcheck(f, (xs, ws, bs))
    assert gradgradcheck(f, (xs, ws, bs))
    if torch is None:
        return
    g = rng.standard_normal(x.shape)
    y = f(xs, ws, bs)
    y.backward(mte.tensor(g))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.batch_norm(tx, torch.tensor(mean), torch.tensor(var), tw, tb,
                                        training=False, eps=1e-3)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    for ours, theirs in ((xs, tx), (ws, tw), (bs, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10,
                                   atol=1e-10)
