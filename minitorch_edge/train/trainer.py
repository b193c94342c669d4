"""Trainer: the training loop written once, with the pieces every project re-implements.

One training step, as you would write it by hand::

    model.train()
    out = model(x); loss = loss_fn(out, y)           # loss_fn returns the batch mean
    (loss / grad_accum_steps).backward()             # gradients add up in .grad
    every grad_accum_steps batches:
        clip_grad_norm_(params, grad_clip_norm)      # optional
        optimizer.step(); optimizer.zero_grad()
        scheduler.step()                             # only for per-step schedules (OneCycleLR)

and after each epoch: validation (``evaluate``: eval mode, no_grad), the per-epoch scheduler
step (``ReduceLROnPlateau`` gets the monitored value), callbacks, loggers, one progress line.

Gradient accumulation: k micro-batches of size b with the loss divided by k give the gradient
of the mean loss over k*b samples, so the update equals one step on the large batch. When an
epoch ends with fewer than k pending micro-batches, their gradients are rescaled to a mean over
the ones present and the optimizer steps once more (each micro-batch counts equally).

Counters: ``epoch`` is the number of finished epochs (printed and logged from 1);
``global_step`` counts training batches over all epochs. ``fit(epochs=N)`` trains until N epochs
are finished (as Keras's ``epochs`` and Lightning's ``max_epochs``), so a resumed run passes the
same N as the original one.

Precision (``precision=``, Lightning's spellings): "32" / "32-true" computes in float32;
"bf16" / "bf16-mixed" runs forward and loss under ``autocast("cpu", dtype=bfloat16)``;
"16" / "16-mixed" / "fp16" under float16 autocast with a ``GradScaler`` (scaled backward,
``unscale_`` before clipping, steps with inf/nan gradients skipped). Parameters stay float32.

DistributedDataParallel (``model`` wrapped in it, launched with mpiexec): only rank 0 prints,
logs, runs the callbacks that write files (``rank_zero_only``) and saves checkpoints; the
micro-batches of gradient accumulation before the last run under ``model.no_sync()``; a
loader's ``sampler.set_epoch(epoch)`` (DistributedSampler) is called at each epoch's start.

Checkpoints (``save_checkpoint``) hold the model, optimizer and scheduler state, the counters,
History, the callbacks' state and every random number generator (minitorch_edge's default one,
numpy's global one, Python's ``random``), taken at the end of an epoch. ``fit(resume_from=path)``
restores all of it and continues with the next epoch; the losses that follow equal, bit for bit,
those of a run that was never interrupted (a DataLoader that shuffles draws its order from the
default generator when its iterator is created, so the order is restored too).

Interrupts: ``request_interrupt()`` (safe to call from a signal handler, as the CLI's Ctrl-C
handler does) makes fit stop after the current optimizer step and raise ``TrainingInterrupted``;
``save_checkpoint`` then also records the position inside the epoch (the step, the RNG states at
the epoch's start, the epoch's running loss and plain-number metric sums). Resuming from such a
checkpoint replays the epoch's data order, skips the batches already trained on (they are
loaded, not trained on), restores the RNG states of the interrupt and continues with the next
batch: the per-step losses equal those of an uninterrupted run (with ``num_workers=0``; worker
processes seed themselves per iterator, so random transforms in workers are not replayed).
"""
import contextlib
import copy
import math
import os
import time
import warnings

import numpy as np

from .callbacks import Callback, History, ModelCheckpoint
from .metrics import Metric, RunningMean, get_metric
from .progress import Progress
from .rng import rng_state, seed_everything, set_rng_state  # noqa: F401 (public here too)

__all__ = ["Trainer", "NonFiniteLossError", "TrainingInterrupted"]


def _is_main_process():
    """False only on ranks other than 0 of an initialized process group."""
    from .. import distributed
    return not distributed.is_initialized() or distributed.get_rank() == 0


class NonFiniteLossError(FloatingPointError, RuntimeError):
    """The loss became nan or inf; the message names the epoch and step. Catch it as
    FloatingPointError or RuntimeError."""


