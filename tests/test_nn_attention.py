"""Attention and Transformer layers against PyTorch: F.scaled_dot_product_attention (op harness,
gradcheck), nn.MultiheadAttention, the Transformer encoder/decoder layers and stacks, nn.Transformer
and our AttentionLayer (layer harness, weights copied from torch), error messages, and a small
Transformer that learns to reverse sequences."""
import math
import time

import numpy as np
import pytest
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge import nn, optim
from harness import Row, import_torch, make_tests
from layer_harness import LayerRow, make_layer_tests

torch = import_torch()
F = nn.functional
# torch's TransformerEncoder warns that its nested-tensor inference path is off for some configs
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


@pytest.fixture(autouse=True, scope="module")
def _torch_one_thread():
    """torch's thread pool on these tiny tensors is ~10x slower than one thread when the
    machine is busy (measured: 33 s vs 3.5 s for the layer rows at load 6 on 2 cores)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# ---- F.scaled_dot_product_attention: op-harness rows ------------------------------------------
def _dims(min_len=0):
    return st.tuples(st.integers(1, 2), st.integers(min_len, 4), st.integers(min_len, 5),
                     st.integers(1, 4), st.integers(1, 3))


def qkv_shapes(batch=(), heads=None, kv_heads=None, min_len=0):
    """(query, key, value) shapes (*batch, [heads,] L, E), (.., S, E), (.., S, Ev)."""
    def shapes(d):
        B, L, S, E, Ev = d
        b = tuple(B if x == "B" else x for x in batch)
        hq = (heads,) if heads else ()
        hk = (kv_heads or heads,) if heads else ()
        return (b + hq + (L, E), b + hk + (S, E), b + hk + (S, Ev))
    return _dims(min_len).map(shapes)


def with_mask(kind, mask_shape="LS"):
    """Input maker: normal q, k, v plus a mask of shape (L, S) or (B, 1, L, S)."""
    def make(rng, shapes, dtype):
        q, k, v = (rng.standard_normal(s).astype(dtype) for s in shapes)
        L, S = shapes[0][-2], shapes[1][-2]
        ms = (L, S) if mask_shape == "LS" else (shapes[0][0], 1, L, S)
        if kind == "bool":
            m = rng.random(ms) < 0.7
        else:
            m = rng.standard_normal(ms).astype(dtype)
        return [q, k, v, m]
    return make


def sdpa(**kw):
    def fn(lib, q, k, v, *mask):
        f = lib.nn.functional.scaled_dot_product_attention
        return f(q, k, v, attn_mask=mask[0] if mask else None, **kw)
    return fn


SDPA_TABLE = [
    Row("sdpa", sdpa(), shapes=qkv_shapes(("B",)), double=True, max_gradcheck_numel=60),
    Row("sdpa_2d", sdpa(), shapes=qkv_shapes()),
    Row("sdpa_heads", sdpa(), shapes=qkv_shapes(("B",), heads=2)),
    # min length 1: for L = 0 torch 2.13 returns query's batch shape (2, 1, 0, Ev) here instead
    # of the broadcast (2, 3, 0, Ev) that we return
    Row("sdpa_broadcast_batch", sdpa(),
        shapes=_dims(1).map(lambda d: ((2, 1, d[1], d[3]), (1, 3, d[2], d[3]), (d[2], d[4])))),
    Row("sdpa_scale", sdpa(scale=0.3), shapes=qkv_shapes(("B",))),
    Row("sdpa_causal", sdpa(is_causal=True), shapes=qkv_shapes(("B",))),
    Row("sdpa_bool_mask", sdpa(), shapes=qkv_shapes(("B",), heads=2, min_len=1),
        make=with_mask("bool"), max_gradcheck_numel=120),
    Row("sdpa_float_mask", sdpa(), shapes=qkv_shapes(("B",), heads=2, min_len=1),
        make=with_mask("float", "B1LS"), max_gradcheck_numel=120),
    Row("sdpa_gqa", sdpa(enable_gqa=True), shapes=qkv_shapes(("B",), heads=4, kv_heads=2),
        max_gradcheck_numel=120),
]
make_tests(SDPA_TABLE, globals())


def test_sdpa_fully_masked_rows_give_zero_like_torch():
    """PyTorch 2.13's SDPA returns 0 (not nan) for a query whose keys are all masked, with a
    zero gradient; so do we."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3, 4), (2, 5, 4),
                                                                    (2, 5, 6)])
    m = np.ones((3, 5), bool)
    m[1] = False
    outs = []
    for lib in (mte, torch):
        qs = lib.tensor(q, requires_grad=True)
        o = lib.nn.functional.scaled_dot_product_attention(qs, lib.tensor(k), lib.tensor(v),
                                                           attn_mask=lib.tensor(m))
        o.sum().backward()
        outs.append((np.array(o.detach().numpy()), np.array(qs.grad.numpy())))
    (o, g), (to, tg) = outs
    assert np.all(o[:, 1] == 0) and np.all(g[:, 1] == 0)
    np.testing.assert_allclose(o, to, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, tg, rtol=1e-5, atol=1e-6)


