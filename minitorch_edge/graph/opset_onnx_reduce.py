"""Reductions and order ops the ONNX importer needs beyond ReduceMean/ReduceSum/ReduceMax:
ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare,
ArgMax, ArgMin, TopK, CumSum and Hardmax. ONNX (opset 17) semantics; as for the traced
reductions, ``axes`` is an attribute (a list; ONNX 18 makes it an input and the importer moves
a constant one here). With ``axes`` absent or empty every dim is reduced, unless
``noop_with_empty_axes`` is 1: then the input passes through. Reducing an empty set gives the
operation's identity (0 for sums, 1 for products, +inf / -inf for min / max, -inf for the log
sums). They run on the Python engine only (``c_runtime=False``, see opset.py).
"""
import functools

import numpy as np

from .opset import norm_axis, op

python_op = functools.partial(op, c_runtime=False)


def _reduce_axes(attrs, rank, name):
    """The sorted dims to reduce, or None for "none: pass through"."""
    axes = list(attrs.get("axes") or [])
    if not axes:
        return None if attrs.get("noop_with_empty_axes", 0) else list(range(rank))
    dims = sorted(norm_axis(int(a), rank, f"{name} axis") for a in axes)
    if len(set(dims)) != len(dims):
        raise ValueError(f"{name}: axes {axes} name a dim twice")
    return dims


def _reduced_shape(shape, axes, keepdims):
    if axes is None:
        return tuple(shape)
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def _reduction(name, fn, doc):
    """Register ReduceX with y = fn(x, axes tuple) (keepdims applied by fn's numpy call)."""
    def infer(attrs, ins):
        axes = _reduce_axes(attrs, len(ins[0].shape), name)
        return [(_reduced_shape(ins[0].shape, axes, attrs.get("keepdims", 1)), ins[0].dtype)]

    def run(attrs, x):
        axes = _reduce_axes(attrs, x.ndim, name)
        if axes is None:
            return np.array(x, copy=True)
        return np.asarray(fn(x, tuple(axes), bool(attrs.get("keepdims", 1)))).astype(
            x.dtype, copy=False)
    run.__doc__ = doc
    python_op(name, infer)(run)


def _extreme(x, which):
    """+inf (which = "min") or -inf ("max") in x's dtype: the identity of min / max."""
    if x.dtype.kind == "f":
        return np.inf if which == "min" else -np.inf
    info = np.iinfo(x.dtype) if x.dtype.kind in "iu" else None
    if info is None:
        return which == "min"        # bool
    return info.max if which == "min" else info.min


def _log_sum_exp(x, axes, keep):
    x = x if x.dtype.kind == "f" else x.astype(np.float64)
    peak = np.max(x, axis=axes, keepdims=True, initial=-np.inf)
    peak = np.where(np.isfinite(peak), peak, 0)          # all -inf, or an empty set
    with np.errstate(divide="ignore"):
        y = np.log(np.sum(np.exp(x - peak), axis=axes, keepdims=True)) + peak
    return y if keep else np.squeeze(y, axis=axes)


_reduction("ReduceMin", lambda x, a, k: np.min(x, a, keepdims=k, initial=_extreme(x, "min")),
           "y = min of x over `axes` (+inf on an empty set)")
_reduction("ReduceProd", lambda x, a, k: np.prod(x, a, keepdims=k),
           "y = product of x over `axes`")
_reduction("ReduceL1", lambda x, a, k: np.sum(np.abs(x), a, keepdims=k),
           "y = sum |x| over `axes`")
_reduction("ReduceL2", lambda x, a, k: np.sqrt(np.sum(np.square(x.astype(np.float64)), a,
                                                      keepdims=k)),
           "y = sqrt(sum x^2) over `axes`")
_reduction("ReduceSumSquare", lambda x, a, k: np.sum(np.square(x), a, keepdims=k),
           "y = sum x^2 over `axes`")
_reduction("ReduceLogSum", lambda x, a, k: _log(np.sum(x, a, keepdims=k)),
           "y = ln(sum x) over `axes`")
_reduction("ReduceLogSumExp", _log_sum_exp,
           "y = ln(sum e^x) over `axes`, computed as m + ln(sum e^(x - m)) with m the max")


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


# ---- ArgMax, ArgMin ---------------------------------------------------------------------------
def _arg_shape(name):
    def infer(attrs, ins):
        shape = ins[0].shape
        axis = norm_axis(attrs.get("axis", 0), len(shape), f"{name} axis")
        if shape[axis] == 0:
            raise ValueError(f"{name}: dim {axis} of {list(shape)} is empty")
        return [(_reduced_shape(shape, [axis], attrs.get("keepdims", 1)), "int64")]
    return infer


