"""bfloat16 compute against PyTorch 2.13: every op on bfloat16 keeps bfloat16.

PyTorch computes a bfloat16 op in float32 and rounds the result once; minitorch_edge does the
same (``dtypes.compute_array`` / ``result_array``). Each case runs the same function on both
libraries, on the same bfloat16 inputs, and compares the result dtype and the values within
about 1e-2 relative (bfloat16 keeps 8 bits of mantissa, so results rounded at different steps
may differ by a unit or two). Covered: unary ops and activations, binary ops with bfloat16,
float32, int and Python-number operands (PyTorch's promotion: bf16 + f32 -> f32, bf16 + int ->
bf16, bf16 + 2.5 -> bf16), reductions, layers (Linear, Conv2d, LayerNorm, BatchNorm2d,
attention, Embedding, Dropout), losses, backward through a small MLP with SGD and Adam steps, and
save/load of a bfloat16 state_dict (BF16 in the safetensors file).
"""
import numpy as np
import pytest
from harness import import_torch

import minitorch_edge as mte
from minitorch_edge.utils.serialization import ModelFormatError

torch = import_torch()
pytestmark = pytest.mark.skipif(not mte.dtypes.bf16_available(), reason="ml_dtypes missing")

RTOL, ATOL = 1e-2, 1e-2


def dname(d):
    return str(d).split(".")[-1]


def bf16(L, array, grad=False):
    t = L.tensor(array).bfloat16()
    return t.requires_grad_() if grad else t


