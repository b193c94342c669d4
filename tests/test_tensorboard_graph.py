"""SummaryWriter.add_graph (utils/tensorboard_graph.py): the event file is read back with
TensorBoard's own EventAccumulator and its GraphDef must hold the traced Graph: one node per
graph node with our op name, scoped by module path, edges from its inputs, `_output_shapes`
and dtype equal to the Graph's values; inputs as "IO Node"s, constants as "Const" nodes
without their data. A small CNN, MobileNetV2 (float and optimised), an int8 graph from
quant.quantize, a hand-built graph with negative and float attributes, and bad input."""
import os

import numpy as np
import pytest

pytest.importorskip("tensorboardX")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")

import minitorch_edge as mte  # noqa: E402
from minitorch_edge import graph, nn, quant  # noqa: E402
from minitorch_edge.graph import Graph  # noqa: E402
from minitorch_edge.models.mobilenet import mobilenet_v2  # noqa: E402
from minitorch_edge.utils.tensorboard import SummaryWriter  # noqa: E402

DT = {"float32": 1, "int64": 9, "int8": 6, "int32": 3, "uint8": 4}


def write_and_read(tmp_path, model, example=None, **kw):
    """add_graph into a fresh log dir; the GraphDef TensorBoard reads back, as {name: node}."""
    logdir = tmp_path / "run"
    with SummaryWriter(str(logdir)) as w:
        w.add_graph(model, example, **kw)
    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    nodes = {n.name: n for n in acc.Graph().node}
    assert len(nodes) == len(acc.Graph().node), "node names must be unique"
    return nodes, logdir


def shapes(node):
    return [tuple(d.size for d in s.dim) for s in node.attr["_output_shapes"].list.shape]


def check_nodes(g, nodes, name_of):
    """Every graph node is there under name_of(node) with its op, inputs, shapes and dtype."""
    source = {i: i for i in g.inputs}
    for n in g.nodes:
        for k, out in enumerate(n.outputs):
            source[out] = name_of(n) + (f":{k}" if k else "")
    const_nodes = {k: v for k, v in nodes.items() if v.op == "Const"}
    assert len(const_nodes) == len(g.constants)
    for name in const_nodes:
        node = const_nodes[name]
        assert "value" not in node.attr                 # no data, only name and shape
        src = [c for c in g.constants if name.endswith(c.split(".")[-1])]
        assert src, name
    by_const_shape = sorted(tuple(v.shape) for k, v in g.values.items() if k in g.constants)
    assert sorted(shapes(n)[0] for n in const_nodes.values()) == by_const_shape
    for n in g.nodes:
        node = nodes[name_of(n)]
        assert node.op == n.op
        assert shapes(node) == [g.values[o].shape for o in n.outputs]
        assert node.attr["dtype"].type == DT[g.values[n.outputs[0]].dtype]
        want = [source[i] if i not in g.constants else None for i in n.inputs if i]
        got = list(node.input)
        assert len(got) == len(want)
        for w_, got_ in zip(want, got):
            if w_ is None:
                assert nodes[got_].op == "Const"
            else:
                assert got_ == w_
    for i in g.inputs:
        assert nodes[i].op == "IO Node" and shapes(nodes[i]) == [g.values[i].shape]
    for o in g.outputs:
        assert nodes[f"output/{o}"].op == "IO Node"
        assert shapes(nodes[f"output/{o}"]) == [g.values[o].shape]


@pytest.fixture(scope="module")
def cnn():
    mte.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8 * 4 * 4, 10))
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    return m, x


@pytest.fixture(scope="module")
def mobilenet():
    mte.manual_seed(0)
    m = mobilenet_v2(num_classes=10, width_mult=0.25)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    return m, x, graph.trace(m, x)


def test_small_cnn_nodes_edges_shapes(cnn, tmp_path):
    m, x = cnn
    g = graph.trace(m, x)
    nodes, _ = write_and_read(tmp_path, m, mte.tensor(x))
    # a Sequential's children are "0", "1", ...: node "0/Conv_2" is "Sequential/0/Conv_2"
    check_nodes(g, nodes, lambda n: "Sequential/" + n.name)
    convs = [n for n in nodes.values() if n.op == "Conv"]
    assert len(convs) == 2 and {c.name.split("/")[1] for c in convs} == {"0", "3"}
    assert list(convs[0].attr["kernel_shape"].list.i) == [3, 3]
    assert convs[0].attr["group"].i == 1
    assert nodes["Sequential/0/weight"].op == "Const"
    assert shapes(nodes["Sequential/0/weight"]) == [(8, 3, 3, 3)]
    first = nodes["Sequential/" + g.nodes[0].name]
    assert first.op == "Conv" and list(first.input) == ["input", "Sequential/0/weight",
                                                        "Sequential/0/bias"]


