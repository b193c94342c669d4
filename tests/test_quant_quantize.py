"""Post-training quantization (quant/ptq.py, quant/mixed_precision.py) and the QDQ -> int8 pass (fuse_quantized):

* the pass on hand-built QDQ graphs: each pattern becomes its int8 op, and the int8 graph
  equals the QDQ graph it came from within one quantization step of the output;
* the same over generated conv / linear graphs (hypothesis);
* quant.quantize on the zoo: every conv, linear, add and pool int8, the output close to float,
  keep_float leaves the named layers in float, the int8 MobileNetV2's arena;
* the executor runs int8 graphs bit for bit like the reference evaluator, on both backends;
* sensitivity's table, and the errors a user meets (empty calibration data, wrong shapes).
"""
import numpy as np
import pytest
from harness import randomize_bn
from hypothesis import given
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge import graph, models, quant
from minitorch_edge.graph import Graph
from minitorch_edge.graph.executor import evaluate
from minitorch_edge.quant import mixed_precision as sens
from minitorch_edge.quant import ptq


# ---- hand-built QDQ graphs ------------------------------------------------------------------------
def _qdq(g, name, scale, zp):
    s = g.add_constant(name + "_s", np.float32(scale))
    z = g.add_constant(name + "_z", np.int8(zp))
    q = g.add_node("QuantizeLinear", [name, s, z]).outputs[0]
    return g.add_node("DequantizeLinear", [q, s, z]).outputs[0]


def _weight_dq(g, w, axis=0):
    """DQ of w quantized symmetric per channel along axis."""
    ws = np.abs(w).max(axis=tuple(i for i in range(w.ndim) if i != axis)) / 127
    shape = [1] * w.ndim
    shape[axis] = -1
    wq = np.clip(np.round(w / ws.reshape(shape)), -127, 127).astype(np.int8)
    ins = [g.add_constant("wq", wq), g.add_constant("ws", ws.astype(np.float32)),
           g.add_constant("wz", np.zeros(ws.shape, np.int8))]
    return g.add_node("DequantizeLinear", ins, axis=axis).outputs[0], ws


