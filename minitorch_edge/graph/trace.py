"""Tracing: run a Module once on example inputs and record the built-in Functions it applies as
a Graph (graph/ir.py).

    g = graph.trace(model, x)             # or graph.trace(model, x, mask) for several inputs
    print(g)

How: every built-in Function's ``apply`` calls `_Recording.trace` when it is set (autograd/
function.py: the same place where `record_tape` and anomaly mode observe ops). The tracer
keeps the Tensors it has seen, by identity, with the graph value each one is; a Function's
Tensor arguments are looked up there (a parameter or buffer of the module that was not seen
becomes a named constant, e.g. ``features.0.weight``; any other Tensor an anonymous
constant), its other arguments are read by its entry in the mapping table (graph/mapping.py)
which emits the ONNX-named nodes that compute the same thing, and its outputs become those
nodes' outputs. Each emitted output's shape and dtype are checked against what eager
computed, so a wrong mapping is caught when it is traced, not when it is run.

The module runs in eval mode (restored afterwards) under no_grad. Like torch.jit.trace, the
graph is what this one forward did: Python control flow (an ``if`` on a tensor's value, a loop
whose length depends on the data) is frozen to the branch the example took, and shapes are
the example's. A Function without an entry in the table raises an error naming it and the
module path where it was applied.
"""
import numpy as np

from ..autograd.function import _Recording
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .ir import Graph, GraphError

__all__ = ["TraceError", "trace"]


class TraceError(GraphError):
    """An op that the graph cannot express, named with the module path where it ran."""


_UNSEEN = object()


class _Builder:
    """What a mapping entry works with: value names for arguments (`value`, `const`), node
    emission (`emit`), and the module path of the op being traced (for node names)."""

    def __init__(self, graph, named_tensors):
        self.graph = graph
        self.values = {}            # id(Tensor) -> value name
        self.keep = []              # the Tensors in `values`, kept alive so ids stay unique
        self.versions = {}          # id(Tensor) -> its version counter when it was bound
        self.arrays = {}            # id(Tensor._data) -> value name: a Function handed the
        #                             array of a traced Tensor (e.g. embedding's indices)
        self.named = named_tensors  # id(parameter or buffer) -> its state_dict name
        self.path = []              # module path stack while the forward runs
        self.fn_name = ""

    # ---- values -----------------------------------------------------------------------------
    def bind(self, tensor, name):
        self.values[id(tensor)] = name
        self.arrays[id(tensor._data)] = name
        self.versions[id(tensor)] = tensor._vc[0]
        self.keep.append(tensor)

    def value(self, t, dtype=None):
        """The value name of Tensor (or array) `t`; constants are added on first sight. With
        `dtype`, a Cast is emitted if t has another dtype."""
        if isinstance(t, Tensor):
            name = self.values.get(id(t), _UNSEEN)
            if name is None:
                self.fail("it reads an output that the graph does not compute (e.g. max "
                          "pooling's indices)")
            if name is not _UNSEEN and self.versions.get(id(t)) != t._vc[0]:
                self.fail("it reads a tensor that was changed in place by an operation the "
                          "tracer does not follow; use the out-of-place op")
            if name is _UNSEEN:
                name = self.graph.add_constant(self.named.get(id(t), "const"), t._data.copy())
                self.bind(t, name)
        elif isinstance(t, np.ndarray) and id(t) in self.arrays:
            name = self.arrays[id(t)]
        else:
            name = self.const(np.asarray(t))
        if dtype is not None and self.graph.values[name].dtype != np.dtype(dtype).name:
            name = self.emit("Cast", [name], to=np.dtype(dtype).name)
        return name

    def const(self, array, hint="const"):
        return self.graph.add_constant(hint, np.asarray(array))

    def ints(self, values, hint="shape"):
        return self.const(np.asarray(list(values), np.int64), hint)

    def dtype(self, name):
        return self.graph.values[name].dtype

    def shape(self, name):
        return self.graph.values[name].shape

    # ---- nodes ------------------------------------------------------------------------------
    def emit(self, op, inputs, n_out=1, **attrs):
        """Add a node; returns its output name (a list when n_out > 1)."""
        where = self.where() or "<top>"
        hint = op.split(".")[-1]
        outs = [self.graph.fresh_name(hint.lower()) for _ in range(n_out)]
        self.graph.add_node(op, inputs, outs, name=self.graph.fresh_name(f"{where}/{hint}"),
                            **attrs)
        return outs if n_out > 1 else outs[0]

    def where(self):
        """The path of the innermost module running now (named_modules() gives full paths)."""
        return self.path[-1] if self.path else ""

    def fail(self, why):
        where = self.where() or "the top-level module"
        raise TraceError(f"graph.trace: {self.fn_name} applied in {where}: {why}")


