"""graph.Executor.profile: per-node times of the Python engine and of the C engine, in the
profiler's result type (table and Chrome trace)."""
import json

import os

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import graph, nn
from minitorch_edge.profiler import ProfileResult


def small_graph():
    mte.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8 * 8 * 8, 10)).eval()
    x = mte.randn(2, 3, 8, 8)
    return graph.trace(model, x), x.numpy()


def check(result, g, repeats, tmp_path):
    assert isinstance(result, ProfileResult)
    rows = {r.key: r for r in result.key_averages()}
    run = rows.pop(f"Executor.run#{g.name}")
    assert run.count == repeats
    names = {n.name for n in g.nodes}
    assert set(rows) <= names and len(rows) >= len(names) - 1
    for r in rows.values():
        assert r.count == repeats and r.cpu_time_total >= 0
    # the nodes lie inside their runs: their totals add up to at most the runs' total
    assert sum(r.cpu_time_total for r in rows.values()) <= run.cpu_time_total + 1e-3
    node = g.nodes[0]
    ev = next(e for e in result.events() if e.name == node.name)
    assert ev.input_shapes == [list(g.values[o].shape) for o in node.outputs]
    assert ev.args["op"] == node.op and ev.cpu_parent.name.startswith("Executor.run#")
    table = result.key_averages().table()
    assert "Output Shapes" in table and node.name in table
    trace = json.load(open(result.export_chrome_trace(str(tmp_path / "t.json"))))
    assert sum(e["ph"] == "X" for e in trace["traceEvents"]) == repeats * (len(rows) + 1)


def test_python_engine_profile(tmp_path):
    g, x = small_graph()
    ex = graph.Executor(g, engine="python")
    want = ex(x)
    result = ex.profile(x, repeats=4, warmup=1)
    check(result, g, 4, tmp_path)
    assert np.array_equal(ex(x), want)          # profiling left the executor as it was
    with pytest.raises(ValueError, match="repeats must be"):
        ex.profile(x, repeats=0)


class _FakeTimedModel:
    """Stands for a RuntimeModel with run_profiled: the real run, with times made up per node
    (start i ms, 0.5 ms long), to check the conversion of the C engine's report."""

    def __init__(self, model, nodes):
        self.model, self.nodes = model, nodes

    def run(self, arrays):
        return self.model.run(arrays)

    def run_profiled(self, arrays):
        times = [(n.name, n.op, i * 1e-6, 0.5e-6) for i, n in enumerate(self.nodes)]
        return self.model.run(arrays), times


def native_executor(g):
    try:
        ex = graph.Executor(g, engine="c", backend="native")
    except (ValueError, ImportError) as e:
        if os.environ.get("MTE_REQUIRE_NATIVE") == "1":    # CI: the C engine must be there
            raise
        pytest.skip(f"no C engine here: {e}")
    return ex


def test_c_engine_report_converted(tmp_path):
    g, x = small_graph()
    ex = native_executor(g)
    ex._model = _FakeTimedModel(ex._model, g.nodes)
    result = ex.profile(x, repeats=3, warmup=0)
    check(result, g, 3, tmp_path)
    ev = [e for e in result.events() if e.name == g.nodes[1].name][0]
    assert ev.cpu_time_total == pytest.approx(0.5, abs=1e-3)      # microseconds
    assert ev.start_ns - ev.cpu_parent.start_ns == pytest.approx(1000, abs=10 ** 5)


def test_c_engine_profile(tmp_path):
    g, x = small_graph()
    ex = native_executor(g)
    want = ex(x)
    result = ex.profile(x, repeats=5)
    check(result, g, 5, tmp_path)
    assert np.array_equal(ex(x), want)
