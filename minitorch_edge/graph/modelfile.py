"""The model file `.mte`: a Graph (float or int8) as one safetensors-compatible file.

The container is the one `utils.serialization` writes (8-byte header length, a JSON header,
the constants' raw little-endian bytes; written atomically, read with every size, offset and
dtype checked first). The graph itself is JSON in ``__metadata__``:

    "minitorch_edge.format_version": "1"
    "minitorch_edge.kind":           "graph"
    "minitorch_edge.graph":          {"version": 1, "name": ..., "inputs": [...],
                                      "outputs": [...], "values": [[name, [dims], dtype], ...],
                                      "nodes": [{"op", "name", "inputs", "outputs",
                                                 "attrs": {...}}, ...]}

    "minitorch_edge.data_sha256":    sha256 hex of the whole data section (every constant's
                                      bytes, in file order)

Every value is listed (inputs, constants, node outputs) with its shape and numpy dtype name;
the constants are the file's tensors, under their value names. An attribute is an int, a
finite float, a string, a bool or a list of them. Any safetensors reader sees the weights;
`load` (and the C runtime, native/runtime/) rebuild the Graph and check it completely before
use: the container (utils.serialization's rules, and the data section's digest where present;
the C runtime does not check digests), then the JSON's shape, then the graph
(`Graph.check`: every reference defined earlier, shapes and dtypes as the op rules infer,
no unknown op). Any problem is one `ModelFormatError` naming the file and the rule.

One digest for the data section, not one per constant as weights files carry: a model file is
read whole, and 107 named digests would be 10 KB of header in MobileNetV2 (the header is what
a model file adds to its weights; ONNX adds 41 KB there). Files written with per-constant
digests (``minitorch_edge.sha256``, the weights files' key) still load and are checked.
"""
import hashlib
import io
import json
import math

import numpy as np

from ..utils import serialization as _ser
from ..utils._format import _VERSION, _VERSION_KEY, ModelFormatError, _strict_json
from .ir import Graph, GraphError, Node, Value

__all__ = ["save", "to_bytes", "load", "export_model", "GRAPH_KEY", "GRAPH_VERSION", "ModelFormatError"]

GRAPH_KEY = "minitorch_edge.graph"
DATA_DIGEST_KEY = "minitorch_edge.data_sha256"
KIND_KEY = "minitorch_edge.kind"
GRAPH_VERSION = 1
DTYPES = ("float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64", "bool")
_CODE_OF = {"float32": "F32", "float64": "F64", "float16": "F16", "int8": "I8", "uint8": "U8",
            "int16": "I16", "int32": "I32", "int64": "I64", "bool": "BOOL"}


