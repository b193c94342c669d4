"""ONNX import: an ONNX file (opsets 13..21) as a Graph of our opset, the inverse of export.

    from minitorch_edge import onnx
    g = onnx.load("resnet18.onnx")                      # a checked Graph
    g = onnx.load("bert.onnx", input_shapes={"input_ids": (1, 128)})
    model = onnx.import_model("resnet18.onnx")          # optimize() + compile(): a callable
    y = model(x)                                        # numpy in, numpy out (Tensors: Tensors)

How a file becomes a Graph:

1. parsing and safety (onnx/_safety.py): the protobuf is parsed with the `onnx` package (an
   optional extra, imported inside the functions); every tensor is decoded here with its
   sizes checked, external data is read only from inside the model's folder, and the nodes
   are topologically sorted (ONNX does not require it; a cycle is an error);
2. static shapes: our graphs have static shapes. A graph input's symbolic dim ("batch") takes
   its size from `input_shapes` ({name: shape}) when given, else 1; a fixed dim must agree
   with `input_shapes`. An initializer that is also listed as a graph input (a default value
   in ONNX) is a constant here, and so is a graph input given in `constant_inputs`. An input
   that decides a shape (a Reshape's shape, Slice's starts: _convert.STATIC_INPUTS) must be
   a constant by the time its node is converted, else OnnxUnsupportedError;
3. one node at a time, in that order, each ONNX node becomes our op of the same name, its
   attributes and inputs normalised from its version (13..21) to our opset-17 form by the
   table in onnx/_convert.py (ReduceX axes, Split sizes, Clip/Pad/Squeeze inputs, Gelu, Cast,
   auto_pad, ...). Its outputs' shapes and dtypes come from our op's rule (shape inference);
   a declared graph output shape or dtype that disagrees is an error;
4. folding, one general mechanism: Shape and Size of a (static) value are constants, and a
   node whose inputs are all constants is evaluated now, by our own op (`opset.OPS[op].run`),
   and becomes a constant (the rules of passes/fold_constants.py: DequantizeLinear is kept,
   and a node whose result would be much bigger than its inputs). So the shape arithmetic of a
   torch export (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) is gone after import;
5. QDQ models: QuantizeLinear / DequantizeLinear are our ops, so graph.optimize()'s
   fuse_quantized turns a QDQ file (onnxruntime.quantization.quantize_static, per-channel
   int8 weights) into our int8 kernels (mte.QLinearConv, ...). Those want int8 activations:
   a uint8 activation (onnxruntime's default) whose Q output is read only by DQ nodes is
   converted here to int8 by shifting its zero point by -128 (q8 = q_u8 - 128 and
   zp8 = zp_u8 - 128 give the same real values exactly); a uint8 graph input or output stays
   uint8.

Errors: one typed error, `OnnxImportError` (a ValueError), for a malformed, unsafe or
inconsistent model: bad protobuf bytes, unknown data types, sizes that disagree with the data,
negative or overflowing dims, undefined references, cycles, an op's own check failing on the
file's shapes. Its subclass `OnnxUnsupportedError` says that a well-formed model needs an
operator or feature we do not have (`.op_types` lists them; every unsupported node of the
model is listed at once).
"""

import numpy as np

from ..graph import opset
from ..graph.ir import Graph, GraphError, Node
from ..graph.passes.fold_constants import BIG_ELEMENTS, GROWTH_LIMIT, NOT_FOLDED
from ._convert import CONVERT, STATIC_INPUTS
from ._safety import (
    OnnxImportError,
    OnnxUnsupportedError,
    attributes,
    check_dims,
    check_strings,
    dtype_of,
    import_onnx,
    parse,
    tensor_to_array,
    topological_order,
)

__all__ = ["OPSETS", "OnnxImportError", "OnnxModule", "OnnxUnsupportedError", "import_model",
           "load"]

OPSETS = range(13, 22)       # the opsets we convert for and test; older and newer ones where
                             # an op did not change (the op's own since-version decides, see
                             # _OnnxNode; before 7, a `broadcast` attribute is refused)
_SELF = ("Constant", "Shape", "Size")                 # handled by the importer, not ops
_RENAMED = {"Gelu": "mte.Gelu", "CastLike": "Cast", "Swish": "mte.Silu"}   # what they become


