"""The half-precision fast paths of the autocast training step, each against its reference:

* relu and its gradient mask on the bits of bfloat16 / float16 (dtypes.half_relu,
  half_masked) equal numpy's float32 maximum / select, rounded, for every one of the 65,536
  bit patterns (nan, +-0, +-inf, subnormals) and for hypothesis-drawn arrays;
* the fused attention on bfloat16 / float16 q, k, v (native, widened pair by pair) against
  the numpy twin (widened to float32 as a whole), forward and backward, on the packed,
  strided views self-attention hands it;
* Linear's half bias gradient (a ones-row GEMM) against the float32 column sum, rounded;
* a TransformerEncoderLayer step under bf16 autocast: output dtype and gradients against
  PyTorch's autocast, float32 gradients on the float32 parameters.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minitorch_edge as mte
from minitorch_edge import backend, dtypes as _dt
from minitorch_edge.backend import numpy_transformer as twin

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALVES = [BF16, F16]
HALF_IDS = ["bfloat16", "float16"]


def _all_bits(dt):
    return np.arange(65536, dtype=np.uint32).astype(np.uint16).view(dt)


def _relu_ref(x):
    """numpy's float32 relu and mask, rounded back: what the op computed before."""
    x32 = x.astype(np.float32)
    with np.errstate(invalid="ignore"):
        return np.maximum(x32, np.float32(0)).astype(x.dtype), x32 > 0


def _same_bits_or_nan(got, want):
    g, w = got.astype(np.float32), want.astype(np.float32)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan)
    assert np.array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


# ---- relu on the bits --------------------------------------------------------------------------
@pytest.mark.parametrize("dt", HALVES, ids=HALF_IDS)
def test_half_relu_every_bit_pattern(dt):
    x = _all_bits(dt)
    y, mask = _dt.half_relu(x, True)
    want, want_mask = _relu_ref(x)
    assert y.dtype == dt
    _same_bits_or_nan(y, want)
    assert np.array_equal(mask, want_mask)
    assert _dt.half_relu(x, False)[1] is None


@pytest.mark.parametrize("dt", HALVES, ids=HALF_IDS)
def test_half_masked_equals_float32_select(dt):
    g = np.random.default_rng(1).standard_normal(65536).astype(dt)
    g[::97] = np.nan
    mask = _all_bits(dt).astype(np.float32) > 0
    want = np.where(mask, g.astype(np.float32), 0).astype(dt)
    _same_bits_or_nan(_dt.half_masked(g, mask), want)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 65535), min_size=1, max_size=300), st.sampled_from(HALVES))
def test_half_relu_hypothesis(bits, dt):
    x = np.array(bits, np.uint16).view(dt).reshape(-1, 1)
    y, mask = _dt.half_relu(x, True)
    want, want_mask = _relu_ref(x)
    _same_bits_or_nan(y, want)
    assert np.array_equal(mask, want_mask)


@pytest.mark.parametrize("dt", [mte.bfloat16, mte.float16], ids=HALF_IDS)
def test_relu_tensor_half_gradient(dt):
    x = mte.tensor(np.random.default_rng(2).standard_normal((4, 33)).astype(np.float32),
                   requires_grad=True)
    h = x.to(dt)
    y = mte.relu(h)
    assert y.dtype == dt
    g = np.random.default_rng(3).standard_normal((4, 33)).astype(dt.np)
    y.backward(mte.tensor(g))
    xr = x.detach().numpy().astype(dt.np).astype(np.float32)
    np.testing.assert_array_equal(y.detach().numpy().astype(np.float32), np.maximum(xr, 0))
    want = np.where(xr > 0, g.astype(np.float32), 0)
    assert x.grad.dtype == mte.float32
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_relu_half_double_backward_still_recorded():
    """create_graph=True keeps the Tensor-op gradient (the bit path is only for arrays)."""
    x = mte.tensor(np.linspace(-1, 1, 8, dtype=np.float32), requires_grad=True)
    y = mte.relu(x.to(mte.bfloat16)) * x.to(mte.bfloat16)
    g, = mte.autograd.grad(y.sum(), x, create_graph=True)
    assert g.requires_grad


# ---- attention on half views -------------------------------------------------------------------
def _packed(dt, B, L, H, hd, seed):
    """A (B, L, 3E) projection as self-attention holds it, and its q, k, v head views."""
    E = H * hd
    a = np.random.default_rng(seed).standard_normal((B, L, 3 * E)).astype(dt)
    views = [a.reshape(B, L, 3, H, hd)[:, :, i].transpose(0, 2, 1, 3) for i in range(3)]
    return a, views