class TrainingInterrupted(Exception):
    """fit stopped after an optimizer step because ``request_interrupt()`` was called.
    ``epoch`` is the epoch it stopped in (from 1) and ``step`` the batches of it trained on, or
    ``step=0`` and ``epoch`` the last finished epoch when it stopped between epochs;
    ``global_step`` counts the batches trained on in all. The Trainer's state is consistent:
    ``save_checkpoint`` then ``fit(resume_from=...)`` (or ``fit`` again on the same Trainer)
    continues from here."""

    def __init__(self, epoch, step, global_step):
        self.epoch, self.step, self.global_step = epoch, step, global_step
        where = f"after epoch {epoch}" if step == 0 else f"in epoch {epoch} after step {step}"
        super().__init__(f"training interrupted {where} (global step {global_step})")


def _number_state(obj):
    """The plain-number attributes of a metric (and of a RunningMean inside it): its sums."""
    state = {}
    for k, v in vars(obj).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            state[k] = v
        elif isinstance(v, RunningMean):
            state[k] = _number_state(v)
    return state


def _set_number_state(obj, state):
    for k, v in state.items():
        if isinstance(v, dict):
            _set_number_state(getattr(obj, k), v)
        else:
            setattr(obj, k, v)


def _number(value):
    return float(value.item() if hasattr(value, "item") else value)


def _first_dim(x):
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    try:
        return len(x)
    except TypeError:
        return 1


