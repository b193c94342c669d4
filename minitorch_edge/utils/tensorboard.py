"""TensorBoard logging: ``SummaryWriter`` with ``torch.utils.tensorboard``'s methods, on
tensorboardX.

TensorBoard reads *event files*: a log of records (a scalar, a histogram, an image, ...), each
with a tag, a step and a wall time, written as protocol buffers. tensorboardX knows how to
write them; this wrapper only turns our Tensors into numpy arrays and Python numbers before
handing them over, so the calls read as in PyTorch::

    from minitorch_edge.utils.tensorboard import SummaryWriter
    with SummaryWriter("runs/exp1") as w:
        for step in range(100):
            w.add_scalar("loss/train", loss, step)
        w.add_histogram("fc.weight", model.fc.weight, step)
        w.add_image("sample", image)                 # CHW, float in [0, 1] or uint8
        w.add_graph(model, x)                        # the traced graph, for the Graphs tab

and ``tensorboard --logdir runs`` shows them. tensorboardX is an optional extra
(``pip install "minitorch-edge[tensorboard]"``), imported when a writer is created.
(tensorboardX itself imports torch when torch happens to be installed; minitorch_edge does not
need it.)

``TensorBoardLogger(log_dir)`` is the same writer behind the Trainer's logger protocol
(``Trainer(loggers=[TensorBoardLogger("runs/exp1")])``): each epoch's metrics become scalars at
step = epoch.
"""
import numpy as np

__all__ = ["SummaryWriter", "TensorBoardLogger"]


def _import_tensorboardx():
    try:
        import tensorboardX
    except ImportError:
        raise ImportError('SummaryWriter needs tensorboardX, an optional extra: '
                          'pip install "minitorch-edge[tensorboard]"') from None
    return tensorboardX


def _array(x, where):
    """A numpy array from a Tensor (its own array, no copy), an ndarray or a nested list."""
    data = getattr(x, "_data", None)
    if data is not None:
        return data
    if isinstance(x, np.ndarray):
        return x
    try:
        return np.asarray(x)
    except Exception:
        raise TypeError(f"SummaryWriter.{where}: expected a Tensor or array, got "
                        f"{type(x).__name__}") from None


def _scalar(x, where, tag):
    if isinstance(x, (bool, int, float)):
        return float(x)
    arr = _array(x, where)
    if arr.size != 1:
        raise ValueError(f"SummaryWriter.{where}({tag!r}): expected a single number, got a value "
                         f"of shape {tuple(arr.shape)}")
    return float(arr.reshape(()))


