"""Losses against PyTorch: every functional loss (forward and the gradients of its inputs) over
hypothesis-drawn batch sizes, class counts, spatial dims and option combinations; gradcheck in
float64; +-1e4 logits; the loss layers through the layer harness (weights copied from torch);
error messages; state_dict keys and reprs."""
import dataclasses
from typing import Callable, Optional

import numpy as np
import pytest
from hypothesis import given, strategies as st

import minitorch_edge as mte
from minitorch_edge import nn
from minitorch_edge.autograd import gradcheck, gradgradcheck
from harness import import_torch
from layer_harness import LayerRow, make_layer_tests

torch = import_torch()
F = nn.functional

pytestmark = [pytest.mark.filterwarnings("ignore:reduction. 'mean' divides"),
              pytest.mark.filterwarnings("ignore:.*Using a target size"),
              pytest.mark.filterwarnings("ignore:.*using a target size")]

REDUCTIONS = st.sampled_from(["none", "mean", "sum"])


# ---- the table: name, our/torch call, input generator ----------------------------------------
@dataclasses.dataclass
class LossRow:
    name: str
    draw: Callable            # draw(data, rng, dtype) -> (arrays, kwargs, diff input indices)
    fn: Callable              # fn(F, *tensors, **kwargs) with F = our or torch's nn.functional
    rtol: Optional[float] = None
    atol: Optional[float] = None
    max_gradcheck_numel: int = 120


def _lib_tensor(lib, a, grad=False):
    a = np.array(a)
    t = torch.from_numpy(a) if lib is torch else mte.from_numpy(a)
    return t.requires_grad_() if grad else t


