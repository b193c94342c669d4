"""LR schedulers against torch.optim.lr_scheduler: the same learning rates (and momenta, for the
cycling schedulers) over 100 steps for each scheduler and several option sets, and a state_dict
round trip through JSON halfway that continues the same sequence.
"""
import json
import math
import warnings

import numpy as np
import pytest

import minitorch_edge as mte
import minitorch_edge.optim as optim
from harness import import_torch

torch = import_torch()

STEPS = 100


def _optimizer(lib, kind="sgd"):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": 0.1},
              {"params": [lib.zeros(3, requires_grad=True)], "lr": 0.05}]
    if kind == "sgd":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.Adagrad(groups, lr=0.1)


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum", 0.0) for g in opt.param_groups]


# name -> (optimizer kind, builder(S, opt) where S is the lr_scheduler module)
CASES = {
    "LambdaLR": ("sgd", lambda S, o: S.LambdaLR(o, lambda e: 0.95 ** e)),
    "LambdaLR-per-group": ("sgd", lambda S, o: S.LambdaLR(
        o, [lambda e: 1 / (e + 1), lambda e: 0.9 ** (e // 5)])),
    "MultiplicativeLR": ("sgd", lambda S, o: S.MultiplicativeLR(o, lambda e: 0.97)),
    "StepLR": ("sgd", lambda S, o: S.StepLR(o, step_size=7, gamma=0.5)),
    "StepLR-default-gamma": ("sgd", lambda S, o: S.StepLR(o, 30)),
    "MultiStepLR": ("sgd", lambda S, o: S.MultiStepLR(o, milestones=[10, 30, 30, 60],
                                                      gamma=0.5)),
    "ConstantLR": ("sgd", lambda S, o: S.ConstantLR(o)),
    "ConstantLR-opts": ("sgd", lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=20)),
    "LinearLR": ("sgd", lambda S, o: S.LinearLR(o)),
    "LinearLR-opts": ("sgd", lambda S, o: S.LinearLR(o, start_factor=0.1, end_factor=0.9,
                                                     total_iters=30)),
    "LinearLR-decay": ("sgd", lambda S, o: S.LinearLR(o, start_factor=1.0, end_factor=0.0,
                                                      total_iters=60)),
    "ExponentialLR": ("sgd", lambda S, o: S.ExponentialLR(o, gamma=0.95)),
    "PolynomialLR": ("sgd", lambda S, o: S.PolynomialLR(o)),
    "PolynomialLR-opts": ("sgd", lambda S, o: S.PolynomialLR(o, total_iters=40, power=2.0)),
    "CosineAnnealingLR": ("sgd", lambda S, o: S.CosineAnnealingLR(o, T_max=30)),
    "CosineAnnealingLR-eta": ("sgd", lambda S, o: S.CosineAnnealingLR(o, T_max=25,
                                                                      eta_min=0.01)),
    "WarmRestarts": ("sgd", lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=10)),
    "WarmRestarts-mult": ("sgd", lambda S, o: S.CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=1e-3)),
    "CyclicLR": ("sgd", lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=10)),
    "CyclicLR-triangular2": ("sgd", lambda S, o: S.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=10, step_size_down=5,
        mode="triangular2", base_momentum=0.7, max_momentum=[0.9, 0.95])),
    "CyclicLR-exp_range-adam": ("adam", lambda S, o: S.CyclicLR(
        o, base_lr=0.001, max_lr=0.01, step_size_up=8, mode="exp_range", gamma=0.98)),
    "CyclicLR-scale_fn": ("adagrad", lambda S, o: S.CyclicLR(
        o, base_lr=0.001, max_lr=0.01, step_size_up=6, cycle_momentum=False,
        scale_fn=lambda x: 0.5 * (1 + math.sin(x * math.pi / 2)), scale_mode="iterations")),
    "OneCycleLR": ("sgd", lambda S, o: S.OneCycleLR(o, max_lr=0.5, total_steps=STEPS)),
    "OneCycleLR-linear-adam": ("adam", lambda S, o: S.OneCycleLR(
        o, max_lr=[0.5, 0.2], epochs=10, steps_per_epoch=10, anneal_strategy="linear",
        pct_start=0.25, div_factor=10.0, final_div_factor=100.0)),
    "OneCycleLR-three-phase": ("sgd", lambda S, o: S.OneCycleLR(
        o, max_lr=0.5, total_steps=STEPS + 20, three_phase=True, base_momentum=0.8)),
    "OneCycleLR-no-momentum": ("adagrad", lambda S, o: S.OneCycleLR(
        o, max_lr=0.5, total_steps=STEPS, cycle_momentum=False)),
    "SequentialLR": ("sgd", lambda S, o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=10), S.CosineAnnealingLR(o, T_max=50)],
        milestones=[10])),
    "SequentialLR-three": ("sgd", lambda S, o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.5, total_iters=5), S.ExponentialLR(o, gamma=0.9),
            S.StepLR(o, step_size=10)], milestones=[5, 40])),
    "ChainedScheduler": ("sgd", lambda S, o: S.ChainedScheduler(
        [S.ConstantLR(o, factor=0.1, total_iters=2), S.ExponentialLR(o, gamma=0.9)])),
    "ChainedScheduler-three": ("sgd", lambda S, o: S.ChainedScheduler(
        [S.LinearLR(o, start_factor=0.2, total_iters=10), S.MultiStepLR(o, [20, 50]),
         S.CosineAnnealingLR(o, T_max=40)], optimizer=o)),
}


