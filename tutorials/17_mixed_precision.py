# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 17 · Mixed precision: bfloat16, float16, autocast and the GradScaler
#
# A 16-bit float halves the memory and the bandwidth of a 32-bit one, and CPUs with AVX-512
# BF16 (or ARMv8.6 BF16) multiply bfloat16 matrices at twice the float32 rate. But 16 bits
# cannot keep everything: bfloat16 keeps float32's range and drops precision; float16 keeps
# more precision and drops range. Mixed precision computes the matrix products in 16 bits and
# keeps the rest (losses, the weights, the optimizer) in float32.
#
# Read alongside: `minitorch_edge/_autocast.py` (the op policy), `amp/autocast_mode.py`,
# `amp/grad_scaler.py`, `train/trainer.py` (``precision=``).

# %%
import os
import tempfile

import ml_dtypes
import numpy as np

import minitorch_edge as mte
from minitorch_edge import _autocast, nn, optim
from minitorch_edge.nn import functional as F

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_mixed_precision_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
mte.manual_seed(0)

# %% [markdown]
# ## 1. What each format keeps and loses
# float32: 8 exponent bits, 23 mantissa bits. bfloat16: the same 8 exponent bits, 7 mantissa
# bits (float32 with the low 16 bits cut off). float16: 5 exponent bits, 10 mantissa bits.
# `eps` is the gap after 1.0 (the relative precision); `max` the largest finite number;
# `tiny` the smallest normal number (below it precision fades, then values flush to zero).

# %%
formats = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
print(f"{'':9s} {'eps':>10s} {'max':>10s} {'tiny':>10s} {'smallest':>10s}")
for name, t in formats.items():
    fi = ml_dtypes.finfo(t)
    print(f"{name:9s} {float(fi.eps):10.3g} {float(fi.max):10.3g} {float(fi.tiny):10.3g} "
          f"{float(fi.smallest_subnormal):10.3g}")

print("\nhow each format stores a few numbers:")
for x in (1 / 3, 1000.1, 70000.0, 1e-6, 1e-9, 1 + 2 ** -9):
    with np.errstate(over="ignore"):       # 70000 overflows float16, on purpose
        stored = "  ".join(f"{name}={float(np.array(x, t)):.7g}" for name, t in formats.items())
    print(f"{x:<12.7g} {stored}")

# %% [markdown]
# float16 overflows past 65504 (70000 -> inf) and flushes 1e-9 to 0; bfloat16 holds both but
# keeps under three significant digits (1000.1 -> 1000, 1 + 2^-9 -> 1). So float16 trains need
# help with small gradients (section 4); bfloat16 trains need none, as long as the values
# that add up many small terms (sums, the loss, the weights) stay in float32.

# %% [markdown]
# ## 2. autocast: which op runs in which precision
# Under ``autocast("cpu")`` the ops on PyTorch's CPU lower-precision list (linear, matmul,
# conv, attention) cast their floating inputs to bfloat16; the ops on its float32 list (the
# losses, prod, cdist, the decompositions) cast to float32; cat/stack promote; every other op
# runs in its inputs' dtype (softmax and layer_norm keep bfloat16 on CPU).

# %%
by_policy = {}
for op, kind in _autocast.POLICY.items():
    by_policy.setdefault(kind, []).append(op)
for kind, ops in by_policy.items():
    print(f"{kind:8s} ({len(ops)}): {', '.join(sorted(ops)[:10])}{', ...' if len(ops) > 10 else ''}")

from minitorch_edge.models import TransformerClassifier  # noqa: E402

model = TransformerClassifier(vocab_size=20, num_classes=3, d_model=32, nhead=2, num_layers=1,
                              dim_feedforward=64, max_len=16, dropout=0.0)
tokens = mte.randint(0, 20, (8, 12))
labels = mte.randint(0, 3, (8,))
with mte.autocast("cpu", dtype=mte.bfloat16):
    logits = model(tokens)
    loss = F.cross_entropy(logits, labels)
loss.backward()
print("\nTransformerClassifier under autocast: logits", logits.dtype, "| loss", loss.dtype,
      "| head.weight", model.head.weight.dtype, "| its grad", model.head.weight.grad.dtype)
with mte.no_grad():
    reference = F.cross_entropy(model(tokens), labels)
print(f"loss in bfloat16 autocast {loss.item():.4f} vs float32 {reference.item():.4f}")

# %% [markdown]
# ## 3. A loss curve in each precision
# The same MLP, the same batches, trained three ways: float32, bfloat16 autocast, and float16
# autocast with a GradScaler (``Trainer(precision="32" | "bf16" | "16-mixed")`` does exactly
# this loop).

# %%
rng = np.random.default_rng(0)
teacher = rng.standard_normal((16, 4)).astype(np.float32)
X = rng.standard_normal((512, 16)).astype(np.float32)
Y = (X @ teacher).argmax(1)
steps = 60 if FAST else 300


def train_curve(dtype, use_scaler=False):
    mte.manual_seed(1)
    net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = optim.SGD(net.parameters(), lr=0.2, momentum=0.9)
    scaler = mte.amp.GradScaler("cpu", enabled=use_scaler)
    curve = []
    for step in range(steps):
        i = (step * 64) % 512
        xb, yb = mte.tensor(X[i:i + 64]), mte.tensor(Y[i:i + 64])
        with mte.autocast("cpu", dtype=dtype or mte.bfloat16, enabled=dtype is not None):
            loss = F.cross_entropy(net(xb), yb)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        curve.append(loss.item())
    return curve