def _inputs(lib, arrays, kwargs, diff):
    ins = [_lib_tensor(lib, a, i in diff) for i, a in enumerate(arrays)]
    kw = {k: _lib_tensor(lib, v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    return ins, kw


def _np(t):
    return np.array(t.detach().numpy())


def check_row_against_torch(row, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    arrays, kwargs, diff = row.draw(data, rng, np.float32)
    o_in, o_kw = _inputs(mte, arrays, kwargs, diff)
    t_in, t_kw = _inputs(torch, arrays, kwargs, diff)
    ours = row.fn(F, *o_in, **o_kw)
    theirs = row.fn(torch.nn.functional, *t_in, **t_kw)
    assert tuple(ours.shape) == tuple(theirs.shape), f"{row.name}: shape {tuple(ours.shape)} " \
                                                     f"vs torch {tuple(theirs.shape)}"
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    kw = {} if row.rtol is None else dict(rtol=row.rtol, atol=row.atol)
    torch.testing.assert_close(torch.from_numpy(_np(ours)), theirs.detach(), equal_nan=True,
                               **kw, msg=lambda m: f"{row.name} forward ({kwargs}): {m}")
    if not diff or not theirs.requires_grad:
        return
    up = rng.standard_normal(tuple(theirs.shape)).astype(np.float32)
    t_grads = torch.autograd.grad((theirs * torch.from_numpy(up)).sum(), [t_in[i] for i in diff],
                                  allow_unused=True)
    o_grads = mte.autograd.grad((ours * mte.from_numpy(up)).sum(), [o_in[i] for i in diff],
                                allow_unused=True)
    for i, og, tg in zip(diff, o_grads, t_grads):
        if tg is None:
            assert og is None or not og.numpy().any(), f"{row.name}: grad {i} should be None"
            continue
        assert og is not None, f"{row.name}: no gradient for input {i}"
        torch.testing.assert_close(torch.from_numpy(_np(og)), tg, equal_nan=True, **kw,
                                   msg=lambda m: f"{row.name} grad of input {i} ({kwargs}): {m}")


def check_row_gradcheck(row, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    arrays, kwargs, diff = row.draw(data, rng, np.float64)
    if sum(arrays[i].size for i in diff) > row.max_gradcheck_numel or not diff:
        return
    ins, kw = _inputs(mte, arrays, kwargs, diff)
    f = lambda *xs: row.fn(F, *xs, **kw)  # noqa: E731
    with mte.no_grad():
        if not np.isfinite(f(*ins).numpy()).all():   # all targets ignored: nan by definition
            return
    assert gradcheck(f, ins)


# ---- input generators -------------------------------------------------------------------------
def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _class_shape(data, max_n=4, min_n=0):
    """(shape, class dim, C): (C,) unbatched or (N, C, d1, ...)."""
    C = data.draw(st.integers(1, 5), label="C")
    if data.draw(st.integers(0, 4), label="unbatched") == 0:
        return (C,), 0, C
    N = data.draw(st.integers(min_n, max_n), label="N")
    spatial = data.draw(st.lists(st.integers(1, 3), max_size=2), label="spatial")
    return (N, C, *spatial), 1, C


def _index_target(data, rng, shape, cdim, C, kwargs):
    tshape = shape[:1] + shape[2:] if cdim == 1 else ()
    t = rng.integers(0, C, tshape)
    if data.draw(st.booleans(), label="use ignore_index"):
        ii = data.draw(st.sampled_from([-100, -1, 0, C - 1]), label="ignore_index")
        frac = data.draw(st.sampled_from([0.3, 1.0]), label="ignored fraction")
        kwargs["ignore_index"] = ii
        t = np.where(rng.random(tshape) < frac, ii, t)
    return np.asarray(t, np.int64)


def _weight(data, rng, C, kwargs, dtype):
    if data.draw(st.booleans(), label="weight"):
        kwargs["weight"] = rng.uniform(0.2, 2.0, C).astype(dtype)


def ce_index(data, rng, dtype):
    shape, cdim, C = _class_shape(data)
    kw = {"reduction": data.draw(REDUCTIONS, label="reduction"),
          "label_smoothing": data.draw(st.sampled_from([0.0, 0.0, 0.1, 0.45]), label="smoothing")}
    _weight(data, rng, C, kw, dtype)
    t = _index_target(data, rng, shape, cdim, C, kw)
    return [(rng.standard_normal(shape) * 2).astype(dtype), t], kw, (0,)


def ce_probs(data, rng, dtype):
    shape, cdim, C = _class_shape(data)
    kw = {"reduction": data.draw(REDUCTIONS, label="reduction"),
          "label_smoothing": data.draw(st.sampled_from([0.0, 0.2]), label="smoothing")}
    _weight(data, rng, C, kw, dtype)
    t = _softmax(rng.standard_normal(shape), cdim).astype(dtype)
    return [(rng.standard_normal(shape) * 2).astype(dtype), t], kw, (0, 1)


def nll(data, rng, dtype):
    shape, cdim, C = _class_shape(data)
    kw = {"reduction": data.draw(REDUCTIONS, label="reduction")}
    _weight(data, rng, C, kw, dtype)
    t = _index_target(data, rng, shape, cdim, C, kw)
    x = np.log(_softmax(rng.standard_normal(shape), cdim)) if shape[cdim] else np.zeros(shape)
    return [x.astype(dtype), t], kw, (0,)


def _elementwise_shape(data):
    return tuple(data.draw(st.lists(st.integers(0, 4), max_size=3), label="shape"))


def pair(make_x=None, make_y=None, options=None, weight=False, diff=(0, 1)):
    """Generator for (input, target) losses of one shape (`diff`: which are differentiated)."""
    def draw(data, rng, dtype):
        shape = _elementwise_shape(data)
        kw = {"reduction": data.draw(REDUCTIONS, label="reduction")}
        for k, strat in (options or {}).items():
            kw[k] = data.draw(strat, label=k)
        x = (make_x or (lambda r, s: r.standard_normal(s)))(rng, shape)
        y = (make_y or (lambda r, s: r.standard_normal(s)))(rng, shape)
        if weight and data.draw(st.booleans(), label="weight"):
            kw["weight"] = rng.uniform(0.2, 2.0, shape).astype(dtype)
        return [np.asarray(x, dtype), np.asarray(y, dtype)], kw, diff
    return draw


def _signs(r, s):
    return np.where(r.random(s) < 0.5, -1.0, 1.0)


def bce_draw(data, rng, dtype):
    shape = _elementwise_shape(data)
    kw = {"reduction": data.draw(REDUCTIONS, label="reduction")}
    if data.draw(st.booleans(), label="weight") and shape:
        kw["weight"] = rng.uniform(0.2, 2.0, shape[-1:]).astype(dtype)   # broadcasts
    x = rng.uniform(0.02, 0.98, shape)
    return [x.astype(dtype), rng.uniform(0, 1, shape).astype(dtype)], kw, (0, 1)


def bce_logits_draw(data, rng, dtype):
    arrays, kw, diff = bce_draw(data, rng, dtype)
    shape = arrays[0].shape
    arrays[0] = (rng.standard_normal(shape) * 3).astype(dtype)
    if data.draw(st.booleans(), label="pos_weight") and shape:
        kw["pos_weight"] = rng.uniform(0.3, 3.0, shape[-1:]).astype(dtype)
    return arrays, kw, diff


def kl_draw(data, rng, dtype):
    shape, cdim, C = _class_shape(data)
    log_target = data.draw(st.booleans(), label="log_target")
    kw = {"reduction": data.draw(st.sampled_from(["none", "mean", "sum", "batchmean"])),
          "log_target": log_target}
    x = np.log(_softmax(rng.standard_normal(shape), cdim) + 1e-3)
    t = _softmax(rng.standard_normal(shape), cdim) + 0.01
    return [x.astype(dtype), (np.log(t) if log_target else t).astype(dtype)], kw, (0, 1)


def embed_pair(data, rng, dtype):
    """(x1, x2, y): (N, D), (N, D), (N,) or unbatched (D,), (D,), ()."""
    D = data.draw(st.integers(2, 5), label="D")   # D = 1: cos is +-1, its gradient pure noise
    N = data.draw(st.integers(0, 4), label="N")
    unbatched = data.draw(st.integers(0, 3), label="unbatched") == 0
    shape, yshape = ((D,), ()) if unbatched else ((N, D), (N,))
    kw = {"reduction": data.draw(REDUCTIONS, label="reduction"),
          "margin": data.draw(st.sampled_from([0.0, 0.3, -0.2]), label="margin")}
    x1, x2 = rng.standard_normal(shape), rng.standard_normal(shape)
    y = np.asarray(_signs(rng, yshape))
    return [x1.astype(dtype), x2.astype(dtype), y.astype(dtype)], kw, (0, 1)


def ranking_draw(data, rng, dtype):
    shape = _elementwise_shape(data)
    kw = {"reduction": data.draw(REDUCTIONS), "margin": data.draw(st.sampled_from([0.0, 0.5]))}
    return [rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype),
            np.asarray(_signs(rng, shape), dtype)], kw, (0, 1)


def hinge_draw(data, rng, dtype):
    shape = _elementwise_shape(data)
    kw = {"reduction": data.draw(REDUCTIONS), "margin": data.draw(st.sampled_from([1.0, 2.0]))}
    return [rng.uniform(0.05, 3, shape).astype(dtype), np.asarray(_signs(rng, shape), dtype)], \
        kw, (0,)


def triplet_draw(data, rng, dtype):
    D = data.draw(st.integers(1, 5), label="D")
    shape = (D,) if data.draw(st.integers(0, 3)) == 0 else (data.draw(st.integers(0, 4)), D)
    kw = {"reduction": data.draw(REDUCTIONS), "margin": data.draw(st.sampled_from([1.0, 0.5])),
          "p": data.draw(st.sampled_from([1, 2, 3])), "swap": data.draw(st.booleans())}
    return [rng.standard_normal(shape).astype(dtype) for _ in range(3)], kw, (0, 1, 2)


def multi_margin_draw(data, rng, dtype):
    shape, cdim, C = _class_shape(data, min_n=1)   # torch reads uninitialised memory for N = 0
    shape = shape[:2]
    kw = {"reduction": data.draw(REDUCTIONS), "p": data.draw(st.sampled_from([1, 2])),
          "margin": data.draw(st.sampled_from([1.0, 0.5]))}
    _weight(data, rng, C, kw, dtype)
    t = rng.integers(0, C, shape[:1] if len(shape) == 2 else ())
    return [rng.standard_normal(shape).astype(dtype), np.asarray(t, np.int64)], kw, (0,)


def multilabel_margin_draw(data, rng, dtype):
    shape, cdim, C = _class_shape(data, min_n=1)   # torch reads uninitialised memory for N = 0
    shape = shape[:2]
    rows = shape[0] if len(shape) == 2 else 1
    t = np.zeros((rows, C), np.int64)
    for i in range(rows):
        k = rng.integers(0, C + 1)
        row = list(rng.permutation(C)[:k]) + [-1] * (C - k)
        if k < C - 1:
            row[k + 1] = rng.integers(0, C)      # junk after the -1 terminator is ignored
        t[i] = row
    kw = {"reduction": data.draw(REDUCTIONS)}
    return [rng.standard_normal(shape).astype(dtype), t.reshape(shape)], kw, (0,)


def multilabel_soft_draw(data, rng, dtype):
    shape = (data.draw(st.integers(0, 4)), data.draw(st.integers(1, 5)))
    kw = {"reduction": data.draw(REDUCTIONS)}
    _weight(data, rng, shape[1], kw, dtype)
    return [rng.standard_normal(shape).astype(dtype) * 2,
            (rng.random(shape) < 0.5).astype(dtype)], kw, (0,)


def gaussian_draw(data, rng, dtype):
    shape = (data.draw(st.integers(0, 4)), data.draw(st.integers(1, 4)))
    kind = data.draw(st.sampled_from(["full", "drop_last", "last_1"]), label="var shape")
    vshape = {"full": shape, "drop_last": shape[:1], "last_1": shape[:1] + (1,)}[kind]
    kw = {"reduction": data.draw(REDUCTIONS), "full": data.draw(st.booleans())}
    return [rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype),
            rng.uniform(0.2, 2, vshape).astype(dtype)], kw, (0, 1, 2)


def poisson_draw(data, rng, dtype):
    shape = _elementwise_shape(data)
    log_input = data.draw(st.booleans(), label="log_input")
    kw = {"reduction": data.draw(REDUCTIONS), "log_input": log_input,
          "full": data.draw(st.booleans())}
    x = rng.standard_normal(shape) if log_input else rng.uniform(0.2, 3, shape)
    y = rng.poisson(2.0, shape).astype(float) + rng.uniform(0, 0.5, shape)
    return [x.astype(dtype), y.astype(dtype)], kw, (0,)


def _away(r, s):
    """Differences kept away from 0 (|x| kinks)."""
    x = r.standard_normal(s)
    return np.where(np.abs(x) < 0.05, 0.05 * np.sign(x + 1e-12) + x, x)


TABLE = [
    LossRow("cross_entropy[index]", ce_index, lambda F, x, t, **k: F.cross_entropy(x, t, **k)),
    LossRow("cross_entropy[probs]", ce_probs, lambda F, x, t, **k: F.cross_entropy(x, t, **k)),
    LossRow("nll_loss", nll, lambda F, x, t, **k: F.nll_loss(x, t, **k)),
    LossRow("mse_loss", pair(weight=True), lambda F, x, y, **k: F.mse_loss(x, y, **k)),
    LossRow("l1_loss", pair(make_x=_away, make_y=lambda r, s: np.zeros(s), weight=True),
            lambda F, x, y, **k: F.l1_loss(x, y, **k)),
    LossRow("smooth_l1_loss", pair(options={"beta": st.sampled_from([0.0, 0.5, 1.0, 2.0])},
                                   make_x=_away, make_y=lambda r, s: np.zeros(s)),
            lambda F, x, y, **k: F.smooth_l1_loss(x, y, **k)),
    LossRow("huber_loss", pair(options={"delta": st.sampled_from([0.5, 1.0, 2.0])}, weight=True),
            lambda F, x, y, **k: F.huber_loss(x, y, **k)),
    LossRow("binary_cross_entropy", bce_draw,
            lambda F, x, y, **k: F.binary_cross_entropy(x, y, **k)),
    LossRow("binary_cross_entropy_with_logits", bce_logits_draw,
            lambda F, x, y, **k: F.binary_cross_entropy_with_logits(x, y, **k)),
    LossRow("kl_div", kl_draw, lambda F, x, y, **k: F.kl_div(x, y, **k)),
    LossRow("cosine_embedding_loss", embed_pair,
            lambda F, a, b, y, **k: F.cosine_embedding_loss(a, b, y, **k)),
    LossRow("margin_ranking_loss", ranking_draw,
            lambda F, a, b, y, **k: F.margin_ranking_loss(a, b, y, **k)),
    LossRow("soft_margin_loss", pair(make_y=_signs, diff=(0,)),
            lambda F, x, y, **k: F.soft_margin_loss(x, y, **k)),
    LossRow("poisson_nll_loss", poisson_draw, lambda F, x, y, **k: F.poisson_nll_loss(x, y, **k)),
    LossRow("gaussian_nll_loss", gaussian_draw,
            lambda F, x, y, v, **k: F.gaussian_nll_loss(x, y, v, **k)),
    LossRow("hinge_embedding_loss", hinge_draw,
            lambda F, x, y, **k: F.hinge_embedding_loss(x, y, **k)),
    LossRow("triplet_margin_loss", triplet_draw,
            lambda F, a, b, c, **k: F.triplet_margin_loss(a, b, c, **k)),
    LossRow("multi_margin_loss", multi_margin_draw,
            lambda F, x, t, **k: F.multi_margin_loss(x, t, **k)),
    LossRow("multilabel_margin_loss", multilabel_margin_draw,
            lambda F, x, t, **k: F.multilabel_margin_loss(x, t, **k)),
    LossRow("multilabel_soft_margin_loss", multilabel_soft_draw,
            lambda F, x, t, **k: F.multilabel_soft_margin_loss(x, t, **k)),
]


@pytest.mark.parametrize("row", TABLE, ids=[r.name for r in TABLE])
@given(data=st.data())
def test_loss_against_torch(row, data):
    check_row_against_torch(row, data)


@pytest.mark.parametrize("row", TABLE, ids=[r.name for r in TABLE])
@given(data=st.data())
def test_loss_gradcheck(row, data):
    check_row_gradcheck(row, data)


# ---- targeted cases ---------------------------------------------------------------------------
def _both(fn, arrays, diff=(0,), **kw):
    """Run fn on our and torch's tensors; return (ours, theirs, our grads, torch grads)."""
    out = []
    for lib, Fm in ((mte, F), (torch, torch.nn.functional)):
        ins, kws = _inputs(lib, arrays, kw, diff)
        y = fn(Fm, *ins, **kws)
        grads = (mte if lib is mte else torch).autograd.grad(y.sum(), [ins[i] for i in diff])
        out.append((y, grads))
    return out


def _assert_same(pair_, **tol):
    (o, og), (t, tg) = pair_
    torch.testing.assert_close(torch.from_numpy(_np(o)), t.detach(), equal_nan=True, **tol)
    for a, b in zip(og, tg):
        torch.testing.assert_close(torch.from_numpy(_np(a)), b, equal_nan=True, **tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_all_ignored(reduction):
    """Every target ignored: 'mean' is 0/0 = nan (as torch) and the gradient is 0, not nan."""
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    t = np.full(3, -100)
    for fn in (lambda F, x, t: F.cross_entropy(x, t, reduction=reduction),
               lambda F, x, t: F.cross_entropy(x, t, reduction=reduction, label_smoothing=0.2,
                                               weight=torch.ones(4) if F is not nn.functional
                                               else mte.ones(4)),
               lambda F, x, t: F.nll_loss(x, t, reduction=reduction)):
        res = _both(fn, [x, t])
        _assert_same(res)
        assert not np.isnan(_np(res[0][1][0])).any()


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_extreme_logits_are_stable(scale):
    """Logits of +-1e4 give finite losses and gradients equal to torch's."""
    rng = np.random.default_rng(1)
    x = (np.sign(rng.standard_normal((4, 5))) * scale).astype(np.float32)
    x[:, 0] = -scale
    t = np.array([0, 1, 2, 4])
    probs = _softmax(rng.standard_normal((4, 5)), 1).astype(np.float32)
    y01 = (rng.random((4, 5)) < 0.5).astype(np.float32)
    cases = [
        (lambda F, x, t: F.cross_entropy(x, t), [x, t]),
        (lambda F, x, t: F.cross_entropy(x, t, label_smoothing=0.1), [x, t]),
        (lambda F, x, p: F.cross_entropy(x, p), [x, probs]),
        (lambda F, x, y: F.binary_cross_entropy_with_logits(x, y), [x, y01]),
        (lambda F, x, y: F.binary_cross_entropy_with_logits(
            x, y, pos_weight=(mte if F is nn.functional else torch).full((5,), 3.0)), [x, y01]),
        (lambda F, x, y: F.multilabel_soft_margin_loss(x, y), [x, y01]),
        (lambda F, x, t: F.nll_loss(F.log_softmax(x, 1), t), [x, t]),
    ]
    for fn, arrays in cases:
        res = _both(fn, arrays)
        (o, og), _ = res
        assert np.isfinite(_np(o)).all() and np.isfinite(_np(og[0])).all()
        _assert_same(res)


def test_soft_margin_loss_stable_where_torch_overflows():
    """torch's soft_margin_loss forms exp(-y x) and gives inf at y x = -1e4; ours is
    softplus(-y x) = 1e4 exactly, with gradient -y."""
    x = mte.tensor([1e4, 1e4, -1e4], requires_grad=True)
    y = mte.tensor([-1.0, 1.0, 1.0])
    loss = F.soft_margin_loss(x, y, reduction="sum")
    loss.backward()
    assert loss.item() == pytest.approx(2e4)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0, -1.0])


def test_cross_entropy_masked_logits():
    """-inf logits (masked classes) are fine for class-index targets."""
    x = np.array([[0.5, -np.inf, 1.0], [-np.inf, 2.0, 0.0]], np.float32)
    _assert_same(_both(lambda F, x, t: F.cross_entropy(x, t), [x, np.array([0, 1])]))


def test_binary_cross_entropy_log_clamp():
    """p of exactly 0 or 1: each log is clamped at -100, as torch."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32)
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.3], np.float32)
    for red in ("none", "mean"):
        (o, _), (t, _) = _both(lambda F, p, y: F.binary_cross_entropy(p, y, reduction=red),
                               [p, y], diff=(1,))
        torch.testing.assert_close(torch.from_numpy(_np(o)), t.detach())


def test_double_backward():
    """Fused cross-entropy and BCE backward formulas are themselves differentiable."""
    rng = np.random.default_rng(2)
    x = mte.tensor(rng.standard_normal((3, 4)), dtype=mte.float64, requires_grad=True)
    p = mte.tensor(_softmax(rng.standard_normal((3, 4)), 1), dtype=mte.float64,
                   requires_grad=True)
    t = mte.tensor([0, 3, 1])
    assert gradgradcheck(lambda x: F.cross_entropy(x, t, label_smoothing=0.1), [x])
    w = mte.tensor([0.5, 2.0, 1.0, 0.0], dtype=mte.float64)
    assert gradgradcheck(lambda x: F.cross_entropy(x, t, weight=w, ignore_index=1,
                                                   reduction="none"), [x])
    assert gradgradcheck(lambda x, p: F.cross_entropy(x, p, reduction="none"), [x, p])
    q = mte.tensor(rng.uniform(0.1, 0.9, (3, 4)), dtype=mte.float64, requires_grad=True)
    assert gradgradcheck(lambda q, p: F.binary_cross_entropy(q, p), [q, p])
    assert gradgradcheck(lambda x, p: F.binary_cross_entropy_with_logits(x, p), [x, p])


def test_legacy_size_average_and_reduce():
    x, y = mte.randn(3, 4), mte.randn(3, 4)
    with pytest.warns(UserWarning):
        assert F.mse_loss(x, y, size_average=False).item() == pytest.approx(
            F.mse_loss(x, y, reduction="sum").item())
    with pytest.warns(UserWarning):
        assert nn.MSELoss(reduce=False).reduction == "none"


def test_broadcast_warns():
    with pytest.warns(UserWarning, match="target size"):
        assert F.mse_loss(mte.randn(3), mte.randn(3, 1)).shape == ()


# ---- layers ----------------------------------------------------------------------------------
def _lib(nn_):
    return torch if nn_ is torch.nn else mte


def _targets(*arrays):
    return lambda rng: [a(rng) if callable(a) else a for a in arrays]


def _randn(*s):
    return lambda rng: rng.standard_normal(s).astype(np.float32)


def _ints(high, *s):
    return lambda rng: rng.integers(0, high, s)


LAYERS = [
    LayerRow("CrossEntropyLoss(weight, smoothing)",
             lambda nn_: nn_.CrossEntropyLoss(weight=_lib(nn_).rand(5), label_smoothing=0.1),
             _targets(_randn(4, 5, 3), _ints(5, 4, 3)), grad_inputs=(0,)),
    LayerRow("CrossEntropyLoss(ignore_index, sum)",
             lambda nn_: nn_.CrossEntropyLoss(ignore_index=2, reduction="sum"),
             _targets(_randn(6, 5), _ints(5, 6)), grad_inputs=(0,)),
    LayerRow("NLLLoss(weight)", lambda nn_: nn_.NLLLoss(weight=_lib(nn_).rand(4)),
             _targets(_randn(5, 4), _ints(4, 5)), grad_inputs=(0,)),
    LayerRow("BCELoss(weight)", lambda nn_: nn_.BCELoss(weight=_lib(nn_).rand(3)),
             _targets(lambda r: r.uniform(0.05, 0.95, (4, 3)).astype(np.float32),
                      lambda r: r.random((4, 3)).astype(np.float32))),
    LayerRow("BCEWithLogitsLoss(pos_weight)",
             lambda nn_: nn_.BCEWithLogitsLoss(weight=_lib(nn_).rand(3),
                                               pos_weight=_lib(nn_).rand(3) * 3),
             _targets(_randn(4, 3), lambda r: r.random((4, 3)).astype(np.float32))),
    LayerRow("MSELoss", lambda nn_: nn_.MSELoss(), _targets(_randn(4, 3), _randn(4, 3))),
    LayerRow("L1Loss(sum)", lambda nn_: nn_.L1Loss(reduction="sum"),
             _targets(_randn(4, 3), _randn(4, 3))),
    LayerRow("SmoothL1Loss(beta=0.5)", lambda nn_: nn_.SmoothL1Loss(beta=0.5),
             _targets(_randn(4, 3), _randn(4, 3))),
    LayerRow("HuberLoss(delta=0.7)", lambda nn_: nn_.HuberLoss(delta=0.7),
             _targets(_randn(4, 3), _randn(4, 3))),
    LayerRow("KLDivLoss(batchmean)", lambda nn_: nn_.KLDivLoss(reduction="batchmean"),
             _targets(_randn(4, 3), lambda r: r.random((4, 3)).astype(np.float32))),
    LayerRow("CosineEmbeddingLoss", lambda nn_: nn_.CosineEmbeddingLoss(margin=0.2),
             _targets(_randn(4, 3), _randn(4, 3), np.array([1, -1, 1, -1], np.float32)),
             grad_inputs=(0, 1)),
    LayerRow("MarginRankingLoss", lambda nn_: nn_.MarginRankingLoss(margin=0.3),
             _targets(_randn(5), _randn(5), np.array([1, -1, 1, -1, 1], np.float32)),
             grad_inputs=(0, 1)),
    LayerRow("TripletMarginLoss(swap)", lambda nn_: nn_.TripletMarginLoss(swap=True),
             _targets(_randn(4, 3), _randn(4, 3), _randn(4, 3))),
    LayerRow("MultiMarginLoss(weight)",
             lambda nn_: nn_.MultiMarginLoss(p=2, weight=_lib(nn_).rand(5)),
             _targets(_randn(4, 5), _ints(5, 4)), grad_inputs=(0,)),
    LayerRow("PoissonNLLLoss(full)", lambda nn_: nn_.PoissonNLLLoss(full=True),
             _targets(_randn(4, 3), lambda r: r.poisson(3.0, (4, 3)).astype(np.float32)),
             grad_inputs=(0,)),
    LayerRow("GaussianNLLLoss", lambda nn_: nn_.GaussianNLLLoss(full=True),
             _targets(_randn(4, 3), _randn(4, 3),
                      lambda r: r.uniform(0.5, 2, (4, 1)).astype(np.float32))),
    LayerRow("MultiLabelSoftMarginLoss",
             lambda nn_: nn_.MultiLabelSoftMarginLoss(weight=_lib(nn_).rand(3)),
             _targets(_randn(4, 3), lambda r: (r.random((4, 3)) < 0.5).astype(np.float32)),
             grad_inputs=(0,)),
]
make_layer_tests(LAYERS, globals())

WEIGHTED = ["CrossEntropyLoss", "NLLLoss", "BCELoss", "MultiMarginLoss",
            "MultiLabelSoftMarginLoss"]


@pytest.mark.parametrize("name", nn.layers.loss.__all__ if hasattr(nn, "layers") else [])
def test_layer_attributes_match_torch(name):
    """Same repr, attributes and buffer names (state_dict keys) as torch's layer."""
    ours, theirs = getattr(nn, name)(), getattr(torch.nn, name)()
    if name == "TripletMarginWithDistanceLoss":
        # torch stores a PairwiseDistance module as the default distance_function; we keep None
        # (the functional default is the same pairwise distance)
        assert ours.distance_function is None
        return
    assert repr(ours) == repr(theirs)
    public = {k: v for k, v in vars(theirs).items() if not k.startswith("_") and k != "training"}
    for k, v in public.items():
        assert getattr(ours, k) == v, f"{name}.{k}"
    assert list(ours._buffers) == list(theirs._buffers)
    if name in WEIGHTED:
        o = getattr(nn, name)(weight=mte.ones(3))
        t = getattr(torch.nn, name)(weight=torch.ones(3))
        assert list(o.state_dict()) == list(t.state_dict()) == ["weight"]


# ---- errors ----------------------------------------------------------------------------------
def test_out_of_range_target_names_loss_value_and_classes():
    x = mte.randn(3, 5)
    t = mte.tensor([1, 7, 2])
    with pytest.raises(IndexError, match=r"^CrossEntropyLoss: target 7 is out of bounds for 5 "
                                         r"classes"):
        nn.CrossEntropyLoss()(x, t)
    with pytest.raises(IndexError, match=r"^cross_entropy: target 7 is out of bounds for 5"):
        F.cross_entropy(x, t)
    with pytest.raises(IndexError, match=r"^NLLLoss: target -3 is out of bounds for 5 classes"):
        nn.NLLLoss()(x, mte.tensor([1, -3, 2]))
    with pytest.raises(IndexError, match=r"^MultiMarginLoss: target 5 is out of bounds"):
        nn.MultiMarginLoss()(x, mte.tensor([1, 5, 2]))
    # an ignored target may be out of range
    assert np.isfinite(F.cross_entropy(x, mte.tensor([1, -100, 2])).item())


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"CrossEntropyLoss: expected target of shape \(3,\) for "
                                         r"input of shape \(3, 5\), got target of shape \(2,\)"):
        nn.CrossEntropyLoss()(mte.randn(3, 5), mte.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"\(4, 2\).*\(4, 5, 3\)|\(4, 5, 3\).*\(4, 2\)"):
        F.nll_loss(mte.randn(4, 5, 3), mte.zeros(4, 2, dtype=mte.int64))
    with pytest.raises(RuntimeError, match=r"MSELoss: input of shape \(3, 5\) and target of "
                                           r"shape \(2, 5\)"):
        nn.MSELoss()(mte.randn(3, 5), mte.randn(2, 5))
    with pytest.raises(ValueError, match=r"BCEWithLogitsLoss: target of shape \(3, 1\) must have "
                                         r"the same shape as input of shape \(3,\)"):
        nn.BCEWithLogitsLoss()(mte.randn(3), mte.rand(3, 1))
    with pytest.raises(ValueError, match=r"binary_cross_entropy: target of shape"):
        F.binary_cross_entropy(mte.rand(3), mte.rand(4))


