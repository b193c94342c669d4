"""The Transformer kernels (backend.softmax, layer_norm, gelu, attention and their backward):
native (libmte through backend.native_transformer) against the numpy twins over hypothesis
shapes on every ISA this CPU runs; the fused Functions that use them (softmax, LayerNorm,
GELU, ScaledDotProductAttention, MultiheadSelfAttention) forward and backward against
PyTorch; gradcheck (and gradgradcheck) in float64, which runs through the numpy twins; the
fallbacks and the dispatch table; bad input to the bindings.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from native_harness import on_every_isa as _on_every_isa, rand, require_native

_C = require_native("attention", "transformer")

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import backend, nn  # noqa: E402
from minitorch_edge.backend import native_transformer as nt  # noqa: E402
from minitorch_edge.backend import numpy_backend as nb  # noqa: E402
from minitorch_edge.nn.functional.attention import (MultiheadSelfAttention,  # noqa: E402
                                                    ScaledDotProductAttention, _heads)

F = nn.functional
TOL = dict(rtol=2e-5, atol=2e-6)


def on_every_isa(fn):
    _on_every_isa(_C, fn)


def close(a, b, **kw):
    np.testing.assert_allclose(a, b, **(kw or TOL))


# ---- row kernels: native against the twins ------------------------------------------------------
def row_input(rng, shape, special):
    """Plain values, or rows with -inf, all -inf and NaN (the softmax rules)."""
    x = rand(rng, shape) * 4
    if special and x.size:
        x[rng.random(shape) < 0.2] = -np.inf
        flat = x.reshape(-1, shape[-1])
        flat[rng.integers(0, flat.shape[0])] = -np.inf
        if rng.random() < 0.5:
            flat[rng.integers(0, flat.shape[0]), rng.integers(0, shape[-1])] = np.nan
    return x


@settings(deadline=None)
@given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=3), log=st.booleans(),
       safe=st.booleans(), special=st.booleans(), seed=st.integers(0, 2**16))
def test_softmax_matches_numpy(shape, log, safe, special, seed):
    rng = np.random.default_rng(seed)
    x = row_input(rng, tuple(shape), special)
    dy = rand(rng, x.shape)

    def check(isa):
        y = nt.softmax(x, -1, log, safe)
        close(y, nb.softmax(x, -1, log, safe), rtol=2e-5, atol=2e-6 if not log else 2e-5)
        if not special:
            close(nt.softmax_backward(y, dy, -1, log), nb.softmax_backward(y, dy, -1, log),
                  rtol=1e-4, atol=1e-5)
    on_every_isa(check)


@settings(deadline=None)
@given(rows=st.integers(0, 50), n=st.integers(1, 130), affine=st.integers(0, 3),
       offset=st.floats(-5, 5), seed=st.integers(0, 2**16))
def test_layer_norm_matches_numpy(rows, n, affine, offset, seed):
    rng = np.random.default_rng(seed)
    x = rand(rng, (rows, n)) * 2 + np.float32(offset)
    w = rand(rng, (n,)) if affine & 1 else None
    b = rand(rng, (n,)) if affine & 2 else None
    dy = rand(rng, x.shape)

    def check(isa):
        got, want = nt.layer_norm(x, w, b), nb.layer_norm(x, w, b)
        # x - mean in float32 is off by an ulp of |x|, times rstd
        tol = dict(rtol=1e-4, atol=1e-5 * (1 + abs(offset)) * float(np.max(want[2], initial=1)))
        for g, r in zip(got, want):
            close(g, r, **tol)
        gg = nt.layer_norm_backward(dy, x, want[1], want[2], w)
        gr = nb.layer_norm_backward(dy, x, want[1], want[2], w)
        for g, r in zip(gg, gr):
            close(g, r, rtol=1e-4, atol=1e-4 * math.sqrt(rows + 1))
    on_every_isa(check)


@settings(deadline=None)
@given(n=st.integers(0, 200), approximate=st.sampled_from(["none", "tanh"]),
       scale=st.sampled_from([1.0, 5.0, 50.0]), seed=st.integers(0, 2**16))
def test_gelu_matches_numpy(n, approximate, scale, seed):
    """Against the twin in float64: the float32 twin's tanh-form gradient loses digits to
    cancellation in 1 - tanh^2 u for large |x| (the native one is written with sigmoids)."""
    rng = np.random.default_rng(seed)
    x = rand(rng, (n,)) * np.float32(scale)
    dy = rand(rng, (n,))
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    tol = 3e-6 * np.maximum(1, np.abs(x64))

    def check(isa):
        assert np.all(np.abs(nt.gelu(x, approximate) - nb.gelu(x64, approximate)) <= tol)
        got = nt.gelu_backward(dy, x, approximate)
        assert np.all(np.abs(got - nb.gelu_backward(dy64, x64, approximate)) <= tol)
        assert got.dtype == np.float32 and got.shape == x.shape
    on_every_isa(check)


def test_gelu_in_float32_tracks_float64():
    """The native GELU (erf as a float32 polynomial) against the float64 twin on a dense
    sweep: within ~2e-7 * max(1, |x|), as the epilogue's GELU."""
    x = np.linspace(-12, 12, 40001, dtype=np.float32)
    for approximate in ("none", "tanh"):
        want = nb.gelu(x.astype(np.float64), approximate)
        assert np.all(np.abs(nt.gelu(x, approximate) - want) <= 3e-7 * np.maximum(1, abs(x)))
        gwant = nb.gelu_backward(np.ones_like(want), x.astype(np.float64), approximate)
        got = nt.gelu_backward(np.ones_like(x), x, approximate)
        assert np.all(np.abs(got - gwant) <= 2e-6 * np.maximum(1, abs(x)))


