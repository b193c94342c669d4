# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 02 · Autograd: the tape
#
# Each op that touches a tensor with `requires_grad=True` records a *node*: what the op was, what
# it saved for backward, and links to the nodes of its inputs. `backward()` replays the nodes
# in reverse recording order, the chain rule one step at a time.
#
# Read alongside: `minitorch_edge/autograd/function.py` (recording), `autograd/engine.py`
# (replay), `ops/elementwise.py` (the backward formulas).

# %%
import numpy as np

import minitorch_edge as mte
from minitorch_edge import autograd

x = mte.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = mte.tensor([0.5, -1.0, 2.0], requires_grad=True)

with autograd.record_tape() as tape:
    h = x * w                 # node 0: Mul
    y = h.tanh()              # node 1: Tanh
    loss = (y * y).sum()      # node 2, 3: Mul, Sum
print(tape)

# %% [markdown]
# ## Backward replays the tape in reverse

# %%
loss.backward()
print("dloss/dx =", x.grad)
print("dloss/dw =", w.grad)

# %% [markdown]
# ## The same gradient by hand
# loss = Σ tanh(x·w)², so dloss/dx = 2·tanh(xw)·(1 − tanh²(xw))·w.

# %%
xs, ws = x.detach().numpy(), w.detach().numpy()
t = np.tanh(xs * ws)
by_hand = 2 * t * (1 - t ** 2) * ws
print("by hand    =", by_hand)
assert np.allclose(by_hand, x.grad.numpy(), rtol=1e-5)

# %% [markdown]
# ## Checking gradients numerically
# `gradcheck` compares the analytic Jacobian with central finite differences (in float64).

# %%
xd = mte.randn(4, dtype=mte.float64, requires_grad=True)
wd = mte.randn(4, dtype=mte.float64, requires_grad=True)
print("gradcheck:", autograd.gradcheck(lambda a, b: (a * b).tanh().sum(), (xd, wd)))

# %% [markdown]
# ## Higher-order gradients
# Backward formulas are written with Tensor ops, so with `create_graph=True` the backward pass
# is itself recorded and can be differentiated again.

# %%
s = mte.tensor(2.0, requires_grad=True)
f = s ** 3
(df,) = autograd.grad(f, s, create_graph=True)       # 3 s^2 = 12
(d2f,) = autograd.grad(df, s, create_graph=True)     # 6 s   = 12
(d3f,) = autograd.grad(d2f, s)                       # 6
print(df.item(), d2f.item(), d3f.item())

# %% [markdown]
# ## Saved tensors, versions and retain_graph
# A node keeps what it saved until backward has used it. Overwriting a saved tensor in place
# is caught; backward twice needs `retain_graph=True`.

# %%
a = x * 2
b = (a * a).sum()      # Mul saved `a`
a.add_(1)              # ... which we now overwrite
try:
    b.backward()
except RuntimeError as e:
    print("RuntimeError:", str(e)[:120], "...")

c = (x * x).sum()
c.backward(retain_graph=True)
c.backward()           # fine: the graph was kept
try:
    c.backward()
except RuntimeError as e:
    print("RuntimeError:", str(e)[:80], "...")

# %% [markdown]
# ## Hooks and anomaly detection

# %%
z = mte.tensor([0.0, 4.0], requires_grad=True)
z.register_hook(lambda g: print("gradient reaching z:", g))
with autograd.detect_anomaly():
    r = z.sqrt()                       # d sqrt/dz at 0 is inf
    try:
        r.sum().backward()
    except RuntimeError as e:
        print(str(e).splitlines()[0])