@pytest.mark.parametrize("dt", HALVES, ids=HALF_IDS)
@pytest.mark.parametrize("masked,causal", [(False, False), (True, False), (False, True)])
def test_half_attention_matches_twin(dt, masked, causal):
    B, L, H, hd = 2, 13, 3, 8
    _, (q, k, v) = _packed(dt, B, L, H, hd, 4)
    mask = None
    if masked:
        mask = np.where(np.random.default_rng(5).random((B, 1, 1, L)) < 0.3, -np.inf,
                        0).astype(np.float32)
        mask[..., 0] = 0
        mask = np.broadcast_to(mask, (B, H, L, L))
    scale = hd ** -0.5
    out = np.empty((B, L, H * hd), dt)
    got, p = backend.attention(q, k, v, mask, scale, causal,
                               out=out.reshape(B, L, H, hd).transpose(0, 2, 1, 3))
    want, pw = twin.attention(q, k, v, mask, scale, causal)
    assert got.dtype == dt and p.dtype == np.float32
    # float32 results of the same widened values (sums in another order), each rounded once
    tol = dict(rtol=2 ** -7 if dt == BF16 else 2 ** -10, atol=1e-5)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), **tol)
    np.testing.assert_allclose(p, pw, rtol=1e-5, atol=1e-6)
    dout = np.random.default_rng(6).standard_normal(got.shape).astype(dt)
    d = np.empty((B, L, 3 * H * hd), dt)
    dv = [d.reshape(B, L, 3, H, hd)[:, :, i].transpose(0, 2, 1, 3) for i in range(3)]
    grads = backend.attention_backward(q, k, v, p, dout, scale, *dv)
    wants = twin.attention_backward(q, k, v, pw, dout, scale)
    for g, w in zip(grads, wants):
        assert g.dtype == dt
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32),
                                   rtol=tol["rtol"], atol=2e-3)


def test_half_attention_refuses_mixed_dtypes():
    _, (q, k, v) = _packed(BF16, 1, 4, 1, 4, 7)
    if not hasattr(mte._C, "attention"):
        pytest.skip("native attention not built")
    out = np.empty((1, 1, 4, 4), np.float32)
    with pytest.raises(TypeError, match="out must have dtype bfloat16"):
        mte._C.attention(q, k, v, None, out, np.empty((1, 1, 4, 4), np.float32), 0.5, False)


# ---- Linear's half bias gradient ---------------------------------------------------------------
@pytest.mark.parametrize("dt", [mte.bfloat16, mte.float16], ids=HALF_IDS)
def test_linear_half_bias_grad(dt):
    rng = np.random.default_rng(8)
    x = mte.tensor(rng.standard_normal((3, 70, 16)).astype(dt.np))
    w = mte.tensor(rng.standard_normal((24, 16)).astype(dt.np), requires_grad=True)
    b = mte.tensor(rng.standard_normal(24).astype(dt.np), requires_grad=True)
    g = rng.standard_normal((3, 70, 24)).astype(dt.np)
    mte.nn.functional.linear(x, w, b).backward(mte.tensor(g))
    want = g.astype(np.float32).reshape(-1, 24).sum(0)
    assert b.grad.dtype == dt
    np.testing.assert_allclose(b.grad.numpy().astype(np.float32), want,
                               rtol=2 ** -7, atol=1e-4)


# ---- a Transformer layer step under autocast, against PyTorch ----------------------------------
def test_encoder_layer_autocast_against_torch():
    torch = pytest.importorskip("torch") if not os.environ.get("MTE_REQUIRE_TORCH") else \
        __import__("torch")
    from minitorch_edge import nn
    mte.manual_seed(0)
    d, H, ff = 32, 4, 64
    ours = nn.TransformerEncoderLayer(d, H, ff, dropout=0.0, batch_first=True, norm_first=True)
    theirs = torch.nn.TransformerEncoderLayer(d, H, ff, 0.0, batch_first=True, norm_first=True)
    with torch.no_grad():
        for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert tuple(p.shape) == tuple(tp.shape), (name, tname)
            tp.copy_(torch.from_numpy(p.detach().numpy().copy()))
    x = np.random.default_rng(9).standard_normal((2, 10, d)).astype(np.float32)
    with mte.autocast("cpu", dtype=mte.bfloat16):
        y = ours(mte.tensor(x))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = theirs(torch.from_numpy(x))
    assert str(y.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1]
    np.testing.assert_allclose(y.detach().float().numpy(), ty.detach().float().numpy(),
                               rtol=0.05, atol=0.05)
    y.float().square().sum().backward()
    ty.float().square().sum().backward()
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert p.grad.dtype == mte.float32, name
        want = tp.grad.numpy()
        err = np.abs(p.grad.numpy() - want).max() / (np.abs(want).max() + 1e-6)
        assert err < 0.05, (name, err)
