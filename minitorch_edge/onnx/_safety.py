"""The safe half of the ONNX importer: the one typed error, the protobuf parsed (`parse`: bad
bytes are that error too; every name must be text), attributes and tensors decoded with every
declared size checked against the bytes present, external data kept inside the model's folder,
and the nodes put in topological order (or a cycle reported).

Rules (each violation raises `OnnxImportError`, naming the tensor, node or file):

* data types: a TensorProto code we do not know is an error; one we know but cannot hold
  (strings, bfloat16, float8, int4, complex) is `OnnxUnsupportedError`;
* dims: each >= 0 and their product within int64 (computed in Python integers first);
* raw_data / typed fields: exactly dims' product elements (raw_data: times the itemsize);
* external data: the location is relative (no absolute path, no ``..`` component, no NUL),
  resolves (symlinks followed) to a regular file inside the model's folder, and
  offset + length lie inside that file; length, when given, equals what dims and the dtype
  need. A model given as bytes or a ModelProto has no folder unless `base_dir` is passed, so
  external data there is refused;
* references: every node input names a graph input, an initializer or a node output; every
  value is defined once; the nodes may come in any order (ONNX does not require sorting) and
  are sorted here (Kahn's algorithm); nodes left over form a cycle, which is reported.
"""
import heapq
import os

import numpy as np

__all__ = ["DTYPES", "INT64_MAX", "OnnxImportError", "OnnxUnsupportedError", "attributes",
           "check_dims", "check_strings", "dtype_of", "import_onnx", "parse", "tensor_to_array",
           "topological_order"]

INT64_MAX = 2**63 - 1


class OnnxImportError(ValueError):
    """A model the importer refuses: malformed, unsafe or inconsistent (the message says which
    rule, and where)."""


class OnnxUnsupportedError(OnnxImportError):
    """A well-formed model that needs something we do not have: `op_types` lists the ONNX
    operators (or features, e.g. "Conv(3-D)") that are missing."""

    def __init__(self, message, op_types=()):
        super().__init__(message)
        self.op_types = sorted(set(op_types))


# TensorProto codes -> numpy dtype names we hold; None: a known type we cannot hold
DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
          8: None, 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
          14: None, 15: None, 16: None, 17: None, 18: None, 19: None, 20: None, 21: None,
          22: None, 23: None, 24: None, 25: None, 26: None}
