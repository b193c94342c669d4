"""optim.RAdam against torch.optim.RAdam: the problem of test_optim.py (two parameter groups, one
parameter that never gets a gradient), 25 steps in float32 and float64, both branches of the
rectification (rho_t <= 5 for the first steps, > 5 later; never > 5 when beta2 is small), L2 and
decoupled weight decay, maximize, a state_dict save / load halfway, the state layout and the
errors PyTorch raises."""
import numpy as np
import pytest

import minitorch_edge as mte
import minitorch_edge.optim as optim
from harness import import_torch
from test_optim import INIT, _check_state, _groups, _loss, _params, _train

torch = import_torch()

CASES = [
    (dict(), dict(lr=0.01)),
    (dict(lr=0.01), dict(betas=(0.8, 0.9))),                   # rho_inf = 19
    (dict(lr=0.01, betas=(0.9, 0.5)), {}),                      # rho_inf = 3: never rectified
    (dict(lr=0.01, weight_decay=0.1), dict(eps=1e-4)),
    (dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True), dict(lr=0.002)),
    (dict(lr=0.01, weight_decay=0.1, maximize=True), {}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_radam_matches_torch(case, dtype):
    kw, group1 = case
    maximize = kw.get("maximize", False)
    rtol, atol = (2e-6, 1e-6) if dtype == np.float32 else (1e-10, 1e-12)
    expect, tsd = _train(torch, "RAdam", kw, group1, dtype, maximize=maximize)
    got, sd = _train(mte, "RAdam", kw, group1, dtype, maximize=maximize)
    for g, e in zip(got, expect):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    assert not np.allclose(expect[0], INIT[0], atol=1e-4)
    np.testing.assert_array_equal(got[4], INIT[4].astype(dtype))
    _check_state(sd, tsd, rtol, atol)
    again, _ = _train(mte, "RAdam", kw, group1, dtype, reload_at=12, maximize=maximize)
    for g, a in zip(got, again):
        np.testing.assert_allclose(g, a, rtol=1e-12, atol=0)


def test_radam_state_and_groups_like_torch():
    params, tparams = _params(mte, np.float32), _params(torch, np.float32)
    opt = optim.RAdam(_groups(params, dict(lr=0.1)), weight_decay=0.5)
    topt = torch.optim.RAdam(_groups(tparams, dict(lr=0.1)), weight_decay=0.5)
    _loss(mte, params, np.float32).backward()
    _loss(torch, tparams, np.float32).backward()
    opt.step()
    topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sorted(sd["state"]) == sorted(tsd["state"]) == [0, 1, 2, 3]
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    st = sd["state"][0]
    assert st["step"].dtype == mte.float32 and st["step"].shape == () and st["step"].item() == 1
    for key in ("lr", "betas", "eps", "weight_decay", "maximize", "decoupled_weight_decay"):
        assert sd["param_groups"][1][key] == tsd["param_groups"][1][key], key
    assert "RAdam (" in repr(opt) and "decoupled_weight_decay: False" in repr(opt)


@pytest.mark.parametrize("kw, msg", [
    (dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (dict(weight_decay=-1), "Invalid weight_decay value: -1"),
])
def test_radam_bad_options_like_torch(kw, msg):
    with pytest.raises(ValueError, match=msg):
        optim.RAdam([mte.zeros(2, requires_grad=True)], **kw)
    with pytest.raises(ValueError, match=msg):
        torch.optim.RAdam([torch.zeros(2, requires_grad=True)], **kw)


def test_radam_step_bumps_version_and_skips_missing_grads():
    p = mte.ones(3, requires_grad=True)
    q = mte.ones(2, requires_grad=True)
    opt = optim.RAdam([p, q], lr=0.1)
    (p * p).sum().backward()
    before = p._version
    opt.step()
    assert p._version == before + 1 and q not in opt.state
    np.testing.assert_allclose(p.detach().numpy(), 0.8)   # step 1: rho_t = 1: p - lr * m_hat
