"""minitorch_edge.onnx.load / import_model: the zoo's PyTorch twins exported by torch.onnx.export
(opset 17; 13 and 21 for a CNN) imported and run equal to torch; our own export imported back;
an imported graph fused like the traced one; QDQ files from onnxruntime's quantize_static run
on our int8 kernels close to onnxruntime's int8; static shapes from input_shapes; the safety
rules on a corpus of malformed models, and a mutation fuzz where only success or
OnnxImportError may happen.
"""
import io
import logging
import os

import numpy as np
import pytest
from harness import import_torch, randomize_bn

import minitorch_edge as mte
from minitorch_edge import graph, models, quant
from minitorch_edge.graph import opset
from minitorch_edge.onnx import (
    OnnxImportError,
    OnnxUnsupportedError,
    export,
    import_model,
    load,
)

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = import_torch()
from model_twins import (
    TorchEfficientNetLite0,
    TorchMLP,
    TorchMobileNetV2,
    TorchResNet18,
    TorchSmallCNN,
    TorchTransformerClassifier,
)
from onnx import TensorProto, helper, numpy_helper

ort.set_default_logger_severity(3)
logging.getLogger().setLevel(logging.ERROR)

# name -> (ours, its torch twin, input shape or None for tokens)
ZOO = {
    "mlp": (lambda: models.MLP(in_features=64, hidden=(32,), out_features=10),
            lambda: TorchMLP(64, (32,), 10), (2, 64)),
    "small_cnn": (lambda: models.SmallCNN(in_channels=1, num_classes=10, input_size=28),
                  lambda: TorchSmallCNN(), (2, 1, 28, 28)),
    "resnet18": (lambda: models.resnet18(num_classes=10), lambda: TorchResNet18(10),
                 (1, 3, 64, 64)),
    "mobilenet_v2": (lambda: models.mobilenet_v2(num_classes=10), lambda: TorchMobileNetV2(10),
                     (1, 3, 64, 64)),
    "efficientnet_lite0": (lambda: models.efficientnet_lite0(num_classes=10),
                           lambda: TorchEfficientNetLite0(10), (1, 3, 64, 64)),
    "transformer": (lambda: models.TransformerClassifier(50, 3, d_model=16, nhead=2,
                                                         num_layers=1, dim_feedforward=32,
                                                         max_len=8, dropout=0.0),
                    lambda: TorchTransformerClassifier(50, 3, 16, 2, 1, 32, 8), None),
}

def example(name, seed=0):
    shape = ZOO[name][2]
    rng = np.random.default_rng(seed)
    if shape is None:
        return rng.integers(0, 50, (2, 8))
    return rng.standard_normal(shape).astype(np.float32)


def twin_pair(name):
    """(our model, its torch twin with the same weights and non-trivial BatchNorm), eval."""
    torch.manual_seed(0)
    twin = ZOO[name][1]().eval()
    mte.manual_seed(0)                          # the same weights in every run and test order
    ours = ZOO[name][0]()
    randomize_bn(ours, np.random.default_rng(1))
    state = ours.state_dict()
    twin.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in state.items()},
                         strict=False)
    for k, v in twin.state_dict().items():      # what ours lacks (e.g. num_batches_tracked)
        if k in state:
            np.testing.assert_array_equal(v.numpy(), state[k].numpy())
    return ours.eval(), twin


def torch_onnx(twin, x, opset_version=17, **kw):
    f = io.BytesIO()
    torch.onnx.export(twin, torch.from_numpy(x), f, dynamo=False, opset_version=opset_version,
                      **kw)
    return f.getvalue()


_CACHE = {}


def exported(name, opset_version=17):
    key = (name, opset_version)
    if key not in _CACHE:
        ours, twin = twin_pair(name)
        x = example(name)
        with torch.no_grad():
            ref = twin(torch.from_numpy(x)).numpy()
        _CACHE[key] = ours, torch_onnx(twin, x, opset_version), x, ref
    return _CACHE[key]


def compute_ops(g):
    """op counts without the view ops (Reshape, Flatten, ...: free, and torch writes Flatten
    where our tracer writes Reshape)."""
    return {op: k for op, k in g.op_counts().items() if not opset.OPS[op].alias}


def close(y, ref, rel=1e-4):
    scale = max(float(np.abs(ref).max()), 1e-30)
    assert y.shape == ref.shape and y.dtype == ref.dtype
    assert float(np.abs(y - ref).max()) <= rel * scale, float(np.abs(y - ref).max()) / scale


