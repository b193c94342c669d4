"""The structure skeleton of a saved file: a nested Python object (dicts, lists, tuples,
Tensors, arrays, scalars) as a JSON tree plus the named arrays it refers to, and back.

``flatten`` walks an object into ``(skeleton, [(name, code, array), ...])``; ``check_structure``
validates a file's skeleton against its tensors before anything is allocated; ``decode``
rebuilds the object, with ``make_leaf`` turning each named array into a Tensor, Parameter,
array or numpy scalar. The node kinds are listed in serialization.py's module docstring.
"""
import math
from collections import OrderedDict

import numpy as np

from ..tensor import Tensor
from ._format import (_CODES, _FLOAT_CODES, _STRUCTURE_KEY, _TENSOR_CODES, _VERSION,
                      _VERSION_KEY, ModelFormatError, _q, _short, _strict_json, code_of)

__all__ = ["flatten", "check_structure", "make_leaf", "decode"]


def flatten(obj):
    """(skeleton, [(name, code, array), ...]): the JSON skeleton and the arrays it refers to."""
    from ..nn.parameter import Parameter
    taken = {"__metadata__"}
    arrays = []
    open_containers = set()

    def leaf(kind, array, parts, where):
        code = code_of(array.dtype)
        allowed = _TENSOR_CODES if kind == "tensor" else _CODES
        if code not in allowed:
            raise TypeError(f"save: {where} is a {kind} of dtype {array.dtype}, which the format "
                            f"cannot hold; convert it to one of bool, uint8, int8, int16, int32, "
                            f"int64, float16, bfloat16, float32, float64")
        base = ".".join(parts) if parts else kind
        base = base.encode("utf-8", "backslashreplace").decode("utf-8")
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}#{k}"
        taken.add(name)
        arrays.append((name, code, array))
        return name

    def walk(x, parts, where):
        t = type(x)
        if x is None or t is bool or t is int or t is str:
            return x
        if t is float:
            return x if math.isfinite(x) else {"float": repr(x)}
        if isinstance(x, Tensor):
            node = {"tensor": leaf("tensor", x._data, parts, where)}
            if x.requires_grad:
                node["requires_grad"] = True
            if isinstance(x, Parameter):
                node["parameter"] = True
            return node
        if t is np.ndarray:
            return {"ndarray": leaf("ndarray", x, parts, where)}
        if isinstance(x, np.generic):
            return {"numpy_scalar": leaf("numpy scalar", np.asarray(x), parts, where)}
        if t in (dict, OrderedDict, list, tuple):
            if id(x) in open_containers:
                raise ValueError(f"save: {where} contains itself; the format holds trees only")
            open_containers.add(id(x))
            if t in (list, tuple):
                items = [walk(v, parts + [str(i)], f"{where}[{i}]") for i, v in enumerate(x)]
                node = items if t is list else {"tuple": items}
            else:
                pairs = []
                for key, v in x.items():
                    if key is not None and type(key) not in (str, int, bool, float):
                        raise TypeError(f"save: {where} has a key of type {type(key).__name__} "
                                        f"({key!r}); keys must be str, int, float, bool or None")
                    pairs.append([walk(key, [], where), walk(v, parts + [str(key)],
                                                             f"{where}[{key!r}]")])
                node = {"dict" if t is dict else "ordered_dict": pairs}
            open_containers.discard(id(x))
            return node
        raise TypeError(f"save: {where} is a {t.__name__}, which the format cannot hold; it holds "
                        f"Tensors, numpy arrays, dict/OrderedDict/list/tuple, int, float, str, "
                        f"bool and None (convert it, e.g. to a dict or a Tensor)")

    return walk(obj, [], "obj"), arrays