def test_mobilenet_scopes_by_module(mobilenet, tmp_path):
    m, x, g = mobilenet
    nodes, logdir = write_and_read(tmp_path, m, (x,))

    def name_of(n):
        path, leaf = n.name.rsplit("/", 1)
        parts = [] if path == "<top>" else path.split(".")   # ops of MobileNetV2.forward
        scopes = []
        for p in parts:                        # numbered children stay with their container
            if p.isdigit() and scopes:
                scopes[-1] += "." + p
            else:
                scopes.append(p)
        return "/".join(["MobileNetV2", *scopes, leaf])

    check_nodes(g, nodes, name_of)
    assert len([n for n in nodes.values() if n.op == "Conv"]) == g.op_counts()["Conv"] == 52
    block3 = [k for k in nodes if k.startswith("MobileNetV2/features.3/conv")]
    assert block3 and all(nodes[k].op in ("Conv", "BatchNormalization", "Clip", "Const")
                          for k in block3)
    # weights stay out of the file: far smaller than the parameters
    size = sum(os.path.getsize(logdir / f) for f in os.listdir(logdir))
    assert size < sum(a.nbytes for a in g.constants.values()) / 4


def test_optimized_and_int8_graphs(mobilenet, tmp_path):
    m, x, g = mobilenet
    opt = g.optimize()
    nodes, _ = write_and_read(tmp_path / "opt", opt)
    ops = [n.op for n in nodes.values()]
    assert ops.count("mte.ConvAct") == opt.op_counts().get("mte.ConvAct", 0) > 0
    assert len([o for o in ops if o not in ("Const", "IO Node")]) == len(opt.nodes)

    q = quant.quantize(m, [x])
    nodes, _ = write_and_read(tmp_path / "int8", q)
    counts = {}
    for n in nodes.values():
        counts[n.op] = counts.get(n.op, 0) + 1
    for op, k in q.op_counts().items():
        assert counts[op] == k, op
    qin = [n for n in nodes.values() if n.op == "QuantizeLinear"][0]
    assert qin.attr["dtype"].type == DT["int8"]
    assert qin.name.startswith("MobileNetV2/input/")
    conv0 = q.nodes[1]
    assert conv0.op == "mte.QLinearConv"
    tb = nodes["MobileNetV2/features.0.0/" + conv0.name.split("/")[-1]]
    assert shapes(tb) == [q.values[conv0.outputs[0]].shape]
    weight = [i for i in tb.input if "weight" in i]
    assert weight and nodes[weight[0]].attr["dtype"].type == DT["int8"]


def test_attributes_negative_float_strings(tmp_path, capsys):
    g = Graph("hand")
    g.add_input("x", (2, 3), "float32")
    g.add_node("Softmax", ["x"], ["s"], name="head/Softmax", axis=-1)
    g.add_node("LeakyRelu", ["s"], ["y"], name="act", alpha=0.125)
    g.set_outputs(["y"])
    g.check()
    nodes, _ = write_and_read(tmp_path, g, verbose=True)
    assert "Softmax" in capsys.readouterr().out                 # verbose prints the listing
    assert nodes["hand/head/Softmax"].attr["axis"].i == -1
    assert nodes["hand/act"].attr["alpha"].f == pytest.approx(0.125)
    assert list(nodes["hand/act"].input) == ["hand/head/Softmax"]
    assert list(nodes["output/y"].input) == ["hand/act"]


def test_bad_input(cnn, tmp_path):
    m, x = cnn
    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(TypeError, match="add_graph: expected a Module or a graph.Graph"):
            w.add_graph("not a model")
        with pytest.raises(ValueError, match="add_graph: .*needs input_to_model"):
            w.add_graph(m)
        g = graph.trace(m, x)
        with pytest.raises(ValueError, match=r"takes inputs of shapes \[\(1, 3, 8, 8\)\]"):
            w.add_graph(g, np.zeros((2, 3, 8, 8), np.float32))
        w.add_graph(g, x)                                     # matching shapes are fine
