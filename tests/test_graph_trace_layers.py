"""graph.trace on the layers and tensor ops that real models use beyond the zoo (transposed
convs, upsampling, non-constant padding, instance/group norm, recurrent layers, adaptive max
pooling, matmul between activations, the less common activations and reductions): each model
is traced and must reproduce eager through the Python executor, the C runtime (its .mte file,
loaded through cffi), ONNX export to onnxruntime, and int8 quantization (the C runtime equal
to the executor bit for bit). Eager is the reference here; each op's eager form is tested
against PyTorch in its own file."""
import os

import numpy as np
import pytest

import minitorch_edge as mte
import minitorch_edge.nn.functional as F
from minitorch_edge import graph, nn, quant, runtime
from minitorch_edge.graph import TraceError

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.bn = nn.Conv2d(6, 6, 3, padding=1), nn.BatchNorm2d(6)
        self.c2 = nn.Conv2d(6, 6, 3, padding=1)

    def forward(self, x):
        return F.relu(x + self.c2(F.relu(self.bn(self.c1(x)))))


class Decoder(nn.Module):
    """A segmentation-style head: strided conv down, transposed conv and upsampling up."""
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2,
                                      dilation=1)
        self.norm = nn.InstanceNorm2d(4, affine=True)
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        y = F.relu(self.down(x))
        y = F.elu(self.norm(self.up(y)))
        y = self.up2(y)
        y = y + F.interpolate(y, scale_factor=0.5, mode="nearest").repeat_interleave(2, dim=2) \
            .repeat_interleave(2, dim=3)
        return self.head(y)


