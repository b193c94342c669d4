"""The main job: train the small CNN on the bundled 8x8 digits, end to end.

``minitorch-edge demo`` (or ``python -m minitorch_edge demo``):

1. load `Digits` (shipped with the package) and its fixed, seeded, stratified 80/20 split;
2. train `models.SmallCNN` with Adam and a cosine schedule through the `Trainer` (progress bar
   on a terminal, one line per epoch otherwise), logging metrics to CSV;
3. report the test accuracy; save the checkpoint (`checkpoint.safetensors`, no pickle), the
   metrics log (`metrics.csv`) and the training curve (`training_curve.png`) under ``--out``;
4. reload the checkpoint into a fresh model and check it predicts exactly as the trained one.

``minitorch-edge train --config file.json`` runs the same loop for any zoo model on any
built-in dataset (see `train_from_config`).
"""
import json
import os
import time

import numpy as np

from . import models, nn, optim
from .autograd.grad_mode import no_grad
from .data import DataLoader
from .random import manual_seed
from .train import Trainer
from .utils.serialization import load, save

DEFAULTS = dict(epochs=30, batch_size=16, lr=3e-3, seed=0, out=os.path.join("runs", "demo"))


def _predictions(model, loader):
    model.eval()
    outs = []
    with no_grad():
        for x, _ in loader:
            outs.append(model(x).numpy())
    return np.concatenate(outs)


def run_demo(out=DEFAULTS["out"], epochs=DEFAULTS["epochs"], batch_size=DEFAULTS["batch_size"],
             lr=DEFAULTS["lr"], seed=DEFAULTS["seed"], verbose=1):
    """Train, evaluate, save, reload; returns a dict with accuracy, seconds and file paths."""
    from .data.datasets import Digits
    start = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    manual_seed(seed)
    train_set, test_set = Digits(train=True), Digits(train=False)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)

    model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
    optimizer = optim.Adam(model.parameters(), lr=lr)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    trainer = Trainer(model, optimizer, nn.CrossEntropyLoss(), scheduler=scheduler,
                      metrics=("accuracy",), seed=seed, verbose=verbose, log_dir=out)
    if verbose:
        print(f"minitorch_edge demo: SmallCNN on Digits ({len(train_set)} train / "
              f"{len(test_set)} test images), {epochs} epochs")
    trainer.fit(train_loader, val_loader=test_loader, epochs=epochs)
    result = trainer.evaluate(test_loader)
    accuracy = result["accuracy"]

    checkpoint = os.path.join(out, "checkpoint.safetensors")
    save(model.state_dict(), checkpoint)
    curve = os.path.join(out, "training_curve.png")
    try:
        from .utils.plotting import plot_history
        plot_history(trainer.history, curve, title="SmallCNN on Digits")
    except ImportError as e:           # matplotlib is the optional "plot" extra
        curve = None
        if verbose:
            print(f"(no training curve: {e})")

    reloaded = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
    reloaded.load_state_dict(load(checkpoint))
    same = np.array_equal(_predictions(model, test_loader), _predictions(reloaded, test_loader))
    seconds = time.perf_counter() - start
    summary = {"test_accuracy": accuracy, "test_loss": result["loss"], "seconds": seconds,
               "reloaded_predictions_identical": same, "checkpoint": checkpoint,
               "metrics_log": os.path.join(out, "metrics.csv"), "training_curve": curve}
    if verbose:
        print(f"test accuracy {accuracy:.2%}  (loss {result['loss']:.4f})  in {seconds:.1f} s")
        print(f"saved {checkpoint}, {summary['metrics_log']}" + (f", {curve}" if curve else ""))
        print("reloaded checkpoint predicts identically" if same else
              "ERROR: the reloaded checkpoint predicts differently")
    if not same:
        raise RuntimeError("demo: the reloaded checkpoint does not reproduce the predictions")
    return summary


# ---- train --config ------------------------------------------------------------------------------
MODELS = {"mlp": models.MLP, "small_cnn": models.SmallCNN, "resnet18": models.resnet18,
          "mobilenet_v2": models.mobilenet_v2, "efficientnet_lite0": models.efficientnet_lite0}


def _dataset(spec, train):
    from .data import datasets
    spec = dict(spec)
    name = spec.pop("name")
    known = {"digits": datasets.Digits, "mnist": datasets.MNIST,
             "fashion_mnist": datasets.FashionMNIST, "cifar10": datasets.CIFAR10}
    if name not in known:
        raise ValueError(f"train --config: unknown dataset {name!r}; choose from {sorted(known)}")
    return known[name](train=train, **spec)


def train_from_config(path, verbose=1):
    """Train a zoo model on a built-in dataset as described by a JSON file, e.g.::

        {"model": {"name": "small_cnn", "in_channels": 1, "num_classes": 10, "input_size": 8},
         "dataset": {"name": "digits"},
         "optimizer": {"name": "Adam", "lr": 0.003},
         "scheduler": {"name": "CosineAnnealingLR", "T_max": 10},
         "epochs": 10, "batch_size": 32, "seed": 0, "out": "runs/digits"}

    ``model.name`` is one of MODELS (the other keys are its arguments), ``dataset.name`` one of
    digits, mnist, fashion_mnist, cifar10 (other keys go to the dataset, e.g. ``root``,
    ``download``); optimizer and scheduler names are classes in ``optim`` /
    ``optim.lr_scheduler``. Saves ``checkpoint.safetensors`` and ``metrics.csv`` under out."""
    with open(path) as f:
        config = json.load(f)
    for key in ("model", "dataset"):
        if key not in config:
            raise ValueError(f"train --config {path}: missing the {key!r} section")
    seed = config.get("seed", 0)
    manual_seed(seed)
    model_spec = dict(config["model"])
    name = model_spec.pop("name")
    if name not in MODELS:
        raise ValueError(f"train --config: unknown model {name!r}; choose from {sorted(MODELS)}")
    model = MODELS[name](**model_spec)
    if name == "mlp":   # an MLP sees flattened images
        model = nn.Sequential(nn.Flatten(), model)
    opt_spec = dict(config.get("optimizer", {"name": "Adam", "lr": 1e-3}))
    optimizer = getattr(optim, opt_spec.pop("name"))(model.parameters(), **opt_spec)
    scheduler = None
    if config.get("scheduler"):
        sched_spec = dict(config["scheduler"])
        scheduler = getattr(optim.lr_scheduler, sched_spec.pop("name"))(optimizer, **sched_spec)
    out = config.get("out", os.path.join("runs", name))
    batch_size = config.get("batch_size", 32)
    train_loader = DataLoader(_dataset(config["dataset"], True), batch_size=batch_size,
                              shuffle=True, num_workers=config.get("num_workers", 0))
    test_loader = DataLoader(_dataset(config["dataset"], False), batch_size=256)
    trainer = Trainer(model, optimizer, nn.CrossEntropyLoss(), scheduler=scheduler, seed=seed,
                      verbose=verbose, log_dir=out)
    trainer.fit(train_loader, val_loader=test_loader, epochs=config.get("epochs", 10))
    result = trainer.evaluate(test_loader)
    save(model.state_dict(), os.path.join(out, "checkpoint.safetensors"))
    if verbose:
        print(f"test accuracy {result['accuracy']:.2%}  (loss {result['loss']:.4f}); saved "
              f"{os.path.join(out, 'checkpoint.safetensors')}")
    return result