def _plain(value):
    """hparams values: bool/int/float/str as they are; Tensors and numpy scalars to numbers."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    arr = _array(value, "add_hparams")
    if arr.size == 1:
        return arr.reshape(()).item()
    return str(value)


class SummaryWriter:
    """Write TensorBoard event files into ``log_dir`` (default
    ``runs/<date>_<time>_<host><comment>``). ``flush_secs``: how often pending records are
    flushed to disk; ``close()`` (or leaving a ``with`` block) flushes everything."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        tbx = _import_tensorboardx()
        self._writer = tbx.SummaryWriter(logdir=None if log_dir is None else str(log_dir),
                                         comment=comment, purge_step=purge_step,
                                         max_queue=max_queue, flush_secs=flush_secs,
                                         filename_suffix=filename_suffix)
        self.log_dir = self._writer.logdir

    def get_logdir(self):
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None):
        """One number (a float, or a one-element Tensor) under ``tag`` at ``global_step``."""
        self._writer.add_scalar(tag, _scalar(scalar_value, "add_scalar", tag), global_step,
                                walltime=walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several numbers on one chart: ``{"train": 0.3, "val": 0.4}`` under ``main_tag``.
        Each name becomes a sub-run in ``<log_dir>/<main_tag>/<name>`` (tensorboardX's layout;
        PyTorch names the folder ``<main_tag>_<name>``), holding scalars tagged ``main_tag``."""
        values = {k: _scalar(v, "add_scalars", f"{main_tag}/{k}")
                  for k, v in tag_scalar_dict.items()}
        self._writer.add_scalars(main_tag, values, global_step, walltime=walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """The distribution of ``values`` (weights, activations, gradients)."""
        arr = np.asarray(_array(values, "add_histogram"), dtype=np.float64)
        if arr.size == 0:
            raise ValueError(f"SummaryWriter.add_histogram({tag!r}): values are empty")
        self._writer.add_histogram(tag, arr, global_step, bins=bins, walltime=walltime,
                                   max_bins=max_bins)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """One image: float values in [0, 1] or uint8 in [0, 255], laid out as ``dataformats``
        ("CHW" by default, "HWC" or "HW")."""
        arr = _array(img_tensor, "add_image")
        if arr.ndim != len(dataformats):
            raise ValueError(f"SummaryWriter.add_image({tag!r}): image of shape "
                             f"{tuple(arr.shape)} does not match dataformats={dataformats!r}")
        self._writer.add_image(tag, np.ascontiguousarray(arr), global_step, walltime=walltime,
                               dataformats=dataformats)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images shown as a grid (``dataformats`` "NCHW" or "NHWC")."""
        arr = _array(img_tensor, "add_images")
        if arr.ndim != len(dataformats):
            raise ValueError(f"SummaryWriter.add_images({tag!r}): images of shape "
                             f"{tuple(arr.shape)} do not match dataformats={dataformats!r}")
        self._writer.add_images(tag, np.ascontiguousarray(arr), global_step, walltime=walltime,
                                dataformats=dataformats)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure, rendered to an image."""
        self._writer.add_figure(tag, figure, global_step, close=close, walltime=walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Text (markdown) under ``tag``."""
        self._writer.add_text(tag, str(text_string), global_step, walltime=walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """A run's hyperparameters and final metrics for TensorBoard's HParams tab (written to a
        sub-run ``run_name``, by default the current time, as PyTorch does)."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("SummaryWriter.add_hparams: hparam_dict and metric_dict must be dicts")
        hparams = {k: _plain(v) for k, v in hparam_dict.items()}
        metrics = {k: _scalar(v, "add_hparams", k) for k, v in metric_dict.items()}
        self._writer.add_hparams(hparams, metrics, name=run_name, global_step=global_step)

    def add_graph(self, model, input_to_model=None, verbose=False):
        """The computation graph for TensorBoard's Graphs dashboard: `model` is a Module,
        traced on `input_to_model` (a Tensor, an array, or a tuple of them) with graph.trace,
        or an already built Graph (float, optimised, or int8 from quant.quantize; then
        `input_to_model` may be left out). Nodes are scoped by module path, carry their op,
        output shapes and dtype; constants appear by name and shape (utils/tensorboard_graph.py).
        `verbose`: also print the graph's listing."""
        from ..graph import Graph
        if isinstance(model, Graph):
            graph = model.check()
            if input_to_model is not None:
                _check_graph_inputs(graph, input_to_model)
        elif callable(model) and hasattr(model, "named_modules"):
            if input_to_model is None:
                raise ValueError(f"SummaryWriter.add_graph: tracing a {type(model).__name__} "
                                 f"needs input_to_model (an example input Tensor or a tuple "
                                 f"of them)")
            from ..graph import trace
            inputs = input_to_model if isinstance(input_to_model, tuple) else (input_to_model,)
            graph = trace(model, *inputs)
        else:
            raise TypeError(f"SummaryWriter.add_graph: expected a Module or a graph.Graph, got "
                            f"{type(model).__name__}")
        if verbose:
            print(graph)
        from tensorboardX.proto import event_pb2

        from .tensorboard_graph import graph_def_bytes
        event = event_pb2.Event(graph_def=graph_def_bytes(graph))
        self._writer._get_file_writer().add_event(event)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_graph_inputs(graph, input_to_model):
    """A Graph's example inputs, when given, must have its inputs' shapes."""
    given = input_to_model if isinstance(input_to_model, (tuple, list)) else (input_to_model,)
    want = [graph.values[name].shape for name in graph.inputs]
    got = [tuple(_array(x, "add_graph").shape) for x in given]
    if got != want:
        raise ValueError(f"SummaryWriter.add_graph: the graph {graph.name!r} takes inputs of "
                         f"shapes {want}, input_to_model has {got}; leave input_to_model out "
                         f"for a built Graph")


class TensorBoardLogger:
    """The Trainer's logger protocol over a SummaryWriter: ``log_metrics(metrics, step)``
    writes each number as a scalar (tag = its name, prefixed with ``prefix``). The writer is
    opened on first use and re-opened after ``close()`` (the Trainer closes loggers when fit
    ends), appending new event files to the same folder."""

    def __init__(self, log_dir, prefix="", **writer_kwargs):
        _import_tensorboardx()                       # fail early when the extra is missing
        self.log_dir = str(log_dir)
        self.prefix = prefix
        self._kwargs = writer_kwargs
        self._writer = None

    @property
    def writer(self):
        if self._writer is None:
            self._writer = SummaryWriter(self.log_dir, **self._kwargs)
        return self._writer

    def log_metrics(self, metrics, step=None):
        for name, value in metrics.items():
            try:
                number = _scalar(value, "add_scalar", name)
            except (TypeError, ValueError):
                continue                               # not a number: nothing to chart
            self.writer.add_scalar(self.prefix + str(name), number, step)

    def log_hyperparams(self, params, metrics=None):
        self.writer.add_hparams(dict(params), dict(metrics or {}))

    def flush(self):
        if self._writer is not None:
            self._writer.flush()

    def close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