_NAMES = {8: "string", 14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn",
          18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
          23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2"}
# which typed field holds each dtype (ONNX's TensorProto comments)
_FIELD = {"float32": "float_data", "float64": "double_data", "int64": "int64_data",
          "uint32": "uint64_data", "uint64": "uint64_data"}


def dtype_of(code, where):
    """The numpy dtype name of TensorProto code `code`."""
    if code not in DTYPES:
        raise OnnxImportError(f"{where}: unknown data type code {code}")
    name = DTYPES[code]
    if name is None:
        raise OnnxUnsupportedError(f"{where}: data type {_NAMES.get(code, code)} is not "
                                   f"supported (the graph holds numeric types only)",
                                   [f"dtype:{_NAMES.get(code, code)}"])
    return name


def check_dims(dims, where):
    """dims as a tuple of ints, each >= 0, product within int64; the product."""
    dims = tuple(int(d) for d in dims)
    count = 1
    for d in dims:
        if d < 0:
            raise OnnxImportError(f"{where}: negative dimension {d} in shape {list(dims)}")
        count *= d
        if count > INT64_MAX:
            raise OnnxImportError(f"{where}: shape {list(dims)} has more elements than int64 "
                                  f"can count")
    return dims, count


def tensor_to_array(t, base_dir, where=None):
    """A TensorProto as a numpy array (own memory), every size checked (module docstring)."""
    where = where or f"tensor {t.name!r}"
    dtype = np.dtype(dtype_of(t.data_type, where))
    dims, count = check_dims(t.dims, where)
    if t.HasField("segment"):
        raise OnnxUnsupportedError(f"{where}: segmented tensors are not supported",
                                   ["tensor segments"])
    if t.data_location == 1:                       # EXTERNAL
        raw = _external_bytes(t, base_dir, count * dtype.itemsize, where)
    elif t.data_location != 0:
        raise OnnxImportError(f"{where}: unknown data_location {t.data_location}")
    elif t.HasField("raw_data"):
        raw = t.raw_data
    else:
        return _typed_field(t, dtype, dims, count, where)
    if len(raw) != count * dtype.itemsize:
        raise OnnxImportError(f"{where}: shape {list(dims)} of {dtype.name} needs "
                              f"{count * dtype.itemsize} bytes, raw data has {len(raw)}")
    return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(dims)


def _typed_field(t, dtype, dims, count, where):
    field = _FIELD.get(dtype.name, "int32_data")
    data = getattr(t, field)
    if len(data) != count:
        raise OnnxImportError(f"{where}: shape {list(dims)} needs {count} values, {field} has "
                              f"{len(data)}")
    if dtype.name == "float16":                    # bits stored as uint16 in int32_data
        return np.asarray(data, np.int64).astype(np.uint16).view(np.float16).reshape(dims)
    if dtype.name == "bool":
        return (np.asarray(data, np.int64) != 0).reshape(dims)
    # typed fields hold wider integers: values outside the dtype are malformed
    wide = np.asarray(data, np.float64 if dtype.kind == "f" else
                      (np.uint64 if field == "uint64_data" else np.int64))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if wide.size and (wide.min() < info.min or wide.max() > info.max):
            raise OnnxImportError(f"{where}: {field} holds values outside {dtype.name}")
    return wide.astype(dtype).reshape(dims)


def _external_bytes(t, base_dir, nbytes, where):
    """The bytes of an external-data tensor, read from inside `base_dir` only."""
    info = {e.key: e.value for e in t.external_data}
    if not all(isinstance(s, str) for kv in info.items() for s in kv):
        raise OnnxImportError(f"{where}: external data entries that are not valid UTF-8")
    location = info.get("location", "")
    if base_dir is None:
        raise OnnxImportError(f"{where}: external data {location!r} needs the model's folder: "
                              f"load the model from a path (or pass base_dir)")
    if not location or "\0" in location:
        raise OnnxImportError(f"{where}: external data has no valid location")
    parts = location.replace("\\", "/").split("/")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or ".." in parts \
            or (len(location) > 1 and location[1] == ":"):
        raise OnnxImportError(f"{where}: external data location {location!r} must be a "
                              f"relative path inside the model's folder (no absolute path, no "
                              f"'..')")
    root = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([root, path]) != root:
        raise OnnxImportError(f"{where}: external data {location!r} resolves to {path!r}, "
                              f"outside the model's folder {root!r} (a symlink?)")
    if not os.path.isfile(path):
        raise OnnxImportError(f"{where}: external data file {location!r} does not exist in "
                              f"{root!r}")
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else nbytes
    except ValueError:
        raise OnnxImportError(f"{where}: external data offset/length are not integers: "
                              f"{info}") from None
    if length != nbytes:
        raise OnnxImportError(f"{where}: external data length {length} but the shape and dtype "
                              f"need {nbytes} bytes")
    size = os.path.getsize(path)
    if offset < 0 or offset + length > size:
        raise OnnxImportError(f"{where}: external data [{offset}, {offset + length}) lies past "
                              f"the end of {location!r} ({size} bytes)")
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise OnnxImportError(f"{where}: could read only {len(data)} of {length} bytes of "
                              f"{location!r}")
    return data


def topological_order(nodes, defined):
    """The NodeProtos `nodes` in an order where each reads only `defined` names (graph inputs,
    initializers) and earlier nodes' outputs; OnnxImportError for a value defined twice, an
    undefined reference or a cycle."""
    producer = {}
    for k, n in enumerate(nodes):
        for out in n.output:
            if not out:
                continue
            if out in defined or out in producer:
                raise OnnxImportError(f"node {k} {n.name!r} ({n.op_type}): value {out!r} is "
                                      f"defined twice")
            producer[out] = k
    waiting, readers = [], {}
    for k, n in enumerate(nodes):
        deps = set()
        for name in n.input:
            if not name or name in defined:
                continue
            if name not in producer:
                raise OnnxImportError(f"node {k} {n.name!r} ({n.op_type}) reads {name!r}, which "
                                      f"is not defined (not a graph input, an initializer or a "
                                      f"node output)")
            deps.add(producer[name])
        waiting.append(len(deps))
        for d in deps:
            readers.setdefault(d, []).append(k)
    ready = [k for k, w in enumerate(waiting) if w == 0]     # a heap: the file's order kept
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for r in readers.get(k, ()):
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, r)
    if len(order) != len(nodes):
        stuck = [f"{nodes[k].name or k!r} ({nodes[k].op_type})"
                 for k in range(len(nodes)) if waiting[k] > 0]
        raise OnnxImportError(f"the graph has a cycle: nodes {', '.join(stuck[:8])}"
                              f"{' ...' if len(stuck) > 8 else ''} wait on each other")
    return [nodes[k] for k in order]


