"""Printing tensors the way PyTorch does: ``tensor([[1.0000, 2.5000], ...], requires_grad=True)``."""
import numpy as np

from . import dtypes as _dt

_OPTIONS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None):
    for k, v in dict(precision=precision, threshold=threshold, edgeitems=edgeitems,
                     linewidth=linewidth).items():
        if v is not None:
            _OPTIONS[k] = v


def _float_formatter(values):
    """PyTorch's rule: integers print as "3.", otherwise fixed with 4 decimals, and scientific
    when the nonzero magnitudes span more than 1000x, exceed 1e8, or (non-integers) go below
    1e-4."""
    p = _OPTIONS["precision"]
    finite = values[np.isfinite(values)].astype(np.float64)
    nonzero = np.abs(finite[finite != 0])
    if nonzero.size == 0:
        lo = hi = 1.0
    else:
        lo, hi = nonzero.min(), nonzero.max()
    int_mode = bool(np.all(finite == np.round(finite)))
    if int_mode:
        sci = hi / lo > 1000.0 or hi > 1.0e8
    else:
        sci = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
    if sci:
        def fmt(v):
            return f"{v:.{p}e}" if np.isfinite(v) else str(v)
    elif int_mode:
        def fmt(v):
            return f"{v:.0f}." if np.isfinite(v) else str(v)
    else:
        def fmt(v):
            return f"{v:.{p}f}" if np.isfinite(v) else str(v)
    return fmt


def format_tensor(t):
    data = t._data
    prefix = "tensor("
    suffix = []
    if data.size == 0 and data.ndim != 1:
        body = "[]"
        suffix.append(f"size={tuple(data.shape)}")
    else:
        shown = data
        if data.dtype.kind == "f":
            sample = data if data.size <= _OPTIONS["threshold"] else _edges(data)
            fmt = _float_formatter(np.asarray(sample).ravel())
            width = max((len(fmt(v)) for v in np.asarray(sample).ravel()), default=1)
            formatter = {"float_kind": lambda v: fmt(v).rjust(width)}
        elif data.dtype.kind == "b":
            width = 5 if (not data.all()) and data.any() else 0
            formatter = {"bool": lambda v: ("True" if v else "False").rjust(width)}
        else:
            formatter = None
        body = np.array2string(shown, separator=", ", prefix=prefix, formatter=formatter,
                               threshold=_OPTIONS["threshold"], edgeitems=_OPTIONS["edgeitems"],
                               max_line_width=_OPTIONS["linewidth"])
    dt = _dt._FROM_NP[data.dtype]
    if dt not in (_dt.get_default_dtype(), _dt.int64, _dt.bool_):
        suffix.append(f"dtype={dt!r}")
    if t._fn is not None:
        suffix.append(f"grad_fn=<{t._fn.name()}>")
    elif t._rg:
        suffix.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffix) + ")"


def _edges(data):
    e = _OPTIONS["edgeitems"]
    for axis in range(data.ndim):
        if data.shape[axis] > 2 * e:
            data = np.concatenate([np.take(data, range(e), axis),
                                   np.take(data, range(data.shape[axis] - e,
                                                       data.shape[axis]), axis)], axis)
    return data
