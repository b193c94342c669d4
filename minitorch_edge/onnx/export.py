"""ONNX export: a Module or a Graph written as a standard ONNX file (opsets 13..21).

Our Graph already uses ONNX's op names and attributes (opset 17) for every op outside the
``mte`` domain, so export is a translation of the same structure, in three steps:

1. lowering (`lower`, in onnx/lowering.py): a new Graph of standard ops only, still in our
   opset (so it is checked and can be run by our reference executor). Each ``mte`` op is expanded back into the ONNX
   subgraph it replaces (EXPANSIONS, one function an op): mte.ConvAct -> Conv [+ Add] + act,
   mte.Attention -> MatMul/Softmax, ... Int8 ops become QDQ form, what onnxruntime and
   OpenVINO run as int8:

       mte.QLinearConv(xq; Xs, Xz, Wq, Ws, Ys, Yz, Bq)
           -> Q(act(Conv(DQ(xq), DQ(Wq, axis 0), DQ(Bq, Xs * Ws, axis 0))), Ys, Yz)

   where act is the clamp [act_min, act_max] written back as Relu / Clip in real units.
   MaxPool, Reshape, Flatten, ... on int8 values stay int8 ops. Ops the requested opset lacks
   are expanded too (LayerNormalization < 17, HardSwish < 14, Gelu < 20);
2. dynamic axes (`_honour_dynamic_axes`): the lowered graph is re-inferred with every dynamic
   input axis at another size; a Reshape whose shape constant copies such a dim gets 0 (or
   -1) there, and a node that cannot take the other size raises a ValueError naming it;
3. the protobuf (`_to_model`): one NodeProto a node, in the form of the requested opset
   (ReduceMean's axes become an input at 18, Split takes num_outputs at 18, Cast's dtype
   becomes a TensorProto code), constants as initializers, checked by
   ``onnx.checker.check_model(full_check=True)``.

    from minitorch_edge import onnx
    onnx.export(model, x, "model.onnx", dynamic_axes={"input": {0: "batch"}})
    onnx.export(quant.quantize(model, [x]), x, "model_int8.onnx")     # QDQ int8

The ``onnx`` package (extra ``onnx``) is imported only inside `export`.
"""
import os

import numpy as np

from ..graph.ir import Graph, GraphError
from ..utils.serialization import atomic_write
from .lowering import EXPANSIONS, lower

__all__ = ["EXPANSIONS", "OPSETS", "export", "lower"]

OPSETS = range(13, 22)           # the opset versions we emit (ONNX's default domain)
# ops whose `axes` attribute (ours) is an int64 input from this opset on
AXES_INPUT_SINCE = {"ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18,
                    "ReduceProd": 18, "ReduceL2": 18}


def export(model, args, f, opset_version=17, input_names=None, output_names=None,
           dynamic_axes=None):
    """Write `model` (a Module, traced on `args` in eval mode and not optimized, or a Graph,
    exported as it is) to `f` (a path, written atomically, or a binary file object) as ONNX
    with `opset_version` (13..21). `input_names` / `output_names` rename the graph's inputs and
    outputs; `dynamic_axes` ({name: {axis: "dim name"} or [axes]}) gives those dims a
    dim_param. Returns None, as torch.onnx.export."""
    if not isinstance(opset_version, (int, np.integer)) or int(opset_version) not in OPSETS:
        raise ValueError(f"onnx.export: opset_version {opset_version!r} is not supported; use "
                         f"one of {OPSETS.start}..{OPSETS.stop - 1} (default 17)")
    opset_version = int(opset_version)
    try:
        import onnx
    except ImportError:
        raise ImportError('onnx.export needs the onnx package: pip install '
                          '"minitorch_edge[onnx]"') from None
    g = _graph_of(model, args)
    low = lower(g, opset_version)
    renames = _renames(low, input_names, output_names)
    dims = _honour_dynamic_axes(low, dynamic_axes or {}, renames)
    proto = _to_model(onnx, low, opset_version, renames, dims)
    onnx.checker.check_model(proto, full_check=True)
    data = proto.SerializeToString()
    if hasattr(f, "write"):
        f.write(data)
    else:
        atomic_write(os.fspath(f), lambda out: out.write(data))


# ---- the graph to export ----------------------------------------------------------------------
def _graph_of(model, args):
    if isinstance(model, Graph):
        return model.check()
    from ..graph import trace
    if not callable(model):
        raise TypeError(f"onnx.export: model must be a Module or a Graph, got "
                        f"{type(model).__name__}")
    if args is None:
        raise ValueError("onnx.export: a Module needs example inputs `args` (one input or a "
                         "tuple) to be traced")
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    was_training = getattr(model, "training", None)
    if was_training is not None:
        model.eval()
    try:
        return trace(model, *args)
    finally:
        if was_training is not None:
            model.train(was_training)


