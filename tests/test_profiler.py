"""The profiler (minitorch_edge.profiler, torch.profiler's names): what it records, the table's
consistency, the Chrome trace, schedules and trace handlers, and that it changes no result.
torch is used only for the reference schedule."""
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import nn, profiler
from minitorch_edge.autograd.function import _Recording
from minitorch_edge.nn import functional as F
from minitorch_edge.profiler import ProfilerAction, profile, record_function


class MLP(nn.Module):
    """Two layers called by hand (no Sequential fusion): Addmm, Relu, Addmm."""

    def __init__(self, i=16, h=32, o=4):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(i, h), nn.Linear(h, o)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train_step(model, opt, x):
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


def make(seed=0):
    mte.manual_seed(seed)
    model = MLP()
    return model, mte.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), mte.randn(8, 16)


def counts(prof):
    return {row.key: row.count for row in prof.key_averages()}


def test_calls_counted_exactly_on_a_two_layer_mlp():
    model, opt, x = make()
    with profile() as prof:
        loss = train_step(model, opt, x)
    c = counts(prof)
    names = [loss.grad_fn.name()]
    assert model(x).grad_fn.name() == "AddmmBackward0"        # the naming the rows use
    assert c["Addmm"] == 2 and c["AddmmBackward0"] == 2
    assert c["Relu"] == 1 and c["ReluBackward0"] == 1
    assert c[names[0]] == 1 and c[names[0][:-len("Backward0")]] == 1
    assert c["Optimizer.step#SGD.step"] == 1
    assert sum(e.name == "AddmmBackward0" for e in prof.events()) == 2


def test_self_times_sum_to_the_profiled_wall_time():
    model, opt, x = make()
    with profile(record_shapes=True, with_flops=True) as prof:
        start = time.perf_counter()              # the wall time while the profiler records
        with record_function("all"):
            for _ in range(20):
                train_step(model, opt, x)
        wall_us = (time.perf_counter() - start) * 1e6
    rows = prof.key_averages()
    self_total = sum(r.self_cpu_time_total for r in rows)
    assert abs(self_total - wall_us) <= 0.1 * wall_us, (self_total, wall_us)
    top = [e for e in prof.events() if e.cpu_parent is None]
    assert self_total == pytest.approx(sum(e.cpu_time_total for e in top), rel=1e-6)
    for r in rows:
        assert r.cpu_time_total >= r.self_cpu_time_total - 1e-6
    table = rows.table(sort_by="self_cpu_time_total", row_limit=5)
    assert "Self CPU time total:" in table and "Input Shapes" in table
    assert "Total MFLOPs" in table and "# of Calls" in table
    assert len([ln for ln in table.splitlines() if ln.split()[0] == "Addmm"]) <= 1  # one per name


def test_table_sort_keys_and_bad_key():
    model, opt, x = make()
    with profile(profile_memory=True) as prof:
        train_step(model, opt, x)
    for key in ("cpu_time_total", "self_cpu_time_total", "self_cpu_memory_usage",
                "cpu_memory_usage", "count"):
        lines = prof.key_averages().table(sort_by=key, row_limit=3).splitlines()
        assert len(lines) == 3 + 3 + 2 and "Self CPU Mem" in lines[1]     # head, rows, foot
    rows = sorted(prof.key_averages(), key=lambda r: r.count, reverse=True)
    first = prof.key_averages().table(sort_by="count").splitlines()[3]
    assert first.split()[0] in [r.key for r in rows if r.count == rows[0].count]
    with pytest.raises(ValueError, match="sort_by='nope'"):
        prof.key_averages().table(sort_by="nope")


def test_flops_of_matmul_linear_and_conv():
    a, b = mte.randn(8, 16), mte.randn(16, 32)
    x, w = mte.randn(2, 3, 10, 10), mte.randn(5, 3, 3, 3)
    lin = nn.Linear(16, 7)
    with profile(with_flops=True, record_shapes=True) as prof:
        a @ b
        F.conv2d(x, w, padding=1)
        lin(a)
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["Mm"].flops == 2 * 8 * 16 * 32
    assert rows["Convolution"].flops == 2 * (2 * 5 * 10 * 10) * (3 * 3 * 3)
    assert rows["Addmm"].flops == 2 * 8 * 16 * 7
    assert rows["Mm"].input_shapes == [[8, 16], [16, 32]]


