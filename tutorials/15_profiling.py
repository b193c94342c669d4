# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 15 · Profiling: where does the time go, and where does the memory go?
#
# Two questions come up as soon as a model works. A learner asks "where does my training step
# go?"; an edge engineer asks "which layer is slow, and how much memory does this model need?".
# `minitorch_edge.profiler` answers both with PyTorch's names (`profile`, `record_function`,
# `key_averages().table()`, `export_chrome_trace`, `schedule`), so a PyTorch profiling tutorial
# reads the same here.
#
# While a profile is active, every op records a range: each built-in Function's forward and,
# during `backward()`, its backward (named like its `grad_fn`, e.g. `ConvolutionBackward0`), the
# optimizer step, the DataLoader's waits, the native kernels under them, and your own
# `record_function` ranges. When no profile is active all this costs one flag check per op.
#
# Read alongside: `minitorch_edge/profiler/` (the recorder, the table, the trace, memory),
# `autograd/function.py` (the one check in the hot path), `graph/executor.py`
# (`Executor.profile`).

# %%
import json
import os
import tempfile

import numpy as np

import minitorch_edge as mte
from minitorch_edge import models, nn, optim, profiler, quant
from minitorch_edge.data import DataLoader
from minitorch_edge.data.datasets import Digits
from minitorch_edge.profiler import ProfilerActivity, profile, record_function

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
# Files go to $MTE_TUTORIAL_OUT when it is set (and are kept), else to a temporary folder that
# the end of the tutorial removes.
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_profiling_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
mte.manual_seed(0)

# %% [markdown]
# ## 1. One training step of the demo CNN
# We profile a few steps (the first call of anything pays one-off costs: kernel selection,
# workspace allocation) and print the ops sorted by their total time. *Self* time is the time
# inside an op minus the time of the ops it called; *total* includes them.

# %%
loader = DataLoader(Digits(train=True), batch_size=64, shuffle=True)
model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
optimizer = optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()


def train_step(x, y):
    with record_function("forward"):
        loss = loss_fn(model(x), y)
    with record_function("backward"):
        optimizer.zero_grad()
        loss.backward()
    optimizer.step()
    return loss


with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
    for i, (x, y) in enumerate(loader):
        train_step(x, y)
        if i == 3:
            break
print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=12))

# %% [markdown]
# The same rows, sorted by *self* time, show the ops that do the work. Grouped by input shape,
# the same op (a conv, say) splits into one row per layer:

# %%
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total",
                                                         row_limit=6))

# %% [markdown]
# ## 2. The trace
# `export_chrome_trace` writes the Trace Event format: open it in `chrome://tracing` or
# <https://ui.perfetto.dev>. Each range is a bar; nested ranges stack; the backward ops are
# linked to the forward op that recorded them.

# %%
trace_path = os.path.join(OUT, "train_step.json")
prof.export_chrome_trace(trace_path)
with open(trace_path) as f:
    events = json.load(f)["traceEvents"]
ranges = [e for e in events if e.get("ph") == "X"]
print(f"{len(ranges)} ranges in the trace; the first ones:")
for e in sorted(ranges, key=lambda e: e["ts"])[:6]:
    print(f"  {e['name']:<40} {e['dur']:9.1f} us")

# %% [markdown]
# ## 3. The slowest layer
# Ops tell us *what* is slow; to know *which layer*, wrap each layer's forward in a range of its
# own with forward pre/post hooks. The row of each layer then holds the ops it ran.

# %%
def name_layers(module):
    handles = []
    for name, layer in module.named_modules():
        if not name or list(layer.children()):
            continue                                  # leaves only: no double counting
        def pre(mod, args, _name=name):
            mod._profile_range = record_function(f"layer:{_name}")
            mod._profile_range.__enter__()
        def post(mod, args, output):
            mod._profile_range.__exit__(None, None, None)
        handles += [layer.register_forward_pre_hook(pre), layer.register_forward_hook(post)]
    return handles