# ---- names ------------------------------------------------------------------------------------
def _renames(g, input_names, output_names):
    """{old value name: new} from input_names / output_names (counts checked)."""
    renames = {}
    for what, new, old in (("input_names", input_names, g.inputs),
                           ("output_names", output_names, g.outputs)):
        if new is None:
            continue
        new = list(new)
        if len(new) != len(old):
            raise ValueError(f"onnx.export: {what} has {len(new)} names but the graph has "
                             f"{len(old)} {what.split('_')[0]}s ({', '.join(old)})")
        renames.update(zip(old, (str(n) for n in new)))
    final = [renames.get(n, n) for n in list(g.inputs) + list(g.outputs)]
    if len(set(final)) != len(final):
        raise ValueError(f"onnx.export: input and output names must be distinct, got {final}")
    clash = [n for old, n in renames.items() if n != old and n in g.values]
    if clash:
        raise ValueError(f"onnx.export: the new names {clash} are already names of values in "
                         f"the graph; choose others")
    return renames


# ---- step 2: dynamic axes ---------------------------------------------------------------------
def _dynamic_spec(g, dynamic_axes, renames):
    """{value name (ours): {axis: dim_param}} from PyTorch's dynamic_axes (keys: new names or
    ours)."""
    back = {new: old for old, new in renames.items()}
    spec = {}
    for key, axes in dynamic_axes.items():
        name = back.get(key, key)
        if name not in g.inputs and name not in g.outputs:
            raise ValueError(f"onnx.export: dynamic_axes names {key!r}, which is not a graph "
                             f"input or output ({', '.join(renames.get(n, n) for n in g.inputs + g.outputs)})")
        rank = len(g.values[name].shape)
        if isinstance(axes, dict):
            items = axes.items()
        else:
            items = [(a, f"{renames.get(name, name)}_dynamic_axes_{k + 1}")
                     for k, a in enumerate(axes)]
        spec[name] = {}
        for axis, dim in items:
            if not isinstance(axis, (int, np.integer)) or not -rank <= axis < rank:
                raise ValueError(f"onnx.export: dynamic_axes[{key!r}] has axis {axis!r}, out "
                                 f"of range for its rank {rank}")
            spec[name][int(axis) % rank] = str(dim)
    return spec


def _honour_dynamic_axes(g, dynamic_axes, renames):
    """Make the lowered graph `g` (changed in place) run at other sizes of the dynamic input
    axes, and return {value: {axis: dim_param}} for the graph's inputs and outputs."""
    spec = _dynamic_spec(g, dynamic_axes, renames)
    if not any(spec.get(i) for i in g.inputs):
        return spec
    probe = Graph(g.name)           # the same graph, the dynamic input axes at other sizes
    for name in g.inputs:
        shape = list(g.values[name].shape)
        for axis in spec.get(name, {}):
            shape[axis] += 2
        probe.add_input(name, shape, g.values[name].dtype)
    for name, array in g.constants.items():
        probe.add_constant(name, array)
    for node in g.nodes:
        if node.op in _SHAPE_FIXES:
            _SHAPE_FIXES[node.op](g, probe, node)
        try:
            probe.add_node(node.op, node.inputs, node.outputs, node.name, **node.attrs)
        except GraphError as e:
            raise ValueError(f"onnx.export: dynamic_axes {dynamic_axes} cannot be honoured: node "
                             f"{node.name!r} ({node.op}) does not take the inputs at another "
                             f"size of those axes ({e})") from None
    for name in g.outputs:
        grown = [k for k, (a, p) in enumerate(zip(g.values[name].shape,
                                                   probe.values[name].shape)) if a != p]
        dims = spec.setdefault(name, {})
        for k in grown:
            dims.setdefault(k, f"{renames.get(name, name)}_dim{k}")
    g.check()
    return spec


def _replace_input(g, probe, node, k, array, hint):
    name = g.add_constant(g.fresh_name(hint), array)
    probe.add_constant(name, array)
    node.inputs[k] = name