# ---- torch twin -> ONNX -> ours ----------------------------------------------------------------
@pytest.mark.parametrize("name", list(ZOO))
def test_torch_export_imports_equal_to_torch(name):
    ours, data, x, ref = exported(name)
    g = load(data)
    assert not [n for n in g.nodes if n.op in ("Shape", "Constant")]
    close(g.run(x), ref)                              # the reference executor, as imported
    module = import_model(data)                       # optimized, C runtime where it can
    close(module(x), ref)
    close(module(mte.tensor(x)).numpy(), ref)         # Tensors in, Tensors out
    # the same fused ops as the graph traced from our zoo model (the Transformer: torch writes
    # its multi-head attention with other ops around it, but the attention itself is fused)
    traced = graph.trace(ours, mte.tensor(x)).optimize()
    if name == "transformer":
        assert module.optimized.op_counts()["mte.Attention"] == traced.op_counts()[
            "mte.Attention"]
    else:
        assert compute_ops(module.optimized) == compute_ops(traced)


@pytest.mark.parametrize("opset_version", [13, 21])
@pytest.mark.parametrize("name", ["small_cnn", "mobilenet_v2"])
def test_other_opsets(name, opset_version):
    ours, data, x, ref = exported(name, opset_version)
    proto = onnx.load_from_string(data)
    assert [o.version for o in proto.opset_import if o.domain == ""] == [opset_version]
    module = import_model(data)
    close(module(x), ref)
    assert compute_ops(module.optimized) == compute_ops(
        graph.trace(ours, mte.tensor(x)).optimize())


def test_symbolic_batch_from_input_shapes(tmp_path):
    _, twin = twin_pair("small_cnn")
    path = tmp_path / "cnn.onnx"
    path.write_bytes(torch_onnx(twin, example("small_cnn"), input_names=["x"],
                                output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}))
    assert load(str(path)).values["x"].shape == (1, 1, 28, 28)       # symbolic dims: 1
    g = load(path, input_shapes={"x": (3, 1, 28, 28)})
    x = np.random.default_rng(3).standard_normal((3, 1, 28, 28)).astype(np.float32)
    with torch.no_grad():
        close(g.run(x), twin(torch.from_numpy(x)).numpy())
    with pytest.raises(OnnxImportError, match="does not fit"):
        load(path, input_shapes={"x": (3, 2, 28, 28)})           # a fixed dim disagrees
    with pytest.raises(OnnxImportError, match="not graph inputs"):
        load(path, input_shapes={"z": (1,)})


# ---- our export -> import ----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ZOO))
def test_our_export_round_trips(name):
    mte.manual_seed(0)
    model = ZOO[name][0]().eval()
    x = example(name)
    traced = graph.trace(model, mte.tensor(x))
    f = io.BytesIO()
    export(model, x, f)
    g = load(f.getvalue())
    close(g.run(x), traced.run(x), rel=1e-6)
    close(g.optimize().run(x), traced.run(x), rel=1e-5)
    assert compute_ops(g.optimize()) == compute_ops(traced.optimize())


@pytest.mark.parametrize("name", sorted(ZOO))
def test_our_int8_export_round_trips_to_the_same_int8_graph(name):
    mte.manual_seed(0)
    model = randomize_bn(ZOO[name][0]().eval(), np.random.default_rng(1))
    x = example(name)
    q = quant.quantize(model, [x, example(name, seed=1)])
    f = io.BytesIO()
    export(q, x, f)
    back = load(f.getvalue()).optimize()
    assert back.op_counts() == q.optimize().op_counts()
    np.testing.assert_array_equal(back.compile()(x), q.compile()(x))


