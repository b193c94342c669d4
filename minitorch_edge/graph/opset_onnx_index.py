"""Indexing ops the ONNX importer needs beyond Gather and Slice: GatherElements,
ScatterElements, GatherND, ScatterND, OneHot, Trilu, Einsum, Compress and ReverseSequence. ONNX (opset 17)
semantics; a negative index counts from the end of its dim. Inputs that decide an output's
shape (OneHot's depth, Compress's condition) must be constants, since shapes are static. They
run on the Python engine only (``c_runtime=False``, see opset.py).
"""
import functools
import string

import numpy as np

from .opset import norm_axis, op

python_op = functools.partial(op, c_runtime=False)

REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _int_input(name, what, inp):
    if np.dtype(inp.dtype).kind not in "iu":
        raise ValueError(f"{name}: {what} must be an integer tensor, got {inp.dtype}")


def _wrapped(indices, size, name):
    """indices with negative ones counted from the end; IndexError when out of range."""
    idx = np.asarray(indices).astype(np.int64)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise IndexError(f"{name}: an index is out of range [-{size}, {size - 1}]")
    return np.where(idx < 0, idx + size, idx)


def _reduction(attrs, name):
    how = attrs.get("reduction", "none")
    if how != "none" and how not in REDUCTIONS:
        raise ValueError(f"{name}: reduction must be none, {', '.join(REDUCTIONS)}; got {how!r}")
    return how


# ---- GatherElements, ScatterElements ----------------------------------------------------------
def _elements_shape(name, attrs, data, indices, updates=None):
    rank = len(data.shape)
    axis = norm_axis(attrs.get("axis", 0), rank, f"{name} axis")
    _int_input(name, "indices", indices)
    if len(indices.shape) != rank:
        raise ValueError(f"{name}: indices {list(indices.shape)} must have data's rank {rank} "
                         f"(data {list(data.shape)})")
    if any(i > d for k, (i, d) in enumerate(zip(indices.shape, data.shape)) if k != axis):
        raise ValueError(f"{name}: indices {list(indices.shape)} is larger than data "
                         f"{list(data.shape)} outside axis {axis}")
    if updates is not None and updates.shape != indices.shape:
        raise ValueError(f"{name}: updates {list(updates.shape)} must have indices' shape "
                         f"{list(indices.shape)}")
    return axis


@python_op("GatherElements", lambda attrs, ins: (
    _elements_shape("GatherElements", attrs, ins[0], ins[1]), [(ins[1].shape, ins[0].dtype)])[1])
def gather_elements(attrs, data, indices):
    """y[i][j][k] = data[indices[i][j][k]][j][k] for axis 0 (the index replaces the `axis`
    coordinate; y has indices' shape)."""
    axis = attrs.get("axis", 0) % data.ndim
    return data[_full_index(indices, axis, _wrapped(indices, data.shape[axis],
                                                    "GatherElements"))]


def _full_index(indices, axis, idx):
    """The coordinate arrays of every element of `indices`, with `axis`'s replaced by idx."""
    coords = list(np.indices(indices.shape, sparse=True))
    coords[axis] = idx
    return tuple(coords)


@python_op("ScatterElements", lambda attrs, ins: (
    _elements_shape("ScatterElements", attrs, ins[0], ins[1], ins[2]),
    _reduction(attrs, "ScatterElements"), [(ins[0].shape, ins[0].dtype)])[2])
def scatter_elements(attrs, data, indices, updates):
    """y = data, then for every position p of indices: y[p with its `axis` coordinate set to
    indices[p]] = updates[p], or combined with it by `reduction` (add, mul, max, min)."""
    axis = attrs.get("axis", 0) % data.ndim
    y = np.array(data, copy=True)
    where = _full_index(indices, axis, _wrapped(indices, data.shape[axis], "ScatterElements"))
    how = _reduction(attrs, "ScatterElements")
    if how == "none":
        y[where] = updates
    else:
        REDUCTIONS[how].at(y, where, updates.astype(y.dtype))
    return y


# ---- GatherND, ScatterND ----------------------------------------------------------------------
def _nd_shape(name, data, indices, batch_dims=0):
    _int_input(name, "indices", indices)
    d, i = tuple(data.shape), tuple(indices.shape)
    if not 0 <= batch_dims < min(len(d), len(i)):
        raise ValueError(f"{name}: batch_dims={batch_dims} must be below the ranks of data "
                         f"{list(d)} and indices {list(i)}")
    k = i[-1]
    if d[:batch_dims] != i[:batch_dims] or k > len(d) - batch_dims:
        raise ValueError(f"{name}: indices {list(i)} index data {list(d)} with {k} coordinates "
                         f"after {batch_dims} batch dims, which does not fit")
    return d[:batch_dims] + i[batch_dims:-1] + d[batch_dims + k:]


@python_op("GatherND", lambda attrs, ins: [(_nd_shape("GatherND", ins[0], ins[1],
                                                      attrs.get("batch_dims", 0)), ins[0].dtype)])