def check_structure(metadata, entries):
    """The parsed skeleton after a dry-run decode (or None for a plain safetensors file)."""
    if _STRUCTURE_KEY not in metadata:
        for name, code, *_ in entries:
            check_leaf("tensor", code, [], name)
        return None
    version = metadata.get(_VERSION_KEY)
    if version != _VERSION:
        raise ModelFormatError(f"{_VERSION_KEY} is {version!r}; this minitorch_edge reads "
                               f"version {_VERSION!r} (written by a newer version?)")
    structure = _strict_json(metadata[_STRUCTURE_KEY], f"__metadata__[{_q(_STRUCTURE_KEY)}]")
    codes = {e[0]: (e[1], e[2]) for e in entries}
    used = set()

    def check(kind, node, where):
        name = node[kind]
        if not isinstance(name, str) or name not in codes:
            shown = _q(name) if isinstance(name, str) else repr(name)
            raise ModelFormatError(f"structure at {where} refers to tensor {shown}, which is not "
                                   f"in the file")
        if name in used:
            raise ModelFormatError(f"structure refers to tensor {_q(name)} twice")
        used.add(name)
        check_leaf(kind, *codes[name], name)
        if kind == "tensor" and node.get("requires_grad") and codes[name][0] not in _FLOAT_CODES:
            raise ModelFormatError(f"tensor {_q(name)}: requires_grad on a {codes[name][0]} "
                                   f"tensor (only floating-point tensors can require grad)")

    try:
        decode(structure, check, "obj")
    except RecursionError:
        raise ModelFormatError("structure is nested too deeply") from None
    missing = sorted(set(codes) - used)
    if missing:
        raise ModelFormatError(f"tensor {_q(missing[0])} is in the file but not in the structure")
    return structure


def check_leaf(kind, code, shape, name):
    if kind == "tensor" and code not in _TENSOR_CODES:
        raise ModelFormatError(f"tensor {_q(name)}: dtype {code} has no minitorch_edge Tensor "
                               f"type; Tensors hold {', '.join(_TENSOR_CODES)}")
    if kind == "numpy_scalar" and shape:
        raise ModelFormatError(f"tensor {_q(name)}: a numpy scalar must have shape [], not "
                               f"{_short(shape)}")


def make_leaf(arrays):
    from ..nn.parameter import Parameter

    def make(kind, node, where):
        array = arrays[node[kind]]
        if kind == "ndarray":
            return array
        if kind == "numpy_scalar":
            return array[()]
        if node.get("parameter"):
            return Parameter(Tensor._make(array), requires_grad=bool(node.get("requires_grad")))
        return Tensor._make(array, requires_grad=bool(node.get("requires_grad")))
    return make


_OPTIONS = {"tensor": {"requires_grad", "parameter"}, "ndarray": set(), "numpy_scalar": set(),
            "tuple": set(), "dict": set(), "ordered_dict": set(), "float": set()}
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def decode(node, leaf, where):
    """Rebuild the object a skeleton describes; `leaf(kind, node, where)` makes each tensor."""
    if node is None or type(node) in (bool, int, str, float):
        return node
    if isinstance(node, list):
        return [decode(v, leaf, f"{where}[{i}]") for i, v in enumerate(node)]
    kinds = [k for k in node if k in _OPTIONS]
    if len(kinds) != 1 or not set(node) - {kinds[0]} <= _OPTIONS[kinds[0]]:
        raise ModelFormatError(f"structure at {where}: unknown node {_short(sorted(node))}")
    kind = kinds[0]
    value = node[kind]
    if kind in ("tensor", "ndarray", "numpy_scalar"):
        if any(type(node[k]) is not bool for k in _OPTIONS[kind] if k in node):
            raise ModelFormatError(f"structure at {where}: tensor flags must be true/false")
        return leaf(kind, node, where)
    if kind == "float":
        if not isinstance(value, str) or value not in _FLOATS:
            raise ModelFormatError(f"structure at {where}: float {value!r} is not nan/inf/-inf")
        return _FLOATS[value]
    if not isinstance(value, list):
        raise ModelFormatError(f"structure at {where}: {kind} needs a list")
    if kind == "tuple":
        return tuple(decode(v, leaf, f"{where}[{i}]") for i, v in enumerate(value))
    out = {} if kind == "dict" else OrderedDict()
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise ModelFormatError(f"structure at {where}: {kind} items must be [key, value]")
        key = pair[0]
        if isinstance(key, dict) and set(key) == {"float"}:
            key = decode(key, leaf, where)
        elif not (key is None or type(key) in (bool, int, str, float)):
            raise ModelFormatError(f"structure at {where}: key {key!r} is not a scalar")
        if key in out:
            raise ModelFormatError(f"structure at {where}: key {key!r} appears twice")
        out[key] = decode(pair[1], leaf, f"{where}[{key!r}]")
    return out
