# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 13 · Deploying: the model file, the C runtime, `mte-run` and the device-side loader
#
# Training needs the whole framework; running a trained model should not. This chapter takes
# the demo's CNN from training to a device: one call writes it as a `.mte` file (float32 or
# int8), and three programs that know nothing of Tensors or autograd run it:
#
# * `mte-run`, a command-line program written in C (`native/tools/`), on NumPy `.npy` files;
# * `minitorch_edge.runtime`, a few hundred lines of Python that reach the same C library
#   through cffi and import nothing but numpy and cffi: what a Raspberry Pi needs;
# * any C program, through `include/mte_runtime.h` (`mte_model_load`, `mte_model_run`).
#
# Read alongside: `graph/modelfile.py` (the file), `native/runtime/README.md` (the C loader, its
# validation rules, the executor), `minitorch_edge/runtime/` (the cffi loader).

# %%
import json
import os
import shutil
import struct
import subprocess
import tempfile

import numpy as np

import minitorch_edge as mte
from minitorch_edge import graph, models, nn, optim
from minitorch_edge import runtime as rt
from minitorch_edge.data import DataLoader
from minitorch_edge.data.datasets import Digits
from minitorch_edge.train import Trainer
from minitorch_edge.utils.timing import median_ms as _median_ms

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
# Files go to $MTE_TUTORIAL_OUT when it is set (and are kept), else to a temporary folder that
# the end of the tutorial removes.
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_deploy_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
mte.manual_seed(0)

# %% [markdown]
# ## 1. Train the demo's CNN (a few epochs on the 8x8 digits)

# %%
train_set, test_set = Digits(train=True), Digits(train=False)


def stack(dataset, n=None):
    items = [dataset[i] for i in range(len(dataset) if n is None else n)]
    return (np.stack([x.numpy() for x, _ in items]).astype(np.float32),
            np.array([int(y) for _, y in items]))


model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
opt = optim.Adam(model.parameters(), lr=3e-3)
Trainer(model, opt, nn.CrossEntropyLoss(), seed=0, verbose=0).fit(
    DataLoader(train_set, batch_size=16, shuffle=True), epochs=3 if FAST else 15)
model.eval()
x_test, y_test = stack(test_set)
x_cal, _ = stack(train_set, 256)
example = x_test[:1]

# %% [markdown]
# ## 2. Export: one call per file
# `export_model` traces one eval forward, optimizes the graph (BatchNorm folded, activations
# fused into the convolutions) and writes it atomically. With `calibration_data` it first
# quantizes: per-channel int8 weights, int8 activations with scales observed on those images.

# %%
float_path = os.path.join(OUT, "digits.mte")
int8_path = os.path.join(OUT, "digits.int8.mte")
mte.export_model(model, example, float_path)
mte.export_model(model, example, int8_path, calibration_data=[x_cal[i:i + 32]
                                                              for i in range(0, 256, 32)])
for path in (float_path, int8_path):
    print(f"{os.path.basename(path):18s} {os.path.getsize(path):8,d} bytes")

# %% [markdown]
# ## 3. What is inside a `.mte` file
# A safetensors container: 8 bytes of header length, a JSON header naming each tensor's dtype,
# shape and byte range, then the raw little-endian bytes. The graph itself is a JSON document
# in the header's `__metadata__`, so any safetensors reader can open the weights; next to it, one
# sha256 digest of the whole data section, which `graph.load` checks.

# %%
with open(int8_path, "rb") as f:
    (header_len,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(header_len))
meta = header.pop("__metadata__")
doc = json.loads(meta["minitorch_edge.graph"])
print("format version", meta["minitorch_edge.format_version"], "| kind", meta["minitorch_edge.kind"],
      "| data sha256", meta["minitorch_edge.data_sha256"][:16] + "...")
print("inputs", doc["inputs"], "outputs", doc["outputs"], "|", len(doc["nodes"]), "nodes,",
      len(header), "tensors")
for node in doc["nodes"][:4]:
    print(f"  {node['op']:24s} {node['name']}")