def data(shape, seed=0, positive=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return np.abs(x) + 0.25 if positive else x


def values(t):
    """A result as float64 numpy (ints and bools as they are)."""
    if t.is_floating_point():
        return t.detach().double().numpy()
    return t.detach().numpy()


def check(ours, theirs, rtol=RTOL, atol=ATOL):
    """Same dtype, values within bfloat16 tolerance."""
    assert dname(ours.dtype) == dname(theirs.dtype), (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(values(ours), values(theirs), rtol=rtol, atol=atol)


def run_both(fn, *arrays, **kw):
    """fn(L, *bfloat16 tensors) on both libraries; checked, and returned."""
    ours = fn(mte, *[bf16(mte, a) for a in arrays])
    theirs = fn(torch, *[bf16(torch, a) for a in arrays])
    check(ours, theirs, **kw)
    return ours, theirs


# ---- unary ops and activations ------------------------------------------------------------------
UNARY = {
    "exp": (lambda L, x: x.exp(), False),
    "log": (lambda L, x: x.log(), True),
    "tanh": (lambda L, x: x.tanh(), False),
    "sigmoid": (lambda L, x: x.sigmoid(), False),
    "sqrt": (lambda L, x: x.sqrt(), True),
    "rsqrt": (lambda L, x: x.rsqrt(), True),
    "sin": (lambda L, x: x.sin(), False),
    "erf": (lambda L, x: L.erf(x), False),
    "reciprocal": (lambda L, x: x.reciprocal(), True),
    "neg_abs": (lambda L, x: (-x).abs(), False),
    "floor_round": (lambda L, x: (x * 3).floor() + (x * 3).round(), False),
    "clamp": (lambda L, x: x.clamp(-0.5, 0.5), False),
    "relu": (lambda L, x: L.nn.functional.relu(x), False),
    "gelu": (lambda L, x: L.nn.functional.gelu(x), False),
    "gelu_tanh": (lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), False),
    "silu": (lambda L, x: L.nn.functional.silu(x), False),
    "leaky_relu": (lambda L, x: L.nn.functional.leaky_relu(x, 0.1), False),
    "elu": (lambda L, x: L.nn.functional.elu(x), False),
    "softplus": (lambda L, x: L.nn.functional.softplus(x), False),
    "hardswish": (lambda L, x: L.nn.functional.hardswish(x), False),
    "softmax": (lambda L, x: x.softmax(-1), False),
    "softmax_dim0": (lambda L, x: L.softmax(x, 0), False),
    "log_softmax": (lambda L, x: x.log_softmax(-1), False),
    "nan_to_num": (lambda L, x: (x / 0).nan_to_num(), False),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_keeps_bfloat16(name):
    fn, positive = UNARY[name]
    ours, _ = run_both(fn, data((4, 6), positive=positive))
    assert ours.dtype == mte.bfloat16


# ---- binary ops: bfloat16 with bfloat16, float32, int and Python numbers ----------------------
def _f32(L, x):
    return x.float() * 0.5


BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b,
    "matmul": lambda L, a, b: a @ b.t(),
    "mm": lambda L, a, b: L.mm(a, b.t()),
    "bmm": lambda L, a, b: L.bmm(a[None], b.t()[None]),
    "einsum": lambda L, a, b: L.einsum("ij,kj->ik", a, b),
    "pow": lambda L, a, b: a.abs().pow(b),
    "maximum": lambda L, a, b: L.maximum(a, b),
    "atan2": lambda L, a, b: L.atan2(a, b),
    "lerp": lambda L, a, b: L.lerp(a, b, 0.3),
    "where": lambda L, a, b: L.where(a > 0, a, b),
    "add_f32": lambda L, a, b: a + _f32(L, b),                   # -> float32
    "matmul_f32": lambda L, a, b: a.float() @ b.t().float(),
    "mul_f32_0dim": lambda L, a, b: a * L.tensor(1.5),           # 0-dim: stays bf16
    "add_int_tensor": lambda L, a, b: a + L.arange(6),           # -> bf16
    "div_int_tensor": lambda L, a, b: a / L.arange(1, 7),
    "add_int": lambda L, a, b: a + 3,
    "rsub_int": lambda L, a, b: 3 - a,
    "mul_float": lambda L, a, b: a * 2.5,
    "rdiv_float": lambda L, a, b: 2.5 / (a.abs() + 1),
    "pow_float": lambda L, a, b: a.abs() ** 1.5,
    "rpow_float": lambda L, a, b: 1.5 ** a,
    "floordiv": lambda L, a, b: a // 0.3,
    "remainder": lambda L, a, b: a % 0.3,
    "compare": lambda L, a, b: a > b,
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_dtype_and_values_match_torch(name):
    run_both(BINARY[name], data((4, 6), 1), data((4, 6), 2))


def test_promotion_matches_torch():
    x = mte.ones(2, dtype=mte.bfloat16)
    assert (x + mte.ones(2)).dtype == mte.float32
    assert (x + mte.ones(2, dtype=mte.int64)).dtype == mte.bfloat16
    assert (x + 2.5).dtype == (x * 2).dtype == mte.bfloat16
    assert (x + mte.ones(2, dtype=mte.float16)).dtype == mte.float32
    assert x.is_floating_point() and x.requires_grad_().requires_grad


# ---- reductions -------------------------------------------------------------------------------
REDUCTIONS = {
    "sum": lambda L, x: x.sum(),
    "sum_dim": lambda L, x: x.sum(1),
    "mean": lambda L, x: x.mean(),
    "mean_dim": lambda L, x: x.mean(0, keepdim=True),
    "var": lambda L, x: x.var(),
    "std_dim": lambda L, x: x.std(1),
    "norm": lambda L, x: x.norm(),
    "norm_p1": lambda L, x: x.norm(1, dim=0),
    "max": lambda L, x: x.max(),
    "max_dim": lambda L, x: x.max(1).values,
    "argmax": lambda L, x: x.argmax(),
    "argmax_dim": lambda L, x: x.argmax(1),
    "logsumexp": lambda L, x: x.logsumexp(1),
    "prod": lambda L, x: (x[:, :3] + 2).prod(1),
    "cumsum": lambda L, x: x.cumsum(1),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_matches_torch(name):
    run_both(REDUCTIONS[name], data((5, 7), 3))


def test_long_sum_accumulates_in_float32():
    # 3000 ones: summed in bfloat16 step by step this would stop at 256
    run_both(lambda L, x: x.sum(), np.ones(3000, np.float32))


# ---- layers and losses ----------------------------------------------------------------------
def _twins(make):
    """The same layer in both libraries, torch's initial weights copied, then bfloat16."""
    theirs = make(torch)
    ours = make(mte)
    ours.load_state_dict({k: mte.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours.bfloat16(), theirs.bfloat16()


LAYERS = {
    "linear": (lambda L: L.nn.Linear(6, 4), (3, 6)),
    "linear_no_bias": (lambda L: L.nn.Linear(6, 4, bias=False), (2, 3, 6)),
    "conv2d": (lambda L: L.nn.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 6)),
    "conv2d_stride": (lambda L: L.nn.Conv2d(3, 2, 3, stride=2), (1, 3, 7, 7)),
    "layer_norm": (lambda L: L.nn.LayerNorm(6), (3, 6)),
    "max_pool": (lambda L: L.nn.MaxPool2d(2), (1, 2, 4, 4)),
    "avg_pool": (lambda L: L.nn.AvgPool2d(2), (1, 2, 4, 4)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_forward_and_backward_match_torch(name):
    make, shape = LAYERS[name]
    ours, theirs = _twins(make)
    x = data(shape, 4)
    xo, xt = bf16(mte, x, grad=True), bf16(torch, x, grad=True)
    yo, yt = ours(xo), theirs(xt)
    check(yo, yt)
    w = data(tuple(yt.shape), 5)
    (yo * bf16(mte, w)).sum().backward()
    (yt * bf16(torch, w)).sum().backward()
    check(xo.grad, xt.grad, rtol=3e-2, atol=3e-2)
    for (n, po), pt in zip(ours.named_parameters(), theirs.parameters()):
        check(po.grad, pt.grad, rtol=3e-2, atol=5e-2)


@pytest.mark.parametrize("train", [False, True])
def test_batch_norm_matches_torch(train):
    ours, theirs = _twins(lambda L: L.nn.BatchNorm2d(3))
    with torch.no_grad():
        theirs.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3]))
        theirs.running_var.copy_(torch.tensor([0.5, 1.5, 2.0]))
        theirs.weight.copy_(torch.tensor([1.0, 0.5, -2.0]))
    ours.load_state_dict({k: mte.tensor(v.float().numpy()).bfloat16()
                          for k, v in theirs.state_dict().items()})
    ours.train(train), theirs.train(train)
    x = data((4, 3, 3, 3), 6)
    xo, xt = bf16(mte, x, grad=True), bf16(torch, x, grad=True)
    yo, yt = ours(xo), theirs(xt)
    check(yo, yt, atol=2e-2)
    w = data((4, 3, 3, 3), 11)      # (not sum(y * y): in training its x-gradient is ~0)
    (yo * bf16(mte, w)).sum().backward()
    (yt * bf16(torch, w)).sum().backward()
    check(xo.grad, xt.grad, rtol=3e-2, atol=5e-2)
    check(ours.weight.grad, theirs.weight.grad, rtol=3e-2, atol=1e-1)
    check(ours.running_mean, theirs.running_mean)
    check(ours.running_var, theirs.running_var)


@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention_matches_torch(causal):
    arrays = [data((2, 2, 5, 4), s) for s in (12, 13, 14)]
    outs = []
    for L in (mte, torch):
        q, k, v = (bf16(L, a, grad=True) for a in arrays)
        y = L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        (y * bf16(L, data(tuple(y.shape), 15))).sum().backward()
        outs.append((y, q.grad, k.grad, v.grad))
    for o, t in zip(*outs):
        check(o, t, rtol=3e-2, atol=2e-2)


def test_multihead_self_attention_matches_torch():
    ours, theirs = _twins(lambda L: L.nn.MultiheadAttention(6, 2, batch_first=True))
    x = data((2, 5, 6), 16)
    xo, xt = bf16(mte, x, grad=True), bf16(torch, x, grad=True)
    yo, yt = ours(xo, xo, xo, need_weights=False)[0], theirs(xt, xt, xt, need_weights=False)[0]
    check(yo, yt, rtol=3e-2, atol=2e-2)
    yo.sum().backward()
    yt.sum().backward()
    check(xo.grad, xt.grad, rtol=3e-2, atol=3e-2)


def test_embedding_matches_torch():
    ours, theirs = _twins(lambda L: L.nn.Embedding(10, 4))
    idx = np.array([[1, 2, 2], [9, 0, 1]])
    yo, yt = ours(mte.tensor(idx)), theirs(torch.tensor(idx))
    check(yo, yt)
    yo.sum().backward()
    yt.sum().backward()
    check(ours.weight.grad, theirs.weight.grad)


def test_dropout_keeps_bfloat16():
    x = data((50, 40), 7)
    check(mte.nn.functional.dropout(bf16(mte, x), 0.0),
          torch.nn.functional.dropout(bf16(torch, x), 0.0))
    mte.manual_seed(0)
    xo = bf16(mte, x, grad=True)
    y = mte.nn.functional.dropout(xo, 0.5)
    assert y.dtype == mte.bfloat16 and y.requires_grad
    got, x_in = values(y), values(xo)
    kept = got != 0
    np.testing.assert_array_equal(got[kept], 2 * x_in[kept])
    assert 0.4 < kept.mean() < 0.6
    y.sum().backward()
    assert xo.grad.dtype == mte.bfloat16
    assert set(np.unique(xo.grad.float().numpy())) <= {0.0, 2.0}
    layer = mte.nn.Dropout(0.5).eval()
    assert layer(bf16(mte, x)).dtype == mte.bfloat16


LOSSES = {
    "cross_entropy": lambda L, x, t: L.nn.functional.cross_entropy(x, t),
    "cross_entropy_sum": lambda L, x, t: L.nn.functional.cross_entropy(x, t, reduction="sum"),
    "cross_entropy_smooth": lambda L, x, t: L.nn.functional.cross_entropy(
        x, t, label_smoothing=0.1, reduction="none"),
    "cross_entropy_probs": lambda L, x, t: L.nn.functional.cross_entropy(x, x.detach().softmax(1)),
    "nll_loss": lambda L, x, t: L.nn.functional.nll_loss(x.log_softmax(1), t),
    "mse_loss": lambda L, x, t: L.nn.functional.mse_loss(x, x.detach() * 0.5 + 0.1),
    "l1_loss": lambda L, x, t: L.nn.functional.l1_loss(x, x.detach() * 0.5 + 0.1),
    "bce": lambda L, x, t: L.nn.functional.binary_cross_entropy(x.sigmoid(),
                                                                (x.detach() > 0).to(x.dtype)),
    "bce_logits": lambda L, x, t: L.nn.functional.binary_cross_entropy_with_logits(
        x, (x.detach() > 0).to(x.dtype)),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_and_its_gradient_match_torch(name):
    x = data((6, 5), 8)
    t = np.array([0, 4, 2, 1, 3, 0])
    xo, xt = bf16(mte, x, grad=True), bf16(torch, x, grad=True)
    lo, lt = LOSSES[name](mte, xo, mte.tensor(t)), LOSSES[name](torch, xt, torch.tensor(t))
    check(lo, lt)
    lo.sum().backward()
    lt.sum().backward()
    check(xo.grad, xt.grad, rtol=3e-2, atol=1e-2)


def test_cross_entropy_mean_over_many_rows():
    # the 'mean' divisor (3000 rows) is counted in float32: summed in bfloat16 it stops at 256
    x, t = data((3000, 3), 9), np.random.default_rng(9).integers(0, 3, 3000)
    check(mte.nn.functional.cross_entropy(bf16(mte, x), mte.tensor(t)),
          torch.nn.functional.cross_entropy(bf16(torch, x), torch.tensor(t)))


# ---- autograd and training in bfloat16 --------------------------------------------------------
def test_grad_fn_and_grads_are_bfloat16():
    x = bf16(mte, data((3, 4)), grad=True)
    y = (x.exp() * 2 + x.tanh()).sum()
    assert y.dtype == mte.bfloat16 and y.requires_grad
    assert y.grad_fn.name() == torch.ones(1, requires_grad=True).sum().grad_fn.name()
    y.backward()
    assert x.grad.dtype == mte.bfloat16
    assert (x.clone().exp_()).dtype == mte.bfloat16


def _mlp(L):
    return L.nn.Sequential(L.nn.Linear(5, 8), L.nn.GELU(), L.nn.Linear(8, 8), L.nn.ReLU(),
                           L.nn.Linear(8, 3))


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_mlp_training_steps_match_torch(opt):
    ours, theirs = _twins(_mlp)
    make = {"sgd": lambda L, p: L.optim.SGD(p, lr=0.1, momentum=0.9),
            "adam": lambda L, p: L.optim.Adam(p, lr=1e-2)}[opt]
    oo, ot = make(mte, ours.parameters()), make(torch, theirs.parameters())
    x, t = data((16, 5), 10), np.random.default_rng(10).integers(0, 3, 16)
    for step in range(3):
        for model, opt_, L in ((ours, oo, mte), (theirs, ot, torch)):
            opt_.zero_grad()
            loss = L.nn.functional.cross_entropy(model(bf16(L, x)), L.tensor(t))
            loss.backward()
            if L is mte:
                ours_loss = loss
            else:
                check(ours_loss, loss, rtol=3e-2)
            opt_.step()
        for po, pt in zip(ours.parameters(), theirs.parameters()):
            assert po.dtype == mte.bfloat16 and po.grad.dtype == mte.bfloat16
            check(po.grad, pt.grad, rtol=5e-2, atol=2e-2)
            check(po, pt, rtol=2e-2, atol=2e-2)


# ---- save / load ------------------------------------------------------------------------------
def _bf16_state():
    model = mte.nn.Linear(4, 3).bfloat16()
    return {**model.state_dict(), "p": mte.tensor([1.5, -2.25, 3.0e5]).bfloat16()
            .requires_grad_()}


def test_save_load_round_trip_is_exact(tmp_path):
    sd = _bf16_state()
    mte.save(sd, tmp_path / "m.safetensors")
    back = mte.load(tmp_path / "m.safetensors")
    assert list(back) == list(sd)
    for k, v in sd.items():
        assert back[k].dtype == mte.bfloat16 and back[k].requires_grad == v.requires_grad
        np.testing.assert_array_equal(back[k]._data.view(np.uint16), v._data.view(np.uint16))


def test_safetensors_reads_our_bf16_file(tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    sd = _bf16_state()
    mte.save(sd, tmp_path / "m.safetensors")
    theirs = st_torch.load_file(str(tmp_path / "m.safetensors"))
    assert sorted(theirs) == sorted(sd)
    for k, v in sd.items():
        assert theirs[k].dtype == torch.bfloat16
        assert theirs[k].float().tolist() == v.float().tolist()


def test_loading_bf16_without_ml_dtypes_names_the_extra(tmp_path, monkeypatch):
    mte.save({"w": mte.ones(2, dtype=mte.bfloat16)}, tmp_path / "m.safetensors")
    monkeypatch.setattr(mte.bfloat16, "_np", None)
    with pytest.raises(ModelFormatError, match=r'pip install "minitorch-edge\[bf16\]"'):
        mte.load(tmp_path / "m.safetensors")
