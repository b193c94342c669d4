"""minitorch_edge.onnx.export: every zoo model (a Module, and its optimized graph with the fused
`mte` ops expanded back) as ONNX that passes onnx.checker(full_check) and that onnxruntime runs
to our outputs; int8 graphs as QDQ (per-channel int8 weights) that onnxruntime runs close to our
int8 executor; opset versions, dynamic batch, names, file objects, and the errors.
"""
import io

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import graph, models, quant
from minitorch_edge.onnx import export

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def image(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


ZOO = {
    "mlp": (lambda: models.MLP(in_features=64, hidden=(32,), out_features=10), (2, 64)),
    "small_cnn": (lambda: models.SmallCNN(in_channels=1, num_classes=10, input_size=8),
                  (2, 1, 8, 8)),
    "resnet18": (lambda: models.resnet18(num_classes=10), (1, 3, 32, 32)),
    "mobilenet_v2": (lambda: models.mobilenet_v2(num_classes=10), (1, 3, 32, 32)),
    "efficientnet_lite0": (lambda: models.efficientnet_lite0(num_classes=10), (1, 3, 32, 32)),
    "transformer": (lambda: models.TransformerClassifier(vocab_size=50, d_model=16, nhead=2,
                                                         num_layers=1, num_classes=3,
                                                         max_len=8), None),
}


def example(name, seed=0):
    shape = ZOO[name][1]
    if shape is None:
        return np.random.default_rng(seed).integers(0, 50, (2, 8))
    return image(*shape, seed=seed)


def to_bytes(model, x, **kw):
    f = io.BytesIO()
    export(model, x, f, **kw)
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    return data


def ort_run(data, *inputs):
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: x for i, x in zip(s.get_inputs(), inputs)})


def eager(model, x):
    with mte.no_grad():
        return model(mte.tensor(x)).numpy()


@pytest.mark.parametrize("name", sorted(ZOO))
def test_float_zoo_runs_in_onnxruntime(name):
    mte.manual_seed(0)
    model = ZOO[name][0]().eval()
    x = example(name)
    ref = eager(model, x)
    scale = max(float(np.abs(ref).max()), 1e-30)
    for source in (model, graph.trace(model, mte.tensor(x)).optimize()):
        data = to_bytes(source, x)
        (y,) = ort_run(data, x)
        assert np.abs(y - ref).max() <= 1e-4 * scale
    assert model.training is False
    proto = onnx.load_from_string(data)
    assert proto.producer_name == "minitorch_edge" and proto.producer_version
    assert not [n for n in proto.graph.node if n.domain not in ("", "ai.onnx")]


def test_a_module_is_exported_unfused_and_keeps_its_training_flag():
    model = models.resnet18(num_classes=10).train()
    x = image(1, 3, 32, 32)
    ops = {n.op_type for n in onnx.load_from_string(to_bytes(model, x)).graph.node}
    assert {"Conv", "BatchNormalization", "Relu"} <= ops
    assert model.training is True


# (model, most output steps apart): onnxruntime requantizes in float with ties to even, we in
# TFLite's fixed point, so each layer may round one step differently and the differences add
# up with depth (ResNet-18: 20 layers, EfficientNet-Lite0: 16 blocks)
INT8_STEPS = {"mlp": 1, "small_cnn": 2, "resnet18": 6, "mobilenet_v2": 3,
              "efficientnet_lite0": 12, "transformer": 1}


@pytest.mark.parametrize("name", sorted(INT8_STEPS))
def test_int8_graph_is_qdq_with_per_channel_weights(name):
    from harness import randomize_bn
    mte.manual_seed(0)
    model = randomize_bn(ZOO[name][0]().eval(), np.random.default_rng(1))
    x = example(name)
    q = quant.quantize(model, [x, example(name, seed=1)])
    ours = q.compile()(x)
    data = to_bytes(q, x)
    proto = onnx.load_from_string(data)
    ops = [n.op_type for n in proto.graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    assert {"Conv", "Gemm", "MatMul"} & set(ops)
    inits = {t.name: t for t in proto.graph.initializer}
    per_channel = [n for n in proto.graph.node if n.op_type == "DequantizeLinear"
                   and n.input[0] in inits and inits[n.input[0]].data_type == onnx.TensorProto.INT8
                   and len(inits[n.input[1]].dims) == 1 and inits[n.input[1]].dims[0] > 1]
    assert per_channel, "no per-channel int8 weight"
    (y,) = ort_run(data, x)
    last = q.nodes[-1]
    assert last.op == "DequantizeLinear"
    step = float(q.constants[last.inputs[1]])      # the output's quantization step
    assert np.abs(ours).max() > 20 * step          # a real signal, not all zero points
    assert np.abs(y - ours).max() <= INT8_STEPS[name] * step * (1 + 1e-5)


@pytest.mark.parametrize("opset", [13, 17, 18, 21])
def test_opset_versions(opset):
    model = models.TransformerClassifier(vocab_size=50, d_model=16, nhead=2, num_layers=1,
                                         num_classes=3, max_len=8).eval()
    x = example("transformer")
    data = to_bytes(model, x, opset_version=opset)
    proto = onnx.load_from_string(data)
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    (y,) = ort_run(data, x)
    np.testing.assert_allclose(y, eager(model, x), rtol=1e-4, atol=1e-5)


def test_dynamic_batch_and_names():
    model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8).eval()
    x = image(1, 1, 8, 8)
    data = to_bytes(model, x, input_names=["pixels"], output_names=["logits"],
                    dynamic_axes={"pixels": {0: "batch"}, "logits": {0: "batch"}})
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert [i.name for i in s.get_inputs()] == ["pixels"]
    assert [o.name for o in s.get_outputs()] == ["logits"]
    x3 = image(3, 1, 8, 8, seed=2)
    (y,) = s.run(None, {"pixels": x3})
    np.testing.assert_allclose(y, eager(model, x3), rtol=1e-4, atol=1e-6)


def test_path_is_written(tmp_path):
    model = models.MLP(in_features=64, hidden=(32,), out_features=10).eval()
    x = image(2, 64)
    path = tmp_path / "m.onnx"
    export(model, x, str(path))
    onnx.checker.check_model(str(path), full_check=True)
    (y,) = ort_run(path.read_bytes(), x)
    np.testing.assert_allclose(y, eager(model, x), rtol=1e-4, atol=1e-6)
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]     # no temporary left


def test_errors():
    model = models.MLP(in_features=64, hidden=(32,), out_features=10).eval()
    x = image(2, 64)
    with pytest.raises(ValueError, match="opset_version 12 is not supported"):
        export(model, x, io.BytesIO(), opset_version=12)
    with pytest.raises(ValueError, match="names"):
        export(model, x, io.BytesIO(), input_names=["a", "b"])
    with pytest.raises(TypeError, match="must be a Module or a Graph"):
        export("not a model", x, io.BytesIO())
    with pytest.raises(ValueError, match="dynamic_axes"):
        export(model, x, io.BytesIO(), dynamic_axes={"nope": {0: "batch"}})