# ---- QDQ from onnxruntime.quantization -> our int8 kernels -------------------------------------
@pytest.mark.parametrize("activation", ["uint8", "int8"])
@pytest.mark.parametrize("name", list(ZOO))
def test_onnxruntime_qdq_runs_on_our_int8_kernels(tmp_path, name, activation):
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    _, data, x, ref = exported(name)
    fp, qp = tmp_path / "float.onnx", tmp_path / "int8.onnx"
    fp.write_bytes(data)
    input_name = onnx.load_from_string(data).graph.input[0].name
    calib = [example(name, seed=s) for s in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{input_name: c} for c in calib])

        def get_next(self):
            return next(self.batches, None)

    quantize_static(str(fp), str(qp), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8,
                    activation_type=QuantType.QUInt8 if activation == "uint8" else QuantType.QInt8)
    s = ort.InferenceSession(str(qp), providers=["CPUExecutionProvider"])
    (expected,) = s.run(None, {input_name: x})
    module = import_model(qp)
    fused = module.optimized
    counts = fused.op_counts()
    if name == "transformer":
        # no int8 MatMul yet: the Transformer's MatMuls (attention's and its 3-D Linears, which
        # torch exports as MatMul + Add) stay DequantizeLinear -> float MatMul -> Quantize
        assert counts.get("MatMul", 0) >= 1 and counts.get("QuantizeLinear", 0) >= 4, counts
    else:
        assert not {"Conv", "Gemm", "MatMul"} & set(counts), counts
        assert sum(k for op, k in counts.items() if op.startswith("mte.QLinear")) >= 2, counts
    assert all(fused.values[n.outputs[0]].dtype == "int8"
               for n in fused.nodes if n.op == "QuantizeLinear")
    # each int8 node alone, fed the values of the QDQ graph run as written (float ops between
    # QuantizeLinear/DequantizeLinear: the semantics onnxruntime's kernels reproduce), is at
    # most one output step from it: ours requantize in TFLite's fixed point, the QDQ graph in
    # float with ties to even
    g = load(qp)
    qdq = _all_values(g, x)
    checked = 0
    for node in fused.nodes:
        if not node.op.startswith("mte.QLinear") or node.outputs[0] not in qdq:
            continue
        if any(i and i not in qdq and i not in fused.constants for i in node.inputs):
            continue
        ins = [fused.constants[i] if i in fused.constants else qdq[i] if i else None
               for i in node.inputs]
        (out,) = opset.run_node(node, ins)
        steps = np.abs(out.astype(np.int32) - qdq[node.outputs[0]].astype(np.int32)).max()
        assert steps <= 1, f"{node.name} ({node.op}) is {steps} steps from the QDQ graph"
        checked += 1
    assert checked >= min(2, counts.get("mte.QLinearConv", 0) + counts.get("mte.QLinearGemm", 0))
    # the whole model, in steps of the last layer's output scale: those one-step differences
    # add up with depth (ResNet-18's 20 layers: 2 to 4 steps apart), and ours is no further
    # from the float model than onnxruntime's int8 is, give or take as much. EfficientNet-Lite0
    # (randomly initialised, 16 blocks) amplifies them to tens of steps: for it the test is the
    # per-node one above and the direction of the output
    y = module(x)
    dq = [n for n in g.nodes if n.op == "DequantizeLinear"][-1]
    step = float(np.asarray(g.constants[dq.inputs[1]]).reshape(-1)[0])
    if name == "efficientnet_lite0":
        cosine = float(np.sum(y * expected) / (np.linalg.norm(y) * np.linalg.norm(expected)))
        assert cosine > 0.95
        return
    assert float(np.abs(y - expected).max()) <= 6 * step
    ort_error = float(np.abs(expected - ref).max())
    assert float(np.abs(y - ref).max()) <= ort_error + 4 * step


def _all_values(g, x):
    """Every value of `g` run on `x` by the reference ops, node by node: name -> array."""
    env = dict(g.constants)
    env[g.inputs[0]] = x
    for node in g.nodes:
        outs = opset.run_node(node, [env[i] if i else None for i in node.inputs])
        env.update(zip(node.outputs, outs))
    return env