def check_nesting(events):
    """Every complete event of a thread lies inside the one open before it or after its end."""
    by_tid = {}
    for e in events:
        by_tid.setdefault(e["tid"], []).append(e)
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-3:
                stack.pop()
            if stack:
                top = stack[-1]
                assert e["ts"] + e["dur"] <= top["ts"] + top["dur"] + 1e-3, (e, top)
            stack.append(e)


def test_chrome_trace_is_valid_nested_and_links_backward_to_forward(tmp_path):
    model, opt, x = make()
    with profile(record_shapes=True) as prof:
        with record_function("step"):
            train_step(model, opt, x)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads(open(path).read())
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert complete and all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0
                            and {"name", "pid", "tid", "cat", "args"} <= set(e)
                            for e in complete)
    check_nesting(complete)
    names = {e["name"] for e in complete}
    assert {"Addmm", "AddmmBackward0", "step", "Optimizer.step#SGD.step"} <= names
    addmm = [e for e in complete if e["name"] == "Addmm"]
    assert addmm[0]["args"]["Input Dims"] == [[8, 16], [32, 16], [32]]
    forward_by_seq = {e["args"]["Sequence number"]: e for e in addmm}
    flows = {(e["ph"], e["id"]): e for e in events if e.get("cat") == "fwdbwd"}
    backward = [e for e in complete if e["name"] == "AddmmBackward0"]
    assert len(backward) == 2
    for e in backward:
        seq = e["args"]["Sequence number"]
        assert seq in forward_by_seq
        assert flows[("s", seq)]["ts"] == forward_by_seq[seq]["ts"]
        assert flows[("f", seq)]["ts"] == e["ts"]


def test_native_kernels_are_children_of_their_op():
    if mte.backend.active() != "native":
        pytest.skip("native backend not active")
    a, b = mte.randn(64, 64), mte.randn(64, 64)
    with profile(profile_memory=True) as prof:
        a @ b
    kernels = [e for e in prof.events() if e.cat == "kernel"]
    assert kernels and kernels[0].name.startswith("mte::")
    assert kernels[0].cpu_parent is not None and kernels[0].cpu_parent.name == "Mm"
    from minitorch_edge.backend import native_gemm
    assert native_gemm._C is sys.modules["minitorch_edge._C"]       # proxy removed


def test_record_function_as_decorator_and_dataloader_waits():
    @record_function("my_fn")
    def f(t):
        return t * 2

    data = mte.utils.data.TensorDataset(mte.randn(10, 3))
    loader = mte.utils.data.DataLoader(data, batch_size=4)
    with profile() as prof:
        for (batch,) in loader:
            f(batch)
    c = counts(prof)
    assert c["my_fn"] == 3
    assert c["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"] == 4  # + the stop
    mul = [e for e in prof.events() if e.name == "Mul"]
    assert len(mul) == 3 and all(e.cpu_parent.name == "my_fn" for e in mul)


def test_schedule_matches_torch():
    torch = pytest.importorskip("torch")
    for kw in ({"wait": 1, "warmup": 1, "active": 2, "repeat": 2},
               {"wait": 2, "warmup": 0, "active": 1, "repeat": 0, "skip_first": 3},
               {"wait": 0, "warmup": 2, "active": 3, "repeat": 1, "skip_first": 1}):
        with pytest.warns(UserWarning, match="warmup") if kw["warmup"] == 0 else _nothing():
            ours = profiler.schedule(**kw)
        with pytest.warns(UserWarning) if kw["warmup"] == 0 else _nothing():
            ref = torch.profiler.schedule(**kw)
        assert [ours(i).name for i in range(20)] == [ref(i).name for i in range(20)], kw


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_on_trace_ready_cadence_and_windows(tmp_path):
    model, opt, x = make()
    windows = []

    def ready(prof):
        windows.append(sorted(e.name for e in prof.events() if e.name.startswith("ProfilerStep")))
        profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w0")(prof)
    sched = profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    with profile(schedule=sched, on_trace_ready=ready) as prof:
        for _ in range(10):
            train_step(model, opt, x)
            prof.step()
    assert windows == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    files = sorted(glob.glob(str(tmp_path / "w0.*.pt.trace.json")))
    assert len(files) == 2
    for f in files:
        assert json.load(open(f))["traceEvents"]
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp")]
    # no schedule: one window, ready once at the end
    calls = []
    with profile(on_trace_ready=calls.append):
        train_step(model, opt, x)
    assert len(calls) == 1 and counts(calls[0])["Addmm"] == 2