# ---- attention: native against the twins ---------------------------------------------------------
@st.composite
def attention_case(draw):
    B, H = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    L, S = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    D, Dv = draw(st.integers(1, 33)), draw(st.integers(1, 33))
    mask = draw(st.sampled_from([None, "LS", "kpm", "full"]))
    return B, H, L, S, D, Dv, mask, draw(st.booleans()), draw(st.integers(0, 2**16))


def make_mask(rng, kind, B, H, L, S):
    if kind is None:
        return None
    shape = {"LS": (L, S), "kpm": (B, 1, 1, S), "full": (B, H, L, S)}[kind]
    m = rand(rng, shape)
    m[rng.random(shape) < 0.3] = -np.inf
    return m


@settings(deadline=None)
@given(case=attention_case())
def test_attention_matches_numpy(case):
    B, H, L, S, D, Dv, kind, causal, seed = case
    rng = np.random.default_rng(seed)
    q, k, v = rand(rng, (B, H, L, D)), rand(rng, (B, H, S, D)), rand(rng, (B, H, S, Dv))
    mask = make_mask(rng, kind, B, H, L, S)
    dout = rand(rng, (B, H, L, Dv))
    scale = 1 / math.sqrt(D)

    def check(isa):
        out, p = nt.attention(q, k, v, mask, scale, causal)
        ro, rp = nb.attention(q, k, v, mask, scale, causal)
        close(p, rp, rtol=1e-5, atol=1e-6)
        close(out, ro, rtol=1e-4, atol=1e-5)
        for g, r in zip(nt.attention_backward(q, k, v, p, dout, scale),
                        nb.attention_backward(q, k, v, rp, dout, scale)):
            close(g, r, rtol=1e-4, atol=1e-5)
    on_every_isa(check)


@pytest.mark.parametrize("batch_first", [False, True])
def test_attention_reads_and_writes_head_views(batch_first):
    """q, k, v as the head views of one packed projection, out and the gradients as views
    into (len, N, E)-shaped arrays: the kernel writes exactly those columns, as the twin does,
    and nothing else."""
    rng = np.random.default_rng(0)
    N, L, H, hd = 3, 7, 2, 5
    qkv = rand(rng, (N, L, 3 * H * hd) if batch_first else (L, N, 3 * H * hd))
    g = rand(rng, qkv.shape[:-1] + (H * hd,))
    results = []
    for impl in (nt, nb):
        views = [_heads(qkv, H, batch_first, i, 3) for i in range(3)]
        out = np.full(qkv.shape[:-1] + (H * hd,), 7.0, np.float32)
        _, p = impl.attention(*views, None, 0.3, True, out=_heads(out, H, batch_first))
        d = np.full(qkv.shape, 9.0, np.float32)
        impl.attention_backward(*views, p, _heads(g, H, batch_first), 0.3,
                                *(_heads(d, H, batch_first, i, 3) for i in range(3)))
        results.append((out, d))
    (o1, d1), (o2, d2) = results
    assert not np.any(o1 == 7.0) and not np.any(d1 == 9.0)   # every element written
    close(o1, o2, rtol=1e-5, atol=1e-6)
    close(d1, d2, rtol=1e-4, atol=1e-5)


