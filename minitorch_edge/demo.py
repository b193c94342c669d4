"""The main job: train the small CNN on the bundled 8x8 digits, end to end.

``minitorch-edge demo`` (or ``python -m minitorch_edge demo``):

1. load `Digits` (shipped with the package) and its fixed, seeded, stratified 80/20 split;
2. train `models.SmallCNN` with Adam and a cosine schedule through the `Trainer` (progress bar
   on a terminal, one line per epoch otherwise), logging metrics to CSV;
3. report the test accuracy; save the checkpoint (`checkpoint.safetensors`, no pickle), the
   metrics log (`metrics.csv`) and the training curve (`training_curve.png`) under ``--out``;
4. reload the checkpoint into a fresh model and check it predicts exactly as the trained one.

``minitorch-edge train --config file.json`` runs the same loop for any zoo model on any
built-in dataset: the demo is one config (``DEMO_CONFIG``) of the schema in
``train/config.py``. Both go through ``train_run``: the run folder, the checkpoint after every
epoch, Ctrl-C and ``--resume`` are ``train/runs.py``'s. ``train --nproc N`` runs it under
mpiexec: each process trains a DistributedDataParallel replica on its DistributedSampler shard
(``batch_size`` per process) and rank 0 writes the run folder.
"""
import json
import os
import time

import numpy as np

from .autograd.grad_mode import no_grad
from .data import DataLoader
from .train.config import ConfigError, TrainConfig, factory, load_config, parse_config
from .train.runs import fresh_run_dir, resume_checkpoint, run_training

LAUNCHED_ENV = "MTE_DIST_LAUNCHED"   # set by ``train --nproc N`` for the processes it starts
DEFAULTS = dict(epochs=30, batch_size=16, lr=3e-3, seed=0, out=os.path.join("runs", "demo"))


def demo_config(epochs=DEFAULTS["epochs"], batch_size=DEFAULTS["batch_size"], lr=DEFAULTS["lr"],
                seed=DEFAULTS["seed"], out=DEFAULTS["out"]):
    """The demo as a raw train config: SmallCNN on digits, Adam, cosine over the epochs."""
    return {"model": {"name": "small_cnn", "in_channels": 1, "num_classes": 10, "input_size": 8},
            "dataset": {"name": "digits"}, "optimizer": {"name": "Adam", "lr": lr},
            "scheduler": {"name": "CosineAnnealingLR", "T_max": epochs}, "epochs": epochs,
            "batch_size": batch_size, "seed": seed, "out": out}


def _predictions(model, loader):
    model.eval()
    outs = []
    with no_grad():
        for x, _ in loader:
            outs.append(model(x).numpy())
    return np.concatenate(outs)


def _first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def build(config):
    """``(model, optimizer, scheduler, train_set, test_set)`` for a checked TrainConfig; what the
    constructors reject, and a model that does not fit the data, are ConfigErrors."""
    from .random import manual_seed
    manual_seed(config.seed)

    def make(section, *first, **fixed):
        comp = getattr(config, section)
        try:
            return factory(section, comp.name)(*first, **fixed, **comp.args)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{section} {comp.name} rejected its arguments: {_first_line(e)}; "
                              f"fix the {section} section (train --print-config lists its keys)") \
                from e

    model = make("model")
    optimizer = make("optimizer", model.parameters())
    scheduler = None if config.scheduler is None else make("scheduler", optimizer)
    train_set, test_set = make("dataset", train=True), make("dataset", train=False)
    _check_fit(config, model, train_set)
    return model, optimizer, scheduler, train_set, test_set


def _check_fit(config, model, dataset):
    """One sample through the model (eval mode, no gradients) before training starts."""
    x, _ = dataset[0]
    classes = len(getattr(dataset, "classes", ()) or ()) or None
    shape = tuple(x.shape)
    fix = (f"set the model's arguments to match (the dataset {config.dataset.name} gives inputs "
           f"of shape {shape}" + (f" and {classes} classes)" if classes else ")"))
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            out = model(x.unsqueeze(0))
    except Exception as e:
        raise ConfigError(f"model {config.model.name} does not fit dataset "
                          f"{config.dataset.name}: {_first_line(e)}; {fix}") from e
    finally:
        model.train(was_training)
    if classes and (out.dim() != 2 or out.shape[1] != classes):
        raise ConfigError(f"model {config.model.name} outputs shape {tuple(out.shape)} for one "
                          f"sample but dataset {config.dataset.name} has {classes} classes; {fix}")