def load(model, input_shapes=None, base_dir=None, constant_inputs=None):
    """The ONNX model `model` (a path, bytes, a binary file object or an onnx.ModelProto) as a
    checked Graph (see the module docstring). `input_shapes`: {input name: shape} for the
    symbolic dims (default 1 each). `base_dir`: the folder external data is read from (default:
    the model file's folder; none for bytes). `constant_inputs`: {input name: array} graph
    inputs frozen to constants (e.g. a Reshape's shape that the file takes as an input: our
    graphs have static shapes); they are no longer inputs of the Graph. Raises
    OnnxImportError."""
    proto, base = parse(model, base_dir)
    return _Builder(proto, input_shapes or {}, base, constant_inputs or {}).build()


def import_model(model, input_shapes=None, base_dir=None, constant_inputs=None, optimize=True,
                 **compile_options):
    """`load` the model, run the graph passes (unless optimize=False) and compile it: an
    OnnxModule, called like the model (numpy arrays or Tensors in, the same kind out)."""
    return OnnxModule(load(model, input_shapes, base_dir, constant_inputs), optimize,
                      **compile_options)


class OnnxModule:
    """An imported ONNX model ready to run: `graph` (as imported), `optimized` (after the
    passes, what runs), `executor` (graph.Executor: the C runtime where it can). Calling it
    runs the executor."""

    def __init__(self, graph, optimize=True, **compile_options):
        self.graph = graph
        self.optimized = graph.optimize() if optimize else graph
        self.executor = self.optimized.compile(**compile_options)

    @property
    def input_names(self):
        return list(self.graph.inputs)

    @property
    def output_names(self):
        return list(self.graph.outputs)

    def __call__(self, *inputs):
        return self.executor(*inputs)

    def __repr__(self):
        return (f"OnnxModule({self.graph.name}: {len(self.optimized.nodes)} nodes after the "
                f"passes, {self.executor.engine} engine)")


class _OnnxNode:
    """One ONNX node being converted: op, inputs, outputs, decoded attrs, its name, and
    `version`, the since-version of the op's definition at the model's opset."""
    __slots__ = ("attrs", "inputs", "name", "op", "outputs", "version")

    def __init__(self, op, inputs, outputs, attrs, name, version):
        self.op, self.inputs, self.outputs = op, inputs, outputs
        self.attrs, self.name, self.version = attrs, name, version