def test_sdpa_gradgradcheck_masked():
    """float64 gradcheck and gradgradcheck with a bool mask that blocks one query entirely
    (the safe softmax's zero row) and with a float mask."""
    rng = np.random.default_rng(1)
    q, k, v = (mte.tensor(rng.standard_normal(s), requires_grad=True)
               for s in [(1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3)])
    keep = rng.random((3, 4)) < 0.7
    keep[0] = False
    keep[1:, 0] = True
    bias = mte.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    for f, xs in [(lambda a, b, c: F.scaled_dot_product_attention(
                      a, b, c, attn_mask=mte.tensor(keep)), (q, k, v)),
                  (lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, attn_mask=m),
                   (q, k, v, bias))]:
        assert mte.autograd.gradcheck(f, xs)
        assert mte.autograd.gradgradcheck(f, xs)


def test_mha_functional_gradcheck():
    rng = np.random.default_rng(2)
    x = mte.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)
    w = mte.tensor(rng.standard_normal((12, 4)) * 0.5, requires_grad=True)
    b = mte.tensor(rng.standard_normal(12) * 0.1, requires_grad=True)
    wo = mte.tensor(rng.standard_normal((4, 4)) * 0.5, requires_grad=True)
    kpm = mte.tensor(np.array([[False, False, True], [False, False, False]]))
    for need_weights in (True, False):
        def f(x, w, b, wo):
            out, weights = F.multi_head_attention_forward(
                x, x, x, 4, 2, w, b, None, None, False, 0.0, wo, None,
                key_padding_mask=kpm, need_weights=need_weights)
            return out
        assert mte.autograd.gradcheck(f, (x, w, b, wo))


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_functional_static_kv_zero_attn(need_weights):
    rng = np.random.default_rng(0)
    n, heads, e, s = 2, 2, 8, 5
    arrays = [rng.standard_normal(sh).astype(np.float32) for sh in
              [(3, n, e), (3 * e, e), (3 * e,), (e, e), (n * heads, s, e // heads),
               (n * heads, s, e // heads)]]
    kpm = rng.random((n, s)) < 0.3
    kpm[:, 0] = False
    outs = []
    for lib in (mte, torch):
        x, w, b, wo, sk, sv = (lib.tensor(a) for a in arrays)
        outs.append(lib.nn.functional.multi_head_attention_forward(
            x, x, x, e, heads, w, b, None, None, True, 0.0, wo, None, static_k=sk, static_v=sv,
            key_padding_mask=lib.tensor(kpm), need_weights=need_weights))
    for o, t in zip(*outs):
        if t is None:
            assert o is None
        else:
            torch.testing.assert_close(torch.tensor(o.numpy()), t)


def test_sdpa_dropout():
    rng = np.random.default_rng(0)
    q, k, v = (mte.tensor(rng.standard_normal((2, 4, 3, 8)).astype(np.float32))
               for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v)
    assert np.all(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy() == 0)
    mte.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    mte.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, ref.numpy())


@pytest.mark.parametrize("kwargs, match", [
    (dict(q=(3, 4), k=(5, 3), v=(5, 2)), "same last dim"),
    (dict(q=(3, 4), k=(5, 4), v=(6, 2)), "same sequence length"),
    (dict(q=(4,), k=(4,), v=(4,)), "at least 2-D"),
    (dict(mask=np.ones((3, 4), bool)), r"does not broadcast .* \(3, 5\)"),
    (dict(mask=np.ones((3, 5), np.int64)), "attn_mask dtype"),
    (dict(mask=np.ones((3, 5), bool), is_causal=True), "is_causal"),
    (dict(qdtype=np.float64), "same floating dtype"),
    (dict(dropout_p=1.5), "between 0 and 1"),
])
def test_sdpa_errors(kwargs, match):
    q = mte.zeros(*kwargs.get("q", (3, 4)), dtype=kwargs.get("qdtype", np.float32))
    k = mte.zeros(*kwargs.get("k", (5, 4)))
    v = mte.zeros(*kwargs.get("v", (5, 2)))
    mask = kwargs.get("mask")
    with pytest.raises((RuntimeError, ValueError), match=match):
        F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else
                                       mte.tensor(mask), is_causal=kwargs.get("is_causal", False),
                                       dropout_p=kwargs.get("dropout_p", 0.0))


# ---- MultiheadAttention: layer-harness rows ------------------------------------------------------
E, H, L, S, N = 8, 2, 4, 6, 3


def _seq(rng, length, batch_first=False, e=E, n=N):
    shape = (n, length, e) if batch_first else (length, n, e)
    return rng.standard_normal(shape).astype(np.float32)


def _bool_mask(rng, shape):
    """True = blocked, but never a whole row (that would give nan weights, as in torch)."""
    m = rng.random(shape) < 0.4
    m[..., 0] = False
    return m


def _float_mask(rng, shape):
    return np.where(_bool_mask(rng, shape), -np.inf, rng.standard_normal(shape)).astype(
        np.float32)


def _causal(n):
    return np.triu(np.ones((n, n), bool), 1)


def mha(**kw):
    return lambda nn: nn.MultiheadAttention(E, H, **kw)


def self_inputs(batch_first=False, extra=()):
    def make(rng):
        return [_seq(rng, L, batch_first)] + [f(rng) for f in extra]
    return make


def cross_inputs(batch_first=False, kdim=E, vdim=E, extra=()):
    def make(rng):
        return [_seq(rng, L, batch_first), _seq(rng, S, batch_first, kdim),
                _seq(rng, S, batch_first, vdim)] + [f(rng) for f in extra]
    return make


def call_self(names=(), **kw):
    """m(x, x, x, <mask inputs by name>, **kw)."""
    return lambda m, x, *masks: m(x, x, x, **dict(zip(names, masks)), **kw)


def call_cross(names=(), **kw):
    return lambda m, q, k, v, *masks: m(q, k, v, **dict(zip(names, masks)), **kw)


MHA_TABLE = [
    LayerRow("mha_self", mha(), self_inputs(), call=call_self()),
    LayerRow("mha_self_batch_first", mha(batch_first=True), self_inputs(True),
             call=call_self()),
    LayerRow("mha_self_no_weights", mha(), self_inputs(), call=call_self(need_weights=False)),
    LayerRow("mha_self_per_head_weights", mha(batch_first=True), self_inputs(True),
             call=call_self(average_attn_weights=False)),
    LayerRow("mha_cross", mha(), cross_inputs(), call=call_cross()),
    LayerRow("mha_cross_kv_shared", mha(batch_first=True),
             lambda rng: [_seq(rng, L, True), _seq(rng, S, True)],
             call=lambda m, q, kv: m(q, kv, kv, need_weights=False)),
    LayerRow("mha_cross_batch_first_no_weights", mha(batch_first=True), cross_inputs(True),
             call=call_cross(need_weights=False)),
    LayerRow("mha_kdim_vdim", mha(kdim=5, vdim=3), cross_inputs(kdim=5, vdim=3),
             call=call_cross()),
    LayerRow("mha_kdim_vdim_batch_first", mha(kdim=5, vdim=3, batch_first=True),
             cross_inputs(True, kdim=5, vdim=3), call=call_cross(need_weights=False)),
    LayerRow("mha_unbatched", mha(batch_first=True),
             lambda rng: [rng.standard_normal((L, E)).astype(np.float32)], call=call_self()),
    LayerRow("mha_unbatched_cross_masks", mha(),
             lambda rng: [rng.standard_normal((L, E)).astype(np.float32),
                          rng.standard_normal((S, E)).astype(np.float32),
                          rng.standard_normal((S, E)).astype(np.float32),
                          _bool_mask(rng, (H, L, S)), rng.random(S) < 0.3],
             call=call_cross(("attn_mask", "key_padding_mask"), average_attn_weights=False)),
    LayerRow("mha_no_bias", mha(bias=False), self_inputs(), call=call_self()),
    LayerRow("mha_bias_kv_zero_attn", mha(add_bias_kv=True, add_zero_attn=True),
             cross_inputs(extra=[lambda r: _bool_mask(r, (L, S)),
                                 lambda r: r.random((N, S)) < 0.3]),
             call=call_cross(("attn_mask", "key_padding_mask"))),
    LayerRow("mha_dropout_eval", mha(dropout=0.5), self_inputs(), call=call_self(),
             modes=("eval",)),
    LayerRow("mha_dropout_train", mha(dropout=0.5), self_inputs(), call=call_self(),
             modes=("train",), deterministic=False),
]
for _nw in (True, False):
    _tag = "" if _nw else "_sdpa"
    MHA_TABLE += [
        LayerRow(f"mha_mask2d_bool{_tag}", mha(),
                 cross_inputs(extra=[lambda r: _bool_mask(r, (L, S))]),
                 call=call_cross(("attn_mask",), need_weights=_nw)),
        LayerRow(f"mha_mask2d_float{_tag}", mha(batch_first=True),
                 cross_inputs(True, extra=[lambda r: _float_mask(r, (L, S))]),
                 call=call_cross(("attn_mask",), need_weights=_nw), grad_inputs=(0, 1, 2)),
        LayerRow(f"mha_mask3d_bool{_tag}", mha(),
                 self_inputs(extra=[lambda r: _bool_mask(r, (N * H, L, L))]),
                 call=call_self(("attn_mask",), need_weights=_nw)),
        LayerRow(f"mha_mask3d_float{_tag}", mha(),
                 self_inputs(extra=[lambda r: _float_mask(r, (N * H, L, L))]),
                 call=call_self(("attn_mask",), need_weights=_nw), grad_inputs=(0,)),
        LayerRow(f"mha_key_padding_bool{_tag}", mha(),
                 cross_inputs(extra=[lambda r: _bool_mask(r, (N, S))]),
                 call=call_cross(("key_padding_mask",), need_weights=_nw)),
        LayerRow(f"mha_key_padding_float{_tag}", mha(batch_first=True),
                 cross_inputs(True, extra=[lambda r: _float_mask(r, (N, S))]),
                 call=call_cross(("key_padding_mask",), need_weights=_nw),
                 grad_inputs=(0, 1, 2)),
        LayerRow(f"mha_both_masks{_tag}", mha(),
                 cross_inputs(extra=[lambda r: _bool_mask(r, (N * H, L, S)),
                                     lambda r: _bool_mask(r, (N, S))]),
                 call=call_cross(("attn_mask", "key_padding_mask"), need_weights=_nw)),
        LayerRow(f"mha_is_causal{_tag}", mha(batch_first=True),
                 self_inputs(True, extra=[lambda r: _causal(L)]),
                 call=call_self(("attn_mask",), is_causal=True, need_weights=_nw)),
        LayerRow(f"mha_is_causal_padding{_tag}", mha(),
                 self_inputs(extra=[lambda r: _causal(L), lambda r: _bool_mask(r, (N, L))]),
                 call=call_self(("attn_mask", "key_padding_mask"), is_causal=True,
                                need_weights=_nw)),
    ]


# ---- AttentionLayer (no torch twin): compare with torch MHA + LayerNorm composed by hand --------
class TorchAttentionLayer(torch.nn.Module):
    """y = x + dropout(MHA(LayerNorm(x))) written with torch modules (the reference)."""

    def __init__(self, d_model, num_heads, dropout=0.0, causal=False, batch_first=True):
        super().__init__()
        self.causal = causal
        self.norm = torch.nn.LayerNorm(d_model)
        self.attn = torch.nn.MultiheadAttention(d_model, num_heads, dropout=dropout,
                                                batch_first=batch_first)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x, key_padding_mask=None, attn_mask=None):
        h = self.norm(x)
        if self.causal:
            n = x.shape[1 if self.attn.batch_first and x.dim() == 3 else 0]
            causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
            if attn_mask is None:
                attn_mask = causal
            elif attn_mask.dtype == torch.bool:
                attn_mask = attn_mask | causal
            else:
                attn_mask = attn_mask.masked_fill(causal, float("-inf"))
        out = self.attn(h, h, h, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                        need_weights=False)[0]
        return x + self.dropout(out)


def attention_layer(**kw):
    def build(lib_nn):
        if lib_nn is torch.nn:
            return TorchAttentionLayer(E, H, **kw)
        return lib_nn.AttentionLayer(E, H, **kw)
    return build


MHA_TABLE += [
    LayerRow("attention_layer", attention_layer(), self_inputs(True)),
    LayerRow("attention_layer_causal", attention_layer(causal=True), self_inputs(True)),
    LayerRow("attention_layer_causal_masks", attention_layer(causal=True),
             self_inputs(True, extra=[lambda r: _bool_mask(r, (N, L)),
                                      lambda r: _bool_mask(r, (L, L))]),
             call=lambda m, x, kpm, am: m(x, key_padding_mask=kpm, attn_mask=am)),
    LayerRow("attention_layer_causal_float_mask", attention_layer(causal=True),
             self_inputs(True, extra=[lambda r: _float_mask(r, (L, L))]),
             call=lambda m, x, am: m(x, attn_mask=am), grad_inputs=(0,)),
    LayerRow("attention_layer_seq_first", attention_layer(batch_first=False), self_inputs()),
]


# ---- Transformer layers and stacks -------------------------------------------------------------
D, NH, FF = 16, 2, 24


def enc_layer(nn_, **kw):
    kw.setdefault("dropout", 0.0)
    return nn_.TransformerEncoderLayer(D, NH, dim_feedforward=FF, **kw)


def dec_layer(nn_, **kw):
    kw.setdefault("dropout", 0.0)
    return nn_.TransformerDecoderLayer(D, NH, dim_feedforward=FF, **kw)


def src_inputs(length=L, batch_first=False, extra=()):
    return lambda rng: [_seq(rng, length, batch_first, D)] + [f(rng) for f in extra]


def dec_inputs(batch_first=False, extra=()):
    return lambda rng: [_seq(rng, L, batch_first, D), _seq(rng, S, batch_first, D)] + \
        [f(rng) for f in extra]


TRANSFORMER_TABLE = []
for _nf in (False, True):
    _t = "_pre" if _nf else "_post"
    TRANSFORMER_TABLE += [
        LayerRow(f"enc_layer{_t}", lambda nn_, nf=_nf: enc_layer(nn_, norm_first=nf),
                 src_inputs()),
        LayerRow(f"enc_layer_gelu_batch_first{_t}",
                 lambda nn_, nf=_nf: enc_layer(nn_, norm_first=nf, activation="gelu",
                                               batch_first=True),
                 src_inputs(batch_first=True, extra=[lambda r: _causal(L),
                                                     lambda r: _bool_mask(r, (N, L))]),
                 call=lambda m, x, am, kpm: m(x, src_mask=am, src_key_padding_mask=kpm)),
        LayerRow(f"enc_layer_causal{_t}", lambda nn_, nf=_nf: enc_layer(nn_, norm_first=nf),
                 src_inputs(extra=[lambda r: _causal(L)]),
                 call=lambda m, x, am: m(x, src_mask=am, is_causal=True)),
        LayerRow(f"enc_layer_dropout_eval{_t}",
                 lambda nn_, nf=_nf: enc_layer(nn_, norm_first=nf, dropout=0.3),
                 src_inputs(), modes=("eval",)),
        LayerRow(f"dec_layer{_t}", lambda nn_, nf=_nf: dec_layer(nn_, norm_first=nf),
                 dec_inputs()),
        LayerRow(f"dec_layer_masks{_t}",
                 lambda nn_, nf=_nf: dec_layer(nn_, norm_first=nf, activation="gelu",
                                               batch_first=True),
                 dec_inputs(True, extra=[lambda r: _causal(L), lambda r: _bool_mask(r, (L, S)),
                                         lambda r: _bool_mask(r, (N, L)),
                                         lambda r: _bool_mask(r, (N, S))]),
                 call=lambda m, t, mem, tm, mm, tk, mk: m(
                     t, mem, tgt_mask=tm, memory_mask=mm, tgt_key_padding_mask=tk,
                     memory_key_padding_mask=mk)),
    ]

TRANSFORMER_TABLE += [
    LayerRow("enc_layer_callable_activation",
             lambda nn_: enc_layer(nn_, activation=nn_.functional.silu), src_inputs()),
    LayerRow("enc_layer_no_bias", lambda nn_: enc_layer(nn_, bias=False), src_inputs()),
    LayerRow("enc_layer_unbatched", lambda nn_: enc_layer(nn_, batch_first=True),
             lambda rng: [rng.standard_normal((L, D)).astype(np.float32)]),
    LayerRow("encoder_stack_masks",
             lambda nn_: nn_.TransformerEncoder(enc_layer(nn_), 2, norm=nn_.LayerNorm(D),
                                                enable_nested_tensor=False),
             src_inputs(extra=[lambda r: np.where(_causal(L), -np.inf, 0).astype(np.float32),
                               lambda r: _float_mask(r, (N, L))]),
             call=lambda m, x, am, kpm: m(x, mask=am, src_key_padding_mask=kpm),
             grad_inputs=(0,)),
    LayerRow("encoder_stack_causal_detected",
             lambda nn_: nn_.TransformerEncoder(enc_layer(nn_, norm_first=True,
                                                          batch_first=True), 2,
                                                enable_nested_tensor=False),
             src_inputs(batch_first=True, extra=[lambda r: np.where(
                 _causal(L), -np.inf, 0).astype(np.float32)]),
             call=lambda m, x, am: m(x, mask=am), grad_inputs=(0,)),
    LayerRow("decoder_stack_masks",
             lambda nn_: nn_.TransformerDecoder(dec_layer(nn_), 2, norm=nn_.LayerNorm(D)),
             dec_inputs(extra=[lambda r: np.where(_causal(L), -np.inf, 0).astype(np.float32),
                               lambda r: _bool_mask(r, (N, S))]),
             call=lambda m, t, mem, tm, mk: m(t, mem, tgt_mask=tm, memory_key_padding_mask=mk),
             grad_inputs=(0, 1)),
    LayerRow("transformer",
             lambda nn_: nn_.Transformer(D, NH, 1, 1, FF, dropout=0.0, batch_first=True),
             lambda rng: [_seq(rng, S, True, D), _seq(rng, L, True, D), _causal(L)],
             call=lambda m, src, tgt, tm: m(src, tgt, tgt_mask=tm)),
]

make_layer_tests(MHA_TABLE + TRANSFORMER_TABLE, globals())


# ---- plain tests: fully masked rows, init, structure ---------------------------------------------
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_fully_masked_rows_like_torch(need_weights):
    """need_weights=True: nan (plain softmax), need_weights=False: 0 (SDPA), both as torch."""
    rng = np.random.default_rng(0)
    x = _seq(rng, L, True)
    kpm = np.zeros((N, L), bool)
    kpm[0] = True
    theirs = torch.nn.MultiheadAttention(E, H, batch_first=True)
    ours = nn.MultiheadAttention(E, H, batch_first=True)
    ours.load_state_dict({k: mte.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    o_out, o_w = ours(*[mte.tensor(x)] * 3, key_padding_mask=mte.tensor(kpm),
                      need_weights=need_weights)
    t_out, t_w = theirs(*[torch.tensor(x)] * 3, key_padding_mask=torch.tensor(kpm),
                        need_weights=need_weights)
    torch.testing.assert_close(torch.tensor(o_out.detach().numpy()), t_out.detach(),
                               equal_nan=True)
    assert np.isnan(o_out.detach().numpy()[0]).all() == need_weights
    if need_weights:
        torch.testing.assert_close(torch.tensor(o_w.detach().numpy()), t_w.detach(),
                                   equal_nan=True)
    else:
        assert o_w is None and t_w is None


def test_mha_init_and_repr():
    mte.manual_seed(0)
    m = nn.MultiheadAttention(64, 4)
    t = torch.nn.MultiheadAttention(64, 4)
    assert list(m.state_dict()) == list(t.state_dict())
    assert repr(m) == repr(t)
    w = m.in_proj_weight.detach().numpy()
    bound = math.sqrt(6 / (64 + 192))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    assert m.head_dim == 16 and m._qkv_same_embed_dim
    sep = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, bias=False)
    tsep = torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, bias=False)
    assert [(k, tuple(v.shape)) for k, v in sep.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tsep.state_dict().items()]
    assert sep.in_proj_weight is None and sep.in_proj_bias is None


def test_transformer_state_dict_keys_match_torch():
    pairs = [
        (lambda nn_: enc_layer(nn_), None),
        (lambda nn_: dec_layer(nn_, bias=False), None),
        (lambda nn_: nn_.TransformerEncoder(enc_layer(nn_), 3, nn_.LayerNorm(D),
                                            enable_nested_tensor=False), None),
        (lambda nn_: nn_.Transformer(D, NH, 2, 1, FF), None),
    ]
    for build, _ in pairs:
        ours, theirs = build(nn), build(torch.nn)
        assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]


