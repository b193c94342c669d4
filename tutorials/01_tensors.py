# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 01 · Tensors
#
# A `minitorch_edge.Tensor` is a numpy array plus what autograd needs. If you know PyTorch you
# know the API: `import minitorch_edge as torch` and most code reads the same.
#
# Read alongside: `minitorch_edge/tensor.py` (the class), `creation.py` (making tensors),
# `dtypes.py` (types and promotion), `ops/elementwise.py` (the first ops).

# %%
import numpy as np

import minitorch_edge as mte

x = mte.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print(x)
print("shape", x.shape, "dtype", x.dtype, "device", x.device, "ndim", x.ndim)

# %% [markdown]
# ## Making tensors
# Python floats become float32 (the default dtype), ints int64, bools bool — as in PyTorch.

# %%
print(mte.tensor([1, 2, 3]).dtype, mte.tensor([1.5]).dtype, mte.tensor([True]).dtype)
print(mte.zeros(2, 3), mte.ones(2), mte.full((2, 2), 7.0), mte.eye(3), sep="\n")
print(mte.arange(5), mte.linspace(0, 1, 5), sep="\n")
mte.manual_seed(0)
print(mte.rand(2, 2), mte.randn(3), mte.randint(0, 10, (4,)), mte.randperm(5), sep="\n")
g = mte.Generator().manual_seed(42)      # a private random stream
print(mte.rand(2, generator=g))

# %% [markdown]
# ## numpy in, numpy out
# `from_numpy` shares memory; `.numpy()` gives the array back (refused on a tensor that
# requires grad: detach it first).

# %%
a = np.arange(6, dtype=np.float32).reshape(2, 3)
t = mte.from_numpy(a)
a[0, 0] = 100
print(t[0, 0].item(), t.tolist())
w = mte.ones(3, requires_grad=True)
try:
    w.numpy()
except RuntimeError as e:
    print("RuntimeError:", e)
print(w.detach().numpy())

# %% [markdown]
# ## Type promotion follows PyTorch, not numpy
# An int tensor plus a Python float is float32; a float32 tensor plus a float64 *0-dim*
# tensor stays float32 (0-dim tensors and scalars only matter across categories).

# %%
i = mte.tensor([1, 2, 3])
print((i + 0.5).dtype, (i / 2).dtype, (i * 2).dtype)
print((mte.ones(2) + mte.tensor(1.0, dtype=mte.float64)).dtype)
print((mte.ones(2) + mte.ones(2, dtype=mte.float64)).dtype)
print(x.to(mte.float16).dtype, x.long().dtype, x.double().dtype)

# %% [markdown]
# ## Ops, broadcasting, indexing

# %%
b = mte.tensor([10.0, 20.0, 30.0])
print(x + b)                  # (2,3) + (3,) broadcasts
print(x.sum(dim=0), x.mean(), x.max(dim=1).values)
print(x[:, 1], x[x > 2], x[[0, 1], [2, 0]])
print(x.reshape(3, 2).T, x @ b)
try:
    x @ mte.ones(2, 5)
except RuntimeError as e:
    print("RuntimeError:", e)

# %% [markdown]
# ## In-place ops and versions
# `add_` and friends write into the tensor's memory; each bumps a version counter that views
# share, which is how autograd notices a saved value was overwritten (see tutorial 02).

# %%
y = mte.zeros(2, 3)
v = y.reshape(3, 2)           # a view: same memory
v.add_(1)
print(y, y._version)
