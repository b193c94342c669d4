"""train: the Trainer tier — a training loop with callbacks, metrics, loggers and checkpoints.

Read ``metrics.py`` (what is measured), ``callbacks.py`` (the hooks and the stock callbacks),
then ``trainer.py`` (the loop, evaluation, checkpoint/resume); ``progress.py`` prints.
"""
from .metrics import (accuracy, top_k_accuracy, confusion_matrix, Metric, Accuracy,  # noqa: F401
                      TopKAccuracy, BatchMean, RunningMean, get_metric)
from .callbacks import (Callback, History, EarlyStopping, ModelCheckpoint,  # noqa: F401
                        LearningRateMonitor, LambdaCallback)
from .trainer import Trainer, NonFiniteLossError, seed_everything  # noqa: F401

__all__ = ["Trainer", "NonFiniteLossError", "seed_everything", "Callback", "History",
           "EarlyStopping", "ModelCheckpoint", "LearningRateMonitor", "LambdaCallback",
           "accuracy", "top_k_accuracy", "confusion_matrix", "Metric", "Accuracy", "TopKAccuracy",
           "BatchMean", "RunningMean", "get_metric"]
