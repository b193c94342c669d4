"""The memory side of the profiler: per-op bytes allocated and freed (the rule in
profiler/_profile.py), the peak, memory_summary's figures for a known MLP and optimizer, and
the timeline plot; all compared with bytes computed by hand from the shapes."""
import os

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn, profiler
from minitorch_edge.nn import functional as F
from minitorch_edge.profiler import profile, record_function

F32 = 4


def rows(prof):
    return {r.key: r for r in prof.key_averages()}


def test_matmul_result_bytes_and_its_free():
    x, w = mte.randn(8, 16), mte.randn(16, 32)
    with profile(profile_memory=True) as prof:
        with record_function("make"):
            y = x @ w
        with record_function("drop"):
            del y
    r = rows(prof)
    assert r["Mm"].self_cpu_memory_usage == 8 * 32 * F32
    assert r["make"].cpu_memory_usage == 8 * 32 * F32 and r["make"].self_cpu_memory_usage == 0
    assert r["drop"].self_cpu_memory_usage == -8 * 32 * F32
    assert prof.peak_memory_bytes == 8 * 32 * F32


def test_views_allocate_nothing_and_peak_counts_what_is_held_at_once():
    x = mte.randn(8, 16)
    with profile(profile_memory=True) as prof:
        a = x * 2.0                 # 512 bytes
        v = a.reshape(16, 8)        # a view: nothing new
        b = a + 1.0                 # 512 more: 1024 held
        del a, v                    # a's buffer goes
        c = b.sum(0)                # 16 * 4 bytes
    r = rows(prof)
    assert r["Mul"].self_cpu_memory_usage == 8 * 16 * F32
    assert r["View"].self_cpu_memory_usage == 0
    assert r["Add"].self_cpu_memory_usage == 8 * 16 * F32
    assert r["Sum"].self_cpu_memory_usage == 16 * F32
    assert prof.peak_memory_bytes == 2 * 8 * 16 * F32
    freed = [i for i in prof._instants if i[2] < 0]
    assert [i[2] for i in freed] == [-8 * 16 * F32]
    del b, c


def test_backward_gradients_counted_and_table_shows_memory():
    lin = nn.Linear(16, 32)
    x = mte.randn(8, 16, requires_grad=True)
    with profile(profile_memory=True) as prof:
        lin(x).sum().backward()
    r = rows(prof)
    grads = (8 * 16 + 32 * 16 + 32) * F32          # dx, dW, db made by AddmmBackward0
    assert r["AddmmBackward0"].self_cpu_memory_usage >= grads
    table = prof.key_averages().table(sort_by="self_cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_memory_summary_of_a_known_mlp(opt_name, tmp_path):
    mte.manual_seed(0)
    model = MLP()
    params = list(model.parameters())
    n_param_bytes = sum(p.numel() for p in params) * F32
    assert n_param_bytes == (16 * 32 + 32 + 32 * 4 + 4) * F32
    if opt_name == "SGD":
        opt = mte.optim.SGD(params, lr=0.1, momentum=0.9)
        state = n_param_bytes                                 # one momentum buffer each
    else:
        opt = mte.optim.Adam(params, lr=1e-3)
        state = 2 * n_param_bytes + len(params) * F32         # exp_avg, exp_avg_sq, step
    x = mte.randn(8, 16)
    summary = profiler.memory_summary(model, x, optimizer=opt)
    d = summary.as_dict()
    assert d["parameters"] == n_param_bytes
    assert d["gradients"] == n_param_bytes
    assert d["optimizer_state"] == state
    acts = d["activations"]
    assert acts["fc1 (Linear)"] == 8 * 16 * F32               # fc1 saves its input x
    assert acts["fc2 (Linear)"] == 8 * 32 * F32               # fc2 saves the hidden layer
    assert acts["MLP"] > 0                                   # the relu in MLP.forward itself
    assert set(acts) <= {"MLP", "fc1 (Linear)", "fc2 (Linear)", "(outside modules)"}
    assert d["activations_total"] == sum(acts.values())
    assert d["peak"] >= n_param_bytes * 2 + state
    text = str(summary)
    for word in ("parameters", "gradients", "optimizer state", "saved activations",
                 "fc1 (Linear)", "peak"):
        assert word in text
    path = profiler.plot_memory_timeline(summary, str(tmp_path / "mem.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp")]


def test_plot_refuses_a_profile_without_memory(tmp_path):
    with profile() as prof:
        mte.randn(3) * 2
    with pytest.raises(ValueError, match="profile_memory=True"):
        profiler.plot_memory_timeline(prof, str(tmp_path / "x.png"))
    with pytest.raises(TypeError, match="plot_memory_timeline"):
        profiler.plot_memory_timeline(3, str(tmp_path / "x.png"))


def test_native_workspace_recorded_per_kernel():
    if mte.backend.active() != "native":
        pytest.skip("native backend not active")
    a, b = mte.randn(256, 256), mte.randn(256, 256)
    with profile(profile_memory=True) as prof:
        a @ b
    kernels = [e for e in prof.events() if e.cat == "kernel"]
    assert kernels and max(e.workspace_bytes for e in kernels) > 0
    assert "Workspace" in prof.key_averages().table()
    assert np.isfinite(kernels[0].cpu_time_total)


def test_memory_summary_reports_the_kernels_workspace():
    if mte.backend.active() != "native":
        pytest.skip("native backend not active")
    mte.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.Linear(256, 256))
    summary = profiler.memory_summary(model, mte.randn(64, 256))
    kernels = [e for e in summary.profile.events() if e.cat == "kernel"]
    assert summary.native_workspace == max(e.workspace_bytes for e in kernels) > 0