# ---- safety --------------------------------------------------------------------------------------
def model_bytes(nodes, inputs, outputs, inits=(), opset_version=17, check=False):
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset_version)])
    if check:
        onnx.checker.check_model(m)
    return m.SerializeToString()


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def tiny_cnn(weights=None):
    """A small valid model: Conv -> Relu -> Flatten -> Gemm, plus Shape-derived Reshape."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "b")
    fc = numpy_helper.from_array(rng.standard_normal((3, 64)).astype(np.float32), "fc")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    consts = [numpy_helper.from_array(np.asarray(0, np.int64), "zero"),
              numpy_helper.from_array(np.asarray([0], np.int64), "zero1"),
              numpy_helper.from_array(np.asarray([-1], np.int64), "minus1")]
    return model_bytes(nodes, [vi("x", ["batch", 1, 4, 4])], [vi("y", ["batch", 3])],
                       [w, b, fc] + consts, check=True)


def test_tiny_model_loads_folds_shapes_and_matches_onnxruntime():
    data = tiny_cnn()
    g = load(data, input_shapes={"x": (2, 1, 4, 4)})
    assert g.op_counts() == {"Conv": 1, "Relu": 1, "Reshape": 1, "Gemm": 1}
    x = np.random.default_rng(1).standard_normal((2, 1, 4, 4)).astype(np.float32)
    (ref,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    close(g.run(x), ref, rel=1e-5)


def test_unsorted_nodes_are_sorted():
    proto = onnx.load_from_string(tiny_cnn())
    nodes = list(proto.graph.node)[::-1]
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    g = load(proto)
    x = np.ones((1, 1, 4, 4), np.float32)
    np.testing.assert_allclose(g.run(x), load(tiny_cnn()).run(x))


def _tensor(name, dims, raw, dtype=TensorProto.FLOAT):
    t = TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def _typed(name, dims, floats):
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    t.float_data.extend(floats)
    return t


def _add_model(init):
    """y = x + c with c the given initializer."""
    return model_bytes([helper.make_node("Add", ["x", "c"], ["y"])], [vi("x", [2])],
                       [vi("y", [2])], [init])


def _external(tmp_path, location, offset=0, length=8, file_bytes=8):
    (tmp_path / "data.bin").write_bytes(np.arange(file_bytes // 4, dtype=np.float32).tobytes())
    t = TensorProto()
    t.name, t.data_type, t.data_location = "c", TensorProto.FLOAT, TensorProto.EXTERNAL
    t.dims.extend([2])
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    path = tmp_path / "m.onnx"
    path.write_bytes(_add_model(t))
    return path


def test_external_data_inside_the_folder_loads(tmp_path):
    g = load(_external(tmp_path, "data.bin", offset=4, length=8, file_bytes=12))
    np.testing.assert_array_equal(g.constants["c"], [1.0, 2.0])


@pytest.mark.parametrize("location, offset, length, file_bytes, match", [
    ("/etc/passwd", 0, 8, 8, "relative path"),
    ("../data.bin", 0, 8, 8, "relative path"),
    ("sub/../../data.bin", 0, 8, 8, "relative path"),
    ("missing.bin", 0, 8, 8, "does not exist"),
    ("data.bin", 4, 8, 8, "past the end"),
    ("data.bin", 0, 12, 16, "length 12"),
    ("data.bin", -4, 8, 8, "past the end"),
])
def test_external_data_rules(tmp_path, location, offset, length, file_bytes, match):
    with pytest.raises(OnnxImportError, match=match):
        load(_external(tmp_path, location, offset, length, file_bytes))


def test_external_data_symlink_leaving_the_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(b"\0" * 8)
    inside = tmp_path / "model"
    inside.mkdir()
    os.symlink(outside / "secret.bin", inside / "link.bin")
    path = _external(inside, "link.bin")
    with pytest.raises(OnnxImportError, match="outside the model's folder"):
        load(path)
    with pytest.raises(OnnxImportError, match="needs the model's folder"):
        load(path.read_bytes())                  # bytes: no folder, no external data


def _malformed():
    ok = numpy_helper.from_array(np.ones(2, np.float32), "c")
    cycle = [helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Add", ["x", "a"], ["y"])]
    return {
        "raw_data size": (_add_model(_tensor("c", [3], b"\0" * 8)), "needs 12 bytes"),
        "typed field size": (_add_model(_typed("c", [3], [1.0, 2.0])), "needs 3 values"),
        "negative dim": (_add_model(_tensor("c", [-2], b"")), "negative dimension"),
        "overflowing dims": (_add_model(_tensor("c", [2**40, 2**40], b"")),
                             "more elements than int64"),
        "unknown dtype": (_add_model(_tensor("c", [2], b"\0" * 8, dtype=99)),
                          "unknown data type"),
        "undefined reference": (model_bytes([helper.make_node("Add", ["x", "nope"], ["y"])],
                                            [vi("x", [2])], [vi("y", [2])]), "not defined"),
        "cycle": (model_bytes(cycle, [vi("x", [2])], [vi("y", [2])]), "cycle"),
        "defined twice": (model_bytes([helper.make_node("Relu", ["x"], ["y"]),
                                       helper.make_node("Relu", ["x"], ["y"])],
                                      [vi("x", [2])], [vi("y", [2])]), "defined twice"),
        "output undefined": (model_bytes([], [vi("x", [2])], [vi("y", [2])]), "not defined"),
        "input negative dim": (model_bytes([helper.make_node("Relu", ["x"], ["y"])],
                                           [vi("x", [-3])], [vi("y", [-3])]),
                               "negative dimension"),
        "output shape lie": (model_bytes([helper.make_node("Relu", ["x"], ["y"])],
                                         [vi("x", [2])], [vi("y", [5])]), "declared with shape"),
        "shape rule": (model_bytes([helper.make_node("MatMul", ["x", "c"], ["y"])],
                                   [vi("x", [3, 3])], [vi("y", [3, 2])], [ok]), "MatMul"),
        "not protobuf": (b"\xff\xff\xff\xff not an onnx file", "does not parse"),
        "no opset": (helper.make_model(helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"])], "t", [vi("x", [2])], [vi("y", [2])]),
            opset_imports=[helper.make_opsetid("other", 1)]).SerializeToString(), "no opset"),
    }


@pytest.mark.parametrize("case", sorted(_malformed()))
def test_malformed_models_raise_the_typed_error(case):
    data, match = _malformed()[case]
    with pytest.raises(OnnxImportError, match=match) as info:
        load(data)
    assert not isinstance(info.value, OnnxUnsupportedError)


def test_unsupported_ops_and_types_are_named():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Frobnicate", ["r"], ["a"]),
             helper.make_node("Foo", ["a"], ["y"], domain="com.example")]
    with pytest.raises(OnnxUnsupportedError) as info:
        load(model_bytes(nodes, [vi("x", [2])], [vi("y", [2])]))
    assert info.value.op_types == ["Frobnicate", "com.example.Foo"]
    strings = helper.make_tensor("c", TensorProto.STRING, [1], [b"a"])
    with pytest.raises(OnnxUnsupportedError, match="string"):
        load(_add_model(strings))
    conv3d = model_bytes([helper.make_node("Conv", ["x", "w"], ["y"])],
                         [vi("x", [1, 1, 3, 3, 3])], [vi("y", [1, 1, 1, 1, 1])],
                         [numpy_helper.from_array(np.ones((1, 1, 3, 3, 3), np.float32), "w")])
    with pytest.raises(OnnxUnsupportedError, match="3-D convolution"):
        load(conv3d)


def test_mutated_models_give_a_graph_or_the_typed_error():
    data = tiny_cnn()
    rng = np.random.default_rng(2026)
    outcomes = {"ok": 0, "error": 0}
    for trial in range(200):
        b = bytearray(data)
        kind = trial % 4
        if kind == 0:                                   # flip a few bytes
            for _ in range(int(rng.integers(1, 4))):
                b[int(rng.integers(len(b)))] = int(rng.integers(256))
        elif kind == 1:                                 # truncate
            b = b[:int(rng.integers(len(b)))]
        elif kind == 2:                                 # insert random bytes
            at = int(rng.integers(len(b)))
            b[at:at] = rng.integers(0, 256, int(rng.integers(1, 8))).astype(np.uint8).tobytes()
        else:                                           # flip one bit in a length/tag area
            at = int(rng.integers(min(len(b), 400)))
            b[at] ^= 1 << int(rng.integers(8))
        try:
            load(bytes(b), input_shapes=None)
            outcomes["ok"] += 1
        except OnnxImportError:
            outcomes["error"] += 1
    assert outcomes["error"] > 50 and sum(outcomes.values()) == 200, outcomes


def test_constant_inputs_freeze_a_shape_input():
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    data = model_bytes(nodes, [vi("x", [2, 6]), vi("shape", [2], TensorProto.INT64)],
                       [vi("y", [3, 4])])
    with pytest.raises(OnnxUnsupportedError, match="static shapes") as info:
        load(data)
    assert info.value.op_types == ["Reshape(dynamic shape input)"]
    module = import_model(data, constant_inputs={"shape": np.asarray([3, 4], np.int64)})
    assert module.input_names == ["x"] and "OnnxModule" in repr(module)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(module(x), x.reshape(3, 4))
    with pytest.raises(OnnxImportError, match="declared int64"):
        load(data, constant_inputs={"shape": np.asarray([3, 4], np.int32)})