def _run(lib, name, steps=STEPS, reload_at=None):
    kind, build = CASES[name]
    opt = _optimizer(lib, kind)
    sched = build(lib.optim.lr_scheduler, opt)
    lrs, moms = [list(sched.get_last_lr())], [_momenta(opt)]
    for i in range(steps):
        if i == reload_at:
            saved = json.loads(json.dumps(sched.state_dict()))
            saved_opt = opt.state_dict()      # (Adagrad's holds tensors: only groups via JSON)
            saved_opt["param_groups"] = json.loads(json.dumps(saved_opt["param_groups"]))
            opt = _optimizer(lib, kind)
            sched = build(lib.optim.lr_scheduler, opt)
            opt.load_state_dict(saved_opt)
            sched.load_state_dict(saved)
        opt.step()
        sched.step()
        lrs.append(list(sched.get_last_lr()))
        assert lrs[-1] == [g["lr"] for g in opt.param_groups]
        moms.append(_momenta(opt))
    return np.array(lrs), np.array(moms)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    expect, expect_m = _run(torch, name)
    got, got_m = _run(mte, name)
    np.testing.assert_allclose(got, expect, rtol=1e-14, atol=1e-17)
    np.testing.assert_allclose(got_m, expect_m, rtol=1e-14, atol=1e-17)
    again, again_m = _run(mte, name, reload_at=STEPS // 2)
    np.testing.assert_allclose(again, got, rtol=1e-14, atol=1e-17)
    np.testing.assert_allclose(again_m, got_m, rtol=1e-14, atol=1e-17)


@pytest.mark.parametrize("name, kw, epochs", [
    ("StepLR", dict(step_size=3, gamma=0.5), [0, 1, 5, 9, 2, 12]),
    ("MultiStepLR", dict(milestones=[2, 4, 4], gamma=0.5), [1, 4, 3, 7]),
    ("ExponentialLR", dict(gamma=0.9), [3, 1, 10]),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.01), [4, 2, 15, 7]),
    ("LinearLR", dict(start_factor=0.2, total_iters=6), [2, 8, 1]),
    ("ConstantLR", dict(factor=0.3, total_iters=4), [2, 5, 0]),
    ("PolynomialLR", dict(total_iters=8, power=1.5), [3, 9, 1]),
    ("LambdaLR", dict(lr_lambda=lambda e: 1 / (1 + e)), [3, 1, 6]),
])
def test_step_with_epoch_uses_closed_form(name, kw, epochs):
    def run(lib):
        opt = _optimizer(lib)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kw)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for e in epochs:
                opt.step()
                sched.step(e)
                out.append(sched.get_last_lr())
        return out
    np.testing.assert_allclose(run(mte), run(torch), rtol=1e-14)


