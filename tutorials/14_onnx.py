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
# %% [markdown]
# ## The other way: import an ONNX file
#
# `mte.onnx.load(file)` reads an ONNX file (opsets 13 to 21) into a Graph of our opset, and
# `mte.onnx.import_model(file)` also runs the graph passes and compiles it: a callable that
# runs on the C runtime (the executor's default engine on the native backend). The importer
# is the exporter read backwards, with three things added:
#
# * static shapes: a symbolic dim ("batch") takes its size from `input_shapes`, else 1, and
#   the shape arithmetic a torch export computes at run time (Shape -> Gather -> Concat ->
#   Reshape) is folded away at import: any node whose inputs are all constants is evaluated
#   once, by our own op;
# * safety: every size in the file is checked against the bytes present, external data may
#   not leave the model's folder, cycles and undefined names are refused; all of it raises one
#   error, `mte.onnx.OnnxImportError` (and `OnnxUnsupportedError` names the operators we lack);
# * QDQ: a file quantized by onnxruntime (QuantizeLinear / DequantizeLinear around float ops)
#   is fused by `optimize()` into our int8 kernels, as our own int8 graphs are.
#
# Here the file comes from PyTorch when it is installed (a ResNet-style block written with
# torch.nn), else from our own exporter. Read alongside: `minitorch_edge/onnx/importer.py`.

# %%
try:
    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 8, 3, padding=1, bias=False)
            self.bn = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8 * 16 * 16, 10)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            return self.fc(y.reshape(y.shape[0], -1))    # a shape computed at run time

    torch.manual_seed(0)
    block = Block().eval()
    buf = io.BytesIO()
    torch.onnx.export(block, torch.from_numpy(x), buf, dynamo=False, opset_version=17,
                      input_names=["pixels"], dynamic_axes={"pixels": {0: "batch"}})
    reference = lambda xb: block(torch.from_numpy(xb)).detach().numpy()   # noqa: E731
    source = "torch.onnx.export"
except ImportError:
    buf = io.BytesIO()
    mte.onnx.export(model, x, buf, input_names=["pixels"],
                    dynamic_axes={"pixels": {0: "batch"}})
    with mte.no_grad():
        reference = lambda xb: model(mte.tensor(xb)).numpy()   # noqa: E731
    source = "mte.onnx.export"

data = buf.getvalue()
print(f"from {source}:", [n.op_type for n in onnx.load_from_string(data).graph.node])
imported = mte.onnx.load(data, input_shapes={"pixels": (4, 1, 16, 16)})
print(imported)                        # Shape/Gather/Concat are gone: folded into constants

# %% [markdown]
# ## Run it: optimized and compiled, on the C runtime

# %%
run = mte.onnx.import_model(data, input_shapes={"pixels": (4, 1, 16, 16)})
print(run, run.optimized.op_counts())
xb = np.random.default_rng(4).standard_normal((4, 1, 16, 16)).astype(np.float32)
print(f"engine {run.executor.engine}: max |ours - {source.split('.')[0]}| = "
      f"{np.abs(run(xb) - reference(xb)).max():.2e}")

# %% [markdown]
# ## What a bad file gets: one typed error

# %%
for label, bad in (("truncated", data[: len(data) // 2]), ("not ONNX", b"\x08\x07garbage")):
    try:
        mte.onnx.load(bad)
    except mte.onnx.OnnxImportError as e:
        print(f"{label}: {type(e).__name__}: {str(e)[:100]}")