def test_encoder_deep_copies_layers():
    layer = enc_layer(nn)
    enc = nn.TransformerEncoder(layer, 2)
    a, b = enc.layers[0], enc.layers[1]
    assert a is not layer and a is not b
    assert a.linear1.weight is not b.linear1.weight
    np.testing.assert_array_equal(a.linear1.weight.detach().numpy(),
                                  layer.linear1.weight.detach().numpy())
    with mte.no_grad():
        a.linear1.weight.add_(1.0)
    assert not np.allclose(a.linear1.weight.detach().numpy(), b.linear1.weight.detach().numpy())
    assert isinstance(a.self_attn.in_proj_weight, nn.Parameter)
    assert a.self_attn.in_proj_weight.requires_grad
    assert len(list(enc.parameters())) == 2 * len(list(layer.parameters()))


def test_generate_square_subsequent_mask():
    ours = nn.Transformer.generate_square_subsequent_mask(5)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(5)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == mte.float32
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=mte.float64).dtype == \
        mte.float64


def test_transformer_xavier_init():
    mte.manual_seed(0)
    model = nn.Transformer(32, 2, 1, 1, 64)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()          # (64, 32)
    bound = math.sqrt(6 / (64 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound


# ---- errors ------------------------------------------------------------------------------------
def _mha_call(q_shape=(4, 4, 8), k_shape=(6, 4, 8), **kw):
    m = nn.MultiheadAttention(8, 2)
    q, k = mte.zeros(*q_shape), mte.zeros(*k_shape)
    return m(q, k, k, **kw)


def test_mha_attn_mask_shape_error():
    with pytest.raises(RuntimeError, match=re_escape(
            "MultiheadAttention: attn_mask should have shape (4, 6) or (8, 4, 6), got (4, 5)")):
        _mha_call(attn_mask=mte.zeros(4, 5, dtype=mte.bool))
    with pytest.raises(RuntimeError, match=r"\(8, 4, 6\), got \(2, 4, 6\)"):
        _mha_call(attn_mask=mte.zeros(2, 4, 6))
    with pytest.raises(RuntimeError, match=r"got \(1, 1, 4, 6\)"):
        _mha_call(attn_mask=mte.zeros(1, 1, 4, 6))
    with pytest.raises(RuntimeError, match=r"\(4, 6\) or \(2, 4, 6\), got \(4, 4, 6\)"):
        _mha_call((4, 8), (6, 8), attn_mask=mte.zeros(4, 4, 6))


def re_escape(text):
    import re
    return re.escape(text)


@pytest.mark.parametrize("kw, err, match", [
    (dict(key_padding_mask=mte.zeros(4, 5, dtype=mte.bool)), RuntimeError,
     r"key_padding_mask should have shape \(4, 6\), got \(4, 5\)"),
    (dict(q_shape=(4, 8), k_shape=(6, 8), key_padding_mask=mte.zeros(1, 6, dtype=mte.bool)),
     RuntimeError, r"key_padding_mask should have shape \(6,\), got \(1, 6\)"),
    (dict(attn_mask=mte.zeros(4, 6, dtype=mte.int64)), RuntimeError,
     "only bool and floating types of attn_mask"),
    (dict(key_padding_mask=mte.zeros(4, 6, dtype=mte.int64)), RuntimeError,
     "only bool and floating types of key_padding_mask"),
    (dict(is_causal=True), RuntimeError, "need attn_mask if specifying the is_causal hint"),
    (dict(q_shape=(2, 4, 4, 8)), ValueError, r"2-D \(L, E\) or batched 3-D"),
    (dict(k_shape=(6, 8)), ValueError, r"expected 3-D key and value"),
    (dict(q_shape=(4, 4, 7)), ValueError, "embedding dim 8"),
    (dict(k_shape=(6, 3, 8)), ValueError, "different batch sizes"),
])
def test_mha_errors(kw, err, match):
    with pytest.raises(err, match=match):
        _mha_call(**kw)


def test_mha_constructor_errors():
    with pytest.raises(ValueError, match=r"embed_dim \(10\) must be divisible by num_heads \(4\)"):
        nn.MultiheadAttention(10, 4)
    with pytest.raises(ValueError, match="greater than 0"):
        nn.MultiheadAttention(0, 1)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 0)


def test_transformer_errors():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        model(mte.zeros(5, 2, 8), mte.zeros(4, 3, 8))
    with pytest.raises(RuntimeError, match="equal to d_model=8"):
        model(mte.zeros(5, 2, 8), mte.zeros(4, 2, 6))
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    with pytest.raises(RuntimeError,
                       match=r"TransformerEncoderLayer: expected src .* got \(5, 2, 6\)"):
        layer(mte.zeros(5, 2, 6))


# ---- training: a small Transformer learns to sort sequences -------------------------------------
class Sorter(nn.Module):
    """Embedding + learned positions -> TransformerEncoder (2 layers, 2 heads) -> Linear."""

    def __init__(self, vocab, length, d_model=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(mte.randn(length, d_model) * 0.1)
        layer = nn.TransformerEncoderLayer(d_model, 2, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.pos))


def test_transformer_learns_to_sort():
    """Sequences of 8 tokens from a vocabulary of 10 -> the same tokens sorted; each output
    position must find its rank among all inputs, so attention has to do the work. The learning
    rate anneals to 0 (cosine) so that the last steps settle the model instead of leaving it
    wherever Adam's last jump put it."""
    vocab, length, batch = 10, 8, 64
    mte.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Sorter(vocab, length)
    opt = optim.Adam(model.parameters(), lr=3e-3)
    schedule = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=300)
    start = time.perf_counter()
    for _ in range(300):
        x = rng.integers(0, vocab, (batch, length))
        logits = model(mte.tensor(x))
        loss = F.cross_entropy(logits.reshape(-1, vocab), mte.tensor(np.sort(x, -1).reshape(-1)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
    model.eval()
    x = rng.integers(0, vocab, (512, length))
    with mte.no_grad():
        pred = model(mte.tensor(x)).numpy().argmax(-1)
    acc = (pred == np.sort(x, -1)).mean()
    assert acc >= 0.95, f"token accuracy {acc:.3f} after {time.perf_counter() - start:.1f}s"
