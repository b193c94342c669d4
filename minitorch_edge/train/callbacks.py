"""Callbacks: code that runs at fixed points of ``Trainer.fit`` without editing the loop.

The Trainer calls, in this order::

    on_fit_start(trainer)
      on_epoch_start(trainer, logs)                 logs = {"epoch": n} (n counts from 1)
        on_batch_start(trainer, step, logs)         step counts from 1 within the epoch
        on_batch_end(trainer, step, logs)           logs: loss, batch_size, lr
      on_validation_end(trainer, logs)              logs: val_loss, val_<metric>, ...
      on_epoch_end(trainer, logs)                   logs: loss, <metric>, val_..., lr
    on_fit_end(trainer)

A callback may add entries to the epoch-end ``logs`` (they reach History and the loggers) and may
set ``trainer.should_stop = True`` to end training after the current epoch. Callbacks with state
(best score, patience counter) implement ``state_dict()``/``load_state_dict()``; the Trainer
stores that state in its checkpoints so a resumed run behaves as an uninterrupted one.

Epoch-end order: the user's callbacks in list order, then ``History`` (always attached, so it
sees what the others added), then every ``ModelCheckpoint`` (so a saved checkpoint holds the
state after this epoch, including the other callbacks').
"""
import math
import os

import numpy as np

__all__ = ["Callback", "History", "EarlyStopping", "ModelCheckpoint", "LearningRateMonitor",
           "LambdaCallback"]


class Callback:
    """Base class: every hook does nothing; override the ones you need."""

    def on_fit_start(self, trainer):
        pass

    def on_fit_end(self, trainer):
        pass

    def on_epoch_start(self, trainer, logs):
        pass

    def on_epoch_end(self, trainer, logs):
        pass

    def on_batch_start(self, trainer, step, logs):
        pass

    def on_batch_end(self, trainer, step, logs):
        pass

    def on_validation_end(self, trainer, logs):
        pass

    def state_dict(self):
        """The callback's state as tensors and JSON-able values (stored in checkpoints)."""
        return {}

    def load_state_dict(self, state_dict):
        pass


class LambdaCallback(Callback):
    """A callback from plain functions: ``LambdaCallback(on_batch_end=lambda t, s, logs: ...)``."""

    _HOOKS = ("on_fit_start", "on_fit_end", "on_epoch_start", "on_epoch_end", "on_batch_start",
              "on_batch_end", "on_validation_end")

    def __init__(self, **hooks):
        for name, fn in hooks.items():
            if name not in self._HOOKS:
                raise TypeError(f"LambdaCallback: unknown hook {name!r}; expected one of "
                                f"{', '.join(self._HOOKS)}")
            setattr(self, name, fn)


def _number(value):
    return float(value.item() if hasattr(value, "item") else value)


class History(Callback):
    """Per-epoch values: ``history.history`` maps each log name ("loss", "accuracy",
    "val_loss", "lr", ...) to a list with one entry per epoch, ``history.epoch`` lists the epoch
    numbers. ``history["loss"]`` is a shortcut. A name missing in some epoch gets ``nan`` there,
    so every list has the same length as ``epoch``. ``Trainer.fit`` returns it."""

    def __init__(self):
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, trainer, logs):
        n = len(self.epoch)
        self.epoch.append(int(logs.get("epoch", trainer.epoch)))
        for key, value in logs.items():
            if key == "epoch":
                continue
            try:
                value = _number(value)
            except (TypeError, ValueError):
                continue                      # not a scalar: not a curve
            self.history.setdefault(key, [math.nan] * n).append(value)
        for values in self.history.values():
            if len(values) == n:
                values.append(math.nan)

    def __getitem__(self, key):
        return self.history[key]

    def __contains__(self, key):
        return key in self.history

    def keys(self):
        return self.history.keys()

    def __len__(self):
        return len(self.epoch)

    def __repr__(self):
        return f"History(epochs={len(self.epoch)}, keys={list(self.history)})"

    def state_dict(self):
        return {"epoch": list(self.epoch), "history": {k: list(v) for k, v in self.history.items()}}

    def load_state_dict(self, state_dict):
        self.epoch = [int(e) for e in state_dict["epoch"]]
        self.history = {k: [float(x) if x is not None else math.nan for x in v]
                        for k, v in state_dict["history"].items()}


def _check_mode(owner, mode):
    if mode not in ("min", "max"):
        raise ValueError(f"{owner}: mode must be 'min' or 'max', got {mode!r}")


def _monitored(owner, logs, monitor):
    if monitor not in logs:
        keys = ", ".join(k for k in logs if k != "epoch") or "none"
        hint = " (pass val_loader to fit, or monitor a training value)" \
            if monitor.startswith("val_") else ""
        raise RuntimeError(f"{owner}: monitored value {monitor!r} is not in the epoch logs{hint}; "
                           f"available: {keys}")
    return _number(logs[monitor])