# ---- parsing -------------------------------------------------------------------------------
def import_onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError('onnx.load needs the onnx package: pip install '
                          '"minitorch_edge[onnx]"') from None
    return onnx


def parse(model, base_dir):
    """(ModelProto, the folder for external data or None)."""
    onnx = import_onnx()
    if isinstance(model, onnx.ModelProto):
        return model, base_dir
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif hasattr(model, "read"):
        data = model.read()
        if not isinstance(data, bytes):
            raise TypeError("onnx.load: a file object must be opened in binary mode")
    elif isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise OnnxImportError(f"onnx.load: {path!r} is not a file")
        with open(path, "rb") as f:
            data = f.read()
        base_dir = os.path.dirname(os.path.abspath(path)) if base_dir is None else base_dir
    else:
        raise TypeError(f"onnx.load: expected a path, bytes, a file object or a ModelProto, got "
                        f"{type(model).__name__}")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as e:  # noqa: BLE001  (protobuf's DecodeError, or its other errors)
        raise OnnxImportError(f"onnx.load: not an ONNX model (the protobuf does not parse: "
                              f"{type(e).__name__}: {e})") from None
    return proto, base_dir


def check_strings(proto):
    """Every name the importer reads is text: protobuf hands out bytes for a string field
    that is not valid UTF-8 (a damaged file)."""
    gp = proto.graph
    names = [gp.name] + [o.domain for o in proto.opset_import]
    for n in gp.node:
        names += [n.name, n.op_type, n.domain] + list(n.input) + list(n.output)
    names += [v.name for v in list(gp.input) + list(gp.output)]
    names += [t.name for t in gp.initializer]
    if not all(isinstance(s, str) for s in names):
        raise OnnxImportError("onnx.load: the model holds names that are not valid UTF-8 (a "
                              "damaged file?)")


def attributes(onnx, proto, base_dir, where):
    """{name: value} of a NodeProto's attributes: ints, floats, strs, lists, numpy arrays."""
    A = onnx.AttributeProto
    out = {}
    for a in proto.attribute:
        at = f"{where} attribute {a.name!r}"
        if not isinstance(a.name, str):
            raise OnnxImportError(f"{where}: an attribute name is not valid UTF-8")
        if a.name in out:
            raise OnnxImportError(f"{at} is given twice")
        if a.ref_attr_name:
            raise OnnxUnsupportedError(f"{at} refers to a function attribute",
                                       ["function attributes"])
        kind = a.type
        try:
            if kind == A.FLOAT:
                v = float(a.f)
            elif kind == A.INT:
                v = int(a.i)
            elif kind == A.STRING:
                v = a.s.decode("utf-8")
            elif kind == A.TENSOR:
                v = tensor_to_array(a.t, base_dir, at)
            elif kind == A.FLOATS:
                v = [float(x) for x in a.floats]
            elif kind == A.INTS:
                v = [int(x) for x in a.ints]
            elif kind == A.STRINGS:
                v = [s.decode("utf-8") for s in a.strings]
            elif kind in (A.GRAPH, A.GRAPHS, A.TENSORS, A.SPARSE_TENSOR, A.SPARSE_TENSORS,
                          A.TYPE_PROTO, A.TYPE_PROTOS):
                raise OnnxUnsupportedError(f"{at}: attributes of type "
                                           f"{A.AttributeType.Name(kind)} are not supported",
                                           [f"attribute:{A.AttributeType.Name(kind)}"])
            else:
                raise OnnxImportError(f"{at} has no (or an unknown) type {kind}")
        except UnicodeDecodeError:
            raise OnnxImportError(f"{at}: a string that is not UTF-8") from None
        out[a.name] = v
    return out
