"""_C.RuntimeModel, the C runtime inside the pybind11 extension (native/bindings/runtime.cpp):
outputs equal graph.run_reference's, the description properties, and the errors (a refused
model -> ValueError with the runtime's message; a wrong input dtype -> TypeError, a wrong
count, shape or layout -> ValueError, each saying what the model expects).

Skipped when _C is not built or was built without the runtime. The graphs use only the ops
the runtime runs in this branch: views and Relu.
"""
import threading

import numpy as np
import pytest

from minitorch_edge.graph import Graph

try:
    from minitorch_edge import _C
except ImportError:  # no native build
    _C = None

pytestmark = pytest.mark.skipif(_C is None or not hasattr(_C, "RuntimeModel"),
                                reason="minitorch_edge._C without RuntimeModel")


def save(g, tmp_path, name="m.mte"):
    path = str(tmp_path / name)
    g.check().save(path)
    return path


def chain_graph():
    g = Graph("chain")
    g.add_input("x", (2, 3, 4), "float32")
    shape = g.add_constant("shape", np.array([4, 6], np.int64))
    g.add_node("Relu", ["x"], ["r"])
    g.add_node("Reshape", ["r", shape], ["s"])
    g.add_node("Relu", ["s"], ["y"])
    g.set_outputs(["y"])
    return g


def multi_graph():
    g = Graph("multi")
    g.add_input("a", (3, 1, 2), "float32")
    g.add_input("ids", (4,), "int64")
    g.add_input("f16", (2, 2), "float16")
    axes = g.add_constant("axes", np.array([1], np.int64))
    g.add_node("Squeeze", ["a", axes], ["sq"])
    g.add_node("Relu", ["sq"], ["r"])
    g.add_node("Identity", ["ids"], ["ids_out"])
    g.add_node("Dropout", ["f16"], ["f16_out"])
    g.set_outputs(["r", "ids_out", "f16_out", "sq"])
    return g


def test_chain_matches_reference(tmp_path):
    g = chain_graph()
    m = _C.RuntimeModel(save(g, tmp_path))
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (y,) = m.run([x])
    want = g.run(x)
    assert y.dtype == np.float32 and y.shape == (4, 6)
    np.testing.assert_array_equal(y, want)
    # runs again with fresh outputs (the arena is reused, the results are not shared)
    (y2,) = m.run([-x])
    np.testing.assert_array_equal(y2, g.run(-x))
    np.testing.assert_array_equal(y, want)


def test_multi_and_description(tmp_path):
    g = multi_graph()
    m = _C.RuntimeModel(save(g, tmp_path))
    assert m.inputs == [("a", (3, 1, 2), "float32"), ("ids", (4,), "int64"),
                        ("f16", (2, 2), "float16")]
    assert m.outputs == [("r", (3, 2), "float32"), ("ids_out", (4,), "int64"),
                         ("f16_out", (2, 2), "float16"), ("sq", (3, 2), "float32")]
    assert m.arena_bytes >= 0 and m.prepared_bytes >= 0
    assert [(op, kernel) for _, op, kernel in m.kernels] == [
        ("Squeeze", "view"), ("Relu", "elementwise"), ("Identity", "view"), ("Dropout", "view")]
    assert [name for name, _, _ in m.kernels] == [n.name for n in g.nodes]
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((3, 1, 2)).astype(np.float32),
              rng.integers(-2**50, 2**50, 4), rng.standard_normal((2, 2)).astype(np.float16)]
    got = m.run(inputs)
    for a, b in zip(got, g.run(*inputs)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert "RuntimeModel" in repr(m) and "3 inputs" in repr(m)


def test_load_errors(tmp_path):
    with pytest.raises(ValueError, match="MTE_EIO"):
        _C.RuntimeModel(str(tmp_path / "missing.mte"))
    (tmp_path / "bad.mte").write_bytes(b"\x04\0\0\0\0\0\0\0{}  ")
    with pytest.raises(ValueError, match="MTE_EFORMAT"):
        _C.RuntimeModel(str(tmp_path / "bad.mte"))
    g = Graph("unsupported")                      # a computed conv weight: no C kernel
    g.add_input("x", (1, 2, 5, 5), "float32")
    g.add_input("w", (3, 2, 3, 3), "float32")
    g.add_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])
    g.set_outputs(["y"])
    with pytest.raises(ValueError, match="must be a constant"):
        _C.RuntimeModel(save(g, tmp_path, "conv.mte"))


def test_input_errors(tmp_path):
    m = _C.RuntimeModel(save(chain_graph(), tmp_path))
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r"takes 1 inputs \(x\), got 2"):
        m.run([x, x])
    with pytest.raises(ValueError, match="got 0"):
        m.run([])
    with pytest.raises(TypeError, match=r"input 0 'x' has dtype float64, the model expects "
                                        r"float32 with shape \(2, 3, 4\)"):
        m.run([x.astype(np.float64)])
    with pytest.raises(TypeError, match="must be a numpy.ndarray"):
        m.run([x.tolist()])
    with pytest.raises(ValueError, match=r"has shape \(4x3x2\), the model expects float32"):
        m.run([np.zeros((4, 3, 2), np.float32)])
    with pytest.raises(ValueError, match="C-contiguous"):
        m.run([np.zeros((4, 3, 2), np.float32).transpose(2, 1, 0)])


def test_threads_share_one_model(tmp_path):
    """Runs from several threads are serialised (one arena per model): all results right."""
    g = chain_graph()
    m = _C.RuntimeModel(save(g, tmp_path))
    xs = [np.full((2, 3, 4), k - 4, np.float32) for k in range(8)]
    results = [None] * len(xs)

    def work(k):
        for _ in range(50):
            results[k] = m.run([xs[k]])[0]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, x in enumerate(xs):
        np.testing.assert_array_equal(results[k], g.run(x))