dtypes = {}
for entry in header.values():
    dtypes[entry["dtype"]] = dtypes.get(entry["dtype"], 0) + 1
print("tensors by dtype:", dtypes)

# %% [markdown]
# ## 4. The device-side loader: numpy + cffi
# `runtime.load` hands the file to the C runtime, which validates every offset, shape, dtype
# and reference, re-infers each node's output shape, picks a kernel per node and packs the
# weights once. A call then runs the nodes over one preallocated arena.

# %%
with rt.load(int8_path, threads=1) as m:
    print(m.inputs, "->", m.outputs)
    print(f"arena {m.arena_bytes:,} bytes, prepared weights {m.prepared_bytes:,} bytes")
    for name, op, kernel in m.kernels:
        print(f"  {op:24s} {kernel}")
    int8_logits = np.concatenate([m(x_test[i:i + 1]) for i in range(len(x_test))])
with rt.load(float_path, threads=1) as m:
    float_logits = np.concatenate([m(x_test[i:i + 1]) for i in range(len(x_test))])
with mte.no_grad():
    eager = model(mte.tensor(x_test)).numpy()
print(f"float file vs the trained model: max |diff| {np.abs(float_logits - eager).max():.2e}")
for label, logits in (("eager float32", eager), ("file float32", float_logits),
                      ("file int8", int8_logits)):
    print(f"{label:14s} test accuracy {(logits.argmax(1) == y_test).mean():.2%}")

# %% [markdown]
# The int8 results are the Python executor's bit for bit: both run TFLite's integer
# arithmetic on the same kernels.

# %%
int8_graph = graph.load(int8_path)
assert np.array_equal(int8_graph.run(example), rt.load(int8_path)(example))

# %% [markdown]
# ## 5. `mte-run`: the same file from the command line
# `mte-run model.mte --input x.npy --output y.npy [--bench R] [--info]`; it links the runtime
# statically, so the one executable is all a device needs.

# %%
exe = shutil.which("mte-run") or rt.mte_run_path()
x_path, y_path = os.path.join(OUT, "x.npy"), os.path.join(OUT, "y.npy")
np.save(x_path, example)
if exe:
    for path in (float_path, int8_path):
        done = subprocess.run([exe, path, "--input", x_path, "--output", y_path, "--threads", "1",
                               "--bench", "20" if FAST else "200"], capture_output=True,
                              text=True, check=True)
        print(os.path.basename(path), done.stdout.strip().splitlines()[-1])
    assert np.array_equal(np.load(y_path), rt.load(int8_path)(example))
else:
    print("mte-run is not built here (make -C native mte-run, or pip install .)")

# %% [markdown]
# ## 6. Sizes and latencies side by side
# Latencies on a tiny model are dominated by fixed costs (one call crosses into C once; the
# graph has a handful of nodes); bench/runtime.py measures MobileNetV2 and ResNet-18 against
# onnxruntime. On one thread, medians of interleaved rounds.

# %%


def median_ms(fns, rounds=5 if FAST else 9):
    """Medians of interleaved rounds on one thread (minitorch_edge.utils.timing)."""
    return _median_ms(fns, rounds=rounds)


x_t = mte.tensor(example)


def eager_call():
    with mte.no_grad():
        model(x_t)


fns, sizes = {"eager (training stack)": eager_call}, {}
for label, path in (("C runtime, float32", float_path), ("C runtime, int8", int8_path)):
    m = rt.load(path, threads=1)
    fns[label], sizes[label] = (lambda m=m: m(example)), os.path.getsize(path)
ms = median_ms(fns)
for label, t in ms.items():
    print(f"{label:24s} {t:7.3f} ms  ({ms['eager (training stack)'] / t:5.1f}x eager)"
          + (f"   file {sizes[label]:,} bytes" if label in sizes else ""))

# %% [markdown]
# ## Clean up
# The temporary folder goes (a folder named by MTE_TUTORIAL_OUT stays).

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