def test_wrong_target_dtype():
    with pytest.raises(RuntimeError, match=r"cross_entropy: expected target of class indices with "
                                           r"an integer dtype.*got dtype float32"):
        F.cross_entropy(mte.randn(3, 5), mte.tensor([1.0, 2.0, 0.0]))
    with pytest.raises(RuntimeError, match=r"class probabilities and must be floating point"):
        F.cross_entropy(mte.randn(3, 5), mte.zeros(3, 5, dtype=mte.int64))
    with pytest.raises(RuntimeError, match=r"ignore_index is not supported"):
        F.cross_entropy(mte.randn(3, 5), mte.rand(3, 5), ignore_index=1)
    with pytest.raises(RuntimeError, match=r"floating point input"):
        F.cross_entropy(mte.zeros(3, 5, dtype=mte.int64), mte.tensor([1, 2, 0]))


def test_option_errors():
    x, t = mte.randn(3, 5), mte.tensor([1, 2, 0])
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 "
                                           "classes"):
        F.cross_entropy(x, t, weight=mte.ones(4))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        nn.CrossEntropyLoss(reduction="avg")(x, t)
    with pytest.raises(ValueError, match="'batchmean' is not a valid value"):
        F.mse_loss(x, x, reduction="batchmean")
    with pytest.raises(RuntimeError, match=r"BCELoss: all elements of input should be between 0 "
                                           r"and 1"):
        nn.BCELoss()(mte.tensor([0.5, 1.5]), mte.tensor([0.0, 1.0]))
    with pytest.raises(TypeError, match="argument 'target' must be a Tensor"):
        F.cross_entropy(x, [1, 2, 0])
    with pytest.raises(ValueError, match="Weights? .*same shape|weight of shape"):
        F.mse_loss(x, x, weight=mte.ones(5))
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(x, x, -mte.ones(3, 5))
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        nn.TripletMarginLoss(margin=0)


def test_inputs_unchanged():
    x = mte.randn(3, 5, requires_grad=True)
    before = x.detach().numpy().copy()
    with pytest.raises(IndexError):
        F.cross_entropy(x, mte.tensor([0, 9, 1]))
    loss = F.cross_entropy(x, mte.tensor([0, 4, 1]), label_smoothing=0.3)
    loss.backward()
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._version == 0
