"""Progress output of ``Trainer.fit``: one line per epoch, and on a terminal a live tqdm bar
while the epoch runs (replaced by that line when it ends); nothing with ``verbose=0``.

    epoch 3/10  loss 0.1234  accuracy 0.9712  val_loss 0.2345  val_accuracy 0.9600  lr 1.0e-03  3.2s

``verbose=1`` adds the bar when ``sys.stdout`` is a terminal and tqdm is installed (an optional
extra: without it only the lines are printed); ``verbose=2`` never draws the bar.
Everything goes to ``sys.stdout``, looked up at each call so redirections take effect.
"""
import shutil
import sys

__all__ = ["Progress", "format_logs"]

# a short bar, so the postfix (loss, metrics, lr) keeps most of the line
_BAR_FORMAT = ("{desc} {percentage:3.0f}%|{bar:12}| {n_fmt}/{total_fmt} "
               "[{elapsed}<{remaining}{postfix}]")


def _format_value(key, value):
    if key == "lr" or key.startswith("lr-"):
        return f"{value:.1e}"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def format_logs(logs, keys=None):
    """``"loss 0.1234  accuracy 0.9712  lr 1.0e-03"`` from a logs dict (lr last)."""
    keys = [k for k in (keys if keys is not None else logs) if k in logs and k != "epoch"]
    keys = [k for k in keys if k != "lr"] + (["lr"] if "lr" in keys else [])
    return "  ".join(f"{k} {_format_value(k, logs[k])}" for k in keys)


def _is_terminal():
    out = sys.stdout
    try:
        return bool(out is not None and out.isatty())
    except (AttributeError, ValueError):
        return False


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class Progress:
    """One object per fit; ``start_epoch`` / ``update`` / ``end_epoch`` per epoch."""

    def __init__(self, verbose):
        self.verbose = verbose
        self.tqdm = _tqdm() if verbose == 1 and _is_terminal() else None
        self.bar = None

    def start_epoch(self, epoch, epochs, total):
        if self.tqdm is not None:
            # the size is read once per epoch; shutil falls back to $COLUMNS/$LINES or 80x24
            # where a terminal reports 0x0 (a fresh pty, `docker run -t`), where tqdm's own
            # probe gets -1 rows and draws nothing at all
            size = shutil.get_terminal_size()
            fmt = None if total is None else _BAR_FORMAT
            self.bar = self.tqdm(total=total, desc=f"epoch {epoch}/{epochs}", file=sys.stdout,
                                 leave=False, ncols=size.columns, nrows=size.lines,
                                 unit="batch", bar_format=fmt)

    def update(self, logs):
        if self.bar is not None:
            self.bar.set_postfix_str(format_logs(logs), refresh=False)
            self.bar.update(1)

    def end_epoch(self, epoch, epochs, logs, keys, seconds):
        if not self.verbose:
            return
        if self.bar is not None:            # the live bar gives way to the full summary line
            self.bar.close()
            self.bar = None
        print(f"epoch {epoch}/{epochs}  {format_logs(logs, keys)}  {seconds:.1f}s",
              file=sys.stdout, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def write(self, text):
        """Print a message without tearing an open bar."""
        if not self.verbose:
            return
        if self.bar is not None:
            self.tqdm.write(text, file=sys.stdout)
        else:
            print(text, file=sys.stdout, flush=True)
