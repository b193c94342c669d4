"""GradScaler against torch.amp.GradScaler("cpu"): the same scale, growth tracker, skipped steps
and parameters over a scripted sequence of finite and non-finite gradients, with every
optimizer, with clip_grad_norm_ after unscale_; state_dict round trips; the errors torch
raises (unscale_ twice, step twice, no scale()) and a clear one for a non-float gradient."""
import numpy as np
import pytest

from harness import import_torch

import minitorch_edge as mte

torch = import_torch()

# per step: the factor the loss's constant gets (inf/nan make the gradients non-finite)
SCRIPT = [1.0, 1.0, np.inf, 1.0, 1.0, 1.0, np.nan, 1.0, 1.0, 1.0, 1.0, -np.inf, 1.0]


def _train(L, optim_name, clip=False, script=SCRIPT, growth_interval=3, **opt_kwargs):
    rng = np.random.default_rng(0)
    w = L.tensor(rng.standard_normal((4, 3)).astype(np.float32)).requires_grad_()
    b = L.tensor(rng.standard_normal(3).astype(np.float32)).requires_grad_()
    x = L.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    opt = getattr(L.optim, optim_name)([w, b], lr=0.01, **opt_kwargs)
    scaler = L.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=growth_interval)
    trace = []
    for factor in script:
        opt.zero_grad()
        loss = ((x @ w + b) ** 2).mean() * float(factor)
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(opt)
            L.nn.utils.clip_grad_norm_([w, b], 0.5)
        ret = scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), scaler._get_growth_tracker(), ret,
                      w.detach().numpy().copy(), b.detach().numpy().copy()))
    return trace, scaler


OPTIMIZERS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "RAdam"]


@pytest.mark.parametrize("clip", [False, True])
@pytest.mark.parametrize("optim_name", OPTIMIZERS)
def test_scale_sequence_and_steps_match_torch(optim_name, clip):
    if not hasattr(mte.optim, optim_name):
        pytest.skip(f"no optim.{optim_name}")
    theirs, _ = _train(torch, optim_name, clip)
    ours, _ = _train(mte, optim_name, clip)
    for k, (t, o) in enumerate(zip(theirs, ours)):
        assert o[0] == t[0] and o[1] == t[1], (k, o[:2], t[:2])
        assert o[2] is None and t[2] is None
        np.testing.assert_allclose(o[3], t[3], rtol=1e-5, atol=1e-6, err_msg=f"step {k}")
        np.testing.assert_allclose(o[4], t[4], rtol=1e-5, atol=1e-6, err_msg=f"step {k}")


def test_skipped_steps_leave_parameters_alone_and_growth_doubles():
    ours, _ = _train(mte, "SGD", script=[1.0, 1.0, np.inf, 1.0], growth_interval=2)
    assert [s for s, *_ in ours] == [2.0 ** 10, 2.0 ** 11, 2.0 ** 10, 2.0 ** 10]
    np.testing.assert_array_equal(ours[2][3], ours[1][3])          # the inf step was skipped
    assert not np.array_equal(ours[3][3], ours[2][3])


def test_step_returns_the_optimizers_value_or_none_when_skipped():
    class Counting(mte.optim.SGD):
        def step(self, closure=None):
            super().step(closure)
            return "stepped"
    w = mte.ones(2, requires_grad=True)
    opt = Counting([w], lr=0.1)
    scaler = mte.amp.GradScaler("cpu")
    for factor, want in ((1.0, "stepped"), (np.inf, None)):
        opt.zero_grad()
        scaler.scale(w.sum() * float(factor)).backward()
        assert scaler.step(opt) == want
        scaler.update()


def test_state_dict_matches_torch_and_round_trips():
    theirs = _train(torch, "SGD")[1].state_dict()
    scaler = _train(mte, "SGD")[1]
    ours = scaler.state_dict()
    assert ours == theirs
    fresh = mte.amp.GradScaler(device="cpu")
    fresh.load_state_dict(ours)
    assert fresh.state_dict() == ours and fresh.get_scale() == scaler.get_scale()
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        fresh.load_state_dict({})
    assert mte.amp.GradScaler("cpu", enabled=False).state_dict() == {}


def test_misuse_raises_as_torch():
    for L in (torch, mte):
        w = L.zeros(3, requires_grad=True)
        opt = L.optim.SGD([w], lr=0.1)
        scaler = L.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="did not use scaler.scale"):
            scaler.step(opt)
        scaler.scale(w.sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            scaler.step(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
            scaler.unscale_(opt)
        scaler.update()
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            scaler.step(opt, closure=lambda: 0.0)


def test_non_float_gradient_is_a_clear_error():
    p = mte.zeros(3, dtype=mte.int64)
    p.grad = mte.zeros(3, dtype=mte.int64)

    class Opt:
        param_groups = [{"params": [p]}]

        def step(self):
            pass
    scaler = mte.amp.GradScaler("cpu")
    scaler.scale(mte.ones(()))
    with pytest.raises(TypeError, match="GradScaler.unscale_: a gradient of dtype int64"):
        scaler.unscale_(Opt())


def test_disabled_and_cuda_scalers_pass_through():
    w = mte.zeros(2, requires_grad=True)
    opt = mte.optim.SGD([w], lr=0.5)
    for scaler in (mte.amp.GradScaler("cpu", enabled=False),
                   mte.cuda.amp.GradScaler(enabled=False)):
        loss = w.sum()
        assert scaler.step(opt) is None and not scaler.is_enabled()
        assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0
    with pytest.warns(UserWarning, match="CUDA is not available"):
        mte.amp.GradScaler("cuda")
    with pytest.warns(FutureWarning, match="deprecated"):
        assert mte.cpu.amp.GradScaler().is_enabled()


def test_update_with_new_scale():
    for L in (torch, mte):
        scaler = L.amp.GradScaler("cpu")
        scaler.scale(L.ones(()))
        scaler.update(123.0)
        assert scaler.get_scale() == 123.0
        scaler.update(L.tensor(7.0))
        assert scaler.get_scale() == 7.0