def _copy_state(module):
    from ..tensor import Tensor
    return {k: Tensor._make(np.array(v._data, copy=True)) for k, v in module.state_dict().items()}


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has stopped improving.

    An epoch improves when the value beats the best so far by more than ``min_delta`` (lower for
    ``mode="min"``, higher for ``"max"``; nan never improves). After ``patience`` epochs in a row
    without improvement, training stops at the end of that epoch (``patience=0``: at the first
    one). With ``restore_best_weights=True`` the model gets back the weights of its best epoch
    when fit ends — stopped early or not (Keras restores only on an early stop). A monitored
    name missing from the logs raises (set ``strict=False`` to skip such epochs instead).

    After fit: ``stopped_epoch`` (0 if it never stopped), ``best``, ``best_epoch``.
    """

    def __init__(self, monitor="val_loss", mode="min", patience=0, min_delta=0.0,
                 restore_best_weights=False, strict=True, verbose=False):
        _check_mode("EarlyStopping", mode)
        if int(patience) < 0:
            raise ValueError(f"EarlyStopping: patience must be >= 0, got {patience}")
        self.monitor, self.mode = monitor, mode
        self.patience, self.min_delta = int(patience), abs(float(min_delta))
        self.restore_best_weights, self.strict, self.verbose = restore_best_weights, strict, verbose
        self.best = math.inf if mode == "min" else -math.inf
        self.best_epoch = self.stopped_epoch = self.wait = 0
        self.best_weights = None

    def _improved(self, current):
        if self.mode == "min":
            return current < self.best - self.min_delta
        return current > self.best + self.min_delta

    def on_fit_start(self, trainer):
        self.stopped_epoch = 0          # best and wait carry over (a resumed run restores them)

    def on_epoch_end(self, trainer, logs):
        if not self.strict and self.monitor not in logs:
            return
        current = _monitored("EarlyStopping", logs, self.monitor)
        if self._improved(current):
            self.best, self.best_epoch, self.wait = current, trainer.epoch, 0
            if self.restore_best_weights:
                self.best_weights = _copy_state(trainer.model)
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = trainer.epoch
            trainer.should_stop = True

    def on_fit_end(self, trainer):
        restore = (self.restore_best_weights and self.best_weights is not None
                   and self.best_epoch != trainer.epoch)
        if restore:
            trainer.model.load_state_dict(self.best_weights)
        if self.verbose or (self.stopped_epoch and trainer.verbose):
            text = f"EarlyStopping: {self.monitor} did not improve for {self.wait} epochs"
            if self.stopped_epoch:
                text += f", stopped at epoch {self.stopped_epoch}"
            text += f"; best {self.monitor} {self.best:.4f} at epoch {self.best_epoch}"
            if restore:
                text += " (weights restored)"
            trainer._print(text)

    def state_dict(self):
        state = {"best": self.best, "best_epoch": self.best_epoch, "wait": self.wait,
                 "stopped_epoch": self.stopped_epoch}
        if self.best_weights is not None:
            state["best_weights"] = dict(self.best_weights)
        return state

    def load_state_dict(self, state_dict):
        self.best = float(state_dict["best"])
        self.best_epoch = int(state_dict["best_epoch"])
        self.wait = int(state_dict["wait"])
        self.stopped_epoch = int(state_dict["stopped_epoch"])
        self.best_weights = state_dict.get("best_weights")


class ModelCheckpoint(Callback):
    """Save checkpoints to ``dirpath`` at the end of epochs.

    * ``save_last``: ``last.safetensors``, overwritten every epoch;
    * ``save_best``: ``best.safetensors`` whenever ``monitor`` improves (``mode`` "min"/"max");
    * ``filename``: a pattern for one more file per epoch (every ``every_n_epochs``), formatted
      with ``epoch`` and the epoch logs, e.g. ``"epoch{epoch:03d}-{val_loss:.4f}"``
      (``.safetensors`` is appended).

    Files are written with ``minitorch_edge.save`` (atomically: a crash mid-save keeps the old
    file). By default each file is a full Trainer checkpoint (``fit(resume_from=path)`` continues
    from it; the weights are under ``"model"``); with ``save_weights_only=True`` it is the
    model's state_dict alone, which any safetensors reader opens. After fit:
    ``best_model_path``, ``best_model_score``, ``best_epoch``, ``last_model_path``.
    """

    rank_zero_only = True       # under DDP only rank 0 writes (see Trainer)

    def __init__(self, dirpath, monitor="val_loss", mode="min", save_best=True, save_last=True,
                 filename=None, save_weights_only=False, every_n_epochs=1, verbose=False):
        _check_mode("ModelCheckpoint", mode)
        if save_best and monitor is None:
            raise ValueError("ModelCheckpoint: save_best=True needs a monitor (e.g. 'val_loss')")
        if int(every_n_epochs) < 1:
            raise ValueError(f"ModelCheckpoint: every_n_epochs must be >= 1, got {every_n_epochs}")
        self.dirpath = os.fspath(dirpath)
        self.monitor, self.mode = monitor, mode
        self.save_best, self.save_last = save_best, save_last
        self.filename, self.save_weights_only = filename, save_weights_only
        self.every_n_epochs, self.verbose = int(every_n_epochs), verbose
        self.best_model_score = None
        self.best_epoch = 0
        self.best_model_path = self.last_model_path = None

    def _improved(self, current):
        if math.isnan(current):
            return False
        if self.best_model_score is None:
            return True
        return current < self.best_model_score if self.mode == "min" \
            else current > self.best_model_score

    def _write(self, trainer, path):
        from ..utils.serialization import save
        os.makedirs(self.dirpath, exist_ok=True)
        if self.save_weights_only:
            save(trainer.model.state_dict(), path)
        else:
            trainer.save_checkpoint(path)
        if self.verbose:
            trainer._print(f"ModelCheckpoint: saved {path}")

    def on_epoch_end(self, trainer, logs):
        epoch = trainer.epoch
        best = False
        if self.save_best:
            current = _monitored("ModelCheckpoint", logs, self.monitor)
            if self._improved(current):
                self.best_model_score, self.best_epoch, best = current, epoch, True
                self.best_model_path = os.path.join(self.dirpath, "best.safetensors")
        if self.save_last:
            self.last_model_path = os.path.join(self.dirpath, "last.safetensors")
        # the state above is final for this epoch: every file written below records it
        if self.save_last:
            self._write(trainer, self.last_model_path)
        if best:
            self._write(trainer, self.best_model_path)
        if self.filename and epoch % self.every_n_epochs == 0:
            values = {k: v for k, v in logs.items() if k != "epoch"}
            try:
                name = self.filename.format(epoch=epoch, **values)
            except (KeyError, ValueError, IndexError) as e:
                raise ValueError(f"ModelCheckpoint: cannot format filename {self.filename!r} "
                                 f"with epoch and the logs {sorted(values)}: {e!r}") from None
            if not name.endswith(".safetensors"):
                name += ".safetensors"
            self._write(trainer, os.path.join(self.dirpath, name))

    def state_dict(self):
        return {"best_model_score": self.best_model_score, "best_epoch": self.best_epoch,
                "best_model_path": self.best_model_path, "last_model_path": self.last_model_path}

    def load_state_dict(self, state_dict):
        score = state_dict.get("best_model_score")
        self.best_model_score = None if score is None else float(score)
        self.best_epoch = int(state_dict.get("best_epoch", 0))
        self.best_model_path = state_dict.get("best_model_path")
        self.last_model_path = state_dict.get("last_model_path")


class LearningRateMonitor(Callback):
    """Record the learning rate of every parameter group (and momentum, with
    ``log_momentum=True``), per epoch or per optimizer step (``logging_interval``).

    Values go to ``self.lrs`` (name -> list) and, per epoch, into the epoch logs (so History and
    the loggers get them): ``lr-<Optimizer>`` for one group, ``lr-<Optimizer>/pg<i>`` for several;
    momentum as ``momentum-<Optimizer>...``. With ``logging_interval="step"`` the lists have one
    entry per batch and ``self.steps`` holds the matching global steps."""

    def __init__(self, logging_interval="epoch", log_momentum=False):
        if logging_interval not in ("epoch", "step"):
            raise ValueError(f"LearningRateMonitor: logging_interval must be 'epoch' or 'step', "
                             f"got {logging_interval!r}")
        self.logging_interval, self.log_momentum = logging_interval, log_momentum
        self.lrs = {}
        self.steps = []

    def _current(self, trainer):
        opt = trainer.optimizer
        name = type(opt).__name__
        groups = opt.param_groups
        out = {}
        for i, group in enumerate(groups):
            suffix = f"/pg{i}" if len(groups) > 1 else ""
            out[f"lr-{name}{suffix}"] = _number(group["lr"])
            if self.log_momentum:
                if "momentum" in group:
                    out[f"momentum-{name}{suffix}"] = _number(group["momentum"])
                elif "betas" in group:
                    out[f"momentum-{name}{suffix}"] = _number(group["betas"][0])
        return out

    def _record(self, values):
        for k, v in values.items():
            self.lrs.setdefault(k, []).append(v)

    def on_batch_end(self, trainer, step, logs):
        if self.logging_interval == "step":
            self.steps.append(trainer.global_step)
            self._record(self._current(trainer))

    def on_epoch_start(self, trainer, logs):
        if self.logging_interval == "epoch":
            self._epoch_values = self._current(trainer)    # the rates this epoch trains with
            self._record(self._epoch_values)

    def on_epoch_end(self, trainer, logs):
        if self.logging_interval == "epoch":
            logs.update(getattr(self, "_epoch_values", None) or self._current(trainer))