class _Tracer:
    """The callback set as `_Recording.trace` while a trace runs."""

    def __init__(self, builder, table):
        self.b, self.table = builder, table

    def __call__(self, cls, args, result):
        b = self.b
        b.fn_name = cls.__name__
        if not cls._builtin:
            return self._user_function(cls, result)
        entry = self.table.get(cls)
        if entry is None:
            b.fail("this op has no graph mapping (graph/mapping.py lists the ones that have); "
                   "express it with supported ops or add a mapping")
        outputs = result if isinstance(result, tuple) else (result,)
        if any(isinstance(a, Tensor) and id(a) in b.values and b.values[id(a)] is None
               for a in args):    # reads a value the graph does not compute (max pooling's
            for t in outputs:     # indices): so are its outputs; using them fails later
                if isinstance(t, Tensor):
                    b.values[id(t)] = None
                    b.keep.append(t)
            return
        names = entry(b, result, *args)
        names = names if isinstance(names, (list, tuple)) else [names]
        if len(names) != len(outputs):
            b.fail(f"the mapping gives {len(names)} outputs, the op returned {len(outputs)}")
        for t, name in zip(outputs, names):
            if t is None:
                continue
            if name is None:           # an output the graph does not compute
                b.values[id(t)] = None
                b.keep.append(t)
                continue
            v = b.graph.values[name]
            if v.shape != tuple(t._data.shape) or v.dtype != t._data.dtype.name:
                b.fail(f"the mapping gives {v.describe()} but eager computed "
                       f"{t._data.dtype.name}{list(t._data.shape)} (a bug in the mapping)")
            b.bind(t, name)


    def rebind(self, tensor, result):
        """An in-place op wrote `result` into `tensor`: from now on, tensor is result's value."""
        name = self.b.values.get(id(result))
        if name is not None:
            self.b.bind(tensor, name)

    def _user_function(self, cls, result):
        """A custom Function's forward ran Tensor ops, which were traced one by one: its
        outputs are those ops' results, or aliases of them (same array)."""
        b = self.b
        by_array = {id(t._data): name for t in b.keep
                    if (name := b.values.get(id(t))) is not None}
        for t in (result if isinstance(result, tuple) else (result,)):
            if not isinstance(t, Tensor) or id(t) in b.values:
                continue
            name = by_array.get(id(t._data))
            if name is None:
                b.fail("a custom Function whose output was not computed by traced built-in ops "
                       "(it computes in numpy itself); write its forward with Tensor ops")
            b.bind(t, name)


def _flat_tensors(obj, what):
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, np.ndarray):
        return [Tensor._make(obj)]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _flat_tensors(o, what)]
    raise TraceError(f"graph.trace: {what} must be Tensors, numpy arrays or tuples of them, got "
                     f"{type(obj).__name__}")


def trace(module, *example_inputs, name=None, check=True):
    """Record one forward of `module` on `example_inputs` (Tensors or numpy arrays; see the
    module docstring) and return it as a checked Graph. Inputs are named ``input`` (or
    ``input_0``, ``input_1``, ...), outputs ``output`` (``output_0``, ...); a module that
    returns a tuple gives a graph with several outputs. With `check`, the graph is run once
    by the reference executor and must reproduce the eager outputs."""
    from . import mapping_composite  # noqa: F401  (registers the composite mappings into TABLE)
    from .mapping import TABLE
    if not callable(module):
        raise TypeError(f"graph.trace: expected a Module or callable, got {type(module).__name__}")
    inputs = [t if isinstance(t, Tensor) else Tensor._make(np.array(t)) for t in example_inputs]
    if not inputs:
        raise TraceError("graph.trace: give at least one example input")
    graph = Graph(name or type(module).__name__)
    named = {}
    if hasattr(module, "state_dict"):
        for key, t in list(module.named_parameters()) + list(module.named_buffers()):
            named.setdefault(id(t), key)
    b = _Builder(graph, named)
    in_names = ["input"] if len(inputs) == 1 else [f"input_{i}" for i in range(len(inputs))]
    traced_inputs = []
    for t, in_name in zip(inputs, in_names):
        t = t.detach()
        graph.add_input(in_name, t._data.shape, t._data.dtype)
        b.bind(t, in_name)
        traced_inputs.append(t)
    hooks, was_training = _path_hooks(module, b), getattr(module, "training", None)
    if was_training is not None:
        module.eval()
    prev = _Recording.trace
    _Recording.trace = _Tracer(b, TABLE)
    try:
        with no_grad():
            result = module(*traced_inputs)
    finally:
        _Recording.trace = prev
        for h in hooks:
            h.remove()
        if was_training:
            module.train()
    outputs = _flat_tensors(result, "the module's outputs")
    out_names = ["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]
    b.path = []
    final = []
    for t, out_name in zip(outputs, out_names):
        src = b.value(t)
        graph.add_node("Identity", [src], [out_name], name=graph.fresh_name("output/Identity"))
        final.append(out_name)
    graph.set_outputs(final)
    graph.remove_unused_values()
    graph.check()
    if check:
        _check_against_eager(graph, traced_inputs, outputs)
    return graph


def _path_hooks(module, b):
    """Forward pre/post hooks on every submodule keep `b.path` = the running module's path."""
    if not hasattr(module, "named_modules"):
        return []
    hooks = []
    for path, sub in module.named_modules():
        def pre(m, args, path=path):
            b.path.append(path)

        def post(m, args, out):
            b.path.pop()
        hooks.append(sub.register_forward_pre_hook(pre))
        hooks.append(sub.register_forward_hook(post))
    return hooks


def _check_against_eager(graph, inputs, outputs):
    got = graph.run(*[t._data for t in inputs])
    got = got if isinstance(got, tuple) else (got,)
    for name, g, t in zip(graph.outputs, got, outputs):
        want = t._data
        if g.shape != want.shape or (want.size and not np.allclose(
                g, want, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want).max())),
                equal_nan=True)):
            raise TraceError(f"graph.trace: the traced graph's output {name!r} differs from "
                             f"eager (a mapping bug, or the forward reads data the tracer does "
                             f"not see, e.g. through .numpy()); max difference "
                             f"{np.abs(g.astype(np.float64) - want).max() if g.shape == want.shape else 'shape ' + str(g.shape)}")
