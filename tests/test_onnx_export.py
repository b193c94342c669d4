"""minitorch_edge.onnx.export: every zoo model, float and int8 (QDQ), in onnxruntime and
OpenVINO against our own outputs; opsets, dynamic batch, names, files and errors."""
import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch_edge import graph, models, quant
from minitorch_edge import onnx as mo
from minitorch_edge.graph import opset

onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install onnx)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
try:
    import openvino
except ImportError:       # the OpenVINO tests skip, saying so
    openvino = None

RNG = np.random.default_rng(0)


def _img(n, c=3, s=32):
    return RNG.standard_normal((n, c, s, s)).astype(np.float32)


ZOO = {
    "MLP": (lambda: models.MLP(64, hidden=(32,), out_features=10),
            lambda n: RNG.standard_normal((n, 64)).astype(np.float32)),
    "SmallCNN": (lambda: models.SmallCNN(), lambda n: _img(n, 1, 28)),
    "resnet18": (lambda: models.resnet18(num_classes=10, small_input=True), _img),
    "mobilenet_v2": (lambda: models.mobilenet_v2(num_classes=10, width_mult=0.5), _img),
    "efficientnet_lite0": (lambda: models.efficientnet_lite0(num_classes=10), _img),
    "TransformerClassifier": (
        lambda: models.TransformerClassifier(50, 10, d_model=16, nhead=2, num_layers=1,
                                             max_len=8),
        lambda n: RNG.integers(1, 50, (n, 8))),
}
_CACHE = {}


def zoo(name):
    """(eval model, example batch of 2, int8 graph), built once per test session."""
    if name not in _CACHE:
        build, make = ZOO[name]
        m = build().eval()
        x = make(2)
        _CACHE[name] = (m, x, quant.quantize(m, [x]))
    return _CACHE[name]


def to_bytes(model, x, **kw):
    buf = io.BytesIO()
    mo.export(model, x, buf, **kw)
    return buf.getvalue()


def ort_run(data, *xs, basic=False):
    so = ort.SessionOptions()
    if basic:     # QDQ evaluated as float ops: the ONNX semantics, no int8 kernels
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    s = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: x for i, x in zip(s.get_inputs(), xs)})[0]


def out_step(q):
    """The scale of the int8 graph's output (its final DequantizeLinear)."""
    dq = next(n for n in q.nodes if n.op == "DequantizeLinear" and n.outputs[0] in q.outputs)
    return float(q.constants[dq.inputs[1]])


@pytest.mark.parametrize("name", list(ZOO))
def test_float_zoo_model_runs_in_onnxruntime(name):
    m, x, _ = zoo(name)
    ours = m(x).numpy() if hasattr(m(x), "numpy") else np.asarray(m(x))
    data = to_bytes(m, x)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    assert not any(n.domain for n in proto.graph.node)
    assert proto.producer_name == "minitorch_edge"
    np.testing.assert_allclose(ort_run(data, x), ours, rtol=1e-4, atol=1e-5)
    assert m.training is False
    m.train()
    to_bytes(m, x)
    assert m.training is True          # the training flag is restored
    m.eval()


@pytest.mark.parametrize("name", list(ZOO))
def test_int8_zoo_model_is_qdq_and_runs_in_onnxruntime(name):
    m, x, q = zoo(name)
    ours, step = q.run(x), out_step(q)
    data = to_bytes(q, x)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    per_channel = [n for n in proto.graph.node if n.op_type == "DequantizeLinear"
                   and inits.get(n.input[0]) is not None and inits[n.input[0]].dtype == np.int8
                   and inits[n.input[1]].size > 1
                   and any(a.name == "axis" and a.i == 0 for a in n.attribute)]
    n_layers = sum(n.op in ("mte.QLinearConv", "mte.QLinearGemm") for n in q.nodes)
    assert len(per_channel) == n_layers > 0
    assert not any(n.op_type.startswith("QLinear") or n.domain for n in proto.graph.node)
    # the QDQ semantics: equal up to ties (ORT rounds half to even, we away from zero)
    np.testing.assert_allclose(ort_run(data, x, basic=True), ours, rtol=0, atol=1.01 * step)
    # ORT's int8 kernels (u8s8 on AVX2 saturates int16 pairs, see the report): loose
    y = ort_run(data, x)
    assert np.median(np.abs(y - ours)) <= 3 * step


