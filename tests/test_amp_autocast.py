"""autocast against PyTorch's CPU autocast: a table of ops whose output dtype (and values, within
the format's rounding) must equal torch's, under bfloat16 and float16; then the region
semantics (nesting, enabled=False, decorator, the cast cache, gradients in the parameters'
dtype, the spellings cpu.amp / cuda.amp / amp, bad dtypes and devices)."""
import warnings

import numpy as np
import pytest

from harness import import_torch

import minitorch_edge as mte
import minitorch_edge.nn.functional as mF
from minitorch_edge import _autocast

torch = import_torch()
import torch.nn.functional as tF  # noqa: E402


def _maker(L, seed=0):
    """mk(shape, kind): a tensor of library L from a seeded rng (same values for both libs)."""
    rng = np.random.default_rng(seed)

    def mk(*shape, kind="normal", dtype="float32", grad=False):
        if kind == "normal":
            a = rng.standard_normal(shape)
        elif kind == "positive":
            a = np.abs(rng.standard_normal(shape)) + 0.5
        elif kind == "unit":
            a = rng.uniform(0.05, 0.95, shape)
        elif kind == "sign":
            a = np.where(rng.standard_normal(shape) > 0, 1.0, -1.0)
        elif kind == "spd":
            m = rng.standard_normal(shape)
            a = m @ m.T + shape[0] * np.eye(shape[0])
        elif kind.startswith("int"):
            a = rng.integers(0, int(kind[3:]), shape)
            return L.tensor(a.astype(np.int64))
        t = L.tensor(a.astype(np.float32)).to(getattr(L, dtype))
        return t.requires_grad_() if grad else t
    return mk


