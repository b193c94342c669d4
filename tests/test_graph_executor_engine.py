"""The executor's two engines (graph/executor.py): on the native backend `Executor(graph)` hands
the whole graph to the C runtime (`_C.RuntimeModel.from_bytes` of the model file's bytes);
`engine="python"` is the per-node loop. Both must give the same results (same kernels), the C
engine must be chosen only where it can run the graph, fall back (auto) or refuse (engine="c")
with the runtime's reason otherwise, and keep the executor's contract: numpy in -> numpy out,
Tensors in -> Tensors out, fresh outputs per call, inputs checked.
"""
import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import graph, models, quant
from minitorch_edge.graph import Graph
from harness import peak_traced_bytes

try:
    from minitorch_edge import _C
except ImportError:  # no native build
    _C = None

needs_runtime = pytest.mark.skipif(
    _C is None or not hasattr(_C, "RuntimeModel"),
    reason="minitorch_edge._C with the C runtime is not built")


def image(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def zoo():
    x = image(1, 3, 32, 32)
    out = {}
    for name, make in [("mobilenet_v2", models.mobilenet_v2), ("resnet18", models.resnet18)]:
        m = make(num_classes=10)
        m.eval()
        traced = graph.trace(m, x)
        out[name] = (x, traced.optimize(), quant.quantize(m, [x, image(1, 3, 32, 32, seed=1)]))
    return out


def computed_weight_graph():
    """A conv whose weight is an input: the C runtime has no kernel for that."""
    g = Graph("computed_weight")
    g.add_input("x", (1, 2, 5, 5), "float32")
    g.add_input("w", (3, 2, 3, 3), "float32")
    g.add_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])
    g.set_outputs(["y"])
    return g


@needs_runtime
@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_c_engine_equals_python_engine(zoo, name, precision):
    x, float_graph, int8_graph = zoo[name]
    g = float_graph if precision == "float32" else int8_graph
    c_run = g.compile(backend="native")
    py_run = g.compile(backend="native", engine="python")
    assert (c_run.engine, py_run.engine) == ("c", "python")
    assert c_run.runtime_refusal is None and c_run.arena is None
    y_c, y_py = c_run(x), py_run(x)
    if precision == "int8":             # integer kernels: bit for bit
        np.testing.assert_array_equal(y_c, y_py)
    else:
        np.testing.assert_allclose(y_c, y_py, rtol=1e-5, atol=1e-5 * np.abs(y_py).max())
    np.testing.assert_allclose(y_c, g.run(x), rtol=1e-4, atol=1e-4 * np.abs(y_py).max())


@needs_runtime
def test_c_engine_keeps_the_executor_contract(zoo):
    x, g, _ = zoo["mobilenet_v2"]
    run = g.compile()
    y1, y2 = run(x), run(x)
    assert isinstance(y1, np.ndarray) and not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1, y2)
    t = run(mte.tensor(x))
    assert isinstance(t, mte.Tensor)
    np.testing.assert_array_equal(t.numpy(), y1)
    with pytest.raises(ValueError, match=r"must be float32\[1, 3, 32, 32\]"):
        run(image(1, 3, 16, 16))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        run(x, x)
    assert "c engine" in repr(run)


@needs_runtime
def test_non_contiguous_input_is_accepted(zoo):
    x, g, _ = zoo["resnet18"]
    run = g.compile()
    wide = np.zeros((1, 3, 32, 64), np.float32)
    wide[..., ::2] = x
    np.testing.assert_array_equal(run(wide[..., ::2]), run(x))


@needs_runtime
def test_auto_falls_back_and_c_refuses_with_the_runtime_reason():
    g = computed_weight_graph()
    run = g.compile(backend="native")
    assert run.engine == "python" and "must be a constant" in run.runtime_refusal
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(run(x, w), g.run(x, w), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"engine='c'.*must be a constant"):
        g.compile(backend="native", engine="c")


def test_numpy_backend_runs_the_python_engine(zoo):
    _, g, _ = zoo["mobilenet_v2"]
    run = g.compile(backend="numpy")
    assert run.engine == "python" and "numpy" in run.runtime_refusal
    assert run.arena is not None
    with pytest.raises(ValueError, match="engine='c'"):
        g.compile(backend="numpy", engine="c")


def test_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="engine must be one of 'auto', 'python', 'c'"):
        computed_weight_graph().compile(engine="cuda")


def test_model_file_bytes_equal_the_saved_file(zoo, tmp_path):
    from minitorch_edge.graph.modelfile import to_bytes
    _, g, q = zoo["mobilenet_v2"]
    for i, h in enumerate((g, q)):
        path = str(tmp_path / f"m{i}.mte")
        h.save(path)
        with open(path, "rb") as f:
            assert f.read() == to_bytes(h)


@needs_runtime
def test_c_engine_steady_state_allocates_only_the_outputs():
    """The C runtime's arena is allocated at load: a call allocates the returned arrays and
    nothing else that numpy sees."""
    x = image(1, 3, 64, 64)
    run = graph.trace(models.mobilenet_v2(num_classes=10).eval(), x).optimize().compile()
    assert run.engine == "c"
    run(x)
    peak = peak_traced_bytes(lambda: run(x))
    assert peak < 4096, peak