@pytest.mark.skipif(openvino is None, reason="openvino is not installed (pip install openvino)")
@pytest.mark.parametrize("name", ["SmallCNN", "resnet18", "TransformerClassifier"])
def test_openvino_float_and_int8(name, tmp_path):
    m, x, q = zoo(name)
    core = openvino.Core()
    mo.export(m, x, tmp_path / "f.onnx")
    y = core.compile_model(str(tmp_path / "f.onnx"), "CPU")(x)[0]
    np.testing.assert_allclose(y, graph.trace(m, x).run(x), rtol=1e-4, atol=1e-5)
    mo.export(q, x, str(tmp_path / "q.onnx"))
    y = core.compile_model(str(tmp_path / "q.onnx"), "CPU")(x)[0]
    assert np.median(np.abs(y - q.run(x))) <= 3 * out_step(q)


@pytest.mark.parametrize("version", [13, 17, 18, 21])
def test_opset_versions_on_reductions_and_splits(version):
    m, x, _ = zoo("TransformerClassifier")
    g = graph.trace(m, x)
    data = to_bytes(g, x, opset_version=version)
    proto = onnx.load_from_string(data)
    assert proto.opset_import[0].version == version
    ops = {n.op_type: n for n in proto.graph.node}
    assert ("LayerNormalization" in ops) == (version >= 17)
    rm = ops["ReduceMean"]
    assert (len(rm.input) == 2) == (version >= 18)
    assert any(a.name == "num_outputs" for a in ops["Split"].attribute) == (version >= 18)
    np.testing.assert_allclose(ort_run(data, x), g.run(x), rtol=1e-4, atol=1e-5)


@given(batch=st.integers(2, 5))
def test_dynamic_batch(batch):
    for name in ("resnet18", "TransformerClassifier"):
        m, _, _ = zoo(name)
        x1 = ZOO[name][1](1)
        data = to_bytes(m, x1, dynamic_axes={"input": {0: "batch"}, "output": [0]})
        proto = onnx.load_from_string(data)
        assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
        xb = ZOO[name][1](batch)
        np.testing.assert_allclose(ort_run(data, xb), graph.trace(m, xb).run(xb),
                                   rtol=1e-4, atol=1e-5)


def test_dynamic_axis_that_cannot_be_honoured():
    m, x, _ = zoo("TransformerClassifier")        # the positional table fixes the length
    with pytest.raises(ValueError, match=r"node .*Add.* cannot|does not take"):
        to_bytes(m, x, dynamic_axes={"input": {1: "length"}})


def test_path_bytesio_and_names(tmp_path):
    m, x, _ = zoo("MLP")
    path = tmp_path / "m.onnx"
    mo.export(m, x, str(path), input_names=["pixels"], output_names=["logits"])
    proto = onnx.load(str(path))
    assert [i.name for i in proto.graph.input] == ["pixels"]
    assert [o.name for o in proto.graph.output] == ["logits"]
    assert path.read_bytes() == to_bytes(m, x, input_names=["pixels"], output_names=["logits"])
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ValueError, match="input_names has 2 names but the graph has 1"):
        to_bytes(m, x, input_names=["a", "b"])


@pytest.mark.parametrize("bad", [12, 22, "17"])
def test_bad_opset(bad):
    m, x, _ = zoo("MLP")
    with pytest.raises(ValueError, match="opset_version .* is not supported"):
        to_bytes(m, x, opset_version=bad)


def test_mte_op_without_expansion(monkeypatch):
    monkeypatch.setitem(opset.OPS, "mte.Fake", opset.OpDef("mte.Fake", lambda a, x: x,
                                                           opset.same_as_input))
    g = graph.Graph("fake")
    g.add_input("x", (2, 3))
    g.add_node("mte.Fake", ["x"], ["y"], name="the_fake")
    g.set_outputs(["y"])
    with pytest.raises(ValueError, match=r"'mte.Fake' \(node 'the_fake'\) has no ONNX expansion"):
        to_bytes(g, None)


def test_every_mte_op_has_an_expansion():
    from minitorch_edge.onnx.export import EXPANSIONS
    assert [n for n in opset.names() if n.startswith("mte.") and n not in EXPANSIONS] == []