# each case: fn(L, F, mk) -> Tensor, written once for both libraries
CASES = {
    # lower precision
    "linear": lambda L, F, mk: F.linear(mk(3, 4), mk(5, 4), mk(5)),
    "matmul": lambda L, F, mk: L.matmul(mk(2, 3, 4), mk(4, 5)),
    "matmul_op": lambda L, F, mk: mk(3, 4) @ mk(4, 2),
    "mm": lambda L, F, mk: L.mm(mk(3, 4), mk(4, 5)),
    "bmm": lambda L, F, mk: L.bmm(mk(2, 3, 4), mk(2, 4, 5)),
    "addmm": lambda L, F, mk: L.addmm(mk(3, 5), mk(3, 4), mk(4, 5)),
    "baddbmm": lambda L, F, mk: L.baddbmm(mk(2, 3, 5), mk(2, 3, 4), mk(2, 4, 5)),
    "mv": lambda L, F, mk: L.mv(mk(3, 4), mk(4)),
    "dot": lambda L, F, mk: L.dot(mk(4), mk(4)),
    "einsum": lambda L, F, mk: L.einsum("bij,bjk->bik", mk(2, 3, 4), mk(2, 4, 5)),
    "tensordot": lambda L, F, mk: L.tensordot(mk(3, 4), mk(4, 5), dims=1),
    "conv1d": lambda L, F, mk: F.conv1d(mk(2, 3, 8), mk(4, 3, 3), mk(4)),
    "conv2d": lambda L, F, mk: F.conv2d(mk(2, 3, 6, 6), mk(4, 3, 3, 3), mk(4), padding=1),
    "conv_transpose2d": lambda L, F, mk: F.conv_transpose2d(mk(1, 3, 4, 4), mk(3, 2, 3, 3)),
    "conv_transpose1d": lambda L, F, mk: F.conv_transpose1d(mk(1, 3, 5), mk(3, 2, 3)),
    "prelu": lambda L, F, mk: F.prelu(mk(2, 3, 4), mk(3)),
    "sdpa": lambda L, F, mk: F.scaled_dot_product_attention(mk(2, 4, 8), mk(2, 4, 8),
                                                            mk(2, 4, 8)),
    "vecdot": lambda L, F, mk: L.linalg.vecdot(mk(3, 4), mk(3, 4)),
    # float32
    "cross_entropy": lambda L, F, mk: F.cross_entropy(mk(4, 5, dtype="bfloat16"),
                                                      mk(4, kind="int5")),
    "cross_entropy_smooth": lambda L, F, mk: F.cross_entropy(
        F.linear(mk(4, 3), mk(5, 3)), mk(4, kind="int5"), label_smoothing=0.1),
    "nll_loss": lambda L, F, mk: F.nll_loss(F.linear(mk(4, 3), mk(5, 3)), mk(4, kind="int5")),
    "mse_loss": lambda L, F, mk: F.mse_loss(F.linear(mk(4, 3), mk(5, 3)), mk(4, 5)),
    "l1_loss": lambda L, F, mk: F.l1_loss(F.linear(mk(4, 3), mk(5, 3)), mk(4, 5)),
    "smooth_l1_loss": lambda L, F, mk: F.smooth_l1_loss(mk(4, 5, dtype="bfloat16"), mk(4, 5)),
    "huber_loss": lambda L, F, mk: F.huber_loss(mk(4, 5, dtype="bfloat16"), mk(4, 5)),
    "kl_div": lambda L, F, mk: F.kl_div(mk(4, 5, dtype="bfloat16"), mk(4, 5, kind="unit"),
                                        reduction="batchmean"),
    "bce_with_logits": lambda L, F, mk: F.binary_cross_entropy_with_logits(
        mk(4, 5, dtype="bfloat16"), mk(4, 5, kind="unit")),
    "bce": lambda L, F, mk: F.binary_cross_entropy(mk(4, 5, kind="unit", dtype="bfloat16"),
                                                   mk(4, 5, kind="unit")),
    "soft_margin_loss": lambda L, F, mk: F.soft_margin_loss(mk(4, 5, dtype="bfloat16"),
                                                            mk(4, 5, kind="sign")),
    "poisson_nll_loss": lambda L, F, mk: F.poisson_nll_loss(mk(4, 5, dtype="bfloat16"),
                                                            mk(4, 5, kind="positive")),
    "margin_ranking_loss": lambda L, F, mk: F.margin_ranking_loss(
        mk(6, dtype="bfloat16"), mk(6), mk(6, kind="sign")),
    "hinge_embedding_loss": lambda L, F, mk: F.hinge_embedding_loss(
        mk(6, dtype="bfloat16"), mk(6, kind="sign")),
    "cosine_embedding_loss": lambda L, F, mk: F.cosine_embedding_loss(
        mk(3, 5, dtype="bfloat16"), mk(3, 5), mk(3, kind="sign")),
    "triplet_margin_loss": lambda L, F, mk: F.triplet_margin_loss(
        mk(3, 5, dtype="bfloat16"), mk(3, 5), mk(3, 5)),
    "multi_margin_loss": lambda L, F, mk: F.multi_margin_loss(mk(4, 5, dtype="bfloat16"),
                                                              mk(4, kind="int5")),
    "prod": lambda L, F, mk: L.prod(mk(3, 4, dtype="bfloat16"), dim=1),
    "cdist": lambda L, F, mk: L.cdist(mk(3, 4, dtype="bfloat16"), mk(5, 4)),
    "trace": lambda L, F, mk: L.trace(mk(4, 4, dtype="bfloat16")),
    "linalg_inv": lambda L, F, mk: L.linalg.inv(mk(3, 3, kind="spd", dtype="bfloat16")),
    "linalg_solve": lambda L, F, mk: L.linalg.solve(mk(3, 3, kind="spd", dtype="bfloat16"),
                                                    mk(3, 2)),
    "linalg_eigvalsh": lambda L, F, mk: L.linalg.eigvalsh(mk(3, 3, kind="spd",
                                                             dtype="bfloat16")),
    "linalg_svdvals": lambda L, F, mk: L.linalg.svdvals(mk(3, 3, kind="spd", dtype="bfloat16")),
    "pad_reflect1d": lambda L, F, mk: F.pad(mk(1, 2, 5, dtype="bfloat16"), (2, 1),
                                            mode="reflect"),
    "pad_reflect2d": lambda L, F, mk: F.pad(mk(1, 2, 5, 5, dtype="bfloat16"), (1, 1, 2, 0),
                                            mode="reflect"),
    "pad_reflect3d": lambda L, F, mk: F.pad(mk(1, 1, 4, 4, 4, dtype="bfloat16"),
                                            (1, 1, 1, 1, 1, 1), mode="reflect"),
    "pad_replicate2d": lambda L, F, mk: F.pad(mk(1, 2, 5, 5, dtype="bfloat16"), (1, 2, 1, 0),
                                              mode="replicate"),
    "pad_replicate3d": lambda L, F, mk: F.pad(mk(1, 1, 3, 3, 3, dtype="bfloat16"),
                                              (1, 1, 1, 1, 1, 1), mode="replicate"),
    "pad_circular": lambda L, F, mk: F.pad(mk(1, 2, 5, dtype="bfloat16"), (1, 1),
                                           mode="circular"),
    "pad_constant": lambda L, F, mk: F.pad(mk(1, 2, 5, dtype="bfloat16"), (1, 1)),
    # promote
    "cat": lambda L, F, mk: L.cat([mk(2, 3, dtype="bfloat16"), mk(2, 3)]),
    "cat_low": lambda L, F, mk: L.cat([mk(2, 3, dtype="bfloat16"), mk(2, 3, dtype="bfloat16")]),
    "stack": lambda L, F, mk: L.stack([mk(2, 3, dtype="bfloat16"), mk(2, 3)]),
    "index_copy": lambda L, F, mk: L.index_copy(mk(4, 3, dtype="bfloat16"), 0,
                                                L.tensor([0, 2]), mk(2, 3)),
    # not listed: run in their inputs' dtype (softmax and layer_norm keep bf16 on CPU)
    "softmax": lambda L, F, mk: F.softmax(F.linear(mk(3, 4), mk(5, 4)), dim=-1),
    "log_softmax": lambda L, F, mk: F.log_softmax(F.linear(mk(3, 4), mk(5, 4)), dim=-1),
    "layer_norm": lambda L, F, mk: F.layer_norm(F.linear(mk(3, 4), mk(5, 4)), (5,), mk(5),
                                                mk(5)),
    "gelu": lambda L, F, mk: F.gelu(F.linear(mk(3, 4), mk(5, 4))),
    "relu": lambda L, F, mk: F.relu(F.linear(mk(3, 4), mk(5, 4))),
    "add_mixed": lambda L, F, mk: F.linear(mk(3, 4), mk(5, 4)) + mk(3, 5),
    "sum": lambda L, F, mk: F.linear(mk(3, 4), mk(5, 4)).sum(),
    "exp": lambda L, F, mk: L.exp(F.linear(mk(3, 4), mk(5, 4))),
    "max_pool2d": lambda L, F, mk: F.max_pool2d(F.conv2d(mk(1, 2, 6, 6), mk(3, 2, 3, 3)), 2),
    "avg_pool2d": lambda L, F, mk: F.avg_pool2d(mk(1, 2, 6, 6), 2),
    "embedding": lambda L, F, mk: F.embedding(mk(5, kind="int7"), mk(7, 3)),
    "group_norm": lambda L, F, mk: F.group_norm(F.linear(mk(2, 4, 3), mk(4, 3)).transpose(1, 2)
                                                .contiguous(), 2, mk(4), mk(4)),
    "batch_norm": lambda L, F, mk: F.batch_norm(F.linear(mk(6, 3), mk(4, 3)), mk(4),
                                                mk(4, kind="positive"), training=False),
    "bilinear": lambda L, F, mk: F.bilinear(mk(3, 4), mk(3, 5), mk(2, 4, 5), mk(2)),
    "cosine_similarity": lambda L, F, mk: F.cosine_similarity(mk(3, 4, dtype="bfloat16"),
                                                              mk(3, 4)),
    "normalize": lambda L, F, mk: F.normalize(F.linear(mk(3, 4), mk(5, 4)), dim=-1),
    "outer": lambda L, F, mk: L.outer(mk(3), mk(4)),
    "inner": lambda L, F, mk: L.inner(mk(3, 4), mk(2, 4)),
    "chain_matmul_multi_dot": lambda L, F, mk: L.linalg.multi_dot([mk(3, 4), mk(4, 5),
                                                                   mk(5, 2)]),
    "mean_of_low": lambda L, F, mk: F.linear(mk(3, 4), mk(5, 4)).mean(),
    "var_of_low": lambda L, F, mk: F.linear(mk(3, 4), mk(5, 4)).var(),
    "cumsum_of_low": lambda L, F, mk: F.linear(mk(3, 4), mk(5, 4)).cumsum(1),
    "float64_mm": lambda L, F, mk: L.mm(mk(3, 4, dtype="float64"), mk(4, 5, dtype="float64")),
    "int_cat": lambda L, F, mk: L.cat([mk(3, kind="int4"), mk(2, kind="int4")]),
}