def gather_nd(attrs, data, indices):
    """y[b..., i...] = data[b..., indices[b..., i..., :]] where the last dim of indices holds
    k coordinates into the dims after the `batch_dims` leading ones (shared by both)."""
    b = attrs.get("batch_dims", 0)
    k = indices.shape[-1]
    out_shape = _nd_shape("GatherND", data, indices, b)
    batch = int(np.prod(data.shape[:b], dtype=np.int64))
    flat_data = data.reshape((batch,) + data.shape[b:])
    flat_idx = indices.reshape((batch,) + indices.shape[b:])
    parts = []
    for n in range(batch):
        idx = flat_idx[n]
        coords = tuple(_wrapped(idx[..., j], flat_data.shape[1 + j], "GatherND")
                       for j in range(k))
        parts.append(flat_data[n][coords])
    return np.stack(parts).reshape(out_shape) if parts else np.zeros(out_shape, data.dtype)


def _scatter_nd_shape(attrs, ins):
    data, indices, updates = ins
    _reduction(attrs, "ScatterND")
    want = _nd_shape("ScatterND", data, indices)
    if tuple(updates.shape) != want:
        raise ValueError(f"ScatterND: updates must have shape {list(want)} for data "
                         f"{list(data.shape)} and indices {list(indices.shape)}, got "
                         f"{list(updates.shape)}")
    return [(data.shape, data.dtype)]


@python_op("ScatterND", _scatter_nd_shape)
def scatter_nd(attrs, data, indices, updates):
    """y = data, then y[indices[i..., :]] = updates[i...] for every i (or combined with it by
    `reduction`: add, mul, max, min)."""
    y = np.array(data, copy=True)
    k = indices.shape[-1]
    where = tuple(_wrapped(indices[..., j], data.shape[j], "ScatterND") for j in range(k))
    how = _reduction(attrs, "ScatterND")
    if how == "none":
        y[where] = updates
    else:
        REDUCTIONS[how].at(y, where, updates.astype(y.dtype))
    return y


# ---- OneHot, Trilu, Compress ------------------------------------------------------------------
def _scalar_const(inp, name, what):
    if inp is None or inp.data is None:
        raise ValueError(f"{name}: {what} must be a constant (shapes are static in this graph)")
    v = np.asarray(inp.data).reshape(-1)
    if v.size != 1:
        raise ValueError(f"{name}: {what} must be one number, got shape {list(inp.shape)}")
    return v[0].item()


def _one_hot_shape(attrs, ins):
    depth = int(_scalar_const(ins[1], "OneHot", "depth"))
    if depth < 1:
        raise ValueError(f"OneHot: depth must be positive, got {depth}")
    if tuple(ins[2].shape) != (2,):
        raise ValueError(f"OneHot: values must be [off, on], got shape {list(ins[2].shape)}")
    shape = list(ins[0].shape)
    axis = norm_axis(attrs.get("axis", -1), len(shape) + 1, "OneHot axis")
    return [(tuple(shape[:axis] + [depth] + shape[axis:]), ins[2].dtype)]


@python_op("OneHot", _one_hot_shape)
def one_hot(attrs, indices, depth, values):
    """y = values[1] where the new dim `axis` (default -1) equals indices (negative ones count
    from depth), values[0] elsewhere; indices outside [-depth, depth) give all values[0]."""
    depth = int(np.asarray(depth).reshape(-1)[0])
    axis = attrs.get("axis", -1) % (indices.ndim + 1)
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    classes = np.arange(depth).reshape((depth,) + (1,) * (indices.ndim - axis))
    hot = np.expand_dims(idx, axis) == classes
    return np.where(hot, values[1], values[0]).astype(values.dtype)


def _trilu_shape(attrs, ins):
    if len(ins[0].shape) < 2:
        raise ValueError(f"Trilu takes a tensor of rank >= 2, got {list(ins[0].shape)}")
    if len(ins) > 1 and ins[1] is not None:
        _scalar_const(ins[1], "Trilu", "k")
    return [(ins[0].shape, ins[0].dtype)]


@python_op("Trilu", _trilu_shape)
def trilu(attrs, x, k=None):
    """y = x on and above the k-th diagonal (upper=1, default) or on and below it (upper=0),
    0 elsewhere, over the last two dims; k (optional 0-d input) defaults to 0"""
    k = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
    return np.triu(x, k) if attrs.get("upper", 1) else np.tril(x, k)


