"""The graph IR, tracing and the executor (minitorch_edge/graph/): a traced graph computes what
eager computes, on every zoo model and on both backends; malformed graphs raise errors that
name the node; the executor's arena is reused across calls."""
import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import backend, graph, models, nn
from minitorch_edge.graph import Graph, GraphError, TraceError
from harness import peak_traced_bytes, randomize_bn

RNG = np.random.default_rng(0)




def eager(model, *xs):
    model.eval()
    with mte.no_grad():
        y = model(*[mte.tensor(x) for x in xs])
    return tuple(t.numpy() for t in y) if isinstance(y, tuple) else y.numpy()


def close(got, want, rtol=1e-5):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def image(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


ZOO = {
    "mlp": (lambda: models.MLP(), lambda: image(2, 784)),
    "small_cnn": (lambda: models.SmallCNN(), lambda: image(2, 1, 28, 28)),
    "resnet18": (lambda: models.resnet18(num_classes=10), lambda: image(1, 3, 32, 32)),
    "resnet34": (lambda: models.resnet34(num_classes=10), lambda: image(1, 3, 32, 32)),
    "mobilenet_v2": (lambda: models.mobilenet_v2(num_classes=10), lambda: image(1, 3, 64, 64)),
    "efficientnet_lite0": (lambda: models.efficientnet_lite0(num_classes=10),
                           lambda: image(1, 3, 64, 64)),
    "transformer": (lambda: models.TransformerClassifier(100, 5),
                    lambda: RNG.integers(0, 100, (2, 16))),
    "transformer_cls_gelu_padded": (lambda: models.TransformerClassifier(
        100, 5, pooling="cls", activation="gelu", norm_first=False, pad_idx=0),
        lambda: padded_tokens(2, 16)),
    "transformer_mean_padded": (lambda: models.TransformerClassifier(100, 5, pad_idx=0),
                                lambda: padded_tokens(2, 16)),
}


def padded_tokens(n, length):
    """Token ids 1..99 with a random amount of padding (0) at the end of each row."""
    x = RNG.integers(1, 100, (n, length))
    for row in x:
        row[RNG.integers(1, length):] = 0
    return x


@pytest.fixture(scope="module")
def zoo():
    built = {}
    for name, (make, example) in ZOO.items():
        model = randomize_bn(make(), RNG)
        x = example()
        built[name] = (model, x, graph.trace(model, x))
    return built


# ---- tracing ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(ZOO))
def test_trace_equals_eager(zoo, name):
    model, x, g = zoo[name]
    close(g.run(x), eager(model, x))
    assert g.inputs == ["input"] and g.outputs == ["output"]
    other = ZOO[name][1]()              # another input: nothing of the example is frozen in
    close(g.run(other), eager(model, other))


@pytest.mark.parametrize("name", list(ZOO))
@pytest.mark.parametrize("backend_name", ["numpy", "native"])
def test_executor_equals_eager_on_both_backends(zoo, name, backend_name):
    if backend_name == "native":
        pytest.importorskip("minitorch_edge._C", reason="the native backend is not built")
    model, x, g = zoo[name]
    run = g.compile(backend=backend_name)
    close(run(x), eager(model, x), rtol=1e-4)


def test_trace_names_constants_by_module_path(zoo):
    _, _, g = zoo["small_cnn"]
    assert "features.0.weight" in g.constants and "fc.bias" in g.constants
    assert any(n.name.startswith("features.0/") for n in g.nodes)
    assert "Conv" in str(g) and "features.0/Conv" in str(g)


def test_trace_restores_training_mode():
    model = models.SmallCNN()
    model.train()
    graph.trace(model, image(1, 1, 28, 28))
    assert model.training


class TwoInTwoOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, a, b):
        h = self.fc(a) + b
        return h.relu(), h.sum(1)


def test_tuple_inputs_and_outputs():
    m = TwoInTwoOut()
    a, b = image(2, 4), image(2, 3)
    g = graph.trace(m, a, b)
    assert g.inputs == ["input_0", "input_1"] and g.outputs == ["output_0", "output_1"]
    for got, want in zip(g.run(a, b), eager(m, a, b)):
        close(got, want)
    run = g.compile()
    ta, tb = mte.tensor(a), mte.tensor(b)
    y0, y1 = run(ta, tb)
    assert isinstance(y0, mte.Tensor) and isinstance(y1, mte.Tensor)
    close(y1.numpy(), eager(m, a, b)[1])


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:          # data-dependent control flow: frozen by trace
            return x * 2
        return x - 1


def test_control_flow_is_frozen_to_the_traced_branch():
    pos = np.ones((2, 3), np.float32)
    g = graph.trace(Branchy(), pos)
    neg = -pos
    np.testing.assert_array_equal(g.run(neg), neg * 2)      # the traced branch, not x - 1
    np.testing.assert_array_equal(eager(Branchy(), neg), neg - 1)


class InPlace(nn.Module):
    def forward(self, x):
        y = x * 3
        y += 1
        y.relu_()
        return y


