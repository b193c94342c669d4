# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 06 · Convolution from scratch
#
# The second seed article writes a convolution as a sliding window: for each output position,
# take the input patch and do a weighted sum with every filter. That is exactly what a
# convolution is — and far too slow. Here we write it, then rewrite it as *im2col + one matrix
# product* (what `nn.functional.conv2d` does on the numpy backend), and time both.
#
# Read alongside: `minitorch_edge/backend/numpy_backend.py` (`conv2d`, `conv2d_backward_*`),
# `minitorch_edge/nn/functional/conv.py` (the autograd Functions).

# %%
import os

import numpy as np

import minitorch_edge as mte
from minitorch_edge import nn
from minitorch_edge.utils.timing import median_ms as _median_ms

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"

# %% [markdown]
# ## 1. The sliding window (the article's SimpleConv2d, with its `h-start` typo fixed)


# %%
class SimpleConv2d:
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1):
        self.weight = mte.randn(out_channels, in_channels, kernel_size, kernel_size) * 0.1
        self.bias = mte.zeros(out_channels)
        self.stride = stride

    def forward(self, x):
        batch, c_in, h, w = x.shape
        k = self.weight.shape[2]
        out_h = (h - k) // self.stride + 1
        out_w = (w - k) // self.stride + 1
        output = mte.zeros(batch, self.weight.shape[0], out_h, out_w)
        for i in range(out_h):
            for j in range(out_w):
                h_start = i * self.stride
                w_start = j * self.stride
                region = x[:, :, h_start:h_start + k, w_start:w_start + k]
                output[:, :, i, j] = mte.sum(region.unsqueeze(1) * self.weight, dim=[2, 3, 4])
        return output + self.bias.view(1, -1, 1, 1)


mte.manual_seed(0)
size = 12 if FAST else 28
x = mte.randn(8, 3, size, size)
simple = SimpleConv2d(3, 16, kernel_size=3)

# %% [markdown]
# ## 2. im2col: every patch becomes a column, the convolution one matrix product
# With `as_strided` the patches are a *view* of the input (no copy until the reshape): shape
# (N, C, out_h, out_w, k, k). Moving C, k, k together gives rows of length C·k·k; the filters
# are a (C_out, C·k·k) matrix; one matmul does all the weighted sums at once.


# %%
def conv2d_im2col(x, weight, bias, stride=1):
    n, c, h, w = x.shape
    c_out, _, k, _ = weight.shape
    out_h, out_w = (h - k) // stride + 1, (w - k) // stride + 1
    s = x.strides
    patches = np.lib.stride_tricks.as_strided(
        x, shape=(n, c, out_h, out_w, k, k),
        strides=(s[0], s[1], s[2] * stride, s[3] * stride, s[2], s[3]), writeable=False)
    cols = patches.transpose(0, 2, 3, 1, 4, 5).reshape(n * out_h * out_w, c * k * k)
    out = cols @ weight.reshape(c_out, -1).T + bias          # (N*out_h*out_w, C_out)
    return out.reshape(n, out_h, out_w, c_out).transpose(0, 3, 1, 2)


# %% [markdown]
# ## 3. All three agree

# %%
w, b = simple.weight, simple.bias
y_loop = simple.forward(x)
y_im2col = conv2d_im2col(x.numpy(), w.numpy(), b.numpy())
y_lib = nn.functional.conv2d(x, w, b)
print("loop vs im2col:", np.abs(y_loop.numpy() - y_im2col).max())
print("loop vs F.conv2d:", np.abs(y_loop.numpy() - y_lib.numpy()).max())
assert np.allclose(y_loop.numpy(), y_lib.numpy(), atol=1e-4)


# %% [markdown]
# ## 4. Timing
# On one thread, medians of interleaved rounds: the ratios are the lesson, and they hold on a
# busy machine even when the milliseconds do not.

# %%
def median_ms(fns, rounds=5 if FAST else 9):
    """Medians of interleaved rounds on one thread (minitorch_edge.utils.timing)."""
    return _median_ms(fns, rounds=rounds)


ms = median_ms({"loop": lambda: simple.forward(x),
                "cols": lambda: conv2d_im2col(x.numpy(), w.numpy(), b.numpy()),
                "lib": lambda: nn.functional.conv2d(x, w, b)}, rounds=3)
print(f"sliding window: {ms['loop']:8.2f} ms")
print(f"im2col + GEMM : {ms['cols']:8.2f} ms  ({ms['loop'] / ms['cols']:.0f}x faster)")
print(f"F.conv2d      : {ms['lib']:8.2f} ms  ({ms['loop'] / ms['lib']:.0f}x faster; backend: "
      f"{mte.backend.active()})")

# %% [markdown]
# The loop runs out_h·out_w small Python-level steps; im2col hands one large matrix product to
# BLAS, which keeps the CPU's vector units busy. The backward pass (in
# `backend/numpy_backend.py`) uses the same idea: the weight gradient is cols^T @ grad, and the
# input gradient is grad @ W scattered back over the patches ("col2im").