@pytest.mark.parametrize("T_0, T_mult, eta_min", [(10, 1, 0.0), (3, 2, 0.001), (4, 3, 0.0)])
def test_warm_restarts_fractional_epochs(T_0, T_mult, eta_min):
    def run(lib, reload=False):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0, T_mult, eta_min)
        out = []
        for epoch in range(30):
            if reload and epoch == 15:
                saved = json.loads(json.dumps(sched.state_dict()))
                sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
                    opt, T_0, T_mult, eta_min)
                sched.load_state_dict(saved)
            for i in range(4):
                opt.step()
                sched.step(epoch + i / 4)
                out.append(sched.get_last_lr() + [sched.T_cur, sched.T_i, sched.last_epoch])
        return np.array(out, dtype=float)
    expect = run(torch)
    np.testing.assert_allclose(run(mte), expect, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(run(mte, reload=True), expect, rtol=1e-13, atol=1e-15)


METRICS = ([1.0, 0.9, 0.8, 0.8, 0.8, 0.8, 0.79999, 0.8, 0.7, 0.7, 0.7, 0.71, 0.72, 0.73]
           + [0.6] * 20 + [0.5 - 0.001 * i for i in range(20)] + [0.6, 0.4] * 10 + [0.3] * 26)


@pytest.mark.parametrize("kw", [
    dict(),
    dict(patience=2, factor=0.5),
    dict(patience=1, factor=0.5, cooldown=3, threshold=0.05, min_lr=0.004),
    dict(patience=0, factor=0.3, threshold_mode="abs", threshold=0.01, min_lr=[0.01, 1e-5]),
    dict(mode="max", patience=2, factor=0.5),
    dict(mode="max", threshold_mode="abs", patience=1, eps=0.01),
])
def test_reduce_on_plateau(kw):
    def run(lib, reload=False):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        out = []
        for i, m in enumerate(METRICS):
            if reload and i == 40:
                saved = json.loads(json.dumps(sched.state_dict()))
                sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
                sched.load_state_dict(saved)
            opt.step()
            sched.step(m if kw.get("mode") != "max" else -m)
            out.append(sched.get_last_lr() + [sched.num_bad_epochs, sched.cooldown_counter])
        return np.array(out)
    expect = run(torch)
    assert len(set(expect[:, 0])) > 1 or kw == {}     # the lr did change
    np.testing.assert_allclose(run(mte), expect, rtol=1e-14)
    np.testing.assert_allclose(run(mte, reload=True), expect, rtol=1e-14)


def test_reduce_on_plateau_metric_tensor_and_state():
    opt = _optimizer(mte)
    sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(mte.tensor(1.0))
    sched.step(mte.tensor(2.0))
    assert sched.get_last_lr() == pytest.approx([0.01, 0.005])
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["best"] == 1.0


def test_state_dict_contents():
    opt = _optimizer(mte)
    sched = optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5)
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["lr_lambdas"] == [None, None]
    assert sd["base_lrs"] == [0.1, 0.05] and sd["last_epoch"] == 0

    class Factor:
        def __init__(self, f):
            self.f = f

        def __call__(self, e):
            return self.f ** e
    opt = _optimizer(mte)
    sched = optim.lr_scheduler.LambdaLR(opt, [Factor(0.9), Factor(0.8)])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"f": 0.9}, {"f": 0.8}]
    sd["lr_lambdas"][1] = {"f": 0.5}
    sched.load_state_dict(sd)
    assert sched.lr_lambdas[1].f == 0.5 and sched.lr_lambdas[0].f == 0.9
    assert opt.param_groups[0]["initial_lr"] == 0.1
    seq = optim.lr_scheduler.SequentialLR(opt, [optim.lr_scheduler.StepLR(opt, 2),
                                                optim.lr_scheduler.ExponentialLR(opt, 0.5)],
                                          milestones=[3])
    sd = seq.state_dict()
    assert len(sd["_schedulers"]) == 2 and "optimizer" not in sd["_schedulers"][0]
    json.dumps(sd)


def test_errors():
    S = optim.lr_scheduler
    opt = _optimizer(mte)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR("sgd", 3)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(opt, 3, last_epoch=5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        S.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 3"):
        S.LambdaLR(opt, [lambda e: 1] * 3)
    with pytest.raises(ValueError, match="positive integer T_0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="T_mult >= 1"):
        S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="non-negative epoch"):
        S.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1)
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="pct_start"):
        S.OneCycleLR(opt, max_lr=0.1, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="anneal_strategy"):
        S.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        S.OneCycleLR(opt, max_lr=[0.1], total_steps=10)
    with pytest.raises(ValueError, match="must support momentum"):
        S.OneCycleLR(_optimizer(mte, "adagrad"), max_lr=0.1, total_steps=10)
    with pytest.raises(ValueError, match="must support momentum"):
        S.CyclicLR(_optimizer(mte, "adagrad"), 0.01, 0.1)
    with pytest.raises(ValueError, match="mode is invalid"):
        S.CyclicLR(opt, 0.01, 0.1, mode="square")
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown"):
        S.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        S.ReduceLROnPlateau(opt, min_lr=[0.1])
    a = S.StepLR(opt, 3)
    with pytest.raises(ValueError, match="number of milestones"):
        S.SequentialLR(opt, [a], milestones=[3])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        S.SequentialLR(opt, [a, S.ReduceLROnPlateau(opt)], milestones=[3])
    with pytest.raises(ValueError, match="same optimizer"):
        S.ChainedScheduler([a, S.StepLR(_optimizer(mte), 3)])
    one = S.OneCycleLR(_optimizer(mte), max_lr=0.1, total_steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            one.step()
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            one.step()


def test_warnings():
    opt = _optimizer(mte)
    sched = optim.lr_scheduler.StepLR(opt, 3)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()
    opt2 = _optimizer(mte)
    sched2 = optim.lr_scheduler.ExponentialLR(opt2, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt2.step()
        sched2.step()
    assert sched2.get_last_lr() == [0.05, 0.025]


def test_tensor_lr_is_updated_in_place():
    p = mte.zeros(2, requires_grad=True)
    lr = mte.tensor(0.1)
    opt = optim.SGD([p], lr=lr)
    sched = optim.lr_scheduler.ExponentialLR(opt, 0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.05)
    assert sched.get_last_lr()[0] is not lr