curves = {"float32": train_curve(None), "bfloat16 autocast": train_curve(mte.bfloat16),
          "float16 autocast + GradScaler": train_curve(mte.float16, use_scaler=True)}
for name, curve in curves.items():
    print(f"{name:30s} loss: first {curve[0]:.3f}  last 10 mean {np.mean(curve[-10:]):.4f}")

# %% [markdown]
# ## 4. Why float16 needs a GradScaler
# A model that is nearly fitted has small errors, and its gradients are smaller still: the
# gradient of a mean over N samples carries a 1/N. Here a linear model sits at the true
# weights, the targets carry noise of 1e-4, and N = 8192: the gradient reaching the float16
# output is about 2.4e-8, under half of float16's smallest subnormal (6e-8), so most of it
# rounds to zero. The scaler multiplies the loss by 2^16 before backward, so the same gradient
# is ~1.6e-3 in float16, and divides the weight gradients back in float32 before the step.

# %%
rng = np.random.default_rng(1)
N = 8192
w_true = (rng.standard_normal((1, 32)) * 0.2).astype(np.float32)
Xr = mte.tensor((rng.standard_normal((N, 32)) * 0.01).astype(np.float32))
Yr = Xr @ mte.tensor(w_true).T + mte.tensor((1e-4 * rng.standard_normal((N, 1))).astype(
    np.float32))
lin = nn.Linear(32, 1, bias=False)
with mte.no_grad():
    lin.weight.copy_(mte.tensor(w_true))


def gradient(dtype=None, scaler=None):
    """The weight gradient (unscaled) and the fraction of the output's gradient that is 0."""
    lin.zero_grad()
    with mte.autocast("cpu", dtype=dtype or mte.float16, enabled=dtype is not None):
        out = lin(Xr)
        loss = F.mse_loss(out, Yr)
    out.retain_grad()
    (loss if scaler is None else scaler.scale(loss)).backward()
    g = lin.weight.grad.numpy().copy()
    zeros = float(np.mean(out.grad.float().numpy() == 0))
    return (g if scaler is None else g / scaler.get_scale()), zeros


def cosine(a, b):
    return float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


exact, _ = gradient()
for name, (g, zeros) in {"float16, no scaler": gradient(mte.float16),
                         "float16 + GradScaler": gradient(mte.float16, mte.amp.GradScaler("cpu")),
                         "bfloat16, no scaler": gradient(mte.bfloat16)}.items():
    print(f"{name:22s} output grads flushed to 0: {zeros:4.0%}   cosine to the float32 "
          f"gradient {cosine(g, exact):.3f}   norm ratio {np.linalg.norm(g) / np.linalg.norm(exact):.2f}")

# %% [markdown]
# Without the scaler most of float16's output gradient is gone; with it none is, and what
# remains of the error is the float16 rounding of the forward pass. bfloat16 never flushes
# (its range is float32's) but rounds the forward to 8 bits, which this delicate near-fit
# gradient feels most: bfloat16 trades precision, float16 range.

# %% [markdown]
# ## 5. Which hardware multiplies the bfloat16
# Whether bfloat16 is faster depends on the CPU, and the native library picks the kernel at run
# time: AMX tiles (Sapphire Rapids and later Xeons: TDPBF16PS, 8192 multiply-adds per
# instruction), else AVX512-BF16 (VDPBF16PS: twice float32's FMA on AMD Zen 4/5, but only
# half of it on a Xeon, where one port runs it), else widening to float32 inside the packing
# (the memory savings without the speed). The peak loop of the chosen kernel says which is
# which on this machine.

# %%
try:
    from minitorch_edge import _C
except ImportError:
    _C = None
if _C is not None:
    print("bf16 GEMM path:", _C.half_gemm_path(ml_dtypes.bfloat16))
    print(f"peaks (one core): bf16 {_C.bf16_peak_gflops(0.02):.0f} GFLOP/s, "
          f"float32 {_C.peak_gflops(0.02):.0f} GFLOP/s")
else:
    print("the native library is not built: bfloat16 runs as float32 in numpy")

# %% [markdown]
# ## The pictures (saved when matplotlib is installed)
# Left: the gap between neighbouring representable values (the ulp) against the value: the
# three formats are parallel lines, float16's stopping short at both ends. Right: the loss
# curves of section 3.

# %%
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not installed: skipping the figure")
else:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    values = np.logspace(-9, 6, 400)
    for name, t in formats.items():
        fi = ml_dtypes.finfo(t)
        v = values[(values >= float(fi.smallest_subnormal)) & (values <= float(fi.max))]
        stored = v.astype(t)
        ulp = (np.nextafter(stored.astype(np.float64), np.inf) if t is np.float64 else
               (np.abs(stored.astype(np.float64)) * float(fi.eps)))
        ulp = np.maximum(ulp, float(fi.smallest_subnormal))
        ax1.loglog(v, ulp, label=name)
    ax1.set_xlabel("value")
    ax1.set_ylabel("gap to the next representable value")
    ax1.legend()
    for name, curve in curves.items():
        ax2.plot(curve, label=name)
    ax2.set_xlabel("step")
    ax2.set_ylabel("training loss")
    ax2.legend()
    path = os.path.join(OUT, "17_mixed_precision.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print("saved", path)

# %% [markdown]
# ## Clean up

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
