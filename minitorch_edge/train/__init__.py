"""train: the Trainer tier — a training loop with callbacks, metrics, loggers and checkpoints.

Read ``metrics.py`` (what is measured), ``callbacks.py`` (the hooks and the stock callbacks),
then ``trainer.py`` (the loop, evaluation, checkpoint/resume, interrupts); ``progress.py`` prints,
``rng.py`` seeds and snapshots the random generators. The command line's layer: ``config.py``
(the checked schema of ``minitorch-edge train --config``) and ``runs.py`` (run folders, a
checkpoint every epoch, Ctrl-C, the per-step log).
"""
from .metrics import (accuracy, top_k_accuracy, confusion_matrix, Metric, Accuracy,  # noqa: F401
                      TopKAccuracy, BatchMean, RunningMean, get_metric)
from .callbacks import (Callback, History, EarlyStopping, ModelCheckpoint,  # noqa: F401
                        LearningRateMonitor, LambdaCallback)
from .trainer import (Trainer, NonFiniteLossError, TrainingInterrupted,  # noqa: F401
                      seed_everything)

__all__ = ["Trainer", "NonFiniteLossError", "TrainingInterrupted", "seed_everything", "Callback",
           "History", "EarlyStopping", "ModelCheckpoint", "LearningRateMonitor", "LambdaCallback",
           "accuracy", "top_k_accuracy", "confusion_matrix", "Metric", "Accuracy", "TopKAccuracy",
           "BatchMean", "RunningMean", "get_metric"]