def train_run(config, verbose=1, resume=None, overwrite=False, command="train"):
    """Train as ``config`` (a TrainConfig) says, in a fresh run folder, or continue the run of
    ``resume`` (a checkpoint, a run folder, or True for the last checkpoint of config.out).
    Returns ``(trainer, test_loader, run_dir, model)``; the test metrics are in
    ``trainer.history``."""
    from . import nn
    from .train import Trainer
    model, optimizer, scheduler, train_set, test_set = build(config)
    rank0, train_model, sampler = True, model, None
    if os.environ.get(LAUNCHED_ENV) == "1":         # started by train --nproc under mpiexec
        from . import distributed as dist
        from .data import DistributedSampler
        if not dist.is_initialized():
            dist.init_process_group("mpi")
        rank0 = dist.get_rank() == 0
        train_model = nn.parallel.DistributedDataParallel(model)
        sampler = DistributedSampler(train_set, seed=config.seed)
        verbose = verbose if rank0 else 0
    if resume is not None:
        checkpoint = resume_checkpoint(resume, config.run_dir)
        run_dir, note = os.path.dirname(checkpoint) or ".", f"resuming from {checkpoint}"
    elif rank0:
        checkpoint = None
        run_dir, note = fresh_run_dir(config.run_dir, overwrite)
    if sampler is not None and resume is None:      # rank 0 chose the run folder
        from . import distributed as dist
        shared = [run_dir if rank0 else None]
        dist.broadcast_object_list(shared)
        run_dir, checkpoint, note = shared[0], None, None if not rank0 else note
    if rank0:
        with open(os.path.join(run_dir, "config.json"), "w") as f:
            json.dump({**config.to_dict(), "out": run_dir}, f, indent=2)
    train_loader = DataLoader(train_set, batch_size=config.batch_size, shuffle=sampler is None,
                              sampler=sampler, num_workers=config.num_workers)
    test_loader = DataLoader(test_set, batch_size=config.eval_batch_size)
    trainer = Trainer(train_model, optimizer, nn.CrossEntropyLoss(), scheduler=scheduler,
                      metrics=("accuracy",), seed=config.seed, verbose=verbose, log_dir=run_dir,
                      grad_clip_norm=config.grad_clip_norm,
                      grad_accum_steps=config.grad_accum_steps)
    if verbose:
        print(f"minitorch_edge {command}: {type(model).__name__} on {type(train_set).__name__} "
              f"({len(train_set)} train / {len(test_set)} test images), {config.epochs} epoch"
              f"{'s' if config.epochs != 1 else ''}")
        print(f"run folder {run_dir}" + (f" ({note})" if note else ""), flush=True)
    run_training(trainer, train_loader, test_loader, config.epochs, run_dir,
                 resume_from=checkpoint, resume_command=f"minitorch-edge {command} --resume")
    return trainer, test_loader, run_dir, model


def run_resumed_config(resume, out):
    """The config saved in the run folder a ``--resume`` names (raw dict), or None."""
    path = resume_checkpoint(resume, out)
    saved = os.path.join(os.path.dirname(path) or ".", "config.json")
    return load_config(saved) if os.path.exists(saved) else None


def run_demo(out=DEFAULTS["out"], epochs=DEFAULTS["epochs"], batch_size=DEFAULTS["batch_size"],
             lr=DEFAULTS["lr"], seed=DEFAULTS["seed"], verbose=1, config=None, resume=None,
             overwrite=False):
    """Train, evaluate, save, reload; returns a dict with accuracy, seconds and file paths.
    ``config`` (a TrainConfig) replaces the keyword arguments (the CLI passes one)."""
    from . import models
    from .utils.serialization import load, save
    start = time.perf_counter()
    if config is None:
        config = parse_config(demo_config(epochs, batch_size, lr, seed, out))
    trainer, test_loader, out, model = train_run(config, verbose, resume, overwrite, "demo")
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

    reloaded = models.SmallCNN(**config.model.args)
    reloaded.load_state_dict(load(checkpoint))
    same = np.array_equal(_predictions(model, test_loader), _predictions(reloaded, test_loader))
    seconds = time.perf_counter() - start
    summary = {"test_accuracy": accuracy, "test_loss": result["loss"], "seconds": seconds,
               "reloaded_predictions_identical": same, "checkpoint": checkpoint,
               "metrics_log": os.path.join(out, "metrics.csv"), "training_curve": curve,
               "run_dir": out}
    if verbose:
        print(f"test accuracy {accuracy:.2%}  (loss {result['loss']:.4f})  in {seconds:.1f} s")
        print(f"saved {checkpoint}, {summary['metrics_log']}" + (f", {curve}" if curve else ""))
        print("reloaded checkpoint predicts identically" if same else
              "ERROR: the reloaded checkpoint predicts differently")
    if not same:
        raise RuntimeError("demo: the reloaded checkpoint does not reproduce the predictions")
    return summary


def train_from_config(path_or_config, verbose=1, resume=None, overwrite=False):
    """Train a zoo model on a built-in dataset as a JSON config file (or a TrainConfig) says;
    the keys are in ``train/config.py`` (``minitorch-edge train --print-config`` prints them
    all, explained). Saves ``checkpoint.safetensors`` (the final weights), ``last.safetensors``
    (resumable), ``metrics.csv``, ``steps.csv`` and ``config.json`` in the run folder. Returns
    the test loss and accuracy, and ``run_dir``."""
    from .utils.serialization import save
    config = path_or_config if isinstance(path_or_config, TrainConfig) else \
        parse_config(load_config(path_or_config), where=f" in {path_or_config}")
    trainer, test_loader, run_dir, model = train_run(config, verbose, resume, overwrite)
    result = trainer.evaluate(test_loader)
    checkpoint = os.path.join(run_dir, "checkpoint.safetensors")
    if trainer.is_main_process:                     # under --nproc, rank 0 saves
        save(model.state_dict(), checkpoint)
    if verbose and trainer.is_main_process:
        print(f"test accuracy {result['accuracy']:.2%}  (loss {result['loss']:.4f}); saved "
              f"{checkpoint}")
    return {**result, "run_dir": run_dir}