def _run(name, lib, F, dtype):
    with lib.autocast("cpu", dtype=getattr(lib, dtype)):
        return CASES[name](lib, F, _maker(lib))


def _name(dt):
    return repr(dt).split(".")[-1]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_output_dtype_and_values_match_torch(name, dtype):
    try:
        theirs = _run(name, torch, tF, dtype)
    except RuntimeError:          # torch refuses (a bf16 input to a promoting op under fp16)
        with pytest.raises(RuntimeError):
            _run(name, mte, mF, dtype)
        return
    ours = _run(name, mte, mF, dtype)
    assert _name(ours.dtype) == _name(theirs.dtype), (name, ours.dtype, theirs.dtype)
    tol = 3e-2 if "16" in _name(theirs.dtype) or dtype == "float16" else 2e-2
    np.testing.assert_allclose(ours.float().detach().numpy().astype(np.float64),
                               theirs.float().detach().numpy().astype(np.float64),
                               rtol=tol, atol=tol)


def test_outside_autocast_nothing_changes():
    mk = _maker(mte)
    assert mF.linear(mk(3, 4), mk(5, 4)).dtype == mte.float32
    assert not mte.is_autocast_enabled("cpu") and not mte.is_autocast_enabled()
    assert mte.get_autocast_dtype("cpu") == mte.bfloat16


