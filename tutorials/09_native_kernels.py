# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 09 · Native kernels: from a Python loop to im2col + GEMM to Winograd
#
# One 3x3 convolution, four ways: a direct loop over the output, im2col + one matrix product
# (the numpy backend), Winograd F(4x4, 3x3) in numpy (the readable twin), and the C kernels of
# libmte (`minitorch_edge._C`) when the extension is built. All must agree; the timings show
# why each step exists.
#
# Read alongside: `minitorch_edge/backend/numpy_backend.py` (conv2d), `backend/winograd.py`
# (the Winograd twin and how its matrices are derived), `native/README.md`, `native/src/gemm.c`,
# `native/src/conv.c`, `native/src/winograd.c`.
#
# Timings compare algorithms, not core counts: everything runs on one thread, and each number
# is the median of several rounds in which every candidate runs once, so a busy machine slows
# all of them alike and the ratios (the lesson) hold even when the milliseconds swing.

# %%
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")      # one BLAS / OpenMP thread (read when numpy loads)

import numpy as np

import minitorch_edge as mte
from minitorch_edge.backend import numpy_backend, winograd
from minitorch_edge.utils.timing import median_ms as _median_ms

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
threads_before = mte.get_num_threads()
mte.set_num_threads(1)                    # libmte's threads (restored at the end)
rng = np.random.default_rng(0)
C, K, HW = (8, 8, 12) if FAST else (32, 32, 28)
x = rng.standard_normal((1, C, HW, HW)).astype(np.float32)
w = rng.standard_normal((K, C, 3, 3)).astype(np.float32) * 0.1
b = rng.standard_normal(K).astype(np.float32)


def median_ms(fns, rounds=5 if FAST else 9):
    """Medians of interleaved rounds (minitorch_edge.utils.timing), at the thread count
    this section set."""
    return _median_ms(fns, rounds=rounds, threads=None)


# %% [markdown]
# ## 1. The definition, as loops over output pixels
# y[k, i, j] = b[k] + Σ_c Σ_u Σ_v w[k, c, u, v] · x_padded[c, i+u, j+v]

# %%
def conv_loop(x, w, b):
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    out = np.empty((w.shape[0], x.shape[2], x.shape[3]), np.float32)
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            patch = xp[:, i:i + 3, j:j + 3]                       # (C, 3, 3)
            out[:, i, j] = np.tensordot(w, patch, axes=3) + b
    return out[None]


# %% [markdown]
# ## 2. im2col + GEMM, Winograd in numpy, and the native kernels

# %%
pad = (1, 1, 1, 1)
ref = conv_loop(x, w, b)
candidates = {
    "im2col + GEMM (numpy)": lambda: numpy_backend.conv2d(x, w, b, (1, 1), pad, (1, 1), 1),
    "Winograd F(4,3) (numpy)": lambda: winograd.winograd3x3(x, w, b, 1, 1, tile=4),
    "Winograd F(2,3) (numpy)": lambda: winograd.winograd3x3(x, w, b, 1, 1, tile=2),
}
try:
    from minitorch_edge import _C
except ImportError:
    _C = None
if _C is not None and hasattr(_C, "conv2d"):
    candidates["im2col + GEMM (libmte)"] = lambda: _C.conv2d(x, w, b, (1, 1), pad, (1, 1), 1)
if _C is not None and hasattr(_C, "winograd3x3"):
    candidates["Winograd F(4,3) (libmte)"] = lambda: _C.winograd3x3(x, w, b, 1, 1, tile=4)

timed = {"direct loop": lambda: conv_loop(x, w, b)}
errors = {}
for name, fn in candidates.items():
    try:
        y = fn()
    except TypeError as e:          # a binding with another signature: show it, move on
        print(f"{name:28s} skipped ({e})")
        continue
    errors[name] = np.abs(y - ref).max() / np.abs(ref).max()
    assert errors[name] < 1e-4, (name, errors[name])
    timed[name] = fn
