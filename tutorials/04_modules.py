# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 04 · Modules: building models
#
# A `Module` owns parameters, buffers and sub-modules, registered automatically when you assign
# them as attributes. `parameters()`, `state_dict()`, `train()/eval()` and `to()` walk that tree.
#
# Read alongside: `minitorch_edge/nn/module.py`, `nn/containers.py`, `nn/layers/linear.py`.

# %%
import numpy as np

import minitorch_edge as mte
from minitorch_edge import nn

mte.manual_seed(0)
model = nn.Sequential(
    nn.Linear(4, 8),
    nn.ReLU(),
    nn.Dropout(0.1),
    nn.Linear(8, 3),
)
print(model)

# %% [markdown]
# ## Parameters and the state_dict
# Names are the attribute path, exactly as in PyTorch, so weights move between the two.

# %%
for name, p in model.named_parameters():
    print(f"{name:10s} {tuple(p.shape)}  requires_grad={p.requires_grad}")
state = model.state_dict()
print(list(state))
print("parameters:", sum(p.numel() for p in model.parameters()))

# %% [markdown]
# Loading checks every key and shape before changing anything:

# %%
bad = dict(state)
bad["0.weight"] = mte.zeros(5, 4)
try:
    model.load_state_dict(bad)
except RuntimeError as e:
    print(e)
print(model.load_state_dict(state))


# %% [markdown]
# ## A custom layer
# Subclass `nn.Module`, create parameters in `__init__`, compute in `forward`. Here: a linear
# layer whose weight is scaled by a learnable temperature, with a buffer counting calls.

# %%
class ScaledLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(mte.randn(out_features, in_features) / in_features ** 0.5)
        self.log_scale = nn.Parameter(mte.zeros(1))
        self.register_buffer("calls", mte.zeros((), dtype=mte.int64))

    def forward(self, x):
        self.calls += 1
        return (x @ self.weight.T) * self.log_scale.exp()

    def extra_repr(self):
        return f"in_features={self.weight.shape[1]}, out_features={self.weight.shape[0]}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.GELU())
        self.head = ScaledLinear(16, 3)

    def forward(self, x):
        return self.head(self.body(x))


net = Net()
print(net)
x = mte.randn(5, 4)
out = net(x)
out.sum().backward()
print("grad of log_scale:", net.head.log_scale.grad)
print("buffers:", dict(net.named_buffers()))

# %% [markdown]
# ## Hooks, modes, dtypes

# %%
shapes = []
handle = net.body.register_forward_hook(lambda m, args, y: shapes.append(tuple(y.shape)))
net(x)
handle.remove()
print("body output shape seen by the hook:", shapes)
net.eval()
print("training flags:", {name or "net": m.training for name, m in net.named_modules()})
net.double()
print(net.head.weight.dtype)
assert np.isfinite(net(x.double()).detach().numpy()).all()