def _compress_shape(attrs, ins):
    cond = ins[1]
    if cond is None or cond.data is None:
        raise ValueError("Compress: condition must be a constant (its count of true decides "
                         "the output's shape)")
    if len(cond.shape) != 1:
        raise ValueError(f"Compress: condition must be 1-D, got {list(cond.shape)}")
    kept = int(np.count_nonzero(cond.data))
    axis = attrs.get("axis")
    if axis is None:
        if cond.shape[0] > int(np.prod(ins[0].shape)):
            raise ValueError(f"Compress: condition is longer than input {list(ins[0].shape)}")
        return [((kept,), ins[0].dtype)]
    shape = list(ins[0].shape)
    axis = norm_axis(axis, len(shape), "Compress axis")
    if cond.shape[0] > shape[axis]:
        raise ValueError(f"Compress: condition ({cond.shape[0]}) is longer than dim {axis} of "
                         f"{shape}")
    shape[axis] = kept
    return [(tuple(shape), ins[0].dtype)]


@python_op("Compress", _compress_shape)
def compress(attrs, x, condition):
    """y = the slices of x along `axis` where condition is true (x flattened when no axis)"""
    axis = attrs.get("axis")
    return np.compress(condition.astype(bool), x, axis=axis)


# ---- Einsum -----------------------------------------------------------------------------------
def _einsum_terms(equation, n):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n:
        raise ValueError(f"Einsum: equation {equation!r} has {len(terms)} operands, given {n}")
    letters = set(string.ascii_letters)
    for t in terms + ([rhs] if arrow else []):
        if set(t.replace("...", "", 1)) - letters:
            raise ValueError(f"Einsum: bad term {t!r} in {equation!r}")
    if not arrow:
        once = sorted(c for c in set(lhs.replace("...", "")) if c in letters
                      and lhs.count(c) == 1)
        rhs = ("..." if "..." in lhs else "") + "".join(once)
    return terms, rhs


def _einsum_shape(attrs, ins):
    terms, rhs = _einsum_terms(attrs["equation"], len(ins))
    sizes, ellipsis = {}, []
    for t, i in zip(terms, ins):
        shape = list(i.shape)
        head, dots, tail = t.partition("...")
        named = len(head) + len(tail)
        if (dots and named > len(shape)) or (not dots and named != len(shape)):
            raise ValueError(f"Einsum: term {t!r} does not fit operand {shape}")
        span = len(shape) - named
        ellipsis.append(tuple(shape[len(head):len(head) + span]) if dots else ())
        for c, d in zip(head + tail, shape[:len(head)] + shape[len(head) + span:]):
            if sizes.setdefault(c, d) != d:
                raise ValueError(f"Einsum: label {c!r} has sizes {sizes[c]} and {d} in "
                                 f"{attrs['equation']!r} for {[list(j.shape) for j in ins]}")
    dots_shape = tuple(np.broadcast_shapes(*ellipsis)) if ellipsis else ()
    out = []
    head, dots, tail = rhs.partition("...")
    for c in head:
        out.append(sizes[c])
    if dots:
        out += list(dots_shape)
    for c in tail:
        if c not in sizes:
            raise ValueError(f"Einsum: output label {c!r} is not in any operand")
        out.append(sizes[c])
    dtype = np.result_type(*[np.dtype(i.dtype) for i in ins])
    return [(tuple(out), dtype)]


@python_op("Einsum", _einsum_shape)
def einsum(attrs, *xs):
    """y = the Einstein summation `equation` of the inputs (numpy's einsum; implicit output
    when the equation has no "->")"""
    return np.asarray(np.einsum(attrs["equation"].replace(" ", ""), *xs))


# ---- ReverseSequence --------------------------------------------------------------------------
def _reverse_sequence_shape(attrs, ins):
    x, lens = ins
    rank = len(x.shape)
    batch = norm_axis(attrs.get("batch_axis", 1), rank, "ReverseSequence batch_axis")
    time = norm_axis(attrs.get("time_axis", 0), rank, "ReverseSequence time_axis")
    if rank < 2 or batch == time:
        raise ValueError(f"ReverseSequence: batch_axis {batch} and time_axis {time} must be two "
                         f"different dims of input {list(x.shape)}")
    _int_input("ReverseSequence", "sequence_lens", lens)
    if tuple(lens.shape) != (x.shape[batch],):
        raise ValueError(f"ReverseSequence: sequence_lens must have shape [{x.shape[batch]}], "
                         f"got {list(lens.shape)}")
    return [(x.shape, x.dtype)]


@python_op("ReverseSequence", _reverse_sequence_shape)
def reverse_sequence(attrs, x, lens):
    """y = x with the first sequence_lens[b] steps along `time_axis` (default 0) reversed for
    each b along `batch_axis` (default 1); the later steps stay"""
    batch, time = attrs.get("batch_axis", 1) % x.ndim, attrs.get("time_axis", 0) % x.ndim
    y = np.array(x, copy=True)
    for b, n in enumerate(np.clip(lens.astype(np.int64), 0, x.shape[time])):
        src = [slice(None)] * x.ndim
        src[batch], src[time] = b, slice(int(n) - 1, None, -1) if n else slice(0, 0)
        dst = list(src)
        dst[time] = slice(0, int(n))
        y[tuple(dst)] = x[tuple(src)]
    return y