def _conv_graph(rng, act="Relu", c=3, o=4, k=3, stride=1, pad=1, groups=1, size=6):
    g = Graph("qdq_conv")
    g.add_input("x", (1, c, size, size))
    x = _qdq(g, "x", 0.05, 3)
    w = _weight_dq(g, rng.normal(0, 0.3, (o, c // groups, k, k)).astype(np.float32))[0]
    b = g.add_constant("b", rng.normal(0, 0.1, o).astype(np.float32))
    y = g.add_node("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride],
                   pads=[pad] * 4, group=groups).outputs[0]
    if act == "Relu":
        y = g.add_node("Relu", [y]).outputs[0]
    elif act == "Clip":
        y = g.add_node("Clip", [y, g.add_constant("lo", np.float32(0)),
                                g.add_constant("hi", np.float32(6))]).outputs[0]
    y_scale = 0.04
    g.set_outputs([_qdq(g, y, y_scale, -10 if act is None else -128)])
    return g.check(), y_scale


def _close_to_qdq(qdq, x):
    """The int8 graph of `qdq` and its float QDQ original agree within one output step."""
    int8 = qdq.optimize()
    want, got = qdq.run(x), int8.run(x)
    return int8, np.abs(got - want).max()


@pytest.mark.parametrize("act", [None, "Relu", "Clip"])
def test_conv_pattern_becomes_one_qlinearconv(act):
    rng = np.random.default_rng(0)
    g, y_scale = _conv_graph(rng, act)
    x = rng.normal(0, 1, (1, 3, 6, 6)).astype(np.float32)
    int8, diff = _close_to_qdq(g, x)
    assert int8.op_counts() == {"QuantizeLinear": 1, "mte.QLinearConv": 1,
                                "DequantizeLinear": 1}
    conv = next(n for n in int8.nodes if n.op == "mte.QLinearConv")
    assert (conv.attrs["act_min"], conv.attrs["act_max"]) == (
        {None: (-128, 127), "Relu": (-128, 127), "Clip": (-128, min(127, -128 + 150))}[act])
    assert diff <= y_scale * 1.001


def test_relu_clamp_uses_the_output_zero_point():
    """Relu on an output with zero point 20: act_min is 20 (the code of real 0)."""
    rng = np.random.default_rng(1)
    g = Graph("relu_zp")
    g.add_input("x", (1, 2, 5, 5))
    x = _qdq(g, "x", 0.1, 0)
    w = _weight_dq(g, rng.normal(0, 0.5, (3, 2, 1, 1)).astype(np.float32))[0]
    y = g.add_node("Relu", [g.add_node("Conv", [x, w], kernel_shape=[1, 1]).outputs[0]])
    g.set_outputs([_qdq(g, y.outputs[0], 0.02, 20)])
    int8 = g.check().optimize()
    conv = next(n for n in int8.nodes if n.op == "mte.QLinearConv")
    assert conv.attrs["act_min"] == 20 and conv.attrs["act_max"] == 127
    xv = rng.normal(0, 1, (1, 2, 5, 5)).astype(np.float32)
    assert np.abs(int8.run(xv) - g.run(xv)).max() <= 0.02 * 1.001


def test_add_maxpool_and_global_pool_patterns():
    rng = np.random.default_rng(2)
    g = Graph("qdq_misc")
    g.add_input("a", (1, 2, 4, 4))
    g.add_input("b", (1, 2, 4, 4))
    a, b = _qdq(g, "a", 0.03, -5), _qdq(g, "b", 0.05, 7)
    s = _qdq(g, g.add_node("Relu", [g.add_node("Add", [a, b]).outputs[0]]).outputs[0], 0.04, -128)
    p = _qdq(g, g.add_node("MaxPool", [s], kernel_shape=[2, 2], strides=[2, 2]).outputs[0],
             0.04, -128)
    m = g.add_node("GlobalAveragePool", [p]).outputs[0]
    g.set_outputs([_qdq(g, m, 0.04, -128)])
    g.check()
    int8 = g.optimize()
    assert int8.op_counts() == {"QuantizeLinear": 2, "mte.QLinearAdd": 1, "MaxPool": 1,
                                "mte.QLinearGlobalAveragePool": 1, "DequantizeLinear": 1}
    xa, xb = (rng.normal(0, 1, (1, 2, 4, 4)).astype(np.float32) for _ in range(2))
    assert np.abs(int8.run(xa, xb) - g.run(xa, xb)).max() <= 0.04 * 1.001


def test_requantize_and_cancelled_pairs():
    g = Graph("qq")
    g.add_input("x", (2, 3, 1))
    y = _qdq(g, _qdq(g, "x", 0.1, 0), 0.1, 0)          # Q(DQ) with the same parameters
    z = _qdq(g, g.add_node("Flatten", [y]).outputs[0], 0.2, 4)   # then other parameters
    g.set_outputs([z])
    int8 = g.check().optimize()
    assert int8.op_counts() == {"QuantizeLinear": 1, "Flatten": 1, "mte.Requantize": 1,
                                "DequantizeLinear": 1}
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3, 1)
    assert np.abs(int8.run(x) - g.run(x)).max() <= 0.2 * 1.001


def test_a_float_graph_is_unchanged_by_the_pass():
    from minitorch_edge.graph.passes import PASSES
    m = models.MLP(6, [5], 3).eval()
    g = graph.trace(m, np.zeros((2, 6), np.float32))
    assert [n.op for n in PASSES["fuse_quantized"](g.copy()).nodes] == [n.op for n in g.nodes]


@given(c=st.integers(1, 4), o=st.integers(1, 5), k=st.sampled_from([1, 3]),
       stride=st.integers(1, 2), act=st.sampled_from([None, "Relu", "Clip"]),
       depthwise=st.booleans(), seed=st.integers(0, 2**16))
def test_generated_conv_graphs_match_their_qdq_original(c, o, k, stride, act, depthwise, seed):
    rng = np.random.default_rng(seed)
    groups = c if depthwise else 1
    o = c if depthwise else o
    g, y_scale = _conv_graph(rng, act, c=c, o=o, k=k, stride=stride, pad=k // 2, groups=groups)
    x = rng.normal(0, 1, (1, c, 6, 6)).astype(np.float32)
    int8, diff = _close_to_qdq(g, x)
    assert int8.op_counts().get("mte.QLinearConv") == 1
    assert diff <= y_scale * 1.001


@given(rows=st.integers(1, 4), k=st.integers(1, 9), m=st.integers(1, 6),
       trans_b=st.booleans(), seed=st.integers(0, 2**16))
def test_generated_gemm_graphs_match_their_qdq_original(rows, k, m, trans_b, seed):
    rng = np.random.default_rng(seed)
    g = Graph("qdq_gemm")
    g.add_input("x", (rows, k))
    x = _qdq(g, "x", 0.05, -3)
    w = rng.normal(0, 0.4, (m, k) if trans_b else (k, m)).astype(np.float32)
    wd = _weight_dq(g, w, axis=0 if trans_b else 1)[0]
    b = g.add_constant("b", rng.normal(0, 0.2, m).astype(np.float32))
    y = g.add_node("Gemm", [x, wd, b], transB=int(trans_b)).outputs[0]
    g.set_outputs([_qdq(g, y, 0.03, 2)])
    xv = rng.normal(0, 1, (rows, k)).astype(np.float32)
    int8, diff = _close_to_qdq(g.check(), xv)
    assert int8.op_counts().get("mte.QLinearGemm") == 1
    assert diff <= 0.03 * 1.001


# ---- quant.quantize on the zoo --------------------------------------------------------------------
ZOO = [
    ("SmallCNN", lambda: models.SmallCNN(in_channels=1, num_classes=10, input_size=8), (4, 1, 8, 8)),
    ("MLP", lambda: models.MLP(12, [16, 8], 4), (4, 12)),
    ("ResNet-18", lambda: models.resnet18(num_classes=10), (2, 3, 32, 32)),
    ("MobileNetV2", lambda: models.mobilenet_v2(num_classes=10), (2, 3, 32, 32)),
]


def _float_nodes(g):
    """Nodes computing in float: any float32 input or output that is not a constant, except
    the graph's boundary (QuantizeLinear's input, DequantizeLinear's output)."""
    def is_float(name):
        return name and not g.is_constant(name) and g.values[name].dtype == "float32"
    return [n.op for n in g.nodes
            if (n.op != "QuantizeLinear" and any(is_float(i) for i in n.inputs))
            or (n.op != "DequantizeLinear" and any(is_float(o) for o in n.outputs))]


def _zoo(make, shape, seed=0):
    rng = np.random.default_rng(seed)
    mte.manual_seed(seed)
    model = randomize_bn(make(), rng).eval()
    batches = [rng.normal(0, 1, shape).astype(np.float32) for _ in range(3)]
    return model, batches


@pytest.mark.parametrize("name,make,shape", ZOO, ids=[z[0] for z in ZOO])
def test_quantize_zoo_model_is_all_int8_and_close_to_float(name, make, shape):
    model, batches = _zoo(make, shape)
    q = quant.quantize(model, batches)
    assert not _float_nodes(q), q.op_counts()
    assert q.op_counts()["QuantizeLinear"] == 1 and q.op_counts()["DequantizeLinear"] == 1
    with mte.no_grad():
        want = model(mte.tensor(batches[0])).numpy()
    assert sens.sqnr(want, q.run(batches[0])) > 15.0


def test_keep_float_leaves_the_named_layers_in_float():
    model, batches = _zoo(*ZOO[2][1:])
    layers = [path for path, _ in ptq.quantizable_layers(ptq._FloatModel(
        model, (batches[0],)).graph)]
    assert "conv1" in layers and "fc" in layers
    q = quant.quantize(model, batches, keep_float=("conv1", "fc", "layer4"))
    ops = q.op_counts()
    assert ops.get("mte.ConvAct", 0) + ops.get("Conv", 0) == 1 + 5   # conv1; layer4's 5 convs
    assert ops.get("Gemm", 0) + ops.get("mte.GemmAct", 0) == 1
    assert ops["mte.QLinearConv"] == 20 - 6


@pytest.mark.parametrize("observer,min_db", [("minmax", 10), ("moving_average", 10),
                                             ("percentile", 3), ("entropy", 3)])
def test_every_observer_calibrates(observer, min_db):
    """Each observer gives a working int8 graph (the clipping ones, percentile and entropy,
    cut the tails of 12 random calibration images: a lower floor)."""
    model, batches = _zoo(*ZOO[0][1:])
    q = quant.quantize(model, batches, observer=observer)
    with mte.no_grad():
        want = model(mte.tensor(batches[0])).numpy()
    assert sens.sqnr(want, q.run(batches[0])) > min_db


def test_calibration_batches_of_other_sizes_and_dataloader_pairs():
    model, batches = _zoo(*ZOO[0][1:])
    labels = np.zeros(4, np.int64)
    data = [(batches[0], labels), (batches[1][:3], labels[:3])]
    q = quant.quantize(model, data, example_inputs=(batches[0][:1],))
    assert q.values[q.inputs[0]].shape == (1, 1, 8, 8)


def test_int8_mobilenet_v2_arena_is_a_quarter_of_float():
    """The published int8 figure for MobileNetV2 at 224x224, batch 1: 1,505,280 bytes."""
    model, _ = _zoo(lambda: models.mobilenet_v2(), (1, 3, 8, 8))
    x = np.random.default_rng(0).normal(0, 1, (1, 3, 224, 224)).astype(np.float32)
    q = quant.quantize(model, [x])
    assert q.plan_memory().arena_bytes == 1_505_280


@pytest.mark.parametrize("backend", ["numpy", None])
def test_executor_runs_int8_graphs_bit_for_bit(backend):
    model, batches = _zoo(*ZOO[2][1:])
    q = quant.quantize(model, batches)
    run = q.compile(backend=backend)
    assert np.array_equal(run(batches[1]), q.run(batches[1]))
    env = evaluate(q, (batches[1],))
    assert all(env[n].dtype == np.int8 for n in q.values if q.values[n].dtype == "int8"
               and n in env)


def test_sensitivity_table():
    model, batches = _zoo(*ZOO[0][1:])
    rows = quant.sensitivity(model, batches, eval_fn=lambda run: float(run(batches[0]).sum()))
    assert [r.op for r in rows].count("Conv") == 2 and [r.op for r in rows].count("Gemm") == 1
    assert [r.sqnr_db for r in rows] == sorted(r.sqnr_db for r in rows)
    assert all(r.sqnr_db > 15 and isinstance(r.metric, float) for r in rows)


def test_bad_calibration_data_is_refused():
    model, batches = _zoo(*ZOO[0][1:])
    with pytest.raises(ValueError, match="calibration data is empty"):
        quant.quantize(model, [])
    g = graph.trace(model, batches[0])
    with pytest.raises(ValueError, match="input shapes"):
        quant.quantize(g, [batches[0], batches[0][:2]])
    with pytest.raises(ValueError, match="unknown|observer"):
        quant.quantize(model, batches, observer="nope")


@pytest.mark.parametrize("name,make,shape", ZOO, ids=[z[0] for z in ZOO])
def test_convert_a_qat_model_gives_the_int8_graph_it_simulated(name, make, shape):
    """prepare_qat, let the observers settle on 20 batches (BatchNorm frozen), convert: the
    int8 graph is all int8 and computes what the QAT model's fake quantization simulated."""
    model, _ = _zoo(make, shape)
    rng = np.random.default_rng(5)
    qat = quant.prepare_qat(model)
    quant.freeze_bn(qat)
    with mte.no_grad():
        for _ in range(20):
            qat(mte.tensor(rng.normal(0, 1, shape).astype(np.float32)))
    qat.eval()
    x = rng.normal(0, 1, shape).astype(np.float32)
    with mte.no_grad():
        simulated = qat(mte.tensor(x)).numpy()
    g = quant.convert(qat, x)
    assert not _float_nodes(g), g.op_counts()
    assert sens.sqnr(simulated, g.run(x)) > 20.0


def test_convert_needs_example_inputs():
    model, _ = _zoo(*ZOO[0][1:])
    with pytest.raises(ValueError, match="example inputs"):
        quant.convert(quant.prepare_qat(model))


def test_a_linear_on_tokens_is_one_gemm_and_quantizes_to_int8():
    """A Linear on a (N, tokens, width) input traces as Reshape -> Gemm (-> Relu) -> Reshape,
    not MatMul + Add, so that quantize turns it into an int8 GEMM like a 2-D Linear."""
    mte.manual_seed(0)
    net = mte.nn.Sequential(mte.nn.Linear(16, 32), mte.nn.ReLU(), mte.nn.Linear(32, 8)).eval()
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((3, 5, 16)).astype(np.float32) for _ in range(4)]
    g = graph.trace(net, batches[0])
    assert "MatMul" not in [n.op for n in g.nodes]
    with mte.no_grad():
        want = net(mte.tensor(batches[1])).numpy()
    np.testing.assert_allclose(g.run(batches[1]), want, rtol=1e-5, atol=1e-6)
    q = quant.quantize(net, batches)
    assert [n.op for n in q.nodes].count("mte.QLinearGemm") == 2
    assert "MatMul" not in [n.op for n in q.nodes]
    got = q.run(batches[1])
    assert got.shape == want.shape and sens.sqnr(want, got) > 25.0
