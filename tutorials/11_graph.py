# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 11 · The graph: trace → passes → memory plan → executor
#
# Eager mode runs a model op by op, in Python, allocating every intermediate. For deployment we
# record one forward as a *graph* (plain data: values, constants, nodes in topological order),
# rewrite it with passes that fold and fuse ops, give every intermediate a place in a single
# memory arena, and run it with an executor that does nothing else.
#
# Read alongside: `minitorch_edge/graph/ir.py` (the Graph), `graph/trace.py` and
# `graph/mapping.py` (eager Function → ONNX-named nodes), `graph/passes/` (one file per pass),
# `graph/planner.py`, `graph/executor.py`, `graph/dot.py` (the picture).

# %%
import os
import tempfile

import numpy as np

import minitorch_edge as mte
from minitorch_edge import autograd, graph, nn
from minitorch_edge.nn import functional as F
from minitorch_edge.graph.passes import DEFAULT, PASSES
from minitorch_edge.utils.timing import median_ms as _median_ms

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
# Files go to $MTE_TUTORIAL_OUT when it is set (and are kept), else to a temporary folder that
# the end of the tutorial removes.
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_graph_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
mte.manual_seed(0)
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. A small network: conv + BatchNorm + activation, three times, and a residual
# Freshly built BatchNorm layers have mean 0 and variance 1, which would make folding them
# look trivial, so we give them random statistics (as training would).


# %%
class Net(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(16), nn.ReLU())
        self.conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.down = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False),
                                  nn.BatchNorm2d(32), nn.ReLU6())
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.1),
                                  nn.Linear(32, classes))

    def forward(self, x):
        x = self.stem(x)
        x = nn.functional.relu(self.bn(self.conv(x)) + x)     # a residual block
        return self.head(self.down(x))


model = Net()
for m in model.modules():
    if isinstance(m, nn.BatchNorm2d):
        c = m.num_features
        m.running_mean._data[...] = rng.normal(0, 0.2, c)
        m.running_var._data[...] = rng.uniform(0.5, 2.0, c)
        m.weight._data[...] = rng.uniform(0.5, 1.5, c)
        m.bias._data[...] = rng.normal(0, 0.2, c)
model.eval()
size = 32 if FAST else 64
x = rng.standard_normal((1, 3, size, size)).astype(np.float32)

# %% [markdown]
# ## 2. Tracing
# `graph.trace` runs the model once (eval mode, no grad) and records every op it applies, by
# the ONNX name of what it computes. Each node is named by the module path where it ran, and
# parameters become named constants. The trace is checked against eager right away.

# %%
g = graph.trace(model, x)
print(g)
print(g.op_counts())

# %% [markdown]
# ## 3. The passes, one at a time
# `g.optimize()` runs all of `DEFAULT` in order; here we apply them one by one and print
# what each changed. The ones worth knowing:
#
# * **fold_batch_norm.** In eval mode BatchNorm is an affine map per channel:
#   `y = γ (z − μ) / √(σ² + ε) + β`. When `z = W ∗ x + b` is a convolution, put
#   `s = γ / √(σ² + ε)`: then `y = (s·W) ∗ x + (s·(b − μ) + β)`, a convolution with scaled
#   filters `W' = s·W` (each output channel's filter times its `s`) and a new bias
#   `b' = s·(b − μ) + β`. The BatchNorm node disappears; the conv costs the same.
# * **fuse_epilogue.** A GEMM (a conv is one, after im2col) writes its output tile by tile.
#   Adding the bias, the residual and applying ReLU while a tile is still in registers (the
#   *epilogue*) saves reading and writing the whole tensor again for each of those steps: the
#   Add and the activation are memory-bound (one flop per 8 bytes moved), so a separate pass
#   over memory costs about as much time as moving the tensor twice. Conv (+ Add) + Relu
#   becomes one `mte.ConvAct`, Gemm + activation one `mte.GemmAct`.
# * the clean-ups: `remove_identities` (Identity, Dropout in eval), `fold_constants` (an op
#   whose inputs are all constants is computed now), `fold_pad` (a Pad before a Conv becomes
#   the conv's padding), `merge_reshapes`, `eliminate_dead_code`.
#
# Some passes may have nothing to do on this net (or may not be written yet): they print
# "no change".


# %%
def changes(before, after):
    a, b = before.op_counts(), after.op_counts()
    diff = [f"{op} {a.get(op, 0)} -> {b.get(op, 0)}" for op in sorted(set(a) | set(b))
            if a.get(op, 0) != b.get(op, 0)]
    return ", ".join(diff) if diff else "no change"


print("passes available:", ", ".join(PASSES))
opt = g
for name in DEFAULT:
    new = opt.optimize([name])
    print(f"{name:20s} {len(opt.nodes):3d} -> {len(new.nodes):3d} nodes: {changes(opt, new)}")
    opt = new
print()
print(opt)

with mte.no_grad():
    want = model(mte.tensor(x)).numpy()
got = opt.run(x)
err = float(np.abs(got - want).max())
print(f"optimised graph vs eager: max |difference| = {err:.2e}")
assert err <= 1e-3 * max(1.0, float(np.abs(want).max()))