def test_profiling_changes_no_result():
    results = []
    for on in (False, True):
        model, opt, x = make(3)
        if on:
            with profile(record_shapes=True, profile_memory=True, with_flops=True,
                         with_stack=True):
                losses = [train_step(model, opt, x).item() for _ in range(3)]
        else:
            losses = [train_step(model, opt, x).item() for _ in range(3)]
        out = model(x).detach().numpy()
        grads = [p.grad.numpy().copy() for p in model.parameters()]
        results.append((losses, out, grads))
    (l0, o0, g0), (l1, o1, g1) = results
    assert l0 == l1
    assert np.array_equal(o0, o1)
    assert all(np.array_equal(a, b) for a, b in zip(g0, g1))
    assert _Recording.profile is None


def test_one_profiler_at_a_time_and_bad_arguments():
    with profile():
        with pytest.raises(RuntimeError, match="another profiler"):
            with profile():
                pass
    assert _Recording.profile is None
    with pytest.raises(ValueError, match="active must be"):
        profiler.schedule(wait=1, warmup=1, active=0)
    with pytest.raises(TypeError, match="record_function: name"):
        record_function(3)
    assert ProfilerAction.RECORD_AND_SAVE.value == 3


def test_table_module_needs_only_the_standard_library():
    code = ("import sys, minitorch_edge.profiler._table as t\n"
            "assert 'minitorch_edge.tensor' not in sys.modules\n"
            "assert 'numpy' not in sys.modules\n"
            "e = t.Event('a', 'cpu_op', 0, 2000); r = t.ProfileResult(); r._set_events([e])\n"
            "print(r.key_averages().table())")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=root))
    assert proc.returncode == 0, proc.stderr
    assert "Self CPU time total: 2.000us" in proc.stdout


def test_group_by_input_shape_and_worker_loader():
    with profile(record_shapes=True) as prof:
        for n in (2, 3, 3):
            mte.randn(n, 4) * 2.0
    by_shape = {(r.key, str(r.input_shapes)): r.count
                for r in prof.key_averages(group_by_input_shape=True) if r.key == "Mul"}
    assert by_shape == {("Mul", "[[2, 4], []]"): 1, ("Mul", "[[3, 4], []]"): 2}
    data = mte.utils.data.TensorDataset(mte.randn(6, 3))
    loader = mte.utils.data.DataLoader(data, batch_size=3, num_workers=1)
    with profile() as prof:
        batches = list(loader)
    assert len(batches) == 2
    assert counts(prof)["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"] == 3


def test_an_op_that_raises_leaves_the_profiler_recording():
    from minitorch_edge.autograd.function import Function

    class Fails(Function):
        _builtin = True

        @staticmethod
        def forward(ctx, x):
            raise ValueError("Fails: on purpose")

    with profile() as prof:
        with pytest.raises(ValueError, match="on purpose"):
            Fails.apply(mte.randn(2))
        assert _Recording.profile is not None
        mte.randn(2) * 2.0
    c = counts(prof)
    assert c["Fails"] == 1 and c["Mul"] == 1
    assert _Recording.profile is None


def test_with_stack_keeps_the_callers_frame():
    with profile(with_stack=True) as prof:
        mte.randn(3) * 2.0
    mul = next(e for e in prof.events() if e.name == "Mul")
    assert any("test_profiler.py" in frame for frame in mul.args["Call stack"])


def test_legacy_autograd_profiler_spellings():
    """torch.autograd.profiler.profile / record_function, as older scripts write them;
    enabled=False records nothing."""
    x = mte.randn(8, 16, requires_grad=True)
    w = mte.randn(16, 4)
    with mte.autograd.profiler.profile(record_shapes=True, use_cuda=False) as prof:
        with mte.autograd.profiler.record_function("step"):
            (x @ w).sum().backward()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["step"].count == 1 and rows["MmBackward0"].count == 1
    assert rows["step"].cpu_time_total >= rows["MmBackward0"].cpu_time_total
    with mte.autograd.profiler.profile(enabled=False) as off:
        (x @ w).sum()
    assert len(off.key_averages()) == 0
