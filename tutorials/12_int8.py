# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 12 · Int8: scales, zero points, integer kernels, PTQ and QAT
#
# An int8 model stores every tensor as 8-bit integers q with a *scale* s and a *zero point* z:
# the real value is r = s · (q − z). Weights are symmetric per output channel (z = 0, q in
# [−127, 127]), activations asymmetric per tensor (q in [−128, 127]). A convolution then runs
# entirely in integers: int8 × int8 products summed in int32, and one *requantisation* per
# output: multiply by a fixed-point number, shift, add the output zero point, clamp. This is
# TFLite's scheme, bit for bit; the model is 4x smaller and the kernels do 4x the work per
# instruction.
#
# Read alongside: `minitorch_edge/backend/numpy_int8.py` (the arithmetic, as the readable
# reference of libmte's int8 kernels), `quant/observers.py`, `quant/fake_quant.py`,
# `quant/qat.py`, `quant/ptq.py`, `quant/mixed_precision.py` and `graph/passes/fuse_quantized.py`.

# %%
import os
import tempfile

import numpy as np

import minitorch_edge as mte
from minitorch_edge import backend, models, nn, optim, quant
from minitorch_edge.backend import numpy_int8
from minitorch_edge.data import DataLoader
from minitorch_edge.data.datasets import Digits
from minitorch_edge.train import Trainer

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
# Files go to $MTE_TUTORIAL_OUT when it is set (and are kept), else to a temporary folder that
# the end of the tutorial removes.
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_int8_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
mte.manual_seed(0)

# %% [markdown]
# ## 1. A float model to quantize: the demo's CNN on the 8x8 digits

# %%
train_set, test_set = Digits(train=True), Digits(train=False)
loader = DataLoader(train_set, batch_size=16, shuffle=True)


def fit(model, epochs, lr):
    opt = optim.Adam(model.parameters(), lr=lr)
    Trainer(model, opt, nn.CrossEntropyLoss(), seed=0, verbose=0).fit(loader, epochs=epochs)
    return model.eval()


def stack(dataset, n=None):
    items = [dataset[i] for i in range(len(dataset) if n is None else n)]
    return (np.stack([x.numpy() for x, _ in items]).astype(np.float32),
            np.array([int(y) for _, y in items]))


model = fit(models.SmallCNN(in_channels=1, num_classes=10, input_size=8), 4 if FAST else 20, 3e-3)
x_test, y_test = stack(test_set)
x_cal, _ = stack(train_set, 256)
with mte.no_grad():
    float_acc = (model(mte.tensor(x_test)).numpy().argmax(1) == y_test).mean()
print(f"float32 test accuracy: {float_acc:.2%}")

# %% [markdown]
# ## 2. One layer by hand
# The first conv: its input's range comes from calibration images, its weights' ranges from
# the weights themselves.

# %%
conv = model.features[0]
w = conv.weight.detach().numpy()
b = conv.bias.detach().numpy()
x = x_cal[:32]

# activations: asymmetric, the observed [min, max] (always containing 0) onto [-128, 127]
lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
x_scale = (hi - lo) / 255
x_zero = int(np.clip(round(-128 - lo / x_scale), -128, 127))
# weights: symmetric per output channel, max |w| onto 127
w_scale = np.abs(w).reshape(len(w), -1).max(1) / 127
wq = np.clip(np.round(w / w_scale[:, None, None, None]), -127, 127).astype(np.int8)
# bias: int32 in the accumulator's scale x_scale * w_scale
bq = np.round(b / (x_scale * w_scale)).astype(np.int32)
print(f"x: scale {x_scale:.5f}, zero point {x_zero};  w scales {np.round(w_scale[:4], 5)}...")

with mte.no_grad():
    y_float = nn.functional.relu(conv(mte.tensor(x))).numpy()
y_scale = float(y_float.max()) / 255          # a ReLU output: [0, max] onto [-128, 127]
y_zero = -128

# %% [markdown]
# The accumulator of output channel o is in units of x_scale · w_scale[o]; the output wants
# units of y_scale. So each channel needs the real factor M[o] = x_scale · w_scale[o] / y_scale
# (a number below 1). Integer hardware cannot multiply by it directly: M is written as
# m · 2^(shift − 31) with m a 31-bit integer (TFLite's QuantizeMultiplier), and the kernel
# computes acc · m with a rounding "doubling high" multiply, then a rounding shift.

# %%
mult, shift = zip(*(numpy_int8.quantize_multiplier(x_scale * float(s) / y_scale)
                    for s in w_scale))