ms = median_ms(timed)
base = ms["im2col + GEMM (numpy)"]
print(f"{'':28s} {'median ms':>10s}  {'vs im2col (numpy)':>18s}")
for name, t in ms.items():
    err = f"   max rel. error {errors[name]:.1e}" if name in errors else ""
    print(f"{name:28s} {t:10.3f}  {base / t:17.2f}x{err}")

# %% [markdown]
# ## 3. Where Winograd's saving comes from
# F(m x m, 3x3) turns each a x a input tile (a = m + 2) into m^2 outputs with a^2
# multiplications instead of 9 m^2: the matrices below are derived exactly from the
# interpolation points (see backend/winograd.py).

# %%
for tile in (2, 4):
    at, g, bt = winograd.matrices(tile)
    a = tile + 2
    print(f"F({tile}x{tile},3x3): {a * a} multiplications for {tile * tile} outputs "
          f"(direct: {9 * tile * tile}) -> {9 * tile * tile / (a * a):.2f}x fewer")
    print("  B^T =\n", np.array2string(np.asarray(bt, float), precision=3, suppress_small=True))

# %% [markdown]
# ## 4. Transform the weights once: prepared weights
# Winograd starts by turning every 3x3 filter into an a x a tile U = G w G^T. Weights do not
# change between inference calls, so the native backend keeps U (`backend/prepared.py`) and
# drops it when anything writes the weight (an optimizer step, `load_state_dict`, `nn.init`,
# an in-place op). Below: the same layer, transforming per call vs reusing U. The im2col / 1x1
# path gets the same treatment: its weights are packed into GEMM panels once
# (`_C.conv2d_pack_weight`, then `_C.conv2d(..., packed_w=...)`).

# %%
if _C is not None and hasattr(_C, "winograd_transform_weight"):
    from minitorch_edge.backend import prepared

    conv = mte.nn.Conv2d(64, 64, 3, padding=1)
    xt = mte.randn(1, 64, 28, 28)
    with mte.no_grad():
        tile = _C.winograd_tile(1, 64, 64, 28, 28, 1, 1, cached=True)
        wd, bd = conv.weight.detach().numpy(), conv.bias.detach().numpy()
        conv(xt)                                   # first call: U is computed and kept
        ms = median_ms({"per call": lambda: _C.winograd3x3(xt.numpy(), wd, bd, 1, 1, tile=tile),
                        "prepared": lambda: conv(xt)})
        t_per_call, t_prepared = ms["per call"], ms["prepared"]
        hits = prepared.stats()["hits"]
        conv.weight.mul_(0.5)                      # a write: U is dropped ...
        y = conv(xt)                               # ... and recomputed from the new weight
    ref = numpy_backend.conv2d(xt.numpy(), conv.weight.detach().numpy(), bd, (1, 1), pad,
                               (1, 1), 1)
    assert np.abs(y.numpy() - ref).max() / np.abs(ref).max() < 1e-4
    print(f"Winograd F({tile},3), U per call: {t_per_call:.3f} ms; U prepared once, through "
          f"nn.Conv2d: {t_prepared:.3f} ms ({t_per_call / t_prepared:.2f}x; {hits} cache hits "
          f"so far)")

    w1 = np.random.default_rng(1).standard_normal((256, 64, 1, 1)).astype(np.float32)
    panels = _C.conv2d_pack_weight(w1)
    x1 = xt.numpy()
    assert np.array_equal(_C.conv2d(x1, w1, packed_w=panels), _C.conv2d(x1, w1))
    ms = median_ms({"per call": lambda: _C.conv2d(x1, w1),
                    "packed": lambda: _C.conv2d(x1, w1, packed_w=panels)})
    print(f"1x1 conv 64->256 at 28x28: packing W per call {ms['per call']:.3f} ms, packed once "
          f"{ms['packed']:.3f} ms ({ms['per call'] / ms['packed']:.2f}x)")

# %%
mte.set_num_threads(threads_before)