class Trainer:
    """Fit a model with an optimizer and a loss, with metrics, callbacks, loggers, checkpoints.

    Args:
        model: an ``nn.Module``. optimizer: an ``optim.Optimizer`` over its parameters.
        loss_fn: ``loss_fn(output, target)`` returning the batch's mean loss (a scalar Tensor).
        scheduler: an LR scheduler, stepped once per epoch, or once per optimizer step when
            ``scheduler_interval="step"`` (the default for OneCycleLR and CyclicLR);
            ``ReduceLROnPlateau`` is stepped with the epoch's ``scheduler_monitor`` value.
        metrics: names ("accuracy", "top5_accuracy"), functions ``fn(output, target)``, Metric
            objects, or a dict name -> any of those. Logged for training and (``val_``) validation.
        callbacks: Callback objects (History is always added; ``trainer.history``).
        loggers: objects with ``log_metrics(dict, step)``, given each epoch's logs with
            ``step=epoch``. None: a ``CSVLogger(log_dir/metrics.csv)`` when ``log_dir`` is set,
            else none. That default file is the run's own: rows past the epoch a fit starts
            from are dropped (all of them for a fresh run, those after the checkpoint on resume).
        grad_clip_norm: clip the gradients' total 2-norm to this before each optimizer step.
        grad_accum_steps: micro-batches per optimizer step (see the file header).
        seed: seed minitorch_edge, numpy and ``random`` now (build the model after your own
            ``manual_seed`` for a reproducible initialisation).
        verbose: 0 silent, 1 a progress bar on a terminal (plain lines otherwise), 2 lines.
        log_dir: folder for the default CSV logger.
        precision: "32" (default), "bf16" / "bf16-mixed", or "16" / "16-mixed" / "fp16" (mixed
            precision: autocast, and for float16 a GradScaler; see the file header).

    Batches are ``(inputs, targets, ...)`` tuples or lists; override ``unpack_batch`` for other
    layouts.
    """

    def __init__(self, model, optimizer, loss_fn, scheduler=None, metrics=("accuracy",),
                 callbacks=(), loggers=None, grad_clip_norm=None, grad_accum_steps=1, seed=None,
                 verbose=1, log_dir=None, scheduler_interval=None, scheduler_monitor="val_loss",
                 precision="32"):
        if not (hasattr(model, "parameters") and hasattr(model, "train") and callable(model)):
            raise TypeError(f"Trainer: model must be an nn.Module, got {type(model).__name__}")
        if not (hasattr(optimizer, "step") and hasattr(optimizer, "zero_grad")):
            raise TypeError(f"Trainer: optimizer must be an optim.Optimizer, got "
                            f"{type(optimizer).__name__}")
        if not callable(loss_fn):
            raise TypeError(f"Trainer: loss_fn must be callable (output, target) -> loss, got "
                            f"{type(loss_fn).__name__}")
        if not isinstance(grad_accum_steps, int) or grad_accum_steps < 1:
            raise ValueError(f"Trainer: grad_accum_steps must be an int >= 1, got "
                             f"{grad_accum_steps!r}")
        if grad_clip_norm is not None and not float(grad_clip_norm) > 0:
            raise ValueError(f"Trainer: grad_clip_norm must be > 0 or None, got {grad_clip_norm!r}")
        if verbose not in (0, 1, 2, False, True):
            raise ValueError(f"Trainer: verbose must be 0, 1 or 2, got {verbose!r}")
        self.model, self.optimizer, self.loss_fn, self.scheduler = model, optimizer, loss_fn, \
            scheduler
        self.grad_clip_norm = None if grad_clip_norm is None else float(grad_clip_norm)
        self.grad_accum_steps = grad_accum_steps
        self.is_main_process = _is_main_process()   # rank 0, or no process group
        self.verbose = int(verbose) if self.is_main_process else 0
        self.log_dir = None if log_dir is None or not self.is_main_process else os.fspath(log_dir)
        self.scheduler_interval = self._interval(scheduler, scheduler_interval)
        self.scheduler_monitor = scheduler_monitor
        self.precision, self._autocast_dtype, self.scaler = self._parse_precision(precision)
        self._metric_specs = self._parse_metrics(metrics)
        self.history = History()
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"Trainer: callbacks must be Callback objects, got "
                                f"{type(cb).__name__}")
        self._own_log = None
        if loggers is None:
            loggers = []
            if self.log_dir is not None:
                from ..utils.logger import CSVLogger
                self._own_log = CSVLogger(os.path.join(self.log_dir, "metrics.csv"),
                                          step_key="epoch")
                loggers = [self._own_log]
        self.loggers = list(loggers) if self.is_main_process else []
        for lg in self.loggers:
            if not callable(getattr(lg, "log_metrics", None)):
                raise TypeError(f"Trainer: a logger needs a log_metrics(metrics, step) method; "
                                f"got {type(lg).__name__}")
        self.epoch = 0
        self.global_step = 0
        self.epochs = None
        self.should_stop = False
        self._progress = None
        self._interrupt_requested = False
        self._position = None       # inside an epoch: what a mid-epoch checkpoint records
        self._resume_position = None
        if seed is not None:
            seed_everything(seed)

    # ---- configuration helpers --------------------------------------------------------------
    @staticmethod
    def _parse_precision(precision):
        """(canonical name, autocast dtype or None, GradScaler or None)."""
        from .. import dtypes
        names = {"32": "32", "32-true": "32", "bf16": "bf16-mixed", "bf16-mixed": "bf16-mixed",
                 "16": "16-mixed", "16-mixed": "16-mixed", "fp16": "16-mixed"}
        name = names.get(str(precision))
        if name is None:
            raise ValueError(f"Trainer: precision must be one of {', '.join(map(repr, names))}, "
                             f"got {precision!r}")
        if name == "32":
            return name, None, None
        if name == "bf16-mixed":
            return name, dtypes.bfloat16, None
        from ..amp import GradScaler
        return name, dtypes.float16, GradScaler("cpu")

    def _autocast(self):
        """The context forward and loss run in: autocast for mixed precision."""
        if self._autocast_dtype is None:
            return contextlib.nullcontext()
        from ..amp import autocast
        return autocast("cpu", dtype=self._autocast_dtype)

    @staticmethod
    def _interval(scheduler, interval):
        if interval is None:
            from ..optim.lr_scheduler import CyclicLR, OneCycleLR
            return "step" if isinstance(scheduler, (OneCycleLR, CyclicLR)) else "epoch"
        if interval not in ("epoch", "step"):
            raise ValueError(f"Trainer: scheduler_interval must be 'epoch', 'step' or None, got "
                             f"{interval!r}")
        return interval

    @property
    def _plateau(self):
        return getattr(self.scheduler, "_needs_metrics", False)

    @staticmethod
    def _parse_metrics(metrics):
        if metrics is None:
            return []
        items = metrics.items() if isinstance(metrics, dict) else \
            [(None, m) for m in ([metrics] if isinstance(metrics, str) else metrics)]
        specs = []
        for name, spec in items:
            if name is None:
                name = spec if isinstance(spec, str) else \
                    getattr(spec, "__name__", type(spec).__name__.lower())
            get_metric(spec, name)                     # validate now, not mid-epoch
            specs.append((str(name), spec))
        names = [n for n, _ in specs]
        if len(set(names)) != len(names) or {"loss", "lr"} & set(names):
            raise ValueError(f"Trainer: metric names must be unique and not 'loss'/'lr', got "
                             f"{names}; pass a dict name -> metric")
        return specs

    def _new_metrics(self):
        """Fresh metric objects (a Metric instance given by the user is copied, not shared)."""
        return {name: get_metric(copy.deepcopy(spec) if isinstance(spec, Metric) else spec, name)
                for name, spec in self._metric_specs}

    def _ordered_callbacks(self):
        """User callbacks, then History, then checkpoint writers (see callbacks.py)."""
        ckpt = [cb for cb in self.callbacks if isinstance(cb, ModelCheckpoint)]
        rest = [cb for cb in self.callbacks if not isinstance(cb, ModelCheckpoint)]
        return rest + [self.history] + ckpt

    def _call(self, hook, *args):
        for cb in self._ordered_callbacks():
            if self.is_main_process or not getattr(cb, "rank_zero_only", False):
                getattr(cb, hook)(self, *args)

    def request_interrupt(self):
        """Stop fit after the current optimizer step with ``TrainingInterrupted`` (see the file
        header). Only sets a flag, so a signal handler may call it."""
        self._interrupt_requested = True

    def _maybe_no_sync(self, local):
        """DDP: a micro-batch that is not the last before a step accumulates without
        communicating (``model.no_sync()``); anything else: nothing."""
        no_sync = getattr(self.model, "no_sync", None)
        return no_sync() if local and no_sync is not None else contextlib.nullcontext()

    def _print(self, text):
        if self._progress is not None:
            self._progress.write(text)
        elif self.verbose:
            print(text, flush=True)

    def _lr(self):
        return _number(self.optimizer.param_groups[0]["lr"])

    def _params(self):
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def unpack_batch(self, batch):
        """``(inputs, targets)`` from one batch: the first two items of a tuple or list."""
        if isinstance(batch, (tuple, list)) and len(batch) >= 2:
            return batch[0], batch[1]
        raise TypeError(f"Trainer: a batch must be an (inputs, targets) tuple or list, got "
                        f"{type(batch).__name__}" + (f" of length {len(batch)}"
                                                     if isinstance(batch, (tuple, list)) else "")
                        + "; subclass Trainer and override unpack_batch for other layouts")

    # ---- fit ----------------------------------------------------------------------------------
    def fit(self, train_loader, val_loader=None, epochs=1, resume_from=None):
        """Train until ``epochs`` epochs are finished (or a callback stops it); validate on
        ``val_loader`` after each epoch. ``resume_from``: a checkpoint file to continue from.
        Returns the History."""
        if not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"fit: epochs must be an int >= 1, got {epochs!r}")
        if self._plateau and self.scheduler_interval == "epoch" and val_loader is None \
                and str(self.scheduler_monitor).startswith("val_"):
            raise ValueError(f"fit: ReduceLROnPlateau monitors {self.scheduler_monitor!r} but no "
                             f"val_loader was given; pass one, or "
                             f"Trainer(scheduler_monitor='loss')")
        if resume_from is not None:
            self.load_checkpoint(resume_from)
        elif self._position is not None:       # fit again after TrainingInterrupted: continue
            self._resume_position, self._position = self._position, None
        if self.epoch >= epochs:
            warnings.warn(f"fit: {self.epoch} epochs are already finished and epochs={epochs} is "
                          f"the final epoch count (as Keras/Lightning); nothing to do. Pass "
                          f"epochs={self.epoch + epochs} to train {epochs} more.", stacklevel=2)
        if self._own_log is not None:     # the default log holds this run's epochs only
            self._own_log.truncate(self.epoch)
        self.epochs = epochs
        self.should_stop = False
        self._interrupt_requested = False
        self._progress = Progress(self.verbose)
        try:
            self._call("on_fit_start")
            while self.epoch < epochs and not self.should_stop:
                self._run_epoch(train_loader, val_loader)
                if self._interrupt_requested and self.epoch < epochs and not self.should_stop:
                    raise TrainingInterrupted(self.epoch, 0, self.global_step)
            self._call("on_fit_end")
        finally:
            self._progress.close()
            self._progress = None
            for lg in self.loggers:
                close = getattr(lg, "close", None)
                if close is not None:
                    close()
        return self.history

    def _run_epoch(self, train_loader, val_loader):
        epoch, started = self.epoch + 1, time.perf_counter()
        self._call("on_epoch_start", {"epoch": epoch})
        self.model.train()
        self.optimizer.zero_grad()
        metrics, loss_mean = self._new_metrics(), RunningMean()
        try:
            total = len(train_loader)
        except TypeError:
            total = None
        self._progress.start_epoch(epoch, self.epochs, total)
        pending, lr = 0, self._lr()
        resume, self._resume_position = self._resume_position, None
        epoch_rng = rng_state() if resume is None else resume["epoch_rng"]
        if resume is not None:              # replay this epoch's order up to the checkpoint
            now = rng_state()
            set_rng_state(epoch_rng)
        batches = iter(train_loader)
        if resume is not None:
            for _ in range(resume["step"]):
                next(batches)
            set_rng_state(now)
            _set_number_state(loss_mean, resume["loss"])
            for name, m in metrics.items():
                _set_number_state(m, resume["metrics"].get(name, {}))
        set_epoch = getattr(getattr(train_loader, "sampler", None), "set_epoch", None)
        if set_epoch is not None:           # a DistributedSampler: a new order each epoch
            set_epoch(epoch - 1)
        first = 1 if resume is None else resume["step"] + 1
        for step, batch in enumerate(batches, first):
            inputs, target = self.unpack_batch(batch)
            self._call("on_batch_start", step, {"epoch": epoch})
            lr = self._lr()
            with self._autocast():
                output = self.model(inputs)
                loss = self.loss_fn(output, target)
            value = self._loss_value(loss)
            self.global_step += 1
            if not math.isfinite(value):
                raise NonFiniteLossError(
                    f"loss is {value} at epoch {epoch}, step {step} (global step "
                    f"{self.global_step}); training stopped before this batch's update. Lower the "
                    f"learning rate, set grad_clip_norm, or check this batch's inputs and targets "
                    f"for nan/inf")
            loss = loss if self.grad_accum_steps == 1 else loss / self.grad_accum_steps
            with self._maybe_no_sync(pending + 1 < self.grad_accum_steps and step != total):
                (loss if self.scaler is None else self.scaler.scale(loss)).backward()
            pending += 1
            if pending == self.grad_accum_steps:
                self._optimizer_step()
                pending = 0
            n = _first_dim(target)
            loss_mean.update(value, n)
            detached = output.detach() if hasattr(output, "detach") else output
            for m in metrics.values():
                m.update(detached, target)
            self._call("on_batch_end", step, {"loss": value, "batch_size": n, "lr": lr})
            self._progress.update({"loss": loss_mean.compute(),
                                   **{k: m.compute() for k, m in metrics.items()}, "lr": lr})
            if self._interrupt_requested and pending == 0:
                self._position = {"epoch": epoch, "step": step, "epoch_rng": epoch_rng,
                                  "loss": _number_state(loss_mean),
                                  "metrics": {k: _number_state(m) for k, m in metrics.items()}}
                raise TrainingInterrupted(epoch, step, self.global_step)
        if loss_mean.count == 0:
            raise ValueError(f"fit: train_loader yielded no batches in epoch {epoch} (an empty "
                             f"dataset, or drop_last=True with fewer samples than batch_size?)")
        if pending:
            scale = self.grad_accum_steps / pending
            for p in self._params():
                if p.grad is not None:
                    p.grad._data = p.grad._data * p.grad._data.dtype.type(scale)
            self._optimizer_step()
        logs = {"epoch": epoch, "loss": loss_mean.compute()}
        logs.update({k: m.compute() for k, m in metrics.items()})
        if val_loader is not None:
            val_logs = {"val_" + k: v for k, v in self.evaluate(val_loader).items()}
            self._call("on_validation_end", val_logs)
            logs.update(val_logs)
        logs["lr"] = lr
        printed = list(logs)
        if self.scheduler is not None and self.scheduler_interval == "epoch":
            if self._plateau:
                if self.scheduler_monitor not in logs:
                    raise RuntimeError(f"fit: ReduceLROnPlateau monitors "
                                       f"{self.scheduler_monitor!r}, which is not in the epoch "
                                       f"logs ({', '.join(k for k in logs if k != 'epoch')})")
                self.scheduler.step(logs[self.scheduler_monitor])
            else:
                self.scheduler.step()
        self.epoch = epoch
        self._call("on_epoch_end", logs)
        metrics_only = {k: v for k, v in logs.items() if k != "epoch"}
        for lg in self.loggers:
            lg.log_metrics(metrics_only, step=epoch)
        self._progress.end_epoch(epoch, self.epochs, logs, printed,
                                 time.perf_counter() - started)

    def _loss_value(self, loss):
        numel = loss.numel() if hasattr(loss, "numel") else None
        if numel != 1 or not hasattr(loss, "backward"):
            what = f"a tensor of shape {tuple(loss.shape)}" if numel is not None \
                else type(loss).__name__
            raise ValueError(f"Trainer: loss_fn returned {what}; it must return a one-element "
                             f"Tensor (use reduction='mean')")
        return _number(loss)

    def _optimizer_step(self):
        if self.scaler is not None and self.grad_clip_norm is not None:
            self.scaler.unscale_(self.optimizer)    # clip the true gradients
        if self.grad_clip_norm is not None:
            from ..nn.utils import clip_grad_norm_
            clip_grad_norm_(self._params(), self.grad_clip_norm)
        if self.scaler is None:
            self.optimizer.step()
        else:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self.optimizer.zero_grad()
        if self.scheduler is not None and self.scheduler_interval == "step":
            if self._plateau:
                raise ValueError("Trainer: ReduceLROnPlateau cannot step per batch; use "
                                 "scheduler_interval='epoch'")
            self.scheduler.step()

    # ---- evaluate / predict -------------------------------------------------------------------
    def evaluate(self, loader):
        """The mean loss and the metrics over ``loader`` (eval mode, no gradients; the model's
        mode is restored afterwards). Returns ``{"loss": ..., "<metric>": ...}``."""
        from ..autograd.grad_mode import no_grad
        was_training = self.model.training
        metrics, loss_mean = self._new_metrics(), RunningMean()
        self.model.eval()
        try:
            with no_grad():
                for batch in loader:
                    inputs, target = self.unpack_batch(batch)
                    with self._autocast():
                        output = self.model(inputs)
                        loss = self.loss_fn(output, target)
                    loss_mean.update(self._loss_value(loss), _first_dim(target))
                    for m in metrics.values():
                        m.update(output, target)
        finally:
            self.model.train(was_training)
        return {"loss": loss_mean.compute(), **{k: m.compute() for k, m in metrics.items()}}

    def predict(self, loader):
        """The model's outputs for every batch of ``loader``, concatenated along dim 0 (eval
        mode, no gradients). A batch is the inputs themselves or a tuple/list whose first item
        is. A model returning a tuple gives a tuple of concatenated tensors."""
        from ..autograd.grad_mode import no_grad
        from ..tensor import Tensor
        was_training = self.model.training
        outputs = []
        self.model.eval()
        try:
            with no_grad():
                for batch in loader:
                    inputs = batch[0] if isinstance(batch, (tuple, list)) else batch
                    with self._autocast():
                        outputs.append(self.model(inputs))
        finally:
            self.model.train(was_training)
        if not outputs:
            raise ValueError("predict: the loader yielded no batches")

        def cat(parts):
            return Tensor._make(np.concatenate([p._data for p in parts], axis=0))
        if isinstance(outputs[0], (tuple, list)):
            return tuple(cat([o[i] for o in outputs]) for i in range(len(outputs[0])))
        return cat(outputs)

    # ---- checkpoints --------------------------------------------------------------------------
    def _callback_keys(self):
        """A stable name per stateful callback: its class name, numbered when repeated."""
        seen, keys = {}, []
        for cb in self.callbacks:
            name = type(cb).__name__
            seen[name] = seen.get(name, 0) + 1
            keys.append((f"{name}_{seen[name]}" if seen[name] > 1 else name, cb))
        return keys

    def state_dict(self):
        """The checkpoint as a nested dict of tensors and JSON-able values."""
        callbacks = {key: cb.state_dict() for key, cb in self._callback_keys()}
        return {"model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
                "epoch": self.epoch, "global_step": self.global_step,
                "rng": rng_state(),
                "history": self.history.state_dict(),
                "callbacks": {k: v for k, v in callbacks.items() if v},
                **({} if self.scaler is None else {"grad_scaler": self.scaler.state_dict()}),
                **({} if self._position is None else {"position": self._position})}

    def load_state_dict(self, state_dict):
        """Restore everything ``state_dict()`` holds, RNG states included."""
        missing = [k for k in ("model", "optimizer", "epoch", "global_step", "rng")
                   if k not in state_dict]
        if missing:
            raise ValueError(f"Trainer: not a Trainer checkpoint (missing {', '.join(missing)}); "
                             f"a weights-only file loads with "
                             f"model.load_state_dict(minitorch_edge.load(path))")
        self.model.load_state_dict(state_dict["model"])
        self.optimizer.load_state_dict(state_dict["optimizer"])
        sched = state_dict.get("scheduler")
        if self.scheduler is not None:
            if sched is None:
                warnings.warn("Trainer: the checkpoint has no scheduler state; the scheduler "
                              "starts from its current state", stacklevel=3)
            else:
                self.scheduler.load_state_dict(sched)
        if self.scaler is not None and state_dict.get("grad_scaler"):
            self.scaler.load_state_dict(state_dict["grad_scaler"])
        self.epoch = int(state_dict["epoch"])
        self.global_step = int(state_dict["global_step"])
        if state_dict.get("history") is not None:
            self.history.load_state_dict(state_dict["history"])
        saved = state_dict.get("callbacks") or {}
        for key, cb in self._callback_keys():
            if key in saved:
                cb.load_state_dict(saved[key])
        set_rng_state(state_dict["rng"])
        position = state_dict.get("position")
        if position is not None and int(position["epoch"]) != self.epoch + 1:
            raise ValueError(f"Trainer: the checkpoint's position is in epoch {position['epoch']} "
                             f"but {self.epoch} epochs are finished; the file is inconsistent")
        self._resume_position = None if position is None else \
            {**position, "step": int(position["step"])}
        self._position = None

    def save_checkpoint(self, path):
        """Write ``state_dict()`` to ``path`` with ``minitorch_edge.save`` (atomic, no pickle);
        under DistributedDataParallel only rank 0 writes."""
        from ..utils.serialization import save
        if not self.is_main_process:
            return
        save(self.state_dict(), path)

    def load_checkpoint(self, path):
        """Read a file written by ``save_checkpoint`` and restore it (``fit`` continues with
        the next epoch)."""
        from ..utils.serialization import load
        self.load_state_dict(load(path))