def _mlp(L, seed=0):
    mk = _maker(L, seed)
    return mk(6, 4, grad=True), mk(6, grad=True), mk(3, 6, grad=True), mk(5, 4), \
        mk(5, kind="int3")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gradients_flow_back_in_the_parameters_dtype(dtype):
    results = []
    for L, F in ((torch, tF), (mte, mF)):
        w1, b1, w2, x, y = _mlp(L)
        with L.autocast("cpu", dtype=getattr(L, dtype)):
            loss = F.cross_entropy(F.linear(F.relu(F.linear(x, w1, b1)), w2), y)
        loss.backward()
        results.append((loss.detach(), w1.grad, b1.grad, w2.grad))
    for theirs, ours in zip(*results):
        assert _name(ours.dtype) == _name(theirs.dtype) == "float32"
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=3e-2, atol=3e-2)


def test_nesting_enabled_false_and_decorator():
    mk = _maker(mte)
    x, w = mk(3, 4), mk(5, 4)
    with mte.autocast("cpu"):
        with mte.autocast("cpu", enabled=False):
            assert mF.linear(x, w).dtype == mte.float32
            assert not mte.is_autocast_enabled("cpu")
        with mte.autocast("cpu", dtype=mte.float16):
            assert mF.linear(x, w).dtype == mte.float16
            assert mte.get_autocast_dtype("cpu") == mte.float16
        assert mF.linear(x, w).dtype == mte.bfloat16
        assert mte.get_autocast_dtype("cpu") == mte.bfloat16

    @mte.autocast("cpu")
    def forward(a, b):
        return mF.linear(a, b)
    assert forward(x, w).dtype == mte.bfloat16
    assert mF.linear(x, w).dtype == mte.float32


def test_device_named_state_functions_as_torch():
    """torch's deprecated spellings (is_autocast_cpu_enabled, get_autocast_cpu_dtype,
    set_autocast_cpu_enabled/_dtype, get_autocast_gpu_dtype): the same answers as torch's, with
    a DeprecationWarning."""
    def trace(L):
        seen = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seen.append(L.is_autocast_cpu_enabled())
            with L.autocast("cpu", dtype=L.float16):
                seen += [L.is_autocast_cpu_enabled(), _name(L.get_autocast_cpu_dtype())]
            L.set_autocast_cpu_dtype(L.float16)
            L.set_autocast_cpu_enabled(True)
            seen += [L.is_autocast_enabled("cpu"), _name(L.get_autocast_dtype("cpu"))]
            L.set_autocast_cpu_enabled(False)
            L.set_autocast_cpu_dtype(L.bfloat16)
            seen += [L.is_autocast_enabled("cpu"), _name(L.get_autocast_cpu_dtype()),
                     _name(L.get_autocast_gpu_dtype())]
        if L is mte:   # (torch warns once per process: not counted)
            assert len(caught) == 9 and all(issubclass(w.category, DeprecationWarning)
                                            for w in caught)
        return seen
    assert trace(mte) == trace(torch) == [False, True, "float16", True, "float16", False,
                                          "bfloat16", "float16"]


