"""Running a graph: the reference evaluator and the planned executor.

`run_reference(graph, inputs)` evaluates node after node on fresh arrays: the simplest
possible reading of the graph, used by the tests as the oracle and by `Graph.run`.

`Executor(graph)` (also `graph.compile()`) is what a deployment calls many times:

* the graph is checked once, and a memory plan made (graph/planner.py): every intermediate
  value gets an offset in one arena, allocated once;
* each node becomes a step (the op's run function, its attributes, where its inputs come
  from, the arena view its output goes to); ops that can write into a given array
  (``writes_out``) do so, the others' results are copied into their place, and view ops
  (Reshape, Flatten, ...) are views of their input's buffer, as the planner arranged;
* weights are prepared once, when the steps are built: an op with a ``prepare`` rule (Conv,
  mte.ConvAct) has the backend choose its kernel for these shapes and prepare its constant
  weights (packed GEMM panels, Winograd-transformed filters) there and then; a first run at
  construction warms everything else (backend/prepared.py caches what a kernel derives from a
  constant, and graph constants never change).

So a steady-state call allocates its outputs (copied out of the arena, since the next call
overwrites it) and whatever a kernel needs internally (libmte takes that from its workspace
pool; the numpy twins allocate). It takes numpy arrays or Tensors and returns the same kind.

``backend="numpy"`` runs every step on the numpy twins (the readable reference), ``"native"``
on libmte where built; the default (None) uses whatever `minitorch_edge.backend` is bound to.

Two engines run those steps. ``engine="python"`` is the loop above: one Python call per node,
a few microseconds each. On the native backend the default ``engine="auto"`` hands the whole
graph to the C runtime instead (native/runtime/, inside the extension as `_C.RuntimeModel`):
the same model file bytes that `Graph.save` writes, loaded from memory, prepared with the same
libmte kernels and planned by the same greedy-by-size rule into an arena of the same size, and
run node after node in C with the GIL released. That removes the per-node Python cost (about
a tenth of MobileNetV2's time); the results are the same kernels' results. A graph the C
runtime refuses (an op without a C kernel, a weight computed at run time, a dtype the file
does not hold) runs on the Python engine; `engine="c"` makes that refusal an error instead,
and `runtime_refusal` says why "auto" fell back. `engine` tells which one runs.
"""
import numpy as np

from .. import backend as _backend
from ..tensor import Tensor
from . import opset

__all__ = ["ENGINES", "Executor", "evaluate", "run_reference"]

ENGINES = ("auto", "python", "c")


def _feed(graph, inputs, who):
    """Check the inputs against the graph's; returns (arrays, whether Tensors were given)."""
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)) and len(graph.inputs) > 1:
        inputs = tuple(inputs[0])
    if len(inputs) != len(graph.inputs):
        raise TypeError(f"{who}: the graph takes {len(graph.inputs)} inputs "
                        f"({', '.join(graph.inputs)}), got {len(inputs)}")
    arrays, tensors = [], False
    for name, x in zip(graph.inputs, inputs):
        if isinstance(x, Tensor):
            tensors, x = True, x._data
        x = np.asarray(x)
        v = graph.values[name]
        if x.shape != v.shape or x.dtype.name != v.dtype:
            raise ValueError(f"{who}: input {name!r} must be {v.describe()} (the shape and dtype "
                             f"the graph was traced with), got {x.dtype.name}{list(x.shape)}")
        arrays.append(x)
    return arrays, tensors


def _result(graph, arrays, tensors):
    outs = tuple(Tensor(a) if tensors else a for a in arrays)
    return outs[0] if len(outs) == 1 else outs


def evaluate(graph, inputs):
    """Every value of `graph` on `inputs` (numpy arrays or Tensors): {name: array}, computed
    node by node on fresh arrays (calibration reads the intermediates from it)."""
    arrays, _ = _feed(graph, inputs, "Graph.run")
    env = dict(graph.constants)
    env.update(zip(graph.inputs, arrays))
    for node in graph.nodes:
        args = [env[name] if name else None for name in node.inputs]
        for name, value in zip(node.outputs, opset.run_node(node, args)):
            env[name] = value
    return env


def run_reference(graph, inputs):
    """Evaluate `graph` on `inputs`, node by node, on fresh arrays."""
    _, tensors = _feed(graph, inputs, "Graph.run")
    env = evaluate(graph, inputs)
    return _result(graph, [np.array(env[name]) for name in graph.outputs], tensors)


