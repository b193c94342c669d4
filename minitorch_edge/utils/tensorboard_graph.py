"""A Graph (graph/ir.py) as the GraphDef protocol buffer that TensorBoard's Graphs dashboard
draws, encoded by hand (no tensorflow, no torch, no protobuf package).

What the dashboard gets:

* one node per graph input (op "IO Node", like PyTorch's add_graph), one per graph output
  (named ``output/<name>``), one "Const" per constant (its name, dtype and shape, never its
  data) and one per graph node, whose op is our op name ("Conv", "mte.ConvAct",
  "mte.QLinearConv", ...);
* names scoped by module path: a node the tracer named ``features.3.conv.0/Conv_12`` in a
  MobileNetV2 becomes ``MobileNetV2/features.3/conv.0/Conv_12``, so the dashboard collapses
  it into a box per module (a numbered child stays with its container, "features.3");
  a parameter ``features.3.conv.0.weight`` lands in the same box, an anonymous constant in
  the box of the node that first reads it;
* edges from each node's inputs (``name:k`` for a node's k-th output, k > 0);
* attrs: ``_output_shapes`` (a list of shapes: the dashboard labels edges with them),
  ``dtype``, int8 quantisation parameters, and the node's own attributes (ints, floats,
  strings, lists; a large array as its description).

The wire format (protobuf's, https://protobuf.dev/programming-guides/encoding/): a message is
a run of fields, each a key ``field_number << 3 | wire_type`` (varint) and a value: a varint
(wire type 0), a 32-bit little-endian float (5) or a length-prefixed byte string (2) holding
a string, bytes, a packed list or a nested message. The field numbers below are those of
tensorflow/core/framework/{graph,node_def,attr_value,tensor_shape,types,versions}.proto.
"""
import struct

import numpy as np

__all__ = ["graph_def_bytes", "scoped_name"]

# tensorflow/core/framework/types.proto
DATA_TYPES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
              "int64": 9, "bool": 10, "float16": 19}
GRAPHDEF_PRODUCER = 22      # VersionDef.producer: a TF graph version the dashboard reads
ARRAY_ATTR_LIMIT = 16       # array attributes up to this size are written as lists


# ---- the wire format --------------------------------------------------------------------------

def _varint(value):
    value &= (1 << 64) - 1              # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field, wire_type):
    return _varint(field << 3 | wire_type)


def _int_field(field, value):
    return _key(field, 0) + _varint(int(value))


