# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 08 · Training on real data: Dataset → DataLoader → Trainer → save → load
#
# The 8x8 handwritten digits ship inside the package, so this runs offline. We train the small
# CNN with the Trainer, plot the curves, save a checkpoint (a safetensors file: no pickle),
# reload it and predict. This is what `minitorch-edge demo` does.
#
# Read alongside: `minitorch_edge/data/` (dataset.py → sampler.py → collate.py →
# dataloader.py), `data/datasets/digits.py`, `train/trainer.py`, `utils/serialization.py`.

# %%
import os
import tempfile

import numpy as np

import minitorch_edge as mte
from minitorch_edge import models, nn, optim
from minitorch_edge.data import DataLoader
from minitorch_edge.data.datasets import Digits
from minitorch_edge.train import EarlyStopping, Trainer

FAST = os.environ.get("MTE_TUTORIAL_FAST") == "1"
# Files go to $MTE_TUTORIAL_OUT when it is set (and are kept), else to a temporary folder that
# the end of the tutorial removes.
_scratch = None if os.environ.get("MTE_TUTORIAL_OUT") else tempfile.TemporaryDirectory(
    prefix="mte_digits_")
OUT = os.environ.get("MTE_TUTORIAL_OUT") or _scratch.name
os.makedirs(OUT, exist_ok=True)
mte.manual_seed(0)

# %% [markdown]
# ## Dataset and DataLoader
# `Digits(train=True/False)` is a fixed, seeded, stratified 80/20 split. A sample is a
# (1, 8, 8) float tensor in [0, 1] and an int label; the DataLoader shuffles and collates
# samples into batches.

# %%
train_set, test_set = Digits(train=True), Digits(train=False)
image, label = train_set[0]
print(len(train_set), "train /", len(test_set), "test;", tuple(image.shape), "label", label)
train_loader = DataLoader(train_set, batch_size=16, shuffle=True)
test_loader = DataLoader(test_set, batch_size=256)
x, y = next(iter(train_loader))
print("a batch:", tuple(x.shape), x.dtype, tuple(y.shape), y.dtype)

# %% [markdown]
# ## The Trainer
# It runs the loop you would write by hand (forward, loss, backward, step), plus validation,
# metrics, an LR schedule, callbacks and a CSV log. `models.summary` shows what we train.

# %%
model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
print(models.summary(model, (1, 1, 8, 8)))
epochs = 3 if FAST else 30
optimizer = optim.Adam(model.parameters(), lr=3e-3)
scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
trainer = Trainer(model, optimizer, nn.CrossEntropyLoss(), scheduler=scheduler,
                  metrics=("accuracy",), callbacks=[EarlyStopping(monitor="val_loss", patience=8)],
                  log_dir=OUT, verbose=2)
history = trainer.fit(train_loader, val_loader=test_loader, epochs=epochs)
print("test:", trainer.evaluate(test_loader))

# %% [markdown]
# ## Curves, checkpoint, reload, predict

# %%
try:
    from minitorch_edge.utils import plot_history
    plot_history(trainer.history, os.path.join(OUT, "curve.png"))
    print("curve saved to", os.path.join(OUT, "curve.png"))
except ImportError as e:
    print("no plot:", e)

path = os.path.join(OUT, "digits_cnn.safetensors")
mte.save(model.state_dict(), path)
fresh = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
fresh.load_state_dict(mte.load(path))
fresh.eval()
model.eval()
with mte.no_grad():
    images, labels = next(iter(test_loader))
    same = np.array_equal(model(images).numpy(), fresh(images).numpy())
    predicted = fresh(images[:10]).argmax(dim=1)
print("reloaded model identical:", same)
print("predicted:", predicted.tolist())
print("true:     ", labels[:10].tolist())

# %% [markdown]
# ## TensorBoard
# `utils.tensorboard.SummaryWriter` (needs the optional `tensorboard` extra: tensorboardX)
# writes event files; `tensorboard --logdir <folder>` shows them in a browser, and
# `TensorBoardLogger` plugs the same into the Trainer (`loggers=[...]`).

# %%
try:
    from minitorch_edge.utils.tensorboard import SummaryWriter
except ImportError:
    SummaryWriter = None
if SummaryWriter is not None:
    try:
        with SummaryWriter(os.path.join(OUT, "tb")) as writer:
            for epoch, loss in enumerate(trainer.history.history["loss"]):
                writer.add_scalar("loss/train", loss, epoch)
            writer.add_histogram("features.0.weight", model.features[0].weight.detach(), 0)
        print("event files in", os.path.join(OUT, "tb"), "- run: tensorboard --logdir", OUT)
    except ImportError as e:
        print("no TensorBoard:", e)

# %% [markdown]
# ## Clean up
# The temporary folder goes (a folder named by MTE_TUTORIAL_OUT stays).

# %%
if _scratch is not None:
    _scratch.cleanup()
    print("removed the temporary folder", OUT, "(set MTE_TUTORIAL_OUT=<folder> to keep the files)")
