"""Exported ONNX files run in OpenVINO (the second engine of issue 14): float zoo models equal to
our eager outputs, int8 QDQ files close to our int8 executor.

OpenVINO's CPU plugin computes in bfloat16 by default where the CPU has AVX-512 BF16 (Zen 4
has): the tests ask for float32 (INFERENCE_PRECISION_HINT), since they compare numbers, not
speed. Where the openvino wheel does not install (it has no build for some platforms), the
tests are skipped and say so.
"""
import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import graph, quant
from minitorch_edge.onnx import export

from test_onnx_export import ZOO, eager, example

pytest.importorskip("onnx")
ov = pytest.importorskip("openvino", reason="OpenVINO does not install on this platform")


def ov_run(path, x):
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU",
                                  {"INFERENCE_PRECISION_HINT": "f32"})
    return compiled(x)[compiled.output(0)]


@pytest.mark.parametrize("name", sorted(ZOO))
def test_float_zoo_runs_in_openvino(name, tmp_path):
    mte.manual_seed(0)
    model = ZOO[name][0]().eval()
    x = example(name)
    ref = eager(model, x)
    path = tmp_path / f"{name}.onnx"
    export(graph.trace(model, mte.tensor(x)).optimize(), x, str(path))
    y = ov_run(path, x)
    assert y.shape == ref.shape
    assert np.abs(y - ref).max() <= 1e-4 * max(float(np.abs(ref).max()), 1e-30)


# (model, most output steps apart): OpenVINO requantizes in float with its own rounding, we in
# TFLite's fixed point, so each layer may round one step differently and the differences add up
# with depth: ~1 step after SmallCNN, 2 after ResNet-18, 8-10 after EfficientNet-Lite0's 16
# blocks (onnxruntime and OpenVINO differ from each other by as much there)
INT8_CASES = [("mlp", 1), ("small_cnn", 2), ("resnet18", 6), ("mobilenet_v2", 3),
              ("efficientnet_lite0", 12), ("transformer", 1)]


@pytest.mark.parametrize("name,steps", INT8_CASES)
def test_int8_qdq_runs_in_openvino(name, steps, tmp_path):
    from harness import randomize_bn
    mte.manual_seed(0)
    model = randomize_bn(ZOO[name][0]().eval(), np.random.default_rng(1))
    x = example(name)
    q = quant.quantize(model, [x, example(name, seed=1)])
    ours = q.compile()(x)
    path = tmp_path / f"{name}.int8.onnx"
    export(q, x, str(path))
    y = ov_run(path, x)
    assert y.shape == ours.shape
    last = q.nodes[-1]
    assert last.op == "DequantizeLinear"
    step = float(q.constants[last.inputs[1]])      # the output's quantization step
    assert np.abs(ours).max() > 20 * step          # a real signal, not all zero points
    assert np.abs(y - ours).max() <= steps * step * (1 + 1e-5)
    cosine = float(np.sum(y * ours) / (np.linalg.norm(y) * np.linalg.norm(ours)))
    assert cosine > 0.99