def _arg(fn, attrs, x):
    axis = attrs.get("axis", 0) % x.ndim
    if attrs.get("select_last_index", 0):
        idx = x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis)
    else:
        idx = fn(x, axis=axis)
    idx = idx.astype(np.int64)
    return np.expand_dims(idx, axis) if attrs.get("keepdims", 1) else idx


@python_op("ArgMax", _arg_shape("ArgMax"))
def arg_max(attrs, x):
    """y = the index of the max along `axis` (default 0), int64; the first one of equal maxima,
    the last with select_last_index=1; keepdims (default 1) keeps the dim as size 1."""
    return _arg(np.argmax, attrs, x)


@python_op("ArgMin", _arg_shape("ArgMin"))
def arg_min(attrs, x):
    """y = the index of the min along `axis` (as ArgMax)."""
    return _arg(np.argmin, attrs, x)


# ---- TopK -------------------------------------------------------------------------------------
def _topk_k(inp):
    if inp is None or inp.data is None:
        raise ValueError("TopK: K must be a constant (shapes are static in this graph)")
    k = np.asarray(inp.data).reshape(-1)
    if k.size != 1 or k.dtype.kind not in "iu":
        raise ValueError(f"TopK: K must be one integer, got {k.dtype}{list(k.shape)}")
    return int(k[0])


def _topk_shape(attrs, ins):
    shape = list(ins[0].shape)
    axis = norm_axis(attrs.get("axis", -1), len(shape), "TopK axis")
    k = _topk_k(ins[1])
    if not 0 <= k <= shape[axis]:
        raise ValueError(f"TopK: K={k} is out of range for dim {axis} of {shape}")
    shape[axis] = k
    return [(tuple(shape), ins[0].dtype), (tuple(shape), "int64")]


@python_op("TopK", _topk_shape)
def top_k(attrs, x, k):
    """(values, indices) = the K largest (largest=1, default) or smallest elements along `axis`
    (default -1), sorted; equal values in the order of their indices (indices int64)."""
    axis, k = attrs.get("axis", -1) % x.ndim, int(np.asarray(k).reshape(-1)[0])
    if attrs.get("largest", 1):
        # descending with ties by ascending index: a stable ascending sort of the reversed axis,
        # read backwards
        n = x.shape[axis]
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis), idx


# ---- CumSum, Hardmax --------------------------------------------------------------------------
def _cumsum_axis(inp, rank):
    if inp is None or inp.data is None:
        raise ValueError("CumSum: axis must be a constant")
    a = np.asarray(inp.data).reshape(-1)
    if a.size != 1:
        raise ValueError(f"CumSum: axis must be one integer, got shape {list(a.shape)}")
    return norm_axis(int(a[0]), rank, "CumSum axis")


class _Data:
    def __init__(self, data):
        self.data = data


@python_op("CumSum", lambda attrs, ins: (_cumsum_axis(ins[1], len(ins[0].shape)),
                                         [(ins[0].shape, ins[0].dtype)])[1])
def cum_sum(attrs, x, axis):
    """y[..., i, ...] = sum of x[..., j, ...] along `axis` (a constant input) for j <= i; j < i
    with exclusive=1; j >= i (j > i) with reverse=1."""
    axis = _cumsum_axis(_Data(axis), x.ndim)
    rev, excl = attrs.get("reverse", 0), attrs.get("exclusive", 0)
    v = np.flip(x, axis) if rev else x
    y = np.cumsum(v, axis=axis, dtype=x.dtype)
    if excl:
        y = np.concatenate([np.zeros_like(np.take(y, [0], axis)),
                            np.take(y, np.arange(x.shape[axis] - 1), axis)], axis)
    return np.ascontiguousarray(np.flip(y, axis) if rev else y)


def _hardmax_shape(attrs, ins):
    norm_axis(attrs.get("axis", -1), len(ins[0].shape), "Hardmax axis")
    return [(ins[0].shape, ins[0].dtype)]


@python_op("Hardmax", _hardmax_shape)
def hardmax(attrs, x):
    """y = 1 at the first max along `axis` (default -1), 0 elsewhere"""
    axis = attrs.get("axis", -1) % x.ndim
    y = np.zeros_like(x)
    if x.shape[axis]:
        np.put_along_axis(y, np.expand_dims(np.argmax(x, axis), axis), 1, axis)
    return y