def test_attention_fully_masked_rows_are_zero():
    rng = np.random.default_rng(1)
    q, k, v = rand(rng, (1, 2, 4, 3)), rand(rng, (1, 2, 5, 3)), rand(rng, (1, 2, 5, 2))
    mask = np.zeros((4, 5), np.float32)
    mask[2] = -np.inf
    out, p = nt.attention(q, k, v, mask, 1.0, False)
    assert np.all(out[:, :, 2] == 0) and np.all(p[:, :, 2] == 0)
    grads = nt.attention_backward(q, k, v, p, np.ones_like(out), 1.0)
    assert np.all(grads[0][:, :, 2] == 0)
    assert np.all(np.isfinite(grads[1])) and np.all(np.isfinite(grads[2]))


def test_fallbacks_to_the_twin():
    """Other dtypes, softmax along another dim, broadcast batch dims: the twin's result."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5))
    close(nt.softmax(x, 1), nb.softmax(x, 1))
    close(nt.softmax(x.astype(np.float32), 0), nb.softmax(x.astype(np.float32), 0))
    close(nt.gelu(x), nb.gelu(x))
    close(nt.layer_norm(x)[0], nb.layer_norm(x)[0])
    q, k = rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((2, 1, 5, 4))
    close(nt.attention(q, k, k, None, 0.5)[0], nb.attention(q, k, k, None, 0.5)[0])
    q32, k32 = q.astype(np.float32), k[:1].astype(np.float32)   # k's batch broadcasts
    close(nt.attention(q32, k32, k32, None, 0.5)[0], nb.attention(q32, k32, k32, None, 0.5)[0],
          rtol=1e-5, atol=1e-6)


def test_dispatch_table_names_the_new_kernels():
    table = backend.table()
    for name in ("softmax", "softmax_backward", "layer_norm", "layer_norm_backward", "gelu",
                 "gelu_backward", "attention", "attention_backward"):
        assert name in backend.KERNELS
        if backend.active() == "native":
            assert table[name].startswith("native["), (name, table[name])
    families = _C.dispatch_table()
    assert "rowwise" in families and "attention" in families


@pytest.mark.parametrize("call, err", [
    (lambda: _C.softmax(np.zeros((2, 3), np.float64)), TypeError),
    (lambda: _C.softmax(np.zeros((2, 3), np.float32)[:, ::2]), ValueError),
    (lambda: _C.softmax_backward(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32)),
     ValueError),
    (lambda: _C.layer_norm(np.zeros((2, 3), np.float32), np.zeros(4, np.float32)), ValueError),
    (lambda: _C.gelu(np.zeros(3, np.float32), "fast"), ValueError),
    (lambda: _C.attention(*(np.zeros((1, 1, 2, 3), np.float32),) * 3, None,
                          np.zeros((1, 1, 2, 3), np.float32), np.zeros((1, 1, 3, 2), np.float32),
                          1.0), ValueError),     # pt must be (B, H, S, L) = (1, 1, 2, 2)
    (lambda: _C.attention(*(np.zeros((1, 1, 2, 3), np.float32)[..., ::-1],) * 3, None,
                          np.zeros((1, 1, 2, 3), np.float32), np.zeros((1, 1, 2, 2), np.float32),
                          1.0), ValueError),     # negative strides
])
def test_bindings_reject_bad_input(call, err):
    with pytest.raises(err):
        call()


def test_attention_output_must_not_alias_input():
    q = np.zeros((1, 1, 2, 3), np.float32)
    with pytest.raises(ValueError, match="shares memory"):
        _C.attention(q, q, q, None, q, np.zeros((1, 1, 2, 2), np.float32), 1.0)


# ---- the Functions against PyTorch ---------------------------------------------------------------
torch = pytest.importorskip("torch")


def both(fn, *arrays):
    """fn(lib, *tensors) for ours and torch: (output, gradients of sum(out * g)) each."""
    res = []
    rng = np.random.default_rng(7)
    g = None
    for lib in (mte, torch):
        ts = [lib.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray)
              else a for a in arrays]
        out = fn(lib, *ts)
        if g is None:
            g = rng.standard_normal(tuple(out.shape)).astype(np.float32)
        (out * lib.tensor(g)).sum().backward()
        grads = [np.array(t.grad.numpy()) for t in ts
                 if hasattr(t, "grad") and t.grad is not None]
        res.append((np.array(out.detach().numpy()), grads))
    return res


def assert_same(res, rtol=1e-4, atol=1e-5):
    (o, gs), (to, tgs) = res
    np.testing.assert_allclose(o, to, rtol=rtol, atol=atol)
    assert len(gs) == len(tgs)
    for g, tg in zip(gs, tgs):
        np.testing.assert_allclose(g, tg, rtol=rtol, atol=atol)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_backward_like_torch(log):
    x = np.random.default_rng(3).standard_normal((6, 37)).astype(np.float32) * 5
    f = (lambda lib, t: lib.log_softmax(t, -1)) if log else (lambda lib, t: lib.softmax(t, -1))
    assert_same(both(f, x))


@pytest.mark.parametrize("shape, norm", [((4, 9, 64), (64,)), ((3, 5, 6), (5, 6)),
                                         ((2, 130), (130,))])
def test_layer_norm_forward_backward_like_torch(shape, norm):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32) + 3
    w, b = rng.standard_normal(norm).astype(np.float32), rng.standard_normal(norm).astype(
        np.float32)
    assert_same(both(lambda lib, t, w_, b_: lib.nn.functional.layer_norm(t, norm, w_, b_),
                     x, w, b))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_forward_backward_like_torch(approximate):
    x = np.random.default_rng(5).standard_normal((5, 77)).astype(np.float32) * 3
    assert_same(both(lambda lib, t: lib.nn.functional.gelu(t, approximate=approximate), x))


@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
def test_sdpa_forward_backward_like_torch(mask):
    """The fused ScaledDotProductAttention (masks as constants) against torch."""
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in
               [(2, 3, 9, 8), (2, 3, 11, 8), (2, 3, 11, 5)])
    m = {"bool": rng.random((9, 11)) < 0.7,
         "float": rng.standard_normal((2, 1, 9, 11)).astype(np.float32)}.get(mask)

    def f(lib, q_, k_, v_):
        kw = {"is_causal": mask == "causal"}
        if m is not None:
            kw["attn_mask"] = lib.tensor(m)
        return lib.nn.functional.scaled_dot_product_attention(q_, k_, v_, **kw)
    assert_same(both(f, q, k, v))
    out = f(mte, mte.tensor(q, requires_grad=True), mte.tensor(k), mte.tensor(v))
    assert out.grad_fn.name() == "ScaledDotProductAttentionBackward0"


def mha_pair(batch_first, E=16, H=4):
    mte.manual_seed(0)
    ours = nn.MultiheadAttention(E, H, batch_first=batch_first)
    theirs = torch.nn.MultiheadAttention(E, H, batch_first=batch_first)
    theirs.load_state_dict({k: torch.from_numpy(np.array(v.numpy()))
                            for k, v in ours.state_dict().items()})
    return ours, theirs


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "kpm", "attn_float", "attn_bool+kpm", "causal"])
def test_mha_self_attention_fused_like_torch(batch_first, masks):
    """nn.MultiheadAttention's fused self-attention (one MultiheadSelfAttention node reading
    the packed projection) against torch: output and every gradient."""
    rng = np.random.default_rng(8)
    N, L, E = 3, 6, 16
    x = rng.standard_normal((N, L, E) if batch_first else (L, N, E)).astype(np.float32)
    kpm = rng.random((N, L)) < 0.3
    kpm[:, 0] = False
    am_f = rng.standard_normal((L, L)).astype(np.float32)
    am_b = rng.random((L, L)) < 0.2
    np.fill_diagonal(am_b, False)
    causal = np.triu(np.full((L, L), -np.inf, np.float32), 1)
    ours, theirs = mha_pair(batch_first)
    results = []
    for lib, m in ((mte, ours), (torch, theirs)):
        xt = lib.tensor(x, requires_grad=True)
        kw = dict(need_weights=False)
        if "kpm" in masks:
            kw["key_padding_mask"] = lib.tensor(kpm)
        if masks == "attn_float":
            kw["attn_mask"] = lib.tensor(am_f)
        if masks.startswith("attn_bool"):
            kw["attn_mask"] = lib.tensor(am_b)
        if masks == "causal":
            kw.update(attn_mask=lib.tensor(causal), is_causal=True)
        out = m(xt, xt, xt, **kw)[0]
        g = np.random.default_rng(9).standard_normal(tuple(out.shape)).astype(np.float32)
        (out * lib.tensor(g)).sum().backward()
        grads = [np.array(xt.grad.numpy())] + [np.array(p.grad.numpy())
                                               for p in m.parameters()]
        results.append((np.array(out.detach().numpy()), grads))
        if lib is mte:
            node = out.grad_fn
            names = set()
            stack = [node]
            while stack:       # the fused node is in the graph
                n = stack.pop()
                if n is None or not hasattr(n, "next_functions"):
                    continue
                names.add(n.name())
                stack.extend(f for f, _ in n.next_functions)
            assert "MultiheadSelfAttentionBackward0" in names
    assert_same(results)


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_cross_attention_fused_like_torch(batch_first):
    rng = np.random.default_rng(10)
    N, L, S, E = 2, 5, 7, 16
    sh = (lambda n: (N, n, E)) if batch_first else (lambda n: (n, N, E))
    q, kv = rng.standard_normal(sh(L)).astype(np.float32), rng.standard_normal(sh(S)).astype(
        np.float32)
    kpm = rng.random((N, S)) < 0.3
    kpm[:, 0] = False
    ours, theirs = mha_pair(batch_first)

    def f(lib, q_, kv_):
        m = ours if lib is mte else theirs
        return m(q_, kv_, kv_, key_padding_mask=lib.tensor(kpm), need_weights=False)[0]
    assert_same(both(f, q, kv))


def test_bench_transformer_step_like_torch():
    """The bench case (2 post-norm encoder layers, d_model 64, 4 heads, ff 128, a mean-pooled
    head) in miniature: loss and every gradient against torch."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 10, 64)).astype(np.float32)
    y = rng.integers(0, 10, 4)
    mte.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    ours = nn.ModuleList([nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                          nn.Linear(64, 10)])
    tl = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    theirs = torch.nn.ModuleList([torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False),
                                  torch.nn.Linear(64, 10)])
    theirs.load_state_dict({k: torch.from_numpy(np.array(v.numpy()))
                            for k, v in ours.state_dict().items()})
    losses = []
    for lib, m in ((mte, ours), (torch, theirs)):
        loss = lib.nn.functional.cross_entropy(m[1](m[0](lib.tensor(x)).mean(1)),
                                               lib.tensor(y))
        loss.backward()
        losses.append((float(loss.item()), [np.array(p.grad.numpy()) for p in m.parameters()]))
    (l1, g1), (l2, g2) = losses
    assert abs(l1 - l2) < 1e-5
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=2e-6)