# ---- writing ----------------------------------------------------------------------------------
def _attr(value, where):
    """A JSON-able attribute (numpy scalars and arrays become Python numbers and lists)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"Graph.save: {where} is {value}; attributes must be finite")
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        items = [_attr(v, where) for v in (value.tolist() if isinstance(value, np.ndarray)
                                           else value)]
        if any(isinstance(v, list) for v in items):
            raise ValueError(f"Graph.save: {where} is a nested list; attributes are flat")
        return items
    raise ValueError(f"Graph.save: {where} is a {type(value).__name__}; attributes are ints, "
                     f"floats, strings, bools or lists of them")


def graph_json(g):
    """The graph part of the file, as a dict (constants by name only)."""
    for v in g.values.values():
        if v.dtype not in DTYPES:
            raise ValueError(f"Graph.save: value {v.name!r} has dtype {v.dtype}, which the "
                             f"model file does not hold ({', '.join(DTYPES)})")
    return {
        "version": GRAPH_VERSION, "name": g.name, "inputs": list(g.inputs),
        "outputs": list(g.outputs),
        "values": [[v.name, list(v.shape), v.dtype] for v in g.values.values()],
        "nodes": [{"op": n.op, "name": n.name, "inputs": list(n.inputs),
                   "outputs": list(n.outputs),
                   "attrs": {k: _attr(a, f"node {n.name!r} attribute {k!r}")
                             for k, a in n.attrs.items()}} for n in g.nodes]}


def _container(g):
    """The file's header bytes (padded to 8) and its (name, code, array) list, in file order."""
    g.check()
    doc = json.dumps(graph_json(g), separators=(",", ":"), allow_nan=False)
    arrays = [(name, _CODE_OF[a.dtype.name], a if a.flags.c_contiguous else a.copy())
              for name, a in g.constants.items()]
    header = _ser._header(None, arrays)
    meta_doc = json.loads(header.decode("utf-8"))
    meta_doc["__metadata__"] = {_VERSION_KEY: _VERSION, KIND_KEY: "graph", GRAPH_KEY: doc,
                                DATA_DIGEST_KEY: _data_digest(a for _, _, a in arrays)}
    raw = json.dumps(meta_doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(raw) > _ser.MAX_HEADER_BYTES:
        raise ValueError(f"Graph.save: the header would take {len(raw)} bytes, over the "
                         f"{_ser.MAX_HEADER_BYTES} readers accept")
    return raw + b" " * (-len(raw) % 8), arrays


def _data_digest(arrays):
    """sha256 hex of the arrays' bytes one after the other (the data section, in file order)."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).reshape(-1).view(np.uint8))
    return h.hexdigest()


def _check_data_digest(metadata, arrays, entries):
    """The data section's bytes against the recorded digest (format checked first)."""
    recorded = metadata[DATA_DIGEST_KEY]
    _need(isinstance(recorded, str) and len(recorded) == 64
          and all(c in "0123456789abcdef" for c in recorded),
          f"__metadata__[{DATA_DIGEST_KEY!r}] must be a sha256 hex digest (64 lower-case hex "
          f"digits)")
    ordered = sorted(entries, key=lambda e: e[3])        # entry: (name, code, shape, begin, end)
    if _data_digest(arrays[e[0]] for e in ordered) != recorded:
        raise ModelFormatError(
            f"the data section ({ordered[-1][4] if ordered else 0} bytes, {len(ordered)} "
            f"constants) does not match the sha256 digest recorded when the file was saved, so "
            f"the file was corrupted or changed since; restore it from a good copy or save it "
            f"again (load(..., verify=False) reads it unchecked)")


def save(g, path):
    """Write graph `g` to `path` (atomically: the old file survives any error)."""
    header, arrays = _container(g)
    _ser._atomic_write(path, header, arrays)
    return path


def to_bytes(g):
    """The model file of graph `g` as bytes (what `save` writes), e.g. to hand to the C
    runtime in memory."""
    header, arrays = _container(g)
    buf = io.BytesIO()
    _ser._write_payload(buf, header, arrays)
    return buf.getvalue()


# ---- reading ----------------------------------------------------------------------------------
def _need(cond, msg):
    if not cond:
        raise ModelFormatError(msg)


def _names(doc, key):
    items = doc.get(key)
    _need(isinstance(items, list) and all(isinstance(n, str) for n in items),
          f"graph {key!r} must be a list of value names")
    return items


def _graph_from(doc, arrays):
    _need(isinstance(doc, dict), "the graph must be a JSON object")
    _need(set(doc) == {"version", "name", "inputs", "outputs", "values", "nodes"},
          f"the graph has keys {sorted(doc)}; expected inputs, name, nodes, outputs, values, "
          f"version")
    _need(doc["version"] == GRAPH_VERSION, f"graph version {doc['version']!r} is not "
          f"{GRAPH_VERSION} (a newer minitorch_edge wrote it?)")
    _need(isinstance(doc["name"], str), "the graph name must be a string")
    g = Graph(doc["name"])
    values = doc["values"]
    _need(isinstance(values, list), "graph 'values' must be a list")
    for entry in values:
        ok = (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
              and entry[0] and isinstance(entry[1], list)
              and all(type(d) is int and d >= 0 for d in entry[1])
              and entry[2] in DTYPES)
        _need(ok, f"value entry {str(entry)[:80]} must be [name, [dims >= 0], dtype] with "
              f"dtype one of {', '.join(DTYPES)}")
        _need(entry[0] not in g.values, f"value {entry[0]!r} is listed twice")
        g.values[entry[0]] = Value(entry[0], tuple(entry[1]), entry[2])
    for name, array in arrays.items():
        v = g.values.get(name)
        _need(v is not None, f"tensor {name!r} is not a value of the graph")
        _need(v.shape == array.shape and v.dtype == array.dtype.name,
              f"tensor {name!r} is {array.dtype.name}{list(array.shape)} but the graph lists "
              f"it as {v.describe()}")
        g.constants[name] = array
    g.inputs, g.outputs = _names(doc, "inputs"), _names(doc, "outputs")
    nodes = doc["nodes"]
    _need(isinstance(nodes, list), "graph 'nodes' must be a list")
    for k, n in enumerate(nodes):
        _need(isinstance(n, dict) and set(n) == {"op", "name", "inputs", "outputs", "attrs"},
              f"node {k} must be an object with op, name, inputs, outputs, attrs")
        _need(isinstance(n["op"], str) and isinstance(n["name"], str),
              f"node {k}: op and name must be strings")
        _need(isinstance(n["attrs"], dict), f"node {n['name']!r}: attrs must be an object")
        for key, a in n["attrs"].items():
            flat = a if isinstance(a, list) else [a]
            _need(all(isinstance(x, (int, float, str)) for x in flat),
                  f"node {n['name']!r} attribute {key!r}: not an int, float, string, bool or "
                  f"a flat list of them")
        g.nodes.append(Node(n["op"], _names(n, "inputs"), _names(n, "outputs"),
                            dict(n["attrs"]), n["name"]))
    declared = set(g.values)
    used = set(g.inputs) | set(g.outputs) | {i for n in g.nodes for i in n.inputs + n.outputs
                                             if i}
    _need(used <= declared, f"values {sorted(used - declared)[:3]} are used but not listed")
    try:
        g.check()
    except GraphError as e:
        raise ModelFormatError(f"invalid graph: {e}") from None
    return g


def load(path, verify=True):
    """The Graph stored at `path` by `save` (or `Graph.save`), checked completely; with
    `verify`, the constants' bytes against the sha256 digests recorded at saving (if any)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(0)
        try:
            header, header_len = _ser._read_header(f, size)
            entries, metadata = _ser._check_entries(header, size - 8 - header_len)
            _need(metadata.get(KIND_KEY) == "graph" and GRAPH_KEY in metadata,
                  "this is not a model file (no graph in __metadata__): a weights file? load "
                  "it with minitorch_edge.load")
            doc = _strict_json(metadata[GRAPH_KEY], "the graph")
            digests = _ser._digests(metadata, entries) if verify else {}
            arrays = {e[0]: _ser._read_array(f, *e, digests.get(e[0])) for e in entries}
            if verify and DATA_DIGEST_KEY in metadata:
                _check_data_digest(metadata, arrays, entries)
            return _graph_from(doc, arrays)
        except ModelFormatError as e:
            raise _ser.located(e, path) from None


def export_model(module, example_inputs, path, calibration_data=None):
    """A trained Module as a model file in one call: traced in eval mode on `example_inputs`
    (one input or a tuple), optimized, and written to `path`; with `calibration_data` (an
    iterable of input batches) the file is int8 (quant.quantize, min/max, per channel).
    Returns the Graph that was written."""
    from .trace import trace
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if calibration_data is None:
        g = trace(module, *inputs).optimize()
    else:
        from ..quant import quantize
        g = quantize(module, calibration_data, example_inputs=inputs)
    save(g, path)
    return g