def test_in_place_ops_are_followed():
    x = image(3, 4)
    close(graph.trace(InPlace(), x).run(x), eager(InPlace(), x))


class Unmapped(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), Cum())

    def forward(self, x):
        return self.body(x)


class Cum(nn.Module):
    def forward(self, x):
        return x.cumsum(1)


def test_unmapped_op_names_the_op_and_module_path():
    with pytest.raises(TraceError, match=r"Cumsum applied in body\.1: this op has no graph "):
        graph.trace(Unmapped(), image(2, 4))


class ReadsNumpy(nn.Module):
    def forward(self, x):
        return x + mte.tensor(x.numpy() * 0 + 1)   # a value the tracer cannot see


def test_reading_data_outside_the_tracer_is_frozen_as_a_constant():
    x = image(2, 3)
    g = graph.trace(ReadsNumpy(), x)
    close(g.run(x), x + 1)


def test_trace_rejects_bad_arguments():
    with pytest.raises(TraceError, match="at least one example input"):
        graph.trace(models.MLP())
    with pytest.raises(TypeError, match="Module or callable"):
        graph.trace(3, image(1, 784))


# ---- the IR and its checks ----------------------------------------------------------------
def small_graph():
    g = Graph("small")
    g.add_input("x", (2, 3))
    w = g.add_constant("w", np.ones((4, 3), np.float32))
    h = g.add_node("Gemm", ["x", w, ""], ["h"], transB=1).outputs[0]
    g.add_node("Relu", [h], ["y"])
    g.set_outputs(["y"])
    return g.check()


def test_hand_built_graph_runs_and_prints():
    g = small_graph()
    x = image(2, 3)
    np.testing.assert_allclose(g.run(x), np.maximum(x @ np.ones((3, 4), np.float32), 0),
                               rtol=1e-6)
    text = str(g)
    assert "h: float32[2, 4] = Gemm(x, w<float32[4, 3]>, <none>, transB=1)" in text
    assert g.values["y"].shape == (2, 4)


def test_undefined_value_is_named():
    g = small_graph()
    g.nodes[1].inputs = ["nope"]
    with pytest.raises(GraphError, match=r"node 'Relu_\d+' \(Relu\) reads 'nope', which is not "
                                         r"defined"):
        g.check()


def test_cycle_or_wrong_order_is_named():
    g = small_graph()
    g.nodes.reverse()
    with pytest.raises(GraphError, match="cycle or is not in topological order"):
        g.check()


def test_shape_mismatch_is_named():
    g = small_graph()
    g.values["y"].shape = (2, 5)
    with pytest.raises(GraphError, match=r"output 'y' is recorded as float32\[2, 5\] but the op "
                                         r"gives float32\[2, 4\]"):
        g.check()


def test_bad_inputs_to_an_op_are_named():
    g = Graph()
    g.add_input("x", (1, 3, 8, 8))
    w = g.add_constant("w", np.ones((4, 2, 3, 3), np.float32))
    with pytest.raises(GraphError, match=r"node 'c' \(Conv\): Conv: X has 3 channels"):
        g.add_node("Conv", ["x", w], name="c", kernel_shape=[3, 3])


def test_unknown_op_and_duplicate_values():
    g = small_graph()
    g.nodes[1].op = "Frobnicate"
    with pytest.raises(GraphError, match="unknown op 'Frobnicate'"):
        g.check()
    g = small_graph()
    with pytest.raises(GraphError, match="value 'y' is defined twice"):
        g.add_node("Relu", ["h"], ["y"])


def test_executor_checks_its_inputs():
    run = small_graph().compile()
    with pytest.raises(ValueError, match=r"input 'x' must be float32\[2, 3\].*got "
                                         r"float32\[3, 3\]"):
        run(image(3, 3))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        run(image(2, 3), image(2, 3))


def test_executor_reuses_its_arena_and_returns_fresh_outputs(zoo):
    _, x, g = zoo["mobilenet_v2"]
    run = g.compile(engine="python")      # the C engine's arena is the runtime's own
    arena = run.arena
    y1 = run(x)
    y2 = run(x)
    assert run.arena is arena
    assert not np.shares_memory(y1, arena) and not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1, y2)


def test_executor_rejects_unknown_backend():
    with pytest.raises(ValueError, match="backend must be"):
        small_graph().compile(backend="cuda")


def test_backend_is_restored_after_a_numpy_run():
    before = backend.active()
    small_graph().compile(backend="numpy")(image(2, 3))
    assert backend.active() == before


def test_steady_state_allocates_little_beyond_the_outputs(zoo):
    """After the first call, an optimised MobileNetV2 call allocates only small arrays (the
    pooled features, the classifier's result, the returned copy): every convolution writes
    into the arena. numpy reports its allocations to tracemalloc."""
    x = image(1, 3, 128, 128)
    run = graph.trace(models.mobilenet_v2(num_classes=10), x).optimize().compile(engine="python")
    run(x)
    peak = peak_traced_bytes(lambda: run(x))
    assert peak < 0.05 * run.plan.arena_bytes, (peak, run.plan.arena_bytes)
