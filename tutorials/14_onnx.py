# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 14 · ONNX export: our graph in the format every engine reads
#
# ONNX is how a model leaves one framework for another: onnxruntime, OpenVINO, TensorRT and
# Core ML all read it. Our Graph already speaks ONNX's vocabulary (op names and attributes of
# opset 17), so `minitorch_edge.onnx.export` is a translation of the same structure, with
# PyTorch's signature: `export(model, args, f, opset_version=17, input_names=None,
# output_names=None, dynamic_axes=None)`.
#
# * a Module is traced on `args` in eval mode and exported unfused (Conv, BatchNormalization,
#   Relu: what torch.onnx.export gives);
# * a Graph is exported as it is: the fused `mte` ops of `g.optimize()` are expanded back into
#   the ONNX subgraphs they replace;
# * an int8 Graph (`quant.quantize`) becomes QDQ form: QuantizeLinear / DequantizeLinear around
#   float ops, int8 weights per output channel: what onnxruntime and OpenVINO run as int8.
#
# Read alongside: `minitorch_edge/onnx/export.py`. Needs `pip install onnx onnxruntime`.

# %%
import io

import numpy as np

import minitorch_edge as mte
from minitorch_edge import graph, models, quant

try:
    import onnx
    import onnxruntime as ort
except ImportError:
    raise SystemExit("this chapter needs: pip install onnx onnxruntime") from None

mte.manual_seed(0)
model = models.SmallCNN(in_channels=1, num_classes=10, input_size=16).eval()
x = np.random.default_rng(0).standard_normal((1, 1, 16, 16)).astype(np.float32)

# %% [markdown]
# ## Export, then open the file with the onnx package

# %%
buf = io.BytesIO()
mte.onnx.export(model, x, buf, input_names=["pixels"], output_names=["logits"],
                dynamic_axes={"pixels": {0: "batch"}, "logits": {0: "batch"}})
proto = onnx.load_from_string(buf.getvalue())
onnx.checker.check_model(proto, full_check=True)
print(f"producer {proto.producer_name} {proto.producer_version}, opset "
      f"{proto.opset_import[0].version}")
for node in proto.graph.node:
    print(f"  {node.op_type:20s} {list(node.input)} -> {list(node.output)}")

# %% [markdown]
# ## Run it in onnxruntime, at the traced batch and at another one (the batch axis is dynamic)

# %%
session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
for batch in (1, 4):
    xb = np.random.default_rng(batch).standard_normal((batch, 1, 16, 16)).astype(np.float32)
    (y_ort,) = session.run(None, {"pixels": xb})
    with mte.no_grad():
        y_ours = model(mte.tensor(xb)).numpy()
    print(f"batch {batch}: max |onnxruntime - ours| = {np.abs(y_ort - y_ours).max():.2e}")

# %% [markdown]
# ## The optimized graph and the int8 graph
#
# The fused graph exports to fewer nodes (BatchNorm folded, the activation kept as Relu after
# the Conv it was fused into); the int8 graph becomes QDQ.

# %%
fused = graph.trace(model, x).optimize()
int8 = quant.quantize(model, [x])
for label, g in (("optimized float", fused), ("int8 (QDQ)", int8)):
    buf = io.BytesIO()
    mte.onnx.export(g, x, buf)
    ops = [n.op_type for n in onnx.load_from_string(buf.getvalue()).graph.node]
    session = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    (y_ort,) = session.run(None, {session.get_inputs()[0].name: x})
    y_ours = g.compile()(x)
    print(f"{label}: {len(ops)} nodes ({', '.join(sorted(set(ops)))}); "
          f"max |onnxruntime - ours| = {np.abs(y_ort - y_ours).max():.2e}")
