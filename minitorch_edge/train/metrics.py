"""Metrics: numbers that say how well a model does, computed per batch and summed over an epoch.

Two layers:

* plain functions on one batch — ``accuracy(output, target)``,
  ``top_k_accuracy(output, target, k)``, ``confusion_matrix(output, target, num_classes)``;
* ``Metric`` objects that accumulate over many batches (``reset()``, ``update(output, target)``,
  ``compute()``). The Trainer keeps one per metric for training and one for validation and resets
  them every epoch. An epoch's value is exact, not an average of batch averages: ``Accuracy``
  counts correct samples and samples, and a plain function wrapped in ``BatchMean`` is weighted
  by batch size, so a short last batch counts for what it holds.

Conventions (as torchmetrics): ``output`` holds logits or probabilities, shape ``(N, C, ...)``
(class scores along dim 1) with ``target`` class indices of shape ``(N, ...)``; a ``target`` with
the output's own shape (one-hot or soft labels) is reduced by argmax. A 1-D (or ``(N, 1)``)
output is binary: probabilities are thresholded at 0.5, and values outside [0, 1] are taken as
logits (sigmoid first, i.e. thresholded at 0).
"""
import numpy as np

__all__ = ["accuracy", "top_k_accuracy", "confusion_matrix", "Metric", "Accuracy",
           "TopKAccuracy", "BatchMean", "RunningMean", "get_metric"]


def _np(x, name):
    """The numpy array behind a Tensor, array or list (no copy for Tensors)."""
    data = getattr(x, "_data", None)
    if data is not None:
        return data
    try:
        return np.asarray(x)
    except Exception:
        raise TypeError(f"{name}: expected a Tensor or array, got {type(x).__name__}") from None


def _predictions(out, tgt, where):
    """(predicted classes, target classes) as equal-shape integer arrays."""
    if out.ndim == 0:
        raise ValueError(f"{where}: output must have a batch dimension, got a 0-d value")
    binary = out.ndim == 1 or (out.ndim == 2 and out.shape[1] == 1 and tgt.ndim == 1)
    if binary:
        scores = out.reshape(out.shape[0])
        threshold = 0.5 if scores.size == 0 or (scores.min() >= 0 and scores.max() <= 1) else 0.0
        pred = (scores > threshold).astype(np.int64)
        tgt = tgt.reshape(-1)
        if tgt.dtype.kind == "f":
            tgt = (tgt > 0.5).astype(np.int64)
    else:
        pred = out.argmax(axis=1)
        if tgt.shape == out.shape:          # one-hot or soft labels
            tgt = tgt.argmax(axis=1)
    if pred.shape != tgt.shape:
        raise ValueError(f"{where}: output of shape {tuple(out.shape)} does not match target of "
                         f"shape {tuple(tgt.shape)}; expected class scores (N, C, ...) with "
                         f"class-index targets (N, ...), or a target shaped like the output")
    if tgt.dtype.kind == "f":
        if not np.all(tgt == np.round(tgt)):
            raise ValueError(f"{where}: target holds non-integer values; pass class indices")
        tgt = tgt.astype(np.int64)
    return pred, tgt


def _correct_count(output, target, where="accuracy"):
    pred, tgt = _predictions(_np(output, where), _np(target, where), where)
    return int(np.count_nonzero(pred == tgt)), int(tgt.size)


def accuracy(output, target):
    """The fraction of samples whose predicted class (argmax of ``output`` along dim 1, or the
    thresholded score for a 1-D binary output) equals ``target``. Returns a Python float in [0, 1]
    (0.0 for an empty batch)."""
    correct, total = _correct_count(output, target)
    return correct / total if total else 0.0


def _topk_hits(output, target, k, where="top_k_accuracy"):
    out, tgt = _np(output, where), _np(target, where)
    if out.ndim != 2:
        raise ValueError(f"{where}: expected output of shape (N, C), got {tuple(out.shape)}")
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"{where}: k must be a positive int, got {k!r}")
    if k > out.shape[1]:
        raise ValueError(f"{where}: k={k} is larger than the number of classes {out.shape[1]}")
    if tgt.shape == out.shape:
        tgt = tgt.argmax(axis=1)
    tgt = tgt.reshape(-1).astype(np.int64)
    if tgt.shape[0] != out.shape[0]:
        raise ValueError(f"{where}: {out.shape[0]} outputs but {tgt.shape[0]} targets")
    # a target is in the top k when fewer than k classes score strictly higher than it
    # (ties counted in the target's favour, as torchmetrics does)
    own = np.take_along_axis(out, tgt[:, None], axis=1)
    higher = np.count_nonzero(out > own, axis=1)
    return int(np.count_nonzero(higher < k)), int(tgt.shape[0])


def top_k_accuracy(output, target, k=5):
    """The fraction of samples whose target class is among the ``k`` highest scores of
    ``output`` (shape (N, C)). ``k=1`` is ``accuracy``. Returns a Python float."""
    hits, total = _topk_hits(output, target, k)
    return hits / total if total else 0.0


