"""Fused layer pairs (nn/functional/fused.py): nn.Sequential's Linear + ReLU/ReLU6/GELU and
Conv2d + ReLU/ReLU6, and the Transformer's feed-forward block.

Checks, on both backends (numpy and native): fused equals unfused (``fused.enabled = False``)
in forward and backward over generated shapes; float64 gradcheck and gradgradcheck of the fused
Functions; Sequential(Linear, ReLU) against PyTorch's, forward and backward; what must not
fuse (hooks, subclasses, a recorded GELU or conv, the switch off); eval-mode conv fusion over
generated geometries; the zoo's models give the same outputs and gradients with and without
fusion, and MLP / SmallCNN / Transformer actually take the fused path.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge import backend, models, nn
from minitorch_edge.autograd import gradcheck, gradgradcheck
from minitorch_edge.nn.functional import fused
from harness import import_torch

torch = import_torch()

_BACKENDS = ["numpy"]
try:
    from minitorch_edge import _C  # noqa: F401
    _BACKENDS.append("native")
except ImportError:
    pass


@pytest.fixture(params=_BACKENDS, autouse=True)
def which_backend(request):
    """Every test runs on each backend; the active one and the switch are restored after."""
    prev = backend.active()
    backend.use(request.param)
    yield request.param
    backend.use(prev)
    fused.enabled = True


def _both(fn):
    """fn() with fusion on, then off."""
    fused.enabled = True
    on = fn()
    fused.enabled = False
    try:
        off = fn()
    finally:
        fused.enabled = True
    return on, off


def _node_names(t):
    """grad_fn names of the graph under t."""
    names, stack, seen = [], [t.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen or not hasattr(n, "next_functions"):
            continue
        seen.add(id(n))
        names.append(n.name())
        stack.extend(f for f, _ in n.next_functions)
    return names


def _close(a, b, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


ACT = {"relu": lambda: nn.ReLU(), "relu_inplace": lambda: nn.ReLU(inplace=True),
       "relu6": lambda: nn.ReLU6(), "relu6_inplace": lambda: nn.ReLU6(inplace=True),
       "gelu": lambda: nn.GELU(), "gelu_tanh": lambda: nn.GELU(approximate="tanh")}
SIZES = st.sampled_from([0, 1, 3, 7, 16, 33])


# ---- Linear + activation ------------------------------------------------------------------------
@given(lead=st.lists(st.sampled_from([1, 2, 5]), min_size=1, max_size=2), n_in=SIZES,
       n_out=SIZES, bias=st.booleans(), act=st.sampled_from(sorted(ACT)),
       grad_mode=st.booleans(), seed=st.integers(0, 2**16))
def test_linear_act_fused_equals_unfused(lead, n_in, n_out, bias, act, grad_mode, seed):
    mte.manual_seed(seed)
    model = nn.Sequential(nn.Linear(n_in, n_out, bias=bias), ACT[act]())
    rng = np.random.default_rng(seed)
    scale = 4.0 if "relu6" in act else 1.0      # reach both of relu6's kinks
    xa = (scale * rng.standard_normal(tuple(lead) + (n_in,))).astype(np.float32)
    ga = rng.standard_normal(tuple(lead) + (n_out,)).astype(np.float32)

    def run():
        model.zero_grad()
        x = mte.tensor(xa, requires_grad=True)
        if not grad_mode:
            with mte.no_grad():
                return model(x).numpy(), None
        y = model(x)
        y.backward(mte.tensor(ga))
        grads = [x.grad.numpy()] + [p.grad.numpy() for p in model.parameters()]
        return y.detach().numpy(), grads
    (y1, g1), (y0, g0) = _both(run)
    tol = 1e-5 if act.startswith("gelu") else 1e-6   # libmte's GELU vs ops' float32 gelu
    _close(y1, y0, rtol=tol, atol=tol)
    for a, b in zip(g1 or (), g0 or ()):
        _close(a, b)


@given(lead=st.lists(st.sampled_from([1, 2, 3]), min_size=0, max_size=2),
       n_in=st.sampled_from([0, 1, 2, 5]), n_out=st.sampled_from([0, 1, 3, 4]),
       act=st.sampled_from(["relu", "relu6"]), bias=st.booleans(),
       needs=st.sampled_from([(1, 1, 1), (0, 1, 1), (1, 0, 0), (0, 0, 1)]),
       seed=st.integers(0, 2**16))
def test_gradcheck_and_gradgradcheck_float64(lead, n_in, n_out, act, bias, needs, seed):
    rng = np.random.default_rng(seed)

    def t(shape, rg):
        a = 3 * rng.standard_normal(shape) + (3 if act == "relu6" else 0)
        return mte.tensor(a, dtype=mte.float64, requires_grad=bool(rg))
    x, w, b = t(tuple(lead) + (n_in,), needs[0]), t((n_out, n_in), needs[1]), t((n_out,),
                                                                                 needs[2])
    if not bias and not (x.requires_grad or w.requires_grad):
        w.requires_grad_(True)
    inputs = (x, w, b) if bias else (x, w)

    def fn(*args):
        return fused.linear_act(*args, act=act)
    assert fn(*inputs).grad_fn.name() == {"relu": "LinearReluBackward0",
                                          "relu6": "LinearRelu6Backward0"}[act]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_sequential_linear_relu_matches_torch():
    rng = np.random.default_rng(0)
    ours = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 17), nn.ReLU6())
    theirs = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(),
                                 torch.nn.Linear(32, 17), torch.nn.ReLU6())
    ours.load_state_dict({k: mte.tensor(v.detach().numpy().copy())
                          for k, v in theirs.state_dict().items()})
    xa = (3 * rng.standard_normal((9, 20))).astype(np.float32)
    x, tx = mte.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    y, ty = ours(x), theirs(tx)
    assert "LinearReluBackward0" in _node_names(y) and "LinearRelu6Backward0" in _node_names(y)
    _close(y.detach().numpy(), ty.detach().numpy(), 1e-5, 1e-5)
    g = rng.standard_normal((9, 17)).astype(np.float32)
    y.backward(mte.tensor(g))
    ty.backward(torch.tensor(g))
    _close(x.grad.numpy(), tx.grad.numpy(), 1e-4, 1e-5)
    for (k, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        _close(p.grad.numpy(), tp.grad.numpy(), 1e-4, 1e-5)


def test_double_backward_through_sequential_matches_torch():
    rng = np.random.default_rng(1)
    ours = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1))
    ours.load_state_dict({k: mte.tensor(v.detach().numpy().copy())
                          for k, v in theirs.state_dict().items()})
    xa = rng.standard_normal((5, 4)).astype(np.float32)
    x, tx = mte.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    (gx,) = mte.autograd.grad(ours(x).sum(), x, create_graph=True)
    (tgx,) = torch.autograd.grad(theirs(tx).sum(), tx, create_graph=True)
    (gx * gx).sum().backward()      # a gradient penalty: reaches the weights through dx = dz W
    (tgx * tgx).sum().backward()
    for p, tp in zip(ours.parameters(), theirs.parameters()):   # (the biases get none or 0)
        ref = np.zeros(tp.shape, np.float32) if tp.grad is None else tp.grad.numpy()
        _close(np.zeros(p.shape, np.float32) if p.grad is None else p.grad.numpy(), ref,
               1e-4, 1e-5)
    assert np.abs(ours[0].weight.grad.numpy()).sum() > 0


def test_gelu_is_fused_only_without_a_graph_on_native_float32(monkeypatch, which_backend):
    acts, real = [], backend.linear

    def spy(*args, **kwargs):
        acts.append(kwargs.get("act"))
        return real(*args, **kwargs)
    monkeypatch.setattr(backend, "linear", spy)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU())
    x = mte.randn(3, 8)
    y = model(x)                                    # recorded: the weights require grad
    assert acts == [None] and y.grad_fn is not None
    with mte.no_grad():
        model(x)
        model.double()(x.double())                  # float64: the numpy twin's GELU; unfused
    assert acts[1:] == (["gelu", None] if which_backend == "native" else [None, None])


def test_masked_grad_of_saved_output_survives_in_place_change():
    """The fused node keeps its mask, not its output: an in-place op on the output (as the
    unfused ReLU allows) leaves the gradient intact."""
    lin = nn.Linear(5, 16)
    x = mte.randn(4, 5, requires_grad=True)
    y = nn.Sequential(lin, nn.ReLU())(x)
    ref = fused.linear_act(x, lin.weight, lin.bias, "relu")
    (g_ref,) = mte.autograd.grad(ref.sum(), x)
    y.mul_(2.0)
    (g,) = mte.autograd.grad(y.sum(), x)
    _close(g.numpy(), 2 * g_ref.numpy())


@pytest.mark.parametrize("act", ["relu", "relu6"])
def test_nan_pre_activation_stays_nan(act):
    """relu(nan) = nan (numpy, PyTorch, the unfused layers): a NaN must reach the loss through
    a fused pair as it does through the unfused one (the Trainer's NaN detection relies on it),
    in the GEMM epilogue, the conv epilogue and the depthwise kernel alike."""
    lin = nn.Linear(4, 16)
    with mte.no_grad():
        lin.weight[3, 0] = float("nan")
    y = nn.Sequential(lin, ACT[act]())(mte.randn(2, 4))
    assert np.isnan(y.detach().numpy()[:, 3]).all()
    x = mte.randn(1, 8, 6, 6)
    x[0, 2, 3, 3] = float("nan")
    for conv in (nn.Conv2d(8, 16, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1, groups=8)):
        with mte.no_grad():
            y = nn.Sequential(conv, ACT[act]())(x).numpy()
        assert np.isnan(y).any()


# ---- what must not fuse -------------------------------------------------------------------------
def test_hooks_subclasses_and_the_switch_disable_fusion():
    x = mte.randn(3, 4, requires_grad=True)

    def fused_names(model):
        return "LinearReluBackward0" in _node_names(model(x))
    assert fused_names(nn.Sequential(nn.Linear(4, 5), nn.ReLU()))
    seen = []
    lin = nn.Linear(4, 5)
    lin.register_forward_hook(lambda m, args, out: seen.append(out))
    model = nn.Sequential(lin, nn.ReLU())
    y = model(x)
    assert not fused_names(model) and len(seen) == 2
    assert (seen[0].detach().numpy() < 0).any()           # the hook saw the pre-activation
    _close(y.detach().numpy(), np.maximum(seen[0].detach().numpy(), 0))
    act = nn.ReLU()
    handle = act.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    model = nn.Sequential(nn.Linear(4, 5), act)
    assert not fused_names(model) and not model(x).detach().numpy().any()
    handle.remove()
    assert fused_names(model)

    class MyReLU(nn.ReLU):
        def forward(self, input):
            return super().forward(input) + 1
    model = nn.Sequential(nn.Linear(4, 5), MyReLU())
    assert not fused_names(model) and model(x).detach().numpy().min() >= 1

    class MyLinear(nn.Linear):
        pass
    assert not fused_names(nn.Sequential(MyLinear(4, 5), nn.ReLU()))
    fused.enabled = False
    assert not fused_names(nn.Sequential(nn.Linear(4, 5), nn.ReLU()))


def test_mte_fuse_environment_variable():
    code = "import minitorch_edge.nn.functional.fused as f; print(f.enabled)"
    env = dict(os.environ, MTE_FUSE="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_unfusable_inputs_keep_the_layers_errors():
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU())
    with pytest.raises(RuntimeError, match="Linear: expected input with last dimension 4"):
        model(mte.randn(3, 6))
    conv = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    with mte.no_grad(), pytest.raises(RuntimeError, match="channels"):
        conv(mte.randn(1, 2, 5, 5))
    with mte.no_grad(), pytest.raises(RuntimeError, match="larger than the padded input"):
        conv(mte.randn(1, 3, 2, 2))


# ---- Conv2d + activation (nothing recorded) -----------------------------------------------------
@pytest.fixture
def conv_acts(monkeypatch):
    """The act= of every backend.conv2d call."""
    calls, real = [], backend.conv2d

    def spy(*args, **kwargs):
        calls.append(kwargs.get("act"))
        return real(*args, **kwargs)
    monkeypatch.setattr(backend, "conv2d", spy)
    return calls


@given(n=st.sampled_from([1, 3]), c=st.sampled_from([1, 4, 8]), o=st.sampled_from([4, 8, 16]),
       size=st.sampled_from([5, 9, 14]), k=st.sampled_from([1, 2, 3, 5]),
       stride=st.sampled_from([1, 2]), padding=st.sampled_from([0, 1, "same", "valid"]),
       dilation=st.sampled_from([1, 2]), groups=st.sampled_from([1, 4]), bias=st.booleans(),
       act=st.sampled_from(["relu", "relu_inplace", "relu6"]), seed=st.integers(0, 2**16))
def test_conv_act_eval_fused_equals_unfused(n, c, o, size, k, stride, padding, dilation, groups,
                                            bias, act, seed):
    if c % groups or o % groups or (padding == "same" and stride != 1):
        groups, stride = 1, 1 if padding == "same" else stride
    if dilation * (k - 1) + 1 > size:
        dilation = 1
    mte.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(c, o, k, stride, padding, dilation, groups, bias),
                          ACT[act]()).eval()
    scale = 8.0 if act == "relu6" else 1.0
    xa = (scale * np.random.default_rng(seed).standard_normal((n, c, size, size))).astype(
        np.float32)
    with mte.no_grad():
        y1, y0 = _both(lambda: model(mte.tensor(xa)).numpy())
    _close(y1, y0, 1e-5, 1e-5)


def test_depthwise_conv_relu6_eval_fused_equals_unfused(conv_acts):
    model = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1, groups=8), nn.ReLU6(inplace=True)).eval()
    x = mte.tensor(4 * np.random.default_rng(2).standard_normal((2, 8, 9, 9)).astype(np.float32))
    with mte.no_grad():
        y1, y0 = _both(lambda: model(x).numpy())
    assert conv_acts == ["relu6", None]
    _close(y1, y0, 1e-5, 1e-5)


def test_conv_act_fuses_only_when_nothing_is_recorded(conv_acts):
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
    x = mte.randn(2, 3, 7, 7)
    with mte.no_grad():
        ref = model(x).numpy()
    assert conv_acts == ["relu"]
    y = model(x)                                    # training: weights require grad
    assert conv_acts[1:] == [None] and y.grad_fn is not None
    _close(y.detach().numpy(), ref, 1e-5, 1e-5)
    y.sum().backward()
    assert model[0].weight.grad is not None
    for p in model.parameters():                    # frozen weights, input without grad
        p.requires_grad_(False)
    model(x)
    assert conv_acts[2:] == ["relu"]
    model(mte.randn(2, 3, 7, 7, requires_grad=True))
    assert conv_acts[3:] == [None]
    nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect"), nn.ReLU())(x)
    assert conv_acts[4:] == [None]
    with mte.no_grad():                             # GELU after a conv is not fused
        nn.Sequential(nn.Conv2d(3, 8, 3), nn.GELU())(x)
    assert conv_acts[5:] == [None]


# ---- the zoo ------------------------------------------------------------------------------------
def _grads(model, loss_fn):
    model.zero_grad()
    out = loss_fn()
    out.backward()
    return out.detach().numpy(), [p.grad.numpy().copy() for p in model.parameters()
                                  if p.grad is not None]


def test_mlp_fused_train_step_equals_unfused():
    mte.manual_seed(0)
    model = models.MLP(30, (32, 16), 5)
    rng = np.random.default_rng(0)
    x = mte.tensor(rng.standard_normal((8, 30)).astype(np.float32))
    target = mte.tensor(rng.integers(0, 5, 8))
    assert "LinearReluBackward0" in _node_names(model(x))

    def loss():
        return nn.functional.cross_entropy(model(x), target)
    (l1, g1), (l0, g0) = _both(lambda: _grads(model, loss))
    _close(l1, l0)
    for a, b in zip(g1, g0):
        _close(a, b)


def test_small_cnn_eval_fused_equals_unfused(conv_acts):
    mte.manual_seed(0)
    model = models.SmallCNN(1, 10, 28).eval()
    x = mte.tensor(np.random.default_rng(0).standard_normal((2, 1, 28, 28)).astype(np.float32))
    with mte.no_grad():
        y1, y0 = _both(lambda: model(x).numpy())
    assert conv_acts == ["relu", "relu", None, None]
    _close(y1, y0, 1e-5, 1e-5)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_feed_forward_fused_equals_unfused(activation):
    mte.manual_seed(0)
    model = models.TransformerClassifier(50, 3, d_model=16, nhead=2, num_layers=1,
                                         dim_feedforward=32, max_len=8, dropout=0.0,
                                         activation=activation)
    tokens = mte.tensor(np.random.default_rng(0).integers(0, 50, (2, 8)))
    names = _node_names(model(tokens))
    assert ("LinearReluBackward0" in names) == (activation == "relu")
    (l1, g1), (l0, g0) = _both(lambda: _grads(model, lambda: model(tokens).square().sum()))
    _close(l1, l0, 1e-5, 1e-5)
    for a, b in zip(g1, g0):
        _close(a, b, 1e-5, 1e-5)
    model.eval()
    with mte.no_grad():
        y1, y0 = _both(lambda: model(tokens).numpy())
    _close(y1, y0, 1e-5, 1e-5)