class Interpolations(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.c(x)
        a = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        b = F.interpolate(y, size=(11, 9), mode="bilinear", align_corners=True)
        c = nn.Upsample(scale_factor=3, mode="nearest")(y)
        return a.mean((2, 3)) + b.mean((2, 3)) + c.amax((2, 3))


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.e = nn.Embedding(30, 8)
        self.r = cell(8, 12, num_layers=2, batch_first=True, bidirectional=True)
        self.l = nn.Linear(24, 4)

    def forward(self, x):
        y, _ = self.r(self.e(x))
        return self.l(y[:, -1] + y.mean(1))


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(3, 6, 5, stride=2, dilation=2)
        self.bn = nn.BatchNorm1d(6)
        self.t = nn.ConvTranspose1d(6, 3, 4, stride=2, padding=1)
        self.l = nn.Linear(3, 2)

    def forward(self, x):
        y = self.t(F.max_pool1d(F.relu(self.bn(self.c(x))), 2, ceil_mode=True))
        return self.l(F.adaptive_max_pool1d(y, 1).flatten(1))


class NormsAndPools(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(4, 8, 3, padding="same")
        self.gn, self.pr, self.ps = nn.GroupNorm(2, 8), nn.PReLU(8), nn.PixelShuffle(2)
        self.l = nn.Linear(2 * 3 * 3 + 2 * 2 * 2, 3)

    def forward(self, x):
        y = self.ps(self.pr(self.gn(self.c(x))))            # (N, 2, 2H, 2W)
        a = F.adaptive_avg_pool2d(y, (3, 3)).flatten(1)
        b = F.adaptive_max_pool2d(y, (2, 2)).flatten(1)      # even cells: MaxPool
        c = F.adaptive_max_pool2d(y, (5, 3)).amax((2, 3))   # uneven cells: slices
        return self.l(mte.cat([a, b], 1)) + c.sum(1, keepdim=True)


class Padding(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular")
        self.c2 = nn.Conv2d(3, 3, 5, stride=2, padding=2, padding_mode="reflect")

    def forward(self, x):
        y = nn.ReflectionPad2d((1, 2, 0, 1))(x)
        y = nn.ReplicationPad2d(1)(self.c(y))
        return F.max_pool2d(self.c2(y), 3, stride=1, dilation=2)


class TensorOps(nn.Module):
    """Attention by hand and the less common activations and reductions."""
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(6, 6)

    def forward(self, x):
        y = self.l(x)                                           # (N, L, 6)
        att = mte.bmm(y, y.transpose(1, 2)).softmax(-1)
        v = y.var(-1, keepdim=True) + y.std(1, keepdim=True).mean() + y.amin(-1, keepdim=True)
        m, _ = y.max(dim=-1, keepdim=True)
        n, _ = y.min(dim=1, keepdim=True)
        r = y.flip(-1).roll(1, -1) + y.roll(2) + y.repeat(1, 1, 1) + mte.stack([y, -y]).sum(0)
        acts = (F.logsigmoid(y) + F.softplus(y, beta=2.0) + F.threshold(y, 0.2, -3.0) +
                F.mish(y) + F.celu(y, 0.7) + F.selu(y) + F.hardswish(y))
        z = mte.matmul(att, r) + v + m + n + y.mT.mT + acts
        return z.mean(1) + y.max() - y.min()


class GluByHand(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(12, 24)

    def forward(self, x):
        a, b = self.l(x).chunk(2, dim=-1)
        c = a * F.sigmoid(b)
        d = mte.matmul(c.unsqueeze(-1), c.unsqueeze(-2)).sum(-1)
        return F.log_softmax(d + mte.mv(d.mT.mT, c[0]).unsqueeze(-1), dim=-1)


CASES = {
    "residual": (Residual, lambda: randn(2, 6, 8, 8)),
    "decoder": (Decoder, lambda: randn(1, 3, 12, 12)),
    "interpolations": (Interpolations, lambda: randn(1, 3, 5, 6)),
    "lstm": (lambda: Recurrent(nn.LSTM), lambda: RNG.integers(0, 30, (2, 6))),
    "gru": (lambda: Recurrent(nn.GRU), lambda: RNG.integers(0, 30, (2, 5))),
    "conv1d": (Conv1dNet, lambda: randn(3, 3, 30)),
    "norms_pools": (NormsAndPools, lambda: randn(2, 4, 5, 5)),
    "padding": (Padding, lambda: randn(1, 2, 9, 9)),
    "tensor_ops": (TensorOps, lambda: randn(2, 3, 6)),
    "glu": (GluByHand, lambda: randn(3, 12)),
}


def _build(name):
    make, data = CASES[name]
    mte.manual_seed(0)
    model = make()
    model.eval()
    x = data()
    with mte.no_grad():
        y = model(mte.tensor(x)).numpy()
    return model, x, y


def _close(got, want, tol):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape
    err = np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want)))
    assert err <= tol, err


@pytest.mark.parametrize("name", sorted(CASES))
def test_trace_executor_and_c_runtime_match_eager(name, tmp_path):
    model, x, y = _build(name)
    g = graph.trace(model, x).optimize()
    _close(g.run(x), y, 1e-5)
    path = str(tmp_path / f"{name}.mte")
    g.save(path)
    with runtime.load(path, threads=1) as m:
        _close(m(x), y, 1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_onnx_export_runs_in_onnxruntime(name, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from minitorch_edge import onnx
    model, x, y = _build(name)
    path = str(tmp_path / f"{name}.onnx")
    onnx.export(model, mte.tensor(x), path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    _close(sess.run(None, {sess.get_inputs()[0].name: x})[0], y, 1e-5)


@pytest.mark.parametrize("name", ["residual", "decoder", "conv1d", "norms_pools", "padding",
                                  "tensor_ops"])
def test_int8_graph_runs_in_c_runtime_bit_exact(name, tmp_path):
    model, x, y = _build(name)
    calib = [x] + [randn(*x.shape) for _ in range(3)]
    q = quant.quantize(model, calib)
    yq = q.run(x)
    _close(yq, y, 0.3)                         # int8: near float; exactness is the C check
    path = str(tmp_path / f"{name}.int8.mte")
    q.save(path)
    with runtime.load(path, threads=1) as m:
        np.testing.assert_array_equal(m(x), yq)


def test_max_pool_indices_used_downstream_still_fail_clearly():
    class UsesIndices(nn.Module):
        def forward(self, x):
            y, idx = F.max_pool2d(x, 2, return_indices=True)
            return y + idx.float()
    with pytest.raises(TraceError, match="does not compute"):
        graph.trace(UsesIndices(), randn(1, 1, 4, 4))


def test_max_dim_indices_are_not_a_graph_value():
    class ArgOfMax(nn.Module):
        def forward(self, x):
            return x.max(dim=1)[1].float()
    with pytest.raises(TraceError, match="does not compute"):
        graph.trace(ArgOfMax(), randn(2, 3))


# ---- the C runtime's ConvTranspose against eager conv_transpose2d ------------------------------
def _deconv_graph(x, w, b, stride, padding, output_padding, groups, dilation):
    class Deconv(nn.Module):
        def forward(self, t):
            return F.conv_transpose2d(t, mte.tensor(w), None if b is None else mte.tensor(b),
                                      stride, padding, output_padding, groups, dilation)
    model = Deconv()
    with mte.no_grad():
        y = model(mte.tensor(x)).numpy()
    return graph.trace(model, x), y


@pytest.mark.parametrize("seed", range(12))
def test_c_runtime_conv_transpose_over_geometries(seed, tmp_path):
    rng = np.random.default_rng(seed)
    groups = int(rng.choice([1, 2]))
    cin, cout = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
    k = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    dilation = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = (int(rng.integers(0, k[0])), int(rng.integers(0, k[1])))
    opad = tuple(int(rng.integers(0, s)) for s in stride)
    x = rng.standard_normal((int(rng.integers(1, 3)), cin, int(rng.integers(1, 7)),
                             int(rng.integers(1, 7)))).astype(np.float32)
    w = rng.standard_normal((cin, cout // groups) + k).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if seed % 2 else None
    try:
        g, y = _deconv_graph(x, w, b, stride, padding, opad, groups, dilation)
    except RuntimeError:               # eager refuses the geometry (an empty output)
        return
    path = str(tmp_path / "deconv.mte")
    g.save(path)
    with runtime.load(path, threads=1) as m:
        _close(m(x), y, 1e-5)


def test_c_runtime_conv_transpose_refuses_output_padding_past_the_stride(tmp_path):
    """PyTorch allows output_padding < max(stride, dilation); the C runtime's col2im only
    output_padding < stride: it must refuse such a file with a message, the Python executor
    still runs it."""
    x = randn(1, 2, 3, 3)
    w = randn(2, 2, 3, 3)
    g, y = _deconv_graph(x, w, None, 2, 1, 2, 1, 3)
    _close(g.run(x), y, 1e-5)
    path = str(tmp_path / "opad.mte")
    g.save(path)
    with pytest.raises(Exception, match="output_padding"):
        runtime.load(path)
