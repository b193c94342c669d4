"""The C runtime's per-node clock from Python: _C.RuntimeModel.run_profiled(list) (the pybind11
extension, what graph.Executor.profile calls) and the cffi loader's Model.run_profiled(*arrays).
Both return (outputs, [(node name, op, start s, duration s)]): outputs equal a plain run's,
one entry per node in execution order with the model's node names and ops, starts
non-decreasing, nodes not overlapping; the clock is off again afterwards (a plain run after
it is unchanged); bad inputs give the same errors as a plain run."""
import numpy as np
import pytest
from runtime_harness import library

import minitorch_edge as mte
from minitorch_edge import graph, nn

try:
    from minitorch_edge import _C
except ImportError:  # no native build
    _C = None


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    mte.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8 * 4 * 4, 10))
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    g = graph.trace(m, x)
    path = tmp_path_factory.mktemp("cnn") / "cnn.mte"
    g.save(str(path))
    return g, str(path), x


def check_times(g, times):
    assert [t[0] for t in times] == [n.name for n in g.nodes]
    assert [t[1] for t in times] == [n.op for n in g.nodes]
    end = 0.0
    for _, _, start, dur in times:
        assert isinstance(start, float) and dur >= 0.0 and start >= end - 1e-12
        end = start + dur
    assert 0 < end < 1.0


@pytest.mark.skipif(_C is None or not hasattr(_C.RuntimeModel, "run_profiled"),
                    reason="minitorch_edge._C without RuntimeModel.run_profiled")
def test_pybind_run_profiled(cnn):
    g, path, x = cnn
    model = _C.RuntimeModel(path)
    plain = model.run([x])
    outputs, times = model.run_profiled([x])
    assert isinstance(outputs, list) and len(outputs) == 1
    np.testing.assert_array_equal(outputs[0], plain[0])
    np.testing.assert_allclose(outputs[0], g.run(x), rtol=1e-4, atol=1e-5)
    check_times(g, times)
    np.testing.assert_array_equal(model.run([x])[0], plain[0])     # clock off again
    with pytest.raises(ValueError, match="RuntimeModel.run_profiled: the model takes 1 inputs"):
        model.run_profiled([x, x])
    with pytest.raises(TypeError, match="has dtype float64"):
        model.run_profiled([x.astype(np.float64)])


def test_cffi_run_profiled(cnn):
    rt = pytest.importorskip("minitorch_edge.runtime")
    pytest.importorskip("cffi")
    library()                           # native/build/libmte_runtime.so, up to date
    g, path, x = cnn
    with rt.load(path) as model:
        plain = model(x)
        y, times = model.run_profiled(x)
        np.testing.assert_array_equal(y, plain)
        check_times(g, times)
        assert [t[0] for t in times] == [k.node for k in model.kernels]
        np.testing.assert_array_equal(model(x), plain)
        with pytest.raises(TypeError, match="takes 1 inputs"):
            model.run_profiled(x, x)
        with pytest.raises(ValueError, match="convert it with"):
            model.run_profiled(x.astype(np.float64))
