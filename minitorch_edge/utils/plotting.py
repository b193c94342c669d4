"""Training curves: ``plot_history(history, path)`` saves a PNG with one panel per quantity.

Panels: the loss (training and, when present, validation), then each metric (``accuracy`` with
``val_accuracy``, ...), then the learning rate on a log scale. ``history`` is the ``History``
that ``Trainer.fit`` returns or any dict name -> list of per-epoch values.

matplotlib is an optional extra (``pip install "minitorch-edge[plot]"``), imported here, inside
the function. The figure is drawn on matplotlib's Agg canvas directly (``Figure`` +
``FigureCanvasAgg``), without pyplot, so it works on machines without a display and never
changes the backend of the user's own pyplot session.
"""
import math
import os

__all__ = ["plot_history"]


def _curves(history):
    """(epochs, dict name -> list of floats) from a History or a dict of lists."""
    values = getattr(history, "history", history)
    if not isinstance(values, dict):
        raise TypeError(f"plot_history: expected a History or a dict name -> list of values, "
                        f"got {type(history).__name__}")
    curves = {}
    for name, seq in values.items():
        try:
            curves[str(name)] = [float(v) if v is not None else math.nan for v in seq]
        except (TypeError, ValueError):
            raise TypeError(f"plot_history: {name!r} is not a list of numbers") from None
    if not curves or not any(curves.values()):
        raise ValueError("plot_history: the history is empty (train for at least one epoch)")
    length = max(len(v) for v in curves.values())
    epochs = list(getattr(history, "epoch", None) or range(1, length + 1))
    return epochs, curves


def _panels(curves):
    """[(title, [names...], log_scale)]: loss first, then each metric with its val_ twin, lr."""
    panels, used = [], set()
    bases = [n for n in curves if not n.startswith("val_")]
    bases += [n[4:] for n in curves if n.startswith("val_") and n[4:] not in curves]
    order = (["loss"] if "loss" in bases else []) + [b for b in bases if b not in ("loss", "lr")]
    for base in order:
        names = [n for n in (base, "val_" + base) if n in curves]
        used.update(names)
        panels.append((base, names, False))
    lr_names = [n for n in curves if n not in used and (n == "lr" or n.startswith("lr-"))]
    if lr_names:
        panels.append(("learning rate", lr_names, True))
    return panels


def plot_history(history, path, title=None, dpi=100):
    """Save the training curves of ``history`` as a PNG at ``path`` (folders are created);
    returns ``path``."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError('plot_history needs matplotlib, an optional extra: '
                          'pip install "minitorch-edge[plot]"') from None
    epochs, curves = _curves(history)
    panels = _panels(curves)
    cols = min(len(panels), 3)
    rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(4.5 * cols, 3.4 * rows), dpi=dpi)
    FigureCanvasAgg(fig)
    for i, (name, names, log_scale) in enumerate(panels):
        ax = fig.add_subplot(rows, cols, i + 1)
        for n in names:
            ys = curves[n]
            xs = epochs[:len(ys)] if len(epochs) >= len(ys) else list(range(1, len(ys) + 1))
            label = "validation" if n.startswith("val_") else ("train" if n == name else n)
            ax.plot(xs, ys, marker="o", markersize=3, label=label)
        if log_scale and all(v > 0 for n in names for v in curves[n] if not math.isnan(v)):
            ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.grid(True, alpha=0.3)
        if len(names) > 1:
            ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    fig.savefig(path, format="png")
    return path
