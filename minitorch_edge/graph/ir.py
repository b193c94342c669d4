"""The graph IR: a model as plain data that passes, the memory planner, the executor, the model
file and ONNX all read and write.

A `Graph` holds

* values: every tensor that flows, by name, each a `Value` (shape, dtype, optional
  quantisation parameters). Shapes are static: what the example inputs had when traced;
* constants: values with data (weights, folded results): name -> numpy array;
* nodes: the ops, in topological order (a node only reads graph inputs, constants and the
  outputs of earlier nodes). A `Node` has an op name, input and output value names and
  attributes. Op names and attributes are ONNX's (opset 17) wherever ONNX has the op
  ("Conv", "Gemm", "Relu", ...); our fused ops live in the ``mte`` domain ("mte.ConvAct", ...)
  and each documents the ONNX subgraph it replaces (graph/opset_*.py);
* inputs and outputs: the names of the values fed in and returned.

An optional input of a node that is left out is the empty name "" (ONNX's convention).

Every value's shape and dtype are inferred from its producer by the op's rule (`opset.infer`)
and checked by `Graph.check()`: it runs when a graph is traced, loaded, or changed by a pass,
and raises `GraphError` naming the node for a reference to an undefined value, a value
defined twice, a cycle or out-of-order node, an unknown op or a shape that disagrees.

    g = graph.trace(model, x)      # graph/trace.py
    print(g)                       # the listing: one line per node
    g.to_dot()                     # the same as a Graphviz DOT picture (graph/dot.py)
    g = g.optimize()               # graph/passes/: folding, fusion, clean-up
    plan = g.plan_memory()         # graph/planner.py: one arena for all intermediates
    run = g.compile()              # graph/executor.py: y = run(x)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Graph", "GraphError", "Node", "Value"]


class GraphError(ValueError):
    """A malformed graph: the message names the node and what is wrong with it."""


@dataclass
class Value:
    """A tensor that flows through the graph: its name, static shape, dtype (a numpy dtype
    name, e.g. "float32") and, for int8 graphs, quantisation parameters."""
    name: str
    shape: tuple
    dtype: str = "float32"
    quant: dict | None = None

    def __post_init__(self):
        self.shape = tuple(int(d) for d in self.shape)
        self.dtype = np.dtype(self.dtype).name

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def describe(self):
        return f"{self.dtype}{list(self.shape)}"


@dataclass
class Node:
    """One op: ``outputs = op(inputs; attrs)``. `name` is unique in its graph (the tracer uses
    the module path where the op was applied, e.g. "features.3.conv.0/Conv")."""
    op: str
    inputs: list
    outputs: list
    attrs: dict = field(default_factory=dict)
    name: str = ""

    def __str__(self):
        attrs = "".join(f", {k}={_short(v)}" for k, v in self.attrs.items())
        ins = ", ".join(i or "<none>" for i in self.inputs)
        return f"{', '.join(self.outputs)} = {self.op}({ins}{attrs})"


def _short(v):
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}" if v.size > 8 else repr(v.tolist())
    if isinstance(v, float):
        return f"{v:.6g}"
    return repr(v)


class Graph:
    """Values, constants and nodes in topological order, with named inputs and outputs (see the
    module docstring). Build one with `add_input`, `add_constant`, `add_node` and
    `set_outputs`, or get one from `graph.trace`; passes return new graphs (`copy()`)."""

    def __init__(self, name="graph"):
        self.name = name
        self.values = {}      # name -> Value (inputs, constants and node outputs alike)
        self.constants = {}   # name -> numpy array
        self.nodes = []
        self.inputs = []
        self.outputs = []
        self._counter = 0

    # ---- building --------------------------------------------------------------------------
    def fresh_name(self, hint="v"):
        """A value or node name not used yet in this graph, built from `hint`."""
        taken = {n.name for n in self.nodes}
        while True:
            self._counter += 1
            name = f"{hint}_{self._counter}"
            if name not in self.values and name not in taken:
                return name

    def add_input(self, name, shape, dtype="float32"):
        self._new_value(name, shape, dtype, "graph input")
        self.inputs.append(name)
        return name

    def add_constant(self, name, array):
        array = np.asarray(array)
        if name in self.values:
            name = self.fresh_name(name)
        self._new_value(name, array.shape, array.dtype, "constant")
        self.constants[name] = array
        return name

    def add_node(self, op, inputs, outputs=None, name=None, infer=True, **attrs):
        """Append a node; its outputs' shapes and dtypes come from the op's rule (opset.infer).
        `outputs`: names (fresh ones are made when None: one output). Returns the node."""
        from . import opset
        if outputs is None:
            outputs = [self.fresh_name(op.split(".")[-1].lower())]
        node = Node(op, list(inputs), list(outputs), dict(attrs),
                    name or self.fresh_name(op.split(".")[-1]))
        if infer:
            specs = opset.infer(self, node)
            for out, (shape, dtype) in zip(node.outputs, specs):
                self._new_value(out, shape, dtype, f"node {node.name} ({node.op})")
        self.nodes.append(node)
        return node

    def set_outputs(self, names):
        self.outputs = list(names)

    def _new_value(self, name, shape, dtype, what):
        if not name:
            raise GraphError(f"{what}: a value needs a non-empty name")
        if name in self.values:
            raise GraphError(f"{what}: value {name!r} is defined twice")
        self.values[name] = Value(name, shape, dtype)

    # ---- reading ---------------------------------------------------------------------------
    def producers(self):
        """value name -> the node that writes it (graph inputs and constants have none)."""
        return {out: node for node in self.nodes for out in node.outputs}

    def consumers(self):
        """value name -> the nodes that read it, in order (a graph output is also read by the
        caller: see `is_output`)."""
        users = {}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    users.setdefault(name, []).append(node)
        return users

    def is_constant(self, name):
        return name in self.constants

    def node(self, name):
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"graph {self.name!r} has no node named {name!r}")

    def copy(self):
        """A new Graph with its own lists, dicts, nodes and values (constant arrays are shared:
        passes replace them, they never write into them)."""
        g = Graph(self.name)
        g.values = {k: Value(v.name, v.shape, v.dtype, None if v.quant is None else dict(v.quant))
                    for k, v in self.values.items()}
        g.constants = dict(self.constants)
        g.nodes = [Node(n.op, list(n.inputs), list(n.outputs), dict(n.attrs), n.name)
                   for n in self.nodes]
        g.inputs, g.outputs = list(self.inputs), list(self.outputs)
        g._counter = self._counter
        return g

    def remove_unused_values(self):
        """Drop values (and constants) that no node, input or output mentions."""
        used = set(self.inputs) | set(self.outputs)
        for n in self.nodes:
            used.update(n.inputs)
            used.update(n.outputs)
        for name in [v for v in self.values if v not in used]:
            del self.values[name]
            self.constants.pop(name, None)

    # ---- checking --------------------------------------------------------------------------
    def check(self):
        """Validate the whole graph (see the module docstring); returns self."""
        from . import opset
        defined = set(self.inputs) | set(self.constants)
        for name in self.inputs:
            if name not in self.values:
                raise GraphError(f"graph input {name!r} has no Value")
            if name in self.constants:
                raise GraphError(f"graph input {name!r} is also a constant")
        for name, array in self.constants.items():
            v = self.values.get(name)
            if v is None or v.shape != array.shape or v.dtype != array.dtype.name:
                raise GraphError(f"constant {name!r}: its Value "
                                 f"{None if v is None else v.describe()} does not describe its "
                                 f"array {array.dtype.name}{list(array.shape)}")
        later = {out: k for k, n in enumerate(self.nodes) for out in n.outputs}
        names = set()
        for k, node in enumerate(self.nodes):
            where = f"node {node.name!r} ({node.op})"
            if node.name in names:
                raise GraphError(f"{where}: node name used twice")
            names.add(node.name)
            if not opset.known(node.op):
                raise GraphError(f"{where}: unknown op {node.op!r}; known ops: "
                                 f"{', '.join(opset.names())}")
            for name in node.inputs:
                if not name or name in defined:
                    continue
                if name in later and later[name] >= k:
                    raise GraphError(f"{where} reads {name!r}, which is written by a node at or "
                                     f"after it (node {self.nodes[later[name]].name!r}): the "
                                     f"graph has a cycle or is not in topological order")
                raise GraphError(f"{where} reads {name!r}, which is not defined (not an "
                                 f"input, a constant or an earlier node's output)")
            for out in node.outputs:
                if out in defined:
                    raise GraphError(f"{where}: output {out!r} is already defined")
                if out not in self.values:
                    raise GraphError(f"{where}: output {out!r} has no Value")
            specs = opset.infer(self, node)
            for out, (shape, dtype) in zip(node.outputs, specs):
                v = self.values[out]
                if v.shape != tuple(shape) or v.dtype != np.dtype(dtype).name:
                    raise GraphError(f"{where}: output {out!r} is recorded as {v.describe()} "
                                     f"but the op gives {np.dtype(dtype).name}{list(shape)}")
            defined.update(node.outputs)
        for name in self.outputs:
            if name not in defined:
                raise GraphError(f"graph output {name!r} is not defined by any node, input or "
                                 f"constant")
        return self

    # ---- showing ---------------------------------------------------------------------------
    def __str__(self):
        lines = [f"graph {self.name}("
                 + ", ".join(f"{i}: {self.values[i].describe()}" for i in self.inputs) + ")"]
        n_params = sum(a.size for a in self.constants.values())
        lines.append(f"  # {len(self.nodes)} nodes, {len(self.constants)} constants "
                     f"({n_params:,} elements)")
        for node in self.nodes:
            outs = ", ".join(f"{o}: {self.values[o].describe()}" for o in node.outputs)
            attrs = "".join(f", {k}={_short(v)}" for k, v in node.attrs.items())
            ins = ", ".join(self._show_input(i) for i in node.inputs)
            lines.append(f"  {outs} = {node.op}({ins}{attrs})    # {node.name}")
        lines.append("  return " + ", ".join(self.outputs))
        return "\n".join(lines)

    def _show_input(self, name):
        if not name:
            return "<none>"
        if name in self.constants:
            return f"{name}<{self.values[name].describe()}>"
        return name

    __repr__ = __str__

    def op_counts(self):
        """{op: how many nodes run it}, for reports and tests."""
        counts = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def to_dot(self, **options):
        from .dot import graph_to_dot
        return graph_to_dot(self, **options)

    # ---- the edge path ---------------------------------------------------------------------
    def optimize(self, passes=None):
        """The graph after `passes` (names or functions Graph -> Graph; default: all of
        graph.passes.DEFAULT, in that fixed order). The original is not changed."""
        from .passes import run_passes
        return run_passes(self, passes)

    def plan_memory(self, **options):
        from .planner import plan_memory
        return plan_memory(self, **options)

    def compile(self, **options):
        from .executor import Executor
        return Executor(self, **options)

    def save(self, path):
        """Write the graph and its constants as a model file (graph/modelfile.py; atomic)."""
        from .modelfile import save
        return save(self, path)

    def run(self, *inputs):
        """Evaluate once with the reference executor (numpy backend semantics, no planning):
        the tests' oracle. Returns one array or a tuple, like the traced module."""
        from .executor import run_reference
        return run_reference(self, inputs)