@pytest.mark.parametrize("dtype", ["bfloat16"])   # (torch's oneDNN has no float16 LSTM here)
def test_lstm_under_autocast_as_torch(dtype):
    """LSTM on a padded input is lower precision under CPU autocast (torch runs
    mkldnn_rnn_layer): output, h_n and c_n in the autocast dtype; RNN and GRU stay float32;
    the gradients reach the float32 weights."""
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((2, 5, 6)).astype(np.float32)
    # (proj_size and packed inputs are not mkldnn in torch: their dtypes differ, not tested)
    configs = [dict(num_layers=2, bidirectional=True), dict()]
    for cfg in configs:
        results = []
        for L in (mte, torch):
            L.manual_seed(0)
            lstm = L.nn.LSTM(6, 4, batch_first=True, **cfg)
            with L.no_grad():   # the same weights in both
                for k, p in enumerate(lstm.parameters()):
                    p.copy_(L.tensor(np.random.default_rng(k).standard_normal(
                        tuple(p.shape)).astype(np.float32) * 0.3))
            x = L.tensor(x_np).requires_grad_()
            low = getattr(L, dtype)
            with L.autocast("cpu", dtype=low):
                y, (h, c) = lstm(x)
                y1 = lstm(x[0].to(low))[0]
                gru = L.nn.GRU(6, 4)(x)[0]
            (y.float().sum() + h.float().sum() + c.float().sum()).backward()
            results.append(([y, h, c, y1], x.grad, lstm.weight_hh_l0.grad, gru.dtype))
        (ours, ogx, ogw, ogru), (theirs, tgx, tgw, tgru) = results
        assert _name(ogru) == _name(tgru) == "float32"   # (its weights differ: dtype only)
        for o, t in zip(ours, theirs):
            assert _name(o.dtype) == _name(t.dtype)
            np.testing.assert_allclose(o.detach().float().numpy(), t.detach().float().numpy(),
                                       rtol=3e-2, atol=3e-2)
        for o, t in ((ogx, tgx), (ogw, tgw)):
            assert _name(o.dtype) == _name(t.dtype) == "float32"
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=5e-2, atol=5e-2)


def test_the_cast_of_a_parameter_is_cached_within_a_region():
    mk = _maker(mte)
    x, w = mk(3, 4, grad=True), mk(5, 4, grad=True)   # (dx reads the cast of w: kept)
    with mte.autocast("cpu"):
        a, b = mF.linear(x, w), mF.linear(x, w)       # AutocastLinear: the cast inside
        assert a.grad_fn.name() == "AutocastLinearBackward0"
        assert a.grad_fn.wh is b.grad_fn.wh           # one cast of w for both
        assert len(_autocast.State.cache) == 1
        assert _autocast.State.cache[id(w)][2].dtype == mte.bfloat16.np
        (a + b).sum().backward()
    assert not _autocast.State.cache          # the outermost exit drops it
    np.testing.assert_allclose(w.grad.numpy(), 2 * x.detach().numpy().sum(0)[None].repeat(5, 0),
                               rtol=2e-2, atol=2e-2)
    with mte.autocast("cpu", cache_enabled=False):
        a, b = mF.linear(x, w), mF.linear(x, w)
        assert a.grad_fn.wh is not None and a.grad_fn.wh is not b.grad_fn.wh
        assert not _autocast.State.cache


def test_the_cache_serves_ops_that_cast_as_tensors_too():
    """A parameter first cast by AutocastLinear (an array in the cache) and then used by ops
    that cast it as a Tensor (matmul; a 1-D weight's linear) gets a differentiable cast, made
    once per region; every gradient reaches it, as in torch."""
    grads = []
    for L, F in ((torch, tF), (mte, mF)):
        mk = _maker(L)
        x, w, v = mk(3, 4), mk(5, 4, grad=True), mk(4, grad=True)
        with L.autocast("cpu"):
            a = F.linear(x, w)
            b, c = L.matmul(a, w), F.linear(x, v)
            d = F.linear(x, v)
            if L is mte:
                assert c.grad_fn.next_functions[1][0] is d.grad_fn.next_functions[1][0]
                assert len(_autocast.State.cache) == 2
            loss = a.float().sum() + b.float().pow(2).sum() + (c * d).float().sum()
        loss.backward()
        grads.append((w.grad, v.grad))
    for theirs, ours in zip(*grads):
        assert _name(ours.dtype) == _name(theirs.dtype) == "float32"
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=3e-2, atol=3e-2)