mult, shift = np.array(mult, np.int32), np.array(shift, np.int32)
print(f"M[0] = {x_scale * w_scale[0] / y_scale:.6f} = {mult[0]} * 2^({shift[0]} - 31)")

xq = backend.quantize(x, x_scale, x_zero)
ph, pw = conv.padding
yq = backend.qconv2d(xq, x_zero, wq, bq, mult, shift, y_zero, y_zero, 127,   # ReLU: clamp at
                     (1, 1), (ph, ph, pw, pw), (1, 1), 1)                   # the zero point
# one output element, step by step
n, o, r, c = 0, 3, 2, 2
xpad = np.pad(xq.astype(np.int32), ((0, 0), (0, 0), (ph, ph), (pw, pw)),
              constant_values=x_zero)                # padding is the zero point: real 0
acc = int(bq[o]) + int(np.sum((xpad[n, :, r:r + 3, c:c + 3] - x_zero) * wq[o].astype(np.int32)))
scaled = int(numpy_int8.mbqm(np.int32(acc), int(mult[o]), int(shift[o])))
print(f"acc {acc} -> requantised {scaled} -> + zero point {scaled + y_zero} -> clamp "
      f"{int(np.clip(scaled + y_zero, y_zero, 127))} (kernel: {yq[n, o, r, c]})")
err = np.abs(backend.dequantize(yq, y_scale, y_zero) - y_float).max()
print(f"max |int8 conv - float conv| = {err:.4f} (output step {y_scale:.4f})")

# %% [markdown]
# ## 3. The whole model: post-training quantization
# `quant.quantize` traces the model, runs the calibration batches through the float graph with
# an observer on every value, wraps each conv/linear/pool in QuantizeLinear/DequantizeLinear
# pairs with those parameters (a QDQ graph, as onnxruntime writes it) and lets the
# `fuse_quantized` pass turn each DQ → op → activation → Q chain into one int8 op.

# %%
calib = [x_cal[i:i + 32] for i in range(0, len(x_cal), 32)]
int8_graph = quant.quantize(model, calib, observer="minmax", example_inputs=(x_test,))
print(int8_graph)
run = int8_graph.compile()
ptq_acc = (run(x_test).argmax(1) == y_test).mean()
print(f"int8 (PTQ) test accuracy: {ptq_acc:.2%} (float {float_acc:.2%})")
print(f"arena: {int8_graph.plan_memory().arena_bytes:,} bytes")

# %% [markdown]
# ## 4. Quantization-aware training
# `prepare_qat` swaps each conv (with its BatchNorm, if any) and linear for a QAT module that
# *fake-quantizes* weights and activations in the forward pass: round to the int8 grid and back
# to float. The rounding has no useful gradient, so the backward pass uses the straight-through
# estimator (gradient 1 inside the clipping range, 0 outside). A few epochs teach the weights
# to live on the grid; `convert` reads the scales the fake quantizers settled on.

# %%
qat_model = fit(quant.prepare_qat(model), 1 if FAST else 3, 5e-4)
qat_graph = quant.convert(qat_model, x_test)
qat_acc = (qat_graph.compile()(x_test).argmax(1) == y_test).mean()
print(f"int8 (QAT) test accuracy: {qat_acc:.2%}")

# %% [markdown]
# ## 5. Weights before and after, and which layer minds most
# `quant.sensitivity` quantizes one layer at a time and reports the output's
# signal-to-quantization-noise ratio; `keep_float=` takes the names of the worst ones for a
# mixed-precision model.

# %%
rows = quant.sensitivity(model, calib[:2])
for row in rows:
    print(f"  {row.layer:12s} {row.op:5s} SQNR {row.sqnr_db:6.2f} dB")
mixed = quant.quantize(model, calib, keep_float=(rows[0].layer,), example_inputs=(x_test,))
print(f"keeping {rows[0].layer} in float: {(mixed.compile()(x_test).argmax(1) == y_test).mean():.2%}")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
    ax1.hist(w.ravel(), bins=60, alpha=0.6, label="float32")
    ax1.hist((wq * w_scale[:, None, None, None]).ravel(), bins=60, alpha=0.6, label="int8")
    ax1.set_title("conv 1 weights")
    ax1.legend()
    ax2.barh([r.layer for r in rows], [r.sqnr_db for r in rows])
    ax2.set_xlabel("output SQNR (dB), only this layer int8")
    fig.tight_layout()
    path = os.path.join(OUT, "int8.png")
    fig.savefig(path)
    print("saved", path)
except ImportError:
    print("matplotlib not installed: no picture")

# %% [markdown]
# ## Clean up
# The temporary folder goes (a folder named by MTE_TUTORIAL_OUT stays).

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
