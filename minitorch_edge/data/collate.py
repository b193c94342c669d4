"""Collation: turning a list of samples into one batch, with PyTorch's rules.

`default_collate` walks the structure of the first sample and builds the same structure with
a batch dimension in front:

    Tensors              -> stacked (N, *shape)            numpy arrays -> tensors, stacked
    Python float         -> float64 tensor (N,)            int -> int64, bool -> bool
    numpy scalars        -> a tensor of their dtype        str / bytes -> kept, as a list
    dict / Mapping       -> the same mapping, collated key by key
    namedtuple           -> the same namedtuple, collated field by field
    tuple                -> a *list* of collated fields (PyTorch's rule, for compatibility)
    list / Sequence      -> the same type, collated position by position

so ``[(img0, 3), (img1, 5)]`` becomes ``[stack([img0, img1]), tensor([3, 5])]``. Samples whose
tensors differ in shape cannot be stacked: the error names the field and the two shapes.
`default_convert` (used when ``batch_size=None``) only turns numpy arrays/scalars into tensors.

To teach `collate` a new type, pass ``collate_fn_map={MyType: fn, **default_collate_fn_map}``.
"""
import collections.abc
import copy
import re

import numpy as np

from ..creation import as_tensor, tensor
from ..tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

_STR_OR_OBJECT = re.compile(r"[SaUO]")
_TYPE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
               "lists; found {}")


def _where(path):
    return "field " + "".join(f"[{p!r}]" for p in path) if path else "the top level"


def _check_same_shape(batch, path):
    shape0 = tuple(batch[0].shape)
    for i, b in enumerate(batch):
        if not isinstance(b, (Tensor, np.ndarray)):
            raise TypeError(f"default_collate: at {_where(path)} sample 0 is a "
                            f"{type(batch[0]).__name__} but sample {i} is a {type(b).__name__}")
        if tuple(b.shape) != shape0:
            raise RuntimeError(
                f"default_collate: cannot stack the {type(batch[0]).__name__}s at "
                f"{_where(path)}: sample 0 has shape {tuple(shape0)} but sample {i} has shape "
                f"{tuple(b.shape)}. Resize or pad the samples to one shape (e.g. with "
                f"transforms.Resize / CenterCrop), or pass a collate_fn that handles variable "
                f"sizes.")


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Stack tensors along a new dim 0 (through autograd when one of them requires grad)."""
    dtype0 = batch[0]._data.dtype
    if any(t._rg for t in batch) or any(t._data.dtype != dtype0 for t in batch):
        from ..ops.join import stack
        return stack(batch, 0)
    return Tensor._make(np.stack([t._data for t in batch]))


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _STR_OR_OBJECT.search(elem.dtype.str) is not None:
        raise TypeError(_TYPE_ERROR.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    arr = np.array(batch)
    if _STR_OR_OBJECT.search(arr.dtype.str) is not None:
        raise TypeError(_TYPE_ERROR.format(arr.dtype))
    return as_tensor(arr)


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(list(batch), dtype="float64")


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(list(batch))          # ints -> int64; all bools -> bool


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}

_STACKING = (collate_tensor_fn, collate_numpy_array_fn)


def _lookup(elem, fn_map):
    fn = fn_map.get(type(elem))
    if fn is None:
        for kind, f in fn_map.items():
            if isinstance(elem, kind):
                return f
    return fn


def _collate(batch, fn_map, path):
    elem = batch[0]
    if fn_map is not None:
        fn = _lookup(elem, fn_map)
        if fn is not None:
            if fn in _STACKING:
                _check_same_shape(batch, path)
            return fn(batch, collate_fn_map=fn_map)
    if isinstance(elem, collections.abc.Mapping):
        for i, d in enumerate(batch):
            if not isinstance(d, collections.abc.Mapping) or any(k not in d for k in elem):
                missing = [k for k in elem if not isinstance(d, collections.abc.Mapping)
                           or k not in d]
                raise RuntimeError(f"default_collate: sample {i} at {_where(path)} lacks the "
                                   f"keys {missing} that sample 0 has")
        values = {k: _collate([d[k] for d in batch], fn_map, path + (k,)) for k in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(values)
                return clone
            return type(elem)(values)
        except TypeError:  # a mapping type that cannot be built from a dict
            return values
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):        # namedtuple
        _check_lengths(batch, path)
        return type(elem)(*(_collate(s, fn_map, path + (f,))
                            for f, s in zip(elem._fields, zip(*batch))))
    if isinstance(elem, collections.abc.Sequence) and not isinstance(elem, (str, bytes)):
        _check_lengths(batch, path)
        fields = [_collate(s, fn_map, path + (i,)) for i, s in enumerate(zip(*batch))]
        if isinstance(elem, tuple):
            return fields                       # PyTorch returns tuples as lists
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, f in enumerate(fields):
                    clone[i] = f
                return clone
            return type(elem)(fields)
        except TypeError:
            return fields
    raise TypeError(_TYPE_ERROR.format(type(elem)) + f" (at {_where(path)})")


def _check_lengths(batch, path):
    n = len(batch[0])
    for i, s in enumerate(batch):
        if len(s) != n:
            raise RuntimeError(f"default_collate: each element in list of batch should be of "
                               f"equal size, but at {_where(path)} sample 0 has {n} elements "
                               f"and sample {i} has {len(s)}")


def collate(batch, *, collate_fn_map=None):
    """Collate `batch` (a list of samples) using `collate_fn_map`: {type or tuple of types:
    fn(batch, *, collate_fn_map)} consulted first, by exact type then by isinstance."""
    if len(batch) == 0:
        raise ValueError("collate: the batch is empty (a list of zero samples)")
    return _collate(list(batch) if not isinstance(batch, list) else batch, collate_fn_map, ())


def default_collate(batch):
    """Collate a list of samples into a batch with PyTorch's rules (see the file header)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Turn numpy arrays and scalars inside `data` into tensors, keeping the structure (the
    collate_fn used when the DataLoader does not batch, ``batch_size=None``)."""
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "bytes_", "string_"):
        if isinstance(data, np.ndarray) and _STR_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        values = {k: default_convert(data[k]) for k in data}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update(values)
                return clone
            return kind(values)
        except TypeError:
            return values
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return kind(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        values = [default_convert(d) for d in data]
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, v in enumerate(values):
                    clone[i] = v
                return clone
            return kind(values)
        except TypeError:
            return values
    return data