def confusion_matrix(output, target, num_classes):
    """An int64 Tensor ``M`` of shape (num_classes, num_classes) where ``M[i, j]`` counts samples
    of true class ``i`` predicted as ``j`` (rows: truth, columns: prediction; sklearn's layout).
    ``output`` may be class scores (N, C, ...) or predicted class indices (same shape as
    target, integer dtype)."""
    from ..tensor import Tensor
    out, tgt = _np(output, "confusion_matrix"), _np(target, "confusion_matrix")
    if out.dtype.kind in "iub" and out.shape == tgt.shape:
        pred, tgt = out.astype(np.int64), tgt.astype(np.int64)
    else:
        pred, tgt = _predictions(out, tgt, "confusion_matrix")
    pred, tgt = pred.reshape(-1), tgt.reshape(-1)
    n = int(num_classes)
    for name, arr in (("target", tgt), ("prediction", pred)):
        bad = arr[(arr < 0) | (arr >= n)]
        if bad.size:
            raise ValueError(f"confusion_matrix: {name} holds class {int(bad[0])} outside "
                             f"[0, {n}); pass the right num_classes")
    counts = np.bincount(tgt * n + pred, minlength=n * n).astype(np.int64)
    return Tensor._make(counts.reshape(n, n))


# ---- accumulating metric objects -----------------------------------------------------------------
class Metric:
    """Accumulates a value over batches: ``reset()``, ``update(output, target)``, ``compute()``.
    Subclasses keep their sums in plain Python numbers so an epoch's value is exact."""

    def reset(self):
        raise NotImplementedError

    def update(self, output, target):
        raise NotImplementedError

    def compute(self):
        raise NotImplementedError


class Accuracy(Metric):
    """Correct samples / samples over everything seen since ``reset()``."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.correct = self.total = 0

    def update(self, output, target):
        c, t = _correct_count(output, target)
        self.correct += c
        self.total += t

    def compute(self):
        return self.correct / self.total if self.total else 0.0


class TopKAccuracy(Accuracy):
    """Samples whose target is in the top ``k`` scores / samples."""

    def __init__(self, k=5):
        self.k = int(k)
        super().__init__()

    def update(self, output, target):
        c, t = _topk_hits(output, target, self.k)
        self.correct += c
        self.total += t


class RunningMean:
    """A mean of numbers fed one at a time, each with a weight (a batch size):
    ``update(value, n=1)``; ``compute()`` (also ``.mean``) gives sum(value*n) / sum(n).
    With ``window`` set, only the last ``window`` updates count (a smoothed value for
    progress bars)."""

    def __init__(self, window=None):
        if window is not None and int(window) < 1:
            raise ValueError(f"RunningMean: window must be a positive int or None, got {window!r}")
        self.window = None if window is None else int(window)
        self.reset()

    def reset(self):
        self.total = 0.0
        self.count = 0
        self._recent = []

    def update(self, value, n=1):
        value = float(value.item() if hasattr(value, "item") else value)
        if self.window is None:
            self.total += value * n
            self.count += n
        else:
            self._recent.append((value, n))
            if len(self._recent) > self.window:
                self._recent.pop(0)
            self.total = sum(v * k for v, k in self._recent)
            self.count = sum(k for _, k in self._recent)
        return self

    def compute(self):
        return self.total / self.count if self.count else float("nan")

    @property
    def mean(self):
        return self.compute()


class BatchMean(Metric):
    """Wraps ``fn(output, target) -> number`` (a batch average) into a Metric whose epoch value
    is the batch values weighted by batch size (the length of ``target``'s first dim)."""

    def __init__(self, fn, name=None):
        if not callable(fn):
            raise TypeError(f"BatchMean: expected a callable metric, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "metric")
        self._mean = RunningMean()

    def reset(self):
        self._mean.reset()

    def update(self, output, target):
        value = self.fn(output, target)
        if hasattr(value, "numel") and value.numel() != 1:
            raise ValueError(f"metric {self.name!r} returned a tensor of shape "
                             f"{tuple(value.shape)}; a metric must return one number per batch")
        shape = getattr(target, "shape", None)
        n = int(shape[0]) if shape else 1
        self._mean.update(value, n)

    def compute(self):
        return self._mean.compute()


_NAMED = {"accuracy": Accuracy, "acc": Accuracy}


def get_metric(spec, name=None):
    """A fresh Metric from a name ("accuracy", "top5_accuracy", "top_3"), a Metric instance
    (used as is), a Metric class, or a function ``fn(output, target) -> number``."""
    if isinstance(spec, str):
        key = spec.lower()
        if key in _NAMED:
            return _NAMED[key]()
        for prefix, suffix in (("top", "_accuracy"), ("top_", ""), ("top", "")):
            if key.startswith(prefix) and key.endswith(suffix):
                middle = key[len(prefix):len(key) - len(suffix)]
                if middle.isdigit():
                    return TopKAccuracy(int(middle))
        raise ValueError(f"unknown metric {spec!r}; use 'accuracy', 'topK_accuracy' (e.g. "
                         f"'top5_accuracy'), a Metric, or a function (output, target) -> number")
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, type) and issubclass(spec, Metric):
        return spec()
    if callable(spec):
        return BatchMean(spec, name)
    raise TypeError(f"metric {name or spec!r}: expected a name, a Metric or a callable, got "
                    f"{type(spec).__name__}")
