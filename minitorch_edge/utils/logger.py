"""Metric loggers without dependencies: a CSV table and a JSON-lines file.

Both follow one small protocol, which the Trainer uses (``Trainer(loggers=[...])``) and any
object may implement:

    log_metrics(metrics: dict name -> number, step: int)    one row / one line
    flush(), close()                                        (files are closed between writes,
                                                             so both are cheap and optional)

Both append: pointing a logger at an existing file continues it.

CSV layout: wide (one row per step, one column per name), which spreadsheets and
``pandas.read_csv`` read directly. When a row brings a name the header lacks, the file is
rewritten with the grown header (earlier rows get empty cells) — atomically: written to a temp
file in the same folder, fsynced and renamed, so a crash leaves the old file whole. Rows are
otherwise appended. Empty cells mean "not logged at this step".

JSON lines: one object per line, ``{"step": 3, "loss": 0.12, ...}``, flushed per line. Values
that JSON cannot hold (nan, inf) are written as null, so every line is valid JSON.
"""
import csv
import io
import json
import math
import os
import tempfile

__all__ = ["CSVLogger", "JSONLinesLogger", "Logger"]


def _scalar(value, where):
    """A plain Python number/str from a number, a one-element Tensor or a numpy scalar."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    item = getattr(value, "item", None)
    if item is not None:
        try:
            return item()
        except (ValueError, RuntimeError):
            pass
    raise TypeError(f"{where}: can only log numbers and strings, got {type(value).__name__}"
                    + (f" of shape {tuple(value.shape)}" if hasattr(value, "shape") else ""))


class Logger:
    """Base class of the loggers: ``log_metrics(metrics, step)``, ``flush()``, ``close()``."""

    def log_metrics(self, metrics, step=None):
        raise NotImplementedError

    def log_hyperparams(self, params):
        """Record run settings (the file loggers ignore them)."""

    def flush(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _prepare(path):
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    return path


class CSVLogger(Logger):
    """Append metric rows to the CSV file ``path`` (folders are created).

    The first column is ``step_key`` (default "step"; the Trainer's default logger uses
    "epoch"), then one column per metric name in the order they first appear.
    """

    def __init__(self, path, step_key="step"):
        self.path = _prepare(path)
        self.step_key = step_key
        self.fieldnames = self._read_header()

    def _read_header(self):
        if not os.path.exists(self.path) or os.path.getsize(self.path) == 0:
            return []
        with open(self.path, newline="") as f:
            header = next(csv.reader(f), [])
        return header

    def log_metrics(self, metrics, step=None):
        if not isinstance(metrics, dict):
            raise TypeError(f"CSVLogger.log_metrics: metrics must be a dict, got "
                            f"{type(metrics).__name__}")
        row = {self.step_key: "" if step is None else step}
        for k, v in metrics.items():
            if k == self.step_key:
                raise ValueError(f"CSVLogger: metric name {k!r} clashes with the step column; "
                                 f"pass step_key='...' to rename it")
            row[str(k)] = _scalar(v, "CSVLogger")
        new = [k for k in row if k not in self.fieldnames]
        if not self.fieldnames:
            self.fieldnames = list(row)
            with open(self.path, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=self.fieldnames)
                writer.writeheader()
                writer.writerow(row)
        elif new:
            self._rewrite(self.fieldnames + new, row)
        else:
            with open(self.path, "a", newline="") as f:
                csv.DictWriter(f, fieldnames=self.fieldnames).writerow(row)

    def truncate(self, max_step):
        """Drop the rows whose step is above ``max_step`` (atomically); ``max_step=0`` leaves an
        empty file. The Trainer does this to its own default log when a run starts afresh or
        resumes, so the file holds exactly the epochs of the run being continued."""
        if not os.path.exists(self.path) or not self.fieldnames:
            return
        with open(self.path, newline="") as f:
            rows = list(csv.DictReader(f))

        def keep(row):
            try:
                return float(row.get(self.step_key) or "nan") <= max_step
            except ValueError:
                return True
        kept = [r for r in rows if keep(r)]
        if len(kept) == len(rows):
            return
        if kept:
            self._rewrite(self.fieldnames, rows=kept)
        else:
            os.remove(self.path)
            self.fieldnames = []

    def _rewrite(self, fieldnames, row=None, rows=None):
        """Write the whole file again (a wider header, or fewer rows), atomically."""
        if rows is None:
            with open(self.path, newline="") as f:
                rows = list(csv.DictReader(f))
        buf = io.StringIO(newline="")
        writer = csv.DictWriter(buf, fieldnames=fieldnames, restval="")
        writer.writeheader()
        writer.writerows(rows)
        if row is not None:
            writer.writerow(row)
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".csv", dir=folder)
        try:
            with os.fdopen(fd, "w", newline="") as f:
                f.write(buf.getvalue())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        self.fieldnames = fieldnames

    def read(self):
        """The rows logged so far, as dicts of strings (empty string: not logged)."""
        if not os.path.exists(self.path):
            return []
        with open(self.path, newline="") as f:
            return list(csv.DictReader(f))


def _json_value(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class JSONLinesLogger(Logger):
    """Append one JSON object per ``log_metrics`` call to ``path``:
    ``{"<step_key>": step, name: value, ...}``; nan/inf become null."""

    def __init__(self, path, step_key="step"):
        self.path = _prepare(path)
        self.step_key = step_key

    def log_metrics(self, metrics, step=None):
        if not isinstance(metrics, dict):
            raise TypeError(f"JSONLinesLogger.log_metrics: metrics must be a dict, got "
                            f"{type(metrics).__name__}")
        record = {self.step_key: step}
        for k, v in metrics.items():
            record[str(k)] = _json_value(_scalar(v, "JSONLinesLogger"))
        line = json.dumps(record, allow_nan=False)
        with open(self.path, "a") as f:
            f.write(line + "\n")
            f.flush()

    def read(self):
        """The records logged so far, as a list of dicts."""
        if not os.path.exists(self.path):
            return []
        with open(self.path) as f:
            return [json.loads(line) for line in f if line.strip()]