class _UseBackend:
    """Bind the backend kernels to `name` for the duration of a call (None: leave them)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.prev = _backend.active()
        if self.name is not None and self.name != self.prev:
            _backend.use(self.name)

    def __exit__(self, *exc):
        if self.name is not None and _backend.active() != self.prev:
            _backend.use(self.prev)
        return False


class Executor:
    """A graph made ready to run many times; see the module docstring. Attributes: `graph`,
    `plan` (the MemoryPlan), `engine` ("c" or "python"), `arena` (the uint8 buffer holding
    every intermediate on the Python engine; the C runtime owns its own, of the same size:
    None here), `runtime_refusal` (why "auto" did not use the C runtime, or None)."""

    def __init__(self, graph, backend=None, prepare=True, engine="auto"):
        if backend not in (None, "numpy", "native"):
            raise ValueError(f"Executor: backend must be None, 'numpy' or 'native', got "
                             f"{backend!r}")
        if engine not in ENGINES:
            raise ValueError(f"Executor: engine must be one of {', '.join(map(repr, ENGINES))}, "
                             f"got {engine!r}")
        self.graph = graph.check()
        self.backend = backend
        self.plan = graph.plan_memory()
        self.arena, self._model, self.runtime_refusal = None, None, None
        if engine != "python":
            self._model, self.runtime_refusal = _c_runtime_model(graph, backend)
            if self._model is None and engine == "c":
                raise ValueError(f"Executor(engine='c'): {self.runtime_refusal}")
        self.engine = "c" if self._model is not None else "python"
        if self._model is None:
            self.arena = _aligned_bytes(self.plan.arena_bytes)
            self._slots = self._place()
            with _UseBackend(backend):
                self._steps = self._build_steps()
        if prepare:
            zeros = [np.zeros(graph.values[n].shape, graph.values[n].dtype) for n in graph.inputs]
            self(*zeros)

    def _place(self):
        """value name -> its array in the arena (the planned intermediates)."""
        slots = {}
        for name, offset in self.plan.offsets.items():
            v = self.graph.values[name]
            count = int(np.prod(v.shape, dtype=np.int64))
            nbytes = count * np.dtype(v.dtype).itemsize
            slots[name] = self.arena[offset:offset + nbytes].view(v.dtype).reshape(v.shape)
        return slots

    def _build_steps(self):
        """One step a node: (node, its run function, whether it writes into `out`, whether it
        is a view, its output slots). An op with a `prepare` rule gets the function it
        returns (kernel chosen and weights prepared now, once)."""
        steps, g = [], self.graph
        for node in g.nodes:
            spec = opset.OPS[node.op]
            outs = [self._slots.get(o) for o in node.outputs]
            run = None
            if spec.prepare is not None:
                values = [g.values[n] if n else None for n in node.inputs]
                consts = [g.constants.get(n) if n else None for n in node.inputs]
                fast = spec.prepare(node.attrs, values, consts)
                if fast is not None:
                    run = fast
            if run is None:
                run = _bound(spec.run, node.attrs, spec.writes_out)
            steps.append((node, run, spec.writes_out, spec.alias, outs))
        return steps

    def __call__(self, *inputs):
        arrays, tensors = _feed(self.graph, inputs, "Executor")
        if self._model is not None:
            outs = self._model.run([np.ascontiguousarray(a) for a in arrays])
            return _result(self.graph, outs, tensors)
        env = self._run_steps(arrays)
        return _result(self.graph, [np.array(env[name]) for name in self.graph.outputs], tensors)

    def _run_steps(self, arrays, clock=None, times=None):
        """The Python engine: every step on `arrays`; returns the values by name. With a
        `clock`, appends (node, start, end) of each step to `times`."""
        env = dict(self.graph.constants)
        env.update(zip(self.graph.inputs, arrays))
        with _UseBackend(self.backend):
            for node, run, writes_out, alias, outs in self._steps:
                if clock is not None:
                    start = clock()
                args = [env[name] if name else None for name in node.inputs]
                out = outs[0] if len(outs) == 1 else None
                if writes_out and out is not None:
                    results = run(*args, out=out)
                else:
                    results = run(*args)
                if not isinstance(results, tuple):
                    results = (results,)
                for name, value, slot in zip(node.outputs, results, outs):
                    if slot is not None and value is not slot and not alias:
                        np.copyto(slot, value)
                        value = slot
                    env[name] = value
                if clock is not None:
                    times.append((node, start, clock()))
        return env

    def profile(self, *inputs, repeats=10, warmup=2):
        """Run the graph `warmup` times, then `repeats` times timing every node; returns a
        profiler result (as ``profiler.profile`` gives: ``.key_averages().table()``,
        ``.export_chrome_trace(path)``, ``.events()``) with one row per node, named by the
        node, its op and output shapes in the event, under one "Executor.run" range per run.
        The Python engine times each step; the C engine reports its nodes' times through
        ``_C.RuntimeModel.run_profiled``."""
        import threading
        import time
        from ..profiler import _table
        if not (isinstance(repeats, int) and repeats >= 1 and isinstance(warmup, int)
                and warmup >= 0):
            raise ValueError(f"Executor.profile: repeats must be an int >= 1 and warmup an int "
                             f">= 0, got repeats={repeats!r}, warmup={warmup!r}")
        if self._model is not None and not hasattr(self._model, "run_profiled"):
            raise RuntimeError("Executor.profile: this build's C runtime has no run_profiled; "
                               "build the extension again or use Executor(engine='python')")
        arrays, _ = _feed(self.graph, inputs, "Executor.profile")
        for _ in range(warmup):
            self(*inputs)
        nodes = {n.name: n for n in self.graph.nodes}
        clock, t0, tid = time.perf_counter_ns, time.perf_counter_ns(), threading.get_ident()
        events = []

        def node_event(name, op, start_ns, end_ns):
            node = nodes.get(name)
            shapes = ([list(self.graph.values[o].shape) for o in node.outputs if o]
                      if node is not None else None)
            events.append(_table.Event(name or op, "cpu_op", start_ns - t0, end_ns - t0, tid,
                                       input_shapes=shapes, args={"op": op, "engine": self.engine}))
        c_arrays = [np.ascontiguousarray(a) for a in arrays]
        for _ in range(repeats):
            start = clock()
            if self._model is not None:
                _, timings = self._model.run_profiled(c_arrays)
                end = clock()
                for name, op, t, dur in timings:
                    s_ns = start + int(t * 1e9)
                    node_event(name, op, s_ns, min(s_ns + int(dur * 1e9), end))
            else:
                times = []
                self._run_steps(arrays, clock, times)
                end = clock()
                for node, s_ns, e_ns in times:
                    node_event(node.name, node.op, s_ns, e_ns)
            events.append(_table.Event(f"Executor.run#{self.graph.name}", "user_annotation",
                                       start - t0, end - t0, tid))
        result = _table.ProfileResult()
        result._set_events(events, show={"record_shapes": True,
                                         "shapes_header": "Output Shapes"},
                           base_ns=time.time_ns() - (clock() - t0))
        return result

    def __repr__(self):
        return (f"Executor({self.graph.name}: {len(self.graph.nodes)} nodes, arena "
                f"{self.plan.arena_bytes:,} bytes, {self.engine} engine)")


def _c_runtime_model(graph, backend):
    """(`_C.RuntimeModel` of `graph`, None), or (None, why the C runtime cannot run it)."""
    if (backend or _backend.active()) != "native":
        return None, "the C runtime runs libmte's kernels: the backend is numpy"
    try:
        from .. import _C
    except ImportError:
        return None, "the native extension minitorch_edge._C is not built"
    if not hasattr(_C, "RuntimeModel"):
        return None, "this build of minitorch_edge._C has no C runtime (RuntimeModel)"
    python_only = opset.python_only(graph)
    if python_only:
        return None, (f"the C runtime has no kernel for {', '.join(python_only)} (Python-only "
                      f"ops, graph/opset_onnx_*.py)")
    from .modelfile import to_bytes
    try:
        return _C.RuntimeModel.from_bytes(to_bytes(graph), graph.name), None
    except ValueError as e:          # a dtype the file does not hold, or the runtime's refusal
        return None, str(e)


def _bound(run, attrs, writes_out):
    """An op's run function with its attributes bound: f(*arrays[, out])."""
    if writes_out:
        return lambda *arrays, out=None: run(attrs, *arrays, out=out)
    return lambda *arrays: run(attrs, *arrays)


def _aligned_bytes(nbytes, align=64):
    """A uint8 buffer of `nbytes` whose start is aligned to `align` bytes (SIMD loads)."""
    raw = np.empty(nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + nbytes]
