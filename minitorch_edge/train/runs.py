"""Runs: one training run's folder and its life, as ``minitorch-edge demo`` and ``train`` use it.

    runs/demo/                  runs/demo-1, runs/demo-2, ... when runs/demo holds an earlier run
        config.json             the complete, checked config (``--resume`` reads it back)
        last.safetensors        Trainer checkpoint: the end of the last epoch, or the Ctrl-C point
        metrics.csv             one row per epoch (the Trainer's CSV log)
        steps.csv               one row per training step: epoch, step, global_step, loss, lr
        checkpoint.safetensors  the final weights (``model.state_dict()``; any safetensors reader)

A new run never writes into a folder that holds files: it takes the next free name and says so
(``overwrite=True`` reuses the folder, removing the run files above first). Ctrl-C (SIGINT) asks
the Trainer to stop after the current optimizer step (``Trainer.request_interrupt``); the run
then saves ``last.safetensors`` (atomically, with the position inside the epoch) and raises
``RunInterrupted``, whose message says how to resume. A second Ctrl-C stops at once, without a
checkpoint. ``steps.csv`` is cut back to the checkpoint's step on resume, so a resumed run's
file equals an uninterrupted run's (the Trainer replays the same losses).
"""
import contextlib
import os
import signal
import sys

from .callbacks import Callback, ModelCheckpoint
from .config import ConfigError
from .trainer import TrainingInterrupted

__all__ = ["RUN_FILES", "fresh_run_dir", "resume_checkpoint", "StepLog", "RunInterrupted",
           "run_training", "LAST"]

LAST = "last.safetensors"
RUN_FILES = ("config.json", LAST, "metrics.csv", "steps.csv", "checkpoint.safetensors",
             "training_curve.png")


def fresh_run_dir(out, overwrite=False):
    """``(folder, note)``: ``out`` when it is missing or empty (or ``overwrite``), else the first
    free ``out-1``, ``out-2``, ...; ``note`` says why another name was taken (or None)."""
    out = os.path.normpath(os.fspath(out))
    if os.path.exists(out) and not os.path.isdir(out):
        raise ConfigError(f"the run folder {out} exists and is a file; pass another --out")
    if not os.path.isdir(out) or not os.listdir(out):
        os.makedirs(out, exist_ok=True)
        return out, None
    if overwrite:
        for name in RUN_FILES:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(out, name))
        return out, f"--overwrite: reusing {out}"
    n = 1
    while True:
        candidate = f"{out}-{n}"
        note = f"{out} holds an earlier run; --overwrite reuses it, --resume continues it"
        try:
            os.makedirs(candidate)              # atomic: two runs started at once differ
            return candidate, note
        except FileExistsError:
            if os.path.isdir(candidate) and not os.listdir(candidate):
                return candidate, note       # an empty folder (a run that never wrote) is free
            n += 1


def resume_checkpoint(resume, out):
    """The checkpoint ``--resume`` names: a file, a run folder (its last.safetensors), or with no
    path (``resume is True``) the last checkpoint of ``out``."""
    path = os.fspath(out) if resume is True else os.fspath(resume)
    if os.path.isdir(path):
        path = os.path.join(path, LAST)
    if not os.path.isfile(path):
        where = f"{out} has no {LAST}" if resume is True else f"{path} does not exist"
        raise ConfigError(f"nothing to resume: {where}; pass --resume PATH (a run folder or its "
                          f"{LAST}), or start a new run without --resume")
    return path


class StepLog(Callback):
    """``steps.csv``: one row per training step (``epoch,step,global_step,loss,lr``, the floats
    written exactly). On fit start the rows after the trainer's ``global_step`` are dropped, so
    a resumed run continues the file where its checkpoint was taken."""

    rank_zero_only = True       # under DDP only rank 0 writes (see Trainer)

    HEADER = "epoch,step,global_step,loss,lr\n"

    def __init__(self, path):
        self.path = os.fspath(path)
        self._file = None

    def on_fit_start(self, trainer):
        kept = []
        if trainer.global_step and os.path.exists(self.path):
            with open(self.path) as f:
                rows = f.read().splitlines()[1:]
            kept = [r for r in rows if int(r.split(",")[2]) <= trainer.global_step]
        self.close()
        self._file = open(self.path, "w", buffering=1)       # a line per step reaches the disk
        self._file.write(self.HEADER + "".join(r + "\n" for r in kept))

    def on_batch_end(self, trainer, step, logs):
        if self._file is not None:
            self._file.write(f"{trainer.epoch + 1},{step},{trainer.global_step},"
                             f"{logs['loss']!r},{float(logs['lr'])!r}\n")

    def on_fit_end(self, trainer):
        self.close()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None


class RunInterrupted(Exception):
    """Ctrl-C stopped a run; ``checkpoint`` is the resumable file (None if none was saved). The
    message says where training stopped and the command that resumes it."""

    def __init__(self, message, checkpoint=None):
        super().__init__(message)
        self.checkpoint = checkpoint


@contextlib.contextmanager
def _sigint_requests_interrupt(trainer):
    """Within the block the first SIGINT calls ``trainer.request_interrupt()``; the second
    raises KeyboardInterrupt (stop now). The previous handler is restored afterwards."""
    try:
        previous = signal.getsignal(signal.SIGINT)
    except ValueError:                           # not the main thread: signals are not ours
        yield
        return
    asked = []

    def handler(signum, frame):
        if asked:
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        asked.append(True)
        trainer.request_interrupt()
        print("\nminitorch-edge: Ctrl-C: finishing the current step, then saving a checkpoint "
              "(Ctrl-C again stops at once, without one)", file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_training(trainer, train_loader, val_loader, epochs, run_dir, resume_from=None,
                 resume_command="minitorch-edge train --resume"):
    """``trainer.fit`` with a resumable checkpoint after every epoch, a step log, and Ctrl-C
    handled as the file header says. Returns the History."""
    last = os.path.join(run_dir, LAST)
    steps = StepLog(os.path.join(run_dir, "steps.csv"))
    trainer.callbacks += [steps, ModelCheckpoint(run_dir, save_best=False, save_last=True)]
    try:
        with _sigint_requests_interrupt(trainer):
            return trainer.fit(train_loader, val_loader=val_loader, epochs=epochs,
                               resume_from=resume_from)
    except TrainingInterrupted as e:
        steps.close()
        trainer.save_checkpoint(last)
        where = (f"after epoch {e.epoch}" if e.step == 0 else
                 f"in epoch {e.epoch} after step {e.step}")
        raise RunInterrupted(f"interrupted {where} (global step {e.global_step}); saved the "
                             f"resumable checkpoint {last}; resume with: {resume_command} "
                             f"{last}", last) from None
    except KeyboardInterrupt:
        steps.close()
        saved = os.path.exists(last)
        raise RunInterrupted("interrupted at once (second Ctrl-C); no checkpoint of this point" +
                             (f"; the last epoch's checkpoint {last} resumes with: "
                              f"{resume_command} {last}" if saved else ""),
                             last if saved else None) from None
    finally:
        steps.close()