def _bytes_field(field, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _key(field, 2) + _varint(len(data)) + data


def _float_field(field, value):
    return _key(field, 5) + struct.pack("<f", float(value))


def _packed_ints(field, values):
    return _bytes_field(field, b"".join(_varint(int(v)) for v in values))


def _packed_floats(field, values):
    return _bytes_field(field, struct.pack(f"<{len(values)}f", *map(float, values)))


# ---- messages ---------------------------------------------------------------------------------

def _shape(dims):
    """TensorShapeProto: dim = 2 (each a Dim: size = 1)."""
    return b"".join(_bytes_field(2, _int_field(1, d)) for d in dims)


def _attr_value(value):
    """AttrValue for a Python / numpy attribute, or None for one with no encoding (None)."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.size > ARRAY_ATTR_LIMIT:
            return _bytes_field(2, f"{value.dtype.name}{list(value.shape)}")
        value = value.tolist()
    if isinstance(value, (bool, np.bool_)):
        return _int_field(5, bool(value))                              # b = 5
    if isinstance(value, (int, np.integer)):
        return _int_field(3, value)                                    # i = 3
    if isinstance(value, (float, np.floating)):
        return _float_field(4, value)                                  # f = 4
    if isinstance(value, str):
        return _bytes_field(2, value)                                  # s = 2
    if isinstance(value, (list, tuple)):                               # list = 1 (ListValue)
        flat = list(np.ravel(np.asarray(value, dtype=object))) if value else []
        if all(isinstance(v, str) for v in flat):
            body = b"".join(_bytes_field(2, v) for v in flat)          # s = 2
        elif all(isinstance(v, (bool, int, np.integer)) for v in flat):
            body = _packed_ints(3, flat) if flat else b""              # i = 3
        else:
            body = _packed_floats(4, flat)                             # f = 4
        return _bytes_field(1, body)
    return _bytes_field(2, str(value))


def _shapes_attr(shapes):
    """The `_output_shapes` AttrValue: list { shape = 7 ... }."""
    return _bytes_field(1, b"".join(_bytes_field(7, _shape(s)) for s in shapes))


def _node_def(name, op, inputs, attrs):
    """NodeDef: name = 1, op = 2, input = 3, attr = 5 (a map: entries key = 1, value = 2)."""
    out = _bytes_field(1, name) + _bytes_field(2, op)
    for i in inputs:
        out += _bytes_field(3, i)
    for key in sorted(attrs):
        value = attrs[key]
        if value is not None:
            out += _bytes_field(5, _bytes_field(1, key) + _bytes_field(2, value))
    return out


# ---- names ------------------------------------------------------------------------------------

def _scopes(path):
    """A module path ("features.3.conv.0") as TensorBoard scopes (["features.3", "conv.0"]): a
    numbered child stays with its container."""
    out = []
    for part in path.split("."):
        if part.isdigit() and out:
            out[-1] += "." + part
        elif part:
            out.append(part)
    return out


def scoped_name(top, name):
    """The dashboard name of a graph node or parameter: ``top/<module scopes>/<leaf>``. A node
    name's module path is what comes before its last "/" ("features.3.conv.0/Conv_12"); a
    parameter's is what comes before its last "." ("features.3.conv.0.weight")."""
    if "/" in name:
        path, leaf = name.rsplit("/", 1)
        # the tracer names an op of the top-level module itself "<top>/Op_3": no scope
        parts = [s for piece in path.split("/") if piece != "<top>" for s in _scopes(piece)]
    elif "." in name:
        path, leaf = name.rsplit(".", 1)
        parts = _scopes(path)
    else:
        parts, leaf = [], name
    return "/".join([top, *parts, leaf or "node"])


class _Names:
    """Unique dashboard names (a clash gets a suffix "_1", "_2", ...)."""

    def __init__(self):
        self.taken = set()

    def claim(self, name):
        unique, k = name, 0
        while unique in self.taken:
            k += 1
            unique = f"{name}_{k}"
        self.taken.add(unique)
        return unique


def _value_attrs(value):
    attrs = {"dtype": _int_field(6, DATA_TYPES.get(value.dtype, 0)),      # type = 6
             "_output_shapes": _shapes_attr([value.shape])}
    if value.quant:
        for key, q in value.quant.items():
            attrs[f"quant_{key}"] = _attr_value(q)
    return attrs


def graph_def_bytes(graph, top=None):
    """The serialized GraphDef of `graph` (see the module docstring); `top`: the outermost
    scope (default: the graph's name)."""
    top = top or graph.name or "graph"
    names = _Names()
    source = {}          # value name -> dashboard input string ("node" or "node:k")
    nodes = []
    for name in graph.inputs:
        node = names.claim(name)
        source[name] = node
        nodes.append(_node_def(node, "IO Node", [], _value_attrs(graph.values[name])))
    # a constant goes where its name says (a parameter's module), else next to its first reader
    reader = {}
    for n in graph.nodes:
        for i in n.inputs:
            reader.setdefault(i, n.name)
    for name in graph.constants:
        if "." in name and not name.split(".")[-1].isdigit():
            full = scoped_name(top, name)
        else:
            where = reader.get(name, "")
            full = scoped_name(top, (where.rsplit("/", 1)[0] + "/" if "/" in where else "")
                               + name)
        node = names.claim(full)
        source[name] = node
        attrs = _value_attrs(graph.values[name])
        attrs["shape"] = _bytes_field(7, _shape(graph.values[name].shape))   # shape = 7
        nodes.append(_node_def(node, "Const", [], attrs))
    for n in graph.nodes:
        node = names.claim(scoped_name(top, n.name))
        outs = [graph.values[o] for o in n.outputs]
        attrs = {"_output_shapes": _shapes_attr([v.shape for v in outs])}
        if outs:
            attrs.update({k: v for k, v in _value_attrs(outs[0]).items()
                          if k != "_output_shapes"})
        for key, value in n.attrs.items():
            attrs.setdefault(key, _attr_value(value))
        nodes.append(_node_def(node, n.op, [source[i] for i in n.inputs if i], attrs))
        for k, out in enumerate(n.outputs):
            source[out] = node if k == 0 else f"{node}:{k}"
    for name in graph.outputs:
        node = names.claim(f"output/{name}")
        nodes.append(_node_def(node, "IO Node", [source[name]], _value_attrs(graph.values[name])))
    body = b"".join(_bytes_field(1, n) for n in nodes)                   # node = 1
    return body + _bytes_field(4, _int_field(1, GRAPHDEF_PRODUCER))      # versions = 4