# %% [markdown]
# ## 4. The memory plan
# Node k is step k; a value is alive from the step that writes it to the last step that reads
# it. The planner packs all intermediates into one arena: values alive at the same time must
# not overlap, values whose lifetimes do not meet may share bytes. A view (Reshape, Flatten)
# shares its input's memory, and an elementwise op whose input dies right there writes over
# it (in place).
#
# Three numbers: **naive** (one allocation per value: the sum of all), **arena** (what the
# greedy placement needs), and the **lower bound**: the largest total size of the buffers alive
# at one step. At that step all of them exist at once, so no placement of these buffers can use
# less; an arena equal to the bound is optimal. (A different graph, e.g. a fused one, has
# different buffers and so a lower bound of its own.)

# %%
for title, gr in [("traced", g), ("optimised", opt)]:
    print(f"{title:10s}", gr.plan_memory())
print(f"{'no in-place':10s}", opt.plan_memory(in_place=False))
plan = opt.plan_memory()
print(plan)
plan.check()

try:
    import matplotlib
    if FAST:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not installed: skipping the arena picture")
else:
    ax = plan.draw()
    path = os.path.join(OUT, "11_graph_arena.png")
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=100)
    plt.close(ax.figure)
    print("saved", path)

# %% [markdown]
# ## 5. The picture: Graphviz DOT
# `g.to_dot()` gives DOT text (no Graphviz needed to make it): inputs and outputs as ellipses,
# one box per node with its op, name, main attributes and output shape, weights folded into
# the box (`show_constants=True` draws them as notes). Render it with
# `dot -Tsvg 11_graph.dot -o 11_graph.svg`. Our fused `mte.*` ops are orange.

# %%
for title, gr in [("traced", g), ("optimised", opt)]:
    path = os.path.join(OUT, f"11_graph_{title}.dot")
    with open(path, "w") as f:
        f.write(gr.to_dot())
    print("saved", path)
print("\n".join(opt.to_dot().splitlines()[:12]))

# %% [markdown]
# The autograd graph that training records is a different graph (what backward replays),
# drawn the same way by `autograd.to_dot`, as torchviz's `make_dot` does.

# %%
model.train()
loss = nn.functional.cross_entropy(model(mte.tensor(x)), mte.tensor(np.array([3])))
text = autograd.to_dot(loss, params=dict(model.named_parameters()))
model.eval()
path = os.path.join(OUT, "11_graph_autograd.dot")
with open(path, "w") as f:
    f.write(text)
print("saved", path, f"({text.count(' -> ')} edges)")

# %% [markdown]
# ## 6. Eager vs the executor
# `g.compile()` checks the graph once, plans the arena, allocates it once and prepares the
# weights (packed GEMM panels, transformed filters) on a first run. A call then runs the steps
# with no autograd, no module dispatch and no allocation per op. On one thread, medians of
# interleaved rounds (the ratio to eager is what to read).


# %%
def median_ms(fns, rounds=5 if FAST else 9):
    """Medians of interleaved rounds on one thread (minitorch_edge.utils.timing)."""
    return _median_ms(fns, rounds=rounds)


run = opt.compile()
print(run)
assert np.allclose(run(x), got, rtol=1e-4, atol=1e-5)
xt = mte.tensor(x)


def eager_call():
    with mte.no_grad():
        model(xt)


run_traced = g.compile()
ms = median_ms({"eager": eager_call, "traced": lambda: run_traced(x), "exec": lambda: run(x)})
t_eager, t_traced, t_exec = ms["eager"], ms["traced"], ms["exec"]
print(f"eager (no_grad)         {t_eager:8.3f} ms")
print(f"executor, traced graph  {t_traced:8.3f} ms   ({t_eager / t_traced:.1f}x eager)")
print(f"executor, optimised     {t_exec:8.3f} ms   ({t_eager / t_exec:.1f}x eager)")

# %% [markdown]
# ## 7. Layers that ONNX (or our C runtime) has no single node for
# A traced op is written with the nodes the runtime has. A decoder shows three kinds:
# `ConvTranspose2d` is one `ConvTranspose` node (the C runtime runs it as the input gradient
# of a convolution, col2im); `Upsample(mode="bilinear")` is, per spatial dim, two `Gather`s of
# the neighbouring rows (or columns) weighted and added; `InstanceNorm2d` is its statistics as
# `ReduceMean`s. Count the ops, then check the graph against eager.

# %%
class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.norm = nn.InstanceNorm2d(4)
        self.resize = nn.Upsample(scale_factor=2, mode="bilinear")

    def forward(self, z):
        return self.resize(F.relu(self.norm(self.up(z))))


dec = Decoder().eval()
z = np.random.default_rng(1).standard_normal((1, 8, 4, 4)).astype(np.float32)
dg = graph.trace(dec, z).optimize()
print(dg.op_counts())
with mte.no_grad():
    want = dec(mte.tensor(z)).numpy()
print("max |graph - eager| =", float(np.abs(dg.run(z) - want).max()))

# %% [markdown]
# ## Clean up
# The temporary folder goes (a folder named by MTE_TUTORIAL_OUT stays).

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