def test_unsupported_dtype_warns_and_disables_as_torch():
    for L in (torch, mte):
        with pytest.warns(UserWarning, match="target dtype is not supported"):
            with L.autocast("cpu", dtype=L.float64):
                assert not L.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="autocast: dtype must be a minitorch_edge dtype"):
        mte.autocast("cpu", dtype=np.float16)
    with pytest.raises(RuntimeError, match="device_type 'tpu0' is not supported"):
        mte.autocast("tpu0")


def test_spellings():
    mk = _maker(mte)
    x, w = mk(3, 4), mk(5, 4)
    with pytest.warns(FutureWarning, match="deprecated"):
        ctx = mte.cpu.amp.autocast()
    with ctx:
        assert mF.linear(x, w).dtype == mte.bfloat16
    with mte.amp.autocast("cpu", dtype=mte.float16):
        assert mF.linear(x, w).dtype == mte.float16
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = mte.cuda.amp.autocast()
    with ctx:
        assert mF.linear(x, w).dtype == mte.float32
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = mte.autocast("cuda")
    with ctx:
        assert mF.linear(x, w).dtype == mte.float32


def test_custom_fwd_casts_a_user_function():
    class Square(mte.autograd.Function):
        @staticmethod
        @mte.amp.custom_fwd(device_type="cpu", cast_inputs=mte.float32)
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @mte.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return 2 * a * g

    x = _maker(mte)(3, dtype="bfloat16", grad=True)
    with mte.autocast("cpu"):
        y = Square.apply(x)
    assert y.dtype == mte.float32
    y.sum().backward()
    assert x.grad.dtype == mte.bfloat16


def test_transformer_classifier_under_autocast_trains():
    from minitorch_edge.models import transformer
    names = [n for n in dir(transformer) if "Classifier" in n]
    assert names, "models/transformer.py has no classifier"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(transformer, names[0])(**_small_kwargs(getattr(transformer, names[0])))
    tokens = mte.randint(0, 10, (4, 6))
    with mte.autocast("cpu"):
        logits = model(tokens)
        loss = mF.cross_entropy(logits, mte.randint(0, 2, (4,)))
    assert logits.dtype == mte.bfloat16 and loss.dtype == mte.float32
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(g.dtype == mte.float32 for g in grads)


def _small_kwargs(cls):
    import inspect
    params = inspect.signature(cls).parameters
    small = {"vocab_size": 10, "num_classes": 2, "d_model": 16, "nhead": 2, "num_heads": 2,
             "num_layers": 1, "dim_feedforward": 32, "max_len": 16, "n_classes": 2}
    return {k: v for k, v in small.items() if k in params}


def _module_cases(N):
    return {
        "sequential_linear_relu": (lambda: N.Sequential(N.Linear(4, 8), N.ReLU()), (2, 3, 4)),
        "sequential_conv_relu": (lambda: N.Sequential(N.Conv2d(2, 3, 3), N.ReLU()),
                                 (1, 2, 6, 6)),
        "encoder_post_norm": (lambda: N.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                batch_first=True), (2, 3, 8)),
        "encoder_pre_norm": (lambda: N.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                               batch_first=True,
                                                               norm_first=True), (2, 3, 8)),
        "mha": (lambda: N.MultiheadAttention(8, 2, batch_first=True), (2, 3, 8)),
        "batchnorm_after_conv": (lambda: N.Sequential(N.Conv2d(2, 3, 3), N.BatchNorm2d(3)),
                                 (2, 2, 6, 6)),
    }


@pytest.mark.parametrize("name", sorted(_module_cases(mte.nn)))
def test_module_outputs_match_torch_in_training(name):
    got = []
    for L, N in ((torch, torch.nn), (mte, mte.nn)):
        L.manual_seed(0)
        make, shape = _module_cases(N)[name]
        module = make()
        x = L.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        with L.autocast("cpu"):
            out = module(x, x, x) if name == "mha" else module(x)
        got.append([_name(t.dtype) for t in (out if isinstance(out, tuple) else (out,))])
    assert got[0] == got[1], (name, got)


def test_a_cast_made_under_no_grad_is_not_reused_with_grad():
    mk = _maker(mte)
    x, w = mk(3, 4), mk(5, 4, grad=True)
    with mte.autocast("cpu"):
        with mte.no_grad():
            mF.linear(x, w)
        y = mF.linear(x, w)
    y.float().sum().backward()
    assert w.grad is not None and w.grad.dtype == mte.float32
