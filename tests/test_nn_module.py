"""nn.Module and the containers: registration, traversal, state_dict, hooks, modes, dtypes."""
import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn
from harness import import_torch


def build(lib):
    torch_nn = lib.nn

    class Block(torch_nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch_nn.Linear(4, 3)
            self.bn = torch_nn.BatchNorm1d(3)
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.scale = torch_nn.Parameter(lib.ones(1))

        def forward(self, x):
            return self.bn(self.fc(x)) * self.scale

    return torch_nn.Sequential(Block(), torch_nn.ReLU(),
                               torch_nn.ModuleList([torch_nn.Linear(3, 2)]),
                               torch_nn.ModuleDict({"head": torch_nn.Linear(3, 1)}))


def test_names_match_torch():
    torch = import_torch()
    ours, theirs = build(mte), build(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert repr(ours) == repr(theirs)


def test_load_state_dict_from_torch_and_errors_leave_module_unchanged():
    torch = import_torch()
    ours, theirs = build(mte), build(torch)
    state = {k: mte.tensor(v.numpy().copy()) for k, v in theirs.state_dict().items()}
    result = ours.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert np.array_equal(ours[0].fc.weight.detach().numpy(),
                          theirs[0].fc.weight.detach().numpy())
    before = {k: v.numpy().copy() for k, v in ours.state_dict().items()}

    bad = dict(state)
    bad["0.fc.weight"] = mte.zeros(5, 4)
    bad["0.fc.bias"] = mte.ones(3) * 7           # valid, but must not be applied either
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.fc.weight: copying a param "
                                           r"with shape \[5, 4\].*current model is \[3, 4\]"):
        ours.load_state_dict(bad)
    missing = dict(state)
    del missing["0.bn.running_mean"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "0.bn.running_mean"'):
        ours.load_state_dict(missing)
    extra = dict(state, bogus=mte.ones(1))
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "bogus"'):
        ours.load_state_dict(extra)
    for k, v in ours.state_dict().items():
        assert np.array_equal(v.numpy(), before[k]), k
    result = ours.load_state_dict(missing, strict=False)
    assert result.missing_keys == ["0.bn.running_mean"]


def test_setattr_registration_and_errors():
    m = nn.Module()
    m.w = nn.Parameter(mte.ones(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("b", mte.zeros(1))
    assert set(dict(m.named_parameters())) == {"w", "sub.weight", "sub.bias"}
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = mte.ones(2)
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope
    del m.sub
    assert "sub" not in dict(m.named_children())
    with pytest.raises(KeyError):
        m.register_parameter("a.b", None)


def test_modes_zero_grad_apply_to_dtype():
    model = build(mte)
    model.eval()
    assert all(not m.training for m in model.modules())
    model.train()
    out = model[2][0](model[1](model[0](mte.randn(5, 4))))
    out.sum().backward()
    assert model[0].fc.weight.grad is not None
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Sequential" and "Linear" in seen
    w = model[0].fc.weight
    model.double()
    assert model[0].fc.weight is w and w.dtype == mte.float64
    assert model[0].bn.num_batches_tracked.dtype == mte.int64
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_forward_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    y = lin(mte.ones(3, 2))
    assert np.allclose(y.detach().numpy(), lin.bias.detach().numpy() + 1)
    assert calls == [(3, 2)]
    h1.remove()
    h2.remove()
    lin(mte.ones(3, 2))
    assert len(calls) == 1


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and len(seq[:2]) == 2
    seq.append(nn.Sigmoid())
    assert isinstance(seq[-1], nn.Sigmoid)
    with pytest.raises(IndexError):
        seq[7]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.extend([nn.Linear(1, 1)])
    ml.insert(0, nn.ReLU())
    assert [type(m).__name__ for m in ml] == ["ReLU", "Linear", "Linear"]
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b"] and "a" in md
    pl = nn.ParameterList([mte.ones(2), nn.Parameter(mte.zeros(1))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 2
    pd = nn.ParameterDict({"x": mte.ones(1)})
    assert isinstance(pd["x"], nn.Parameter)
    assert repr(nn.Parameter(mte.ones(1))).startswith("Parameter containing:")
