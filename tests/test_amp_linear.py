"""AutocastLinear (nn/functional/autocast_linear.py): linear, and Linear + ReLU / ReLU6 pairs,
under autocast as one op with the casts inside it. Against torch.autocast on the CPU over
generated shapes: the output dtype and values (bf16 / fp16 rounding), the gradients of input,
weight and bias (their dtypes, values within the format's tolerance), gradients of gradients
(create_graph); the cast cache across ops; the cases it leaves to linear's usual path; the
numpy backend (the twins) giving the same results as the native one."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import import_torch

import minitorch_edge as mte
import minitorch_edge.nn.functional as mF
from minitorch_edge import backend
from minitorch_edge.nn.functional.fused import linear_act

torch = import_torch()

ACTS = {None: (lambda L, y: y), "relu": (lambda L, y: L.nn.functional.relu(y)),
        "relu6": (lambda L, y: L.nn.functional.relu6(y))}


def _inputs(L, rng_seed, lead, n_in, n_out, bias, x_dtype):
    rng = np.random.default_rng(rng_seed)
    x = L.tensor(rng.standard_normal(lead + (n_in,)).astype(np.float32) * 2)
    x = x.to(getattr(L, x_dtype)).requires_grad_()
    w = L.tensor(rng.standard_normal((n_out, n_in)).astype(np.float32) / np.sqrt(n_in))
    w.requires_grad_()
    b = L.tensor(rng.standard_normal(n_out).astype(np.float32)).requires_grad_() if bias else None
    return x, w, b


def _module_run(L, x, w, b, act, dtype):
    """The pair as modules (nn.Sequential fuses Linear -> ReLU / ReLU6), forward + backward."""
    lin = L.nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    with L.no_grad():
        lin.weight.copy_(w)
        if b is not None:
            lin.bias.copy_(b)
    layers = [lin] + ([] if act is None else [L.nn.ReLU() if act == "relu" else L.nn.ReLU6()])
    model = L.nn.Sequential(*layers)
    with L.autocast("cpu", dtype=getattr(L, dtype)):
        y = model(x)
        loss = (y.float() * L.linspace(-1, 1, y.numel()).reshape(y.shape)).sum()
    loss.backward()
    return y, x.grad, lin.weight.grad, None if b is None else lin.bias.grad


def _tol(dtype):
    return 3e-2 if dtype == "bfloat16" else 5e-3


def _close(ours, theirs, tol, what):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (what, ours.dtype,
                                                                              theirs.dtype)
    a = ours.detach().float().numpy().astype(np.float64)
    b = theirs.detach().float().numpy().astype(np.float64)
    scale = max(1.0, float(np.abs(b).max()))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, err_msg=what)


@settings(max_examples=25, deadline=None)
@given(lead=st.sampled_from([(1,), (5,), (33,), (2, 7)]), n_in=st.integers(1, 70),
       n_out=st.integers(1, 40), bias=st.booleans(), act=st.sampled_from(sorted(ACTS, key=str)),
       dtype=st.sampled_from(["bfloat16", "float16"]),
       x_dtype=st.sampled_from(["float32", "bfloat16"]), seed=st.integers(0, 2 ** 16))
def test_pair_matches_torch_autocast_forward_and_backward(lead, n_in, n_out, bias, act, dtype,
                                                          x_dtype, seed):
    results = []
    for L in (torch, mte):
        L.manual_seed(0)
        results.append(_module_run(L, *_inputs(L, seed, lead, n_in, n_out, bias, x_dtype), act,
                                   dtype))
    (ty, tdx, tdw, tdb), (oy, odx, odw, odb) = results
    tol = _tol(dtype)
    _close(oy, ty, tol, "output")
    _close(odx, tdx, tol, "dx")
    _close(odw, tdw, tol, "dW")
    assert odw.dtype == mte.float32
    if bias:
        _close(odb, tdb, tol, "db")
        assert odb.dtype == mte.float32


def test_functional_linear_under_autocast_is_one_node_with_torch_values():
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3, 6), (5, 6), (5,))]
    out = []
    for L in (torch, mte):
        x, w, b = (L.tensor(a).requires_grad_() for a in arrays)
        with L.autocast("cpu"):
            y = L.nn.functional.linear(x, w, b)
        y.float().pow(2).sum().backward()
        out.append((y, x.grad, w.grad, b.grad))
        if L is mte:
            assert y.grad_fn.name() == "AutocastLinearBackward0"
    for ours, theirs, what in zip(out[1], out[0], ("y", "dx", "dw", "db")):
        _close(ours, theirs, 3e-2, what)


def test_gradients_of_gradients_match_torch():
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (4, 5), (4,))]
    out = []
    for L in (torch, mte):
        x, w, b = (L.tensor(a).requires_grad_() for a in arrays)
        with L.autocast("cpu"):
            y = L.nn.functional.relu(L.nn.functional.linear(x, w, b)) if L is torch else \
                linear_act(x, w, b, act="relu")
            loss = y.float().pow(2).sum()
        gx, = L.autograd.grad(loss, x, create_graph=True)
        gx.float().pow(2).sum().backward()
        out.append((gx, w.grad, b.grad))
    for ours, theirs, what in zip(out[1], out[0], ("dx", "d(dx^2)/dw", "d(dx^2)/db")):
        _close(ours, theirs, 5e-2, what)


def test_cases_it_does_not_cover_take_linears_usual_path():
    x, w1 = mte.randn(3, 4), mte.randn(4, requires_grad=True)
    with mte.autocast("cpu"):
        y = mF.linear(x, w1)                       # 1-D weight: matmul after the casts
        assert y.dtype == mte.bfloat16 and y.grad_fn.name() != "AutocastLinearBackward0"
        z = mF.linear(x.double(), mte.randn(2, 4).double())   # float64 is never cast
        assert z.dtype == mte.float64
        with pytest.raises(RuntimeError, match="linear: expected input with last dimension 5"):
            mF.linear(x, mte.randn(2, 5))


def test_numpy_backend_gives_the_native_results():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((9, 20), (12, 20), (12,))]
    results = []
    for name in ("numpy", "auto"):
        backend.use(name)
        try:
            x, w, b = (mte.tensor(a).requires_grad_() for a in arrays)
            with mte.autocast("cpu"):
                y = linear_act(x, w, b, act="relu6")
            (y.float() * 3).sum().backward()
            results.append([t.detach().float().numpy() for t in (y, x.grad, w.grad, b.grad)])
        finally:
            backend.use("auto")
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("act", ["relu", "relu6", None])
def test_traced_under_autocast_the_graph_computes_the_eager_result(act):
    from minitorch_edge import graph, nn
    mte.manual_seed(0)
    layers = [nn.Linear(8, 16)] + ({"relu": [nn.ReLU()], "relu6": [nn.ReLU6()]}.get(act, []))
    model = nn.Sequential(*layers, nn.Linear(16, 3)).eval()
    x = mte.randn(2, 4, 8) * 3
    with mte.autocast("cpu"):
        eager = model(x)
        g = graph.trace(model, x)
    assert "Gemm" in [n.op for n in g.nodes]
    got = g.run(x)                 # (the graph runner returns float32, as before this op)
    assert eager.dtype == mte.bfloat16
    np.testing.assert_allclose(got.detach().float().numpy(), eager.detach().float().numpy(),
                               rtol=3e-2, atol=3e-2)