handles = name_layers(model)
x, y = next(iter(loader))
with profile() as prof:
    for _ in range(3):
        model(x)
for h in handles:
    h.remove()
layers = [e for e in prof.key_averages() if e.key.startswith("layer:")]
slowest = max(layers, key=lambda e: e.cpu_time_total)
print(f"slowest layer: {slowest.key} ({slowest.cpu_time_total / slowest.count:.1f} us a call)")

# %% [markdown]
# ## 4. Memory
# With `profile_memory=True` every op also records the bytes its results allocate (and frees,
# as negative numbers, when they die). `profiler.memory_summary` looks at a whole training step
# at once: parameters, their gradients, the optimizer's state (Adam keeps two buffers a
# parameter), the activations that autograd saves for backward, layer by layer, and the peak.

# %%
with profile(profile_memory=True) as prof:
    train_step(x, y)
print(prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=6))
summary = profiler.memory_summary(model, (x,), loss_fn=lambda out: loss_fn(out, y),
                                  optimizer=optimizer)
print(summary)
try:
    png = os.path.join(OUT, "memory_timeline.png")
    profiler.plot_memory_timeline(prof, png)
    print("memory timeline saved to", png)
except ImportError as e:
    print("no plot:", e)

# %% [markdown]
# ## 5. The Transformer classifier
# Attention models spend their time differently: in matmuls, softmax and layer norms. A
# `schedule` profiles only some steps (skip `wait` steps, warm up, record `active` ones) and
# `on_trace_ready` receives each finished cycle; `tensorboard_trace_handler` writes it where
# TensorBoard's profile plugin looks.

# %%
tokens = mte.randint(0, 50, (16, 24))
labels = mte.randint(0, 2, (16,))
classifier = models.TransformerClassifier(vocab_size=50, num_classes=2, d_model=32, nhead=4,
                                          num_layers=2, dim_feedforward=64, max_len=24)
t_opt = optim.AdamW(classifier.parameters(), lr=1e-3)
cycles = []
with profile(schedule=profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
             on_trace_ready=lambda p: cycles.append(p.key_averages())) as prof:
    for _ in range(5):
        t_opt.zero_grad()
        nn.functional.cross_entropy(classifier(tokens), labels).backward()
        t_opt.step()
        prof.step()
print(f"{len(cycles)} recorded cycle(s)")
print(cycles[0].table(sort_by="self_cpu_time_total", row_limit=10))

# %% [markdown]
# ## 6. The deployed graph, float and int8
# A compiled graph runs without autograd (tutorial 11), on the C runtime when the native
# backend is built. `Executor.profile` times every node and gives the same tables and trace;
# on the command line `mte-run model.mte --input x.npy --profile` does the same for a model file.

# %%
model.eval()
test_x = np.stack([Digits(train=False)[i][0].numpy() for i in range(64)])
float_graph = mte.graph.trace(model, mte.tensor(test_x)).optimize()
int8_graph = quant.quantize(model, [test_x[:32], test_x[32:]], example_inputs=(test_x,))
for label, g in (("float", float_graph), ("int8", int8_graph)):
    executor = g.compile()
    node_prof = executor.profile(test_x, repeats=5 if FAST else 50)
    print(f"--- {label} graph ({executor.engine} engine): one row per node")
    print(node_prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=6))
    by_op = {}                                # each node's event carries its op: sum per op
    for e in node_prof.events():
        if e.args and "op" in e.args:
            by_op[e.args["op"]] = by_op.get(e.args["op"], 0.0) + e.self_cpu_time_total
    total = sum(by_op.values())
    print("time per op:", ", ".join(f"{op} {t / total:.0%}" for op, t in
                                    sorted(by_op.items(), key=lambda kv: -kv[1])))
node_prof.export_chrome_trace(os.path.join(OUT, "int8_graph.json"))

# %%
if _scratch is not None:
    _scratch.cleanup()