# ---- gradcheck in float64 (the numpy twins) ------------------------------------------------------
def test_gradcheck_fused_functions_float64():
    rng = np.random.default_rng(12)

    def t(*shape):
        return mte.tensor(rng.standard_normal(shape), requires_grad=True)
    q, k, v = t(2, 2, 3, 4), t(2, 2, 5, 4), t(2, 2, 5, 3)
    bias = rng.standard_normal((3, 5))
    bias[1, 2] = -np.inf
    for causal in (False, True):
        f = (lambda a, b, c, cz=causal: ScaledDotProductAttention.apply(
            a, b, c, None if cz else bias, 0.5, cz))
        assert mte.autograd.gradcheck(f, (q, k, v))
        assert mte.autograd.gradgradcheck(f, (q, k, v))
    for batch_first in (False, True):
        qkv = t(3, 2, 12)       # (L, N, 3E) or (N, L, 3E), E = 4, 2 heads
        mask = rng.standard_normal((3, 1, 2, 2) if batch_first else (2, 1, 3, 3))
        f = (lambda a, bf=batch_first, m=mask: MultiheadSelfAttention.apply(a, 2, m, 0.7, False,
                                                                              bf))
        assert mte.autograd.gradcheck(f, (qkv,))
        assert mte.autograd.gradgradcheck(f, (qkv,))
    x, w, b = t(3, 4, 5), t(4, 5), t(4, 5)
    ln = (lambda a, w_, b_: F.layer_norm(a, (4, 5), w_, b_))
    assert mte.autograd.gradcheck(ln, (x, w, b))
    assert mte.autograd.gradgradcheck(ln, (x, w, b))
    for approximate in ("none", "tanh"):
        assert mte.autograd.gradcheck(lambda a, ap=approximate: F.gelu(a, approximate=ap), (x,))
    assert mte.autograd.gradcheck(lambda a: a.softmax(-1), (x,))
    assert mte.autograd.gradcheck(lambda a: a.log_softmax(-1), (x,))


def test_mha_gradcheck_float64_through_fused_path():
    rng = np.random.default_rng(13)
    x = mte.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    w = mte.tensor(rng.standard_normal((12, 4)) * 0.5, requires_grad=True)
    b = mte.tensor(rng.standard_normal(12) * 0.1, requires_grad=True)
    wo = mte.tensor(rng.standard_normal((4, 4)) * 0.5, requires_grad=True)
    kpm = mte.tensor(np.array([[False, False, True], [False, False, False]]))

    def f(x_, w_, b_, wo_):
        return F.multi_head_attention_forward(x_, x_, x_, 4, 2, w_, b_, None, None, False, 0.0,
                                              wo_, None, key_padding_mask=kpm,
                                              need_weights=False)[0]
    assert mte.autograd.gradcheck(f, (x, w, b, wo))
    assert mte.autograd.gradgradcheck(f, (x, w, b, wo))