def _fix_reshape(g, probe, node):
    """A Reshape's shape constant: an entry that copies a dynamic input dim at its place
    becomes 0; if the element count still disagrees, one entry becomes -1."""
    x, shape_name = node.inputs[:2]
    old, new = g.values[x].shape, probe.values[x].shape
    if old == new or shape_name not in g.constants:
        return
    target = [int(t) for t in g.constants[shape_name]]
    grown = {k for k, (a, p) in enumerate(zip(old, new)) if a != p}
    fixed = [0 if k in grown and k < len(old) and t == old[k] else t
             for k, t in enumerate(target)]
    count = int(np.prod(new))

    def fits(t):
        dims = [new[k] if d == 0 else d for k, d in enumerate(t)]
        known = int(np.prod([d for d in dims if d != -1]))
        return count % known == 0 if -1 in dims else known == count

    if not fits(fixed) and -1 not in fixed:
        for j in range(len(fixed)):
            trial = fixed[:j] + [-1] + fixed[j + 1:]
            if fixed[j] != 0 and fits(trial):
                fixed = trial
                break
    if fixed != target:
        _replace_input(g, probe, node, 1, np.asarray(fixed, np.int64), "shape")


def _fix_expand(g, probe, node):
    """An Expand's shape constant: an entry equal to a dynamic input dim becomes 1 (keep)."""
    x, shape_name = node.inputs[:2]
    old, new = g.values[x].shape, probe.values[x].shape
    if old == new or shape_name not in g.constants:
        return
    target = [int(t) for t in g.constants[shape_name]]
    off = len(target) - len(old)
    fixed = [1 if k - off >= 0 and old[k - off] != new[k - off] and t == old[k - off] else t
             for k, t in enumerate(target)]
    if fixed != target:
        _replace_input(g, probe, node, 1, np.asarray(fixed, np.int64), "shape")


_SHAPE_FIXES = {"Reshape": _fix_reshape, "Expand": _fix_expand}


# ---- step 3: the protobuf ---------------------------------------------------------------------
def _attr_value(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, tuple):
        return [_attr_value(x) for x in v]
    if isinstance(v, list):
        return [_attr_value(x) for x in v]
    return v


def _node_form(onnx, g, node, opset, extra_inits):
    """(op_type, inputs, attrs) of `node` in the form of `opset`."""
    op, inputs = node.op, list(node.inputs)
    attrs = {k: _attr_value(v) for k, v in node.attrs.items()}
    if op == "mte.Gelu":
        op = "Gelu"
    elif op == "Cast":
        attrs["to"] = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(attrs["to"]))
    elif op in AXES_INPUT_SINCE and opset >= AXES_INPUT_SINCE[op] and "axes" in attrs:
        name = f"{node.name}/axes"
        extra_inits.append((name, np.asarray(attrs.pop("axes"), np.int64)))
        inputs = inputs[:1] + [name]
    elif op == "Split" and opset >= 18 and len(inputs) > 1 and inputs[1] in g.constants:
        sizes = [int(s) for s in g.constants[inputs[1]]]
        if len(set(sizes)) == 1:
            inputs, attrs["num_outputs"] = inputs[:1], len(sizes)
    while inputs and not inputs[-1]:
        inputs.pop()
    return op, inputs, attrs


def _tensor_type(onnx, v, dims, name):
    shape = [dims.get(k, d) for k, d in enumerate(v.shape)]
    return onnx.helper.make_tensor_value_info(
        name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(v.dtype)), shape)


def _to_model(onnx, g, opset, renames, dims):
    from .._version import __version__
    h = onnx.helper
    rn = lambda n: renames.get(n, n) if n else n
    extra, nodes = [], []
    for node in g.nodes:
        op, ins, attrs = _node_form(onnx, g, node, opset, extra)
        nodes.append(h.make_node(op, [rn(i) for i in ins], [rn(o) for o in node.outputs],
                                 name=node.name, **attrs))
    used = {i for n in nodes for i in n.input}
    inits = [onnx.numpy_helper.from_array(np.ascontiguousarray(a), rn(name))
             for name, a in g.constants.items() if rn(name) in used]
    inits += [onnx.numpy_helper.from_array(a, name) for name, a in extra]
    graph = h.make_graph(
        nodes, g.name,
        [_tensor_type(onnx, g.values[i], dims.get(i, {}), rn(i)) for i in g.inputs],
        [_tensor_type(onnx, g.values[o], dims.get(o, {}), rn(o)) for o in g.outputs],
        initializer=inits,
        doc_string=f"graph {g.name!r}: {len(nodes)} nodes, {len(inits)} initializers")
    imports = [h.make_opsetid("", opset)]
    model = h.make_model(graph, opset_imports=imports, producer_name="minitorch_edge",
                         producer_version=__version__,
                         doc_string=f"{g.name} exported by minitorch_edge {__version__} "
                                    f"(ONNX opset {opset})")
    model.ir_version = h.find_min_ir_version_for(imports)
    return model
