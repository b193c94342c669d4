# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 05 · Optimizers on a 2-D loss surface
#
# Plain SGD, SGD with momentum and Adam walk down the same valley — Rosenbrock's function
# f(x, y) = (1 - x)^2 + 100 (y - x^2)^2, minimum at (1, 1). Watching the paths shows what
# momentum and per-coordinate step sizes buy.
#
# Read alongside: `minitorch_edge/optim/optimizer.py`, `optim/sgd.py`, `optim/adam.py`.

# %%
import os
import tempfile

import minitorch_edge as mte
from minitorch_edge import optim

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
# Files go to $MTE_TUTORIAL_OUT when it is set (and are kept), else to a temporary folder that
# the end of the tutorial removes.
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_optimizers_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
STEPS = 200 if FAST else 2000


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


def run(make_optimizer):
    p = mte.tensor([-1.5, 2.0], dtype=mte.float64, requires_grad=True)
    opt = make_optimizer([p])
    path = [p.detach().numpy().copy()]
    for _ in range(STEPS):
        opt.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        opt.step()
        path.append(p.detach().numpy().copy())
    return path, rosenbrock(p).item()


runs = {
    "SGD lr=1e-4": lambda ps: optim.SGD(ps, lr=1e-4),
    "SGD+momentum 0.9": lambda ps: optim.SGD(ps, lr=1e-4, momentum=0.9),
    "Adam lr=0.05": lambda ps: optim.Adam(ps, lr=0.05),
}
paths = {}
for name, make in runs.items():
    path, final = run(make)
    paths[name] = path
    print(f"{name:18s} after {STEPS} steps: (x, y) = {path[-1].round(4)}, f = {final:.3g}")

# %% [markdown]
# ## A learning-rate schedule
# Cosine annealing lowers Adam's step size as it approaches the minimum.

# %%
p = mte.tensor([-1.5, 2.0], dtype=mte.float64, requires_grad=True)
opt = optim.Adam([p], lr=0.05)
sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
for _ in range(STEPS):
    opt.zero_grad()
    rosenbrock(p).backward()
    opt.step()
    sched.step()
print("Adam + cosine:", p.detach().numpy().round(4), "last lr", sched.get_last_lr())

# %% [markdown]
# ## The picture (saved when matplotlib is installed)

# %%
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError:
    print("matplotlib not installed: skipping the figure")
else:
    xs, ys = np.meshgrid(np.linspace(-2, 2, 200), np.linspace(-1, 3, 200))
    zs = (1 - xs) ** 2 + 100 * (ys - xs ** 2) ** 2
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.contour(xs, ys, np.log10(zs + 1e-3), levels=30, cmap="gray")
    for name, path in paths.items():
        path = np.array(path)
        ax.plot(path[:, 0], path[:, 1], label=name)
    ax.plot([1], [1], "k*", markersize=12)
    ax.legend()
    fig.savefig(os.path.join(OUT, "05_optimizers.png"), dpi=100)
    plt.close(fig)
    print("saved", os.path.join(OUT, "05_optimizers.png"))

# %% [markdown]
# ## Clean up
# The temporary folder goes (a folder named by MTE_TUTORIAL_OUT stays).

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