# ---- building the graph -------------------------------------------------------------------------
class _Builder:
    """The graph being built, and what converters (onnx/_convert.py) may call."""

    def __init__(self, proto, input_shapes, base_dir, constant_inputs):
        self.onnx, self.proto, self.base_dir = import_onnx(), proto, base_dir
        self.input_shapes = dict(input_shapes)
        self.constant_inputs = dict(constant_inputs)
        gp = proto.graph
        self.g = Graph(gp.name or "onnx_graph")
        self.graph_outputs = {o.name for o in gp.output}
        self.readers = {}                 # value -> op types of the nodes reading it
        for n in gp.node:
            for name in n.input:
                self.readers.setdefault(name, []).append(n.op_type)
        self.all_names = {n for node in gp.node for n in list(node.input) + list(node.output)}
        self.all_names |= {t.name for t in gp.initializer} | {v.name for v in gp.input}
        self.node_names = set()
        self.shifted = set()              # uint8 activations made int8 (module docstring, 5)
        self._count = 0
        self.opset = self._default_opset()

    # -- what converters use --
    def fail(self, n, message):
        raise OnnxImportError(f"node {n.name!r} ({n.op}): {message}")

    def shape(self, name):
        return self.g.values[name].shape

    def dtype(self, name):
        return self.g.values[name].dtype

    def used(self, name):
        """Whether a node or the graph's outputs read value `name`."""
        return name in self.readers or name in self.graph_outputs

    def fresh(self, hint):
        while True:
            self._count += 1
            name = f"{hint}_imported_{self._count}"
            if name not in self.all_names and name not in self.g.values:
                return name

    def new_const(self, array, hint):
        return self.g.add_constant(self.fresh(hint), np.asarray(array))

    def define(self, name, array):
        """Value `name` (a node's output) is the constant `array`."""
        if not name:
            return
        if name in self.g.values:
            raise OnnxImportError(f"value {name!r} is defined twice")
        array = np.asarray(array)
        check_dims(array.shape, f"value {name!r}")
        self.g.add_constant(name, array)

    def const_input(self, n, k, what):
        """The array of input k of node n, which must be a constant (shapes are static)."""
        name = n.inputs[k] if k < len(n.inputs) else ""
        if not name or name not in self.g.constants:
            raise OnnxUnsupportedError(f"node {n.name!r} ({n.op}): its {what} (input {k}) is "
                                       f"computed at run time; the graph needs it constant "
                                       f"(static shapes)", [f"{n.op}(dynamic {what})"])
        return self.g.constants[name]

    def emit(self, op, inputs, outputs, attrs, name):
        """Node op(inputs; attrs) writing `outputs` (extra ONNX outputs that nothing reads are
        dropped, missing ones named): added to the graph, or folded to constants when all its
        inputs are constants. Returns its output names."""
        g = self.g
        node = Node(op, list(inputs), [], dict(attrs), self._node_name(name or op))
        specs = self._infer(node)
        outputs = list(outputs)
        for k, out in enumerate(outputs[len(specs):], len(specs)):
            if out and self.used(out):
                raise OnnxUnsupportedError(f"node {name!r} ({op}): output {k} ({out!r}) is not "
                                           f"supported", [f"{op}(output {k})"])
        outputs = outputs[:len(specs)] + [""] * (len(specs) - len(outputs))
        node.outputs = [o or self.fresh(op.split(".")[-1].lower()) for o in outputs]
        for out, (shape, _) in zip(node.outputs, specs):
            if out in g.values:
                raise OnnxImportError(f"node {name!r} ({op}): value {out!r} is defined twice")
            check_dims(shape, f"node {name!r} ({op}) output {out!r}")
        if self._foldable(node, specs):
            args = [g.constants[i] if i else None for i in node.inputs]
            with np.errstate(all="ignore"):
                results = opset.run_node(node, args)
            if len(results) != len(specs):
                raise OnnxImportError(f"node {name!r} ({op}) gave {len(results)} outputs for "
                                      f"{len(specs)}")
            for out, r, (shape, dtype) in zip(node.outputs, results, specs):
                array = np.array(r, dtype=dtype, copy=True)
                if array.shape != tuple(shape):
                    raise OnnxImportError(f"node {name!r} ({op}) computed shape "
                                          f"{list(array.shape)}, its rule says {list(shape)}")
                g.add_constant(out, array)
            return node.outputs
        for out, (shape, dtype) in zip(node.outputs, specs):
            g._new_value(out, shape, dtype, f"node {node.name} ({op})")
        g.nodes.append(node)
        return node.outputs

    def shift_uint8(self, n):
        """Q / DQ of a uint8 activation -> int8 (zero point - 128) where safe (docstring, 5)."""
        g = self.g
        zp = n.inputs[2] if len(n.inputs) > 2 else ""
        if zp and zp not in g.constants:
            return
        z = g.constants[zp] if zp else np.zeros((), np.uint8)
        if n.op == "QuantizeLinear":
            y = n.outputs[0] if n.outputs else ""
            if z.dtype != np.uint8 or not y or y in self.graph_outputs or any(
                    op != "DequantizeLinear" for op in self.readers.get(y, ())):
                return
            self.shifted.add(y)
        elif n.inputs[0] not in self.shifted or z.dtype != np.uint8:
            return
        shifted = (z.astype(np.int16) - 128).astype(np.int8)
        n.inputs = n.inputs[:2] + [self.new_const(shifted, "zero_point_int8")]

    # -- the steps --
    def build(self):
        gp = self.proto.graph
        check_strings(self.proto)
        if gp.sparse_initializer:
            raise OnnxUnsupportedError("sparse initializers are not supported",
                                       ["sparse_initializer"])
        for t in gp.initializer:
            self._initializer(t)
        for vi in gp.input:
            if vi.name not in self.g.constants:
                self._graph_input(vi)
        declared = {vi.name for vi in gp.input} - {t.name for t in gp.initializer}
        for what, names in (("input_shapes", self.input_shapes),
                            ("constant_inputs", self.constant_inputs)):
            extra = set(names) - declared
            if extra:
                raise OnnxImportError(f"{what} names {sorted(extra)}, which are not graph "
                                      f"inputs ({', '.join(self.g.inputs)})")
        nodes = topological_order(list(gp.node), set(self.g.values))
        self._check_supported(nodes)
        for proto in nodes:
            self._node(proto)
        self._outputs(gp.output)
        g = self.g
        g.remove_unused_values()
        try:
            return g.check()
        except GraphError as e:
            raise OnnxImportError(f"onnx.load: the imported graph is inconsistent: {e}") from None

    def _default_opset(self):
        versions = [o.version for o in self.proto.opset_import if o.domain in ("", "ai.onnx")]
        if not versions:
            if any(n.domain in ("", "ai.onnx") for n in self.proto.graph.node):
                raise OnnxImportError("the model imports no opset of the default ONNX domain")
            return OPSETS.stop - 1
        v = int(versions[0])
        newest = self.onnx.defs.onnx_opset_version()
        if not 1 <= v <= newest:
            raise OnnxImportError(f"opset version {v} is not an ONNX opset (1..{newest})")
        return v

    def _initializer(self, t):
        if not t.name:
            raise OnnxImportError("an initializer has no name")
        if t.name in self.g.values:
            raise OnnxImportError(f"initializer {t.name!r} is defined twice")
        self.g.add_constant(t.name, tensor_to_array(t, self.base_dir, f"initializer "
                                                                      f"{t.name!r}"))

    def _graph_input(self, vi):
        where = f"graph input {vi.name!r}"
        if not vi.name:
            raise OnnxImportError("a graph input has no name")
        if vi.name in self.g.values:
            raise OnnxImportError(f"{where} is defined twice")
        if vi.type.WhichOneof("value") != "tensor_type":
            raise OnnxUnsupportedError(f"{where} is not a tensor", ["non-tensor inputs"])
        tt = vi.type.tensor_type
        dtype = dtype_of(tt.elem_type, where)
        if vi.name in self.constant_inputs:
            array = np.asarray(self.constant_inputs[vi.name])
            if array.dtype.name != dtype:
                raise OnnxImportError(f"constant_inputs[{vi.name!r}] is {array.dtype.name}, "
                                      f"the input is declared {dtype}")
            check_dims(array.shape, f"constant_inputs[{vi.name!r}]")
            self.g.add_constant(vi.name, array.copy())
            return
        declared = ([d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
                    if tt.HasField("shape") else None)
        given = self.input_shapes.get(vi.name)
        if given is not None:
            shape, _ = check_dims(given, f"input_shapes[{vi.name!r}]")
            if declared is not None and (len(declared) != len(shape) or any(
                    d is not None and d != s for d, s in zip(declared, shape))):
                raise OnnxImportError(f"input_shapes[{vi.name!r}] = {list(shape)} does not fit "
                                      f"the declared shape {declared}")
        elif declared is None:
            raise OnnxImportError(f"{where} has no shape; give it in input_shapes")
        else:
            shape, _ = check_dims([1 if d is None else d for d in declared], where)
        self.g.add_input(vi.name, shape, dtype)

    def _check_supported(self, nodes):
        """OnnxUnsupportedError listing every op type of the model we cannot convert."""
        missing = set()
        for n in nodes:
            if n.domain not in ("", "ai.onnx"):
                missing.add(f"{n.domain}.{n.op_type}")
            elif n.op_type not in _SELF and not opset.known(_RENAMED.get(n.op_type, n.op_type)):
                missing.add(n.op_type)
        if missing:
            raise OnnxUnsupportedError(f"onnx.load: the model uses operators we do not have: "
                                       f"{', '.join(sorted(missing))}", missing)

    def _node(self, proto):
        name = proto.name or f"{proto.op_type}_{len(self.node_names)}"
        where = f"node {name!r} ({proto.op_type})"
        try:
            schema = self.onnx.defs.get_schema(proto.op_type, self.opset, "")
        except self.onnx.defs.SchemaError:
            raise OnnxImportError(f"{where}: the op does not exist in ONNX opset "
                                  f"{self.opset}") from None
        n = _OnnxNode(proto.op_type, list(proto.input), list(proto.output),
                      attributes(self.onnx, proto, self.base_dir, where), name,
                      schema.since_version)
        for k, i in enumerate(n.inputs):
            if i and i not in self.g.values:
                raise OnnxImportError(f"{where} reads {i!r}, which is not defined")
            if i and k in STATIC_INPUTS.get(n.op, ()) and i not in self.g.constants:
                raise OnnxUnsupportedError(
                    f"{where}: input {k} ({i!r}) decides the output's shape and is computed "
                    f"at run time; our graphs have static shapes, so it must be a constant",
                    [f"{n.op}(dynamic shape input)"])
        if n.attrs.pop("broadcast", 0) and n.version < 7:      # the pre-7 broadcasting
            raise OnnxUnsupportedError(f"{where}: the broadcast attribute (opset < 7) is not "
                                       f"supported", [f"{n.op}(broadcast attribute)"])
        try:
            convert = CONVERT.get(n.op)
            if convert is not None and convert(self, n):
                return
            self.emit(_RENAMED.get(n.op, n.op), n.inputs, n.outputs, n.attrs, n.name)
        except OnnxImportError:
            raise
        except GraphError as e:
            raise OnnxImportError(f"{where}: {e}") from None
        except Exception as e:  # noqa: BLE001  (an op's own check failing on this file's data:
            # the contract is that a bad file gives OnnxImportError and nothing else)
            raise OnnxImportError(f"{where}: {type(e).__name__}: {e}") from None

    def _outputs(self, outputs):
        names = []
        for vi in outputs:
            v = self.g.values.get(vi.name)
            if v is None:
                raise OnnxImportError(f"graph output {vi.name!r} is not defined by any node, "
                                      f"input or initializer")
            tt = vi.type.tensor_type if vi.type.WhichOneof("value") == "tensor_type" else None
            if tt is not None and tt.elem_type and dtype_of(tt.elem_type, vi.name) != v.dtype:
                raise OnnxImportError(f"graph output {vi.name!r} is declared "
                                      f"{dtype_of(tt.elem_type, vi.name)}, computes {v.dtype}")
            if tt is not None and tt.HasField("shape"):
                dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
                if len(dims) != len(v.shape) or any(
                        d is not None and d != s for d, s in zip(dims, v.shape)):
                    raise OnnxImportError(f"graph output {vi.name!r} is declared with shape "
                                          f"{dims}, computes {list(v.shape)}")
            names.append(vi.name)
        self.g.set_outputs(names)

    # -- helpers --
    def _node_name(self, base):
        name, k = base, 0
        while name in self.node_names:
            k += 1
            name = f"{base}_{k}"
        self.node_names.add(name)
        return name

    def _infer(self, node):
        spec = opset.OPS[node.op]
        ins = [None if not i else opset._In(self.g.values[i], self.g.constants.get(i))
               for i in node.inputs]
        try:
            return [(tuple(int(d) for d in s), np.dtype(d).name)
                    for s, d in spec.infer(node.attrs, ins)]
        except (ValueError, TypeError, IndexError, KeyError) as e:
            shapes = ", ".join("<none>" if i is None else f"{i.dtype}{list(i.shape)}"
                               for i in ins)
            if "must be a constant" in str(e):     # an op's static-shape rule (opset._const)
                raise OnnxUnsupportedError(f"node {node.name!r} ({node.op}): {e}",
                                           [f"{node.op}(dynamic shape input)"]) from None
            raise OnnxImportError(f"node {node.name!r} ({node.op}): {e} (inputs: {shapes})") \
                from None

    def _foldable(self, node, specs):
        g = self.g
        if node.op in NOT_FOLDED or not all(not i or i in g.constants for i in node.inputs):
            return False
        out = sum(int(np.prod(s, dtype=np.int64)) for s, _ in specs)
        ins = sum(g.constants[i].size for i in node.inputs if i)
        return not (out > GROWTH_LIMIT * ins and out > BIG_ELEMENTS)

