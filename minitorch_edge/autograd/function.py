"""Function and Node: how one op records itself so that backward can replay it.

A `Function` subclass gives two static methods:

* ``forward(ctx, *args)`` computes the result. Built-in ops (``_builtin = True``) read the numpy
  arrays inside their Tensor arguments (``x._data``) and return numpy arrays; user Functions, as
  in PyTorch, take and return Tensors and run with grad mode off.
* ``backward(ctx, *grad_outputs)`` returns one gradient per forward argument (None where there is
  none). It is written with Tensor ops, so with ``create_graph=True`` the backward pass is itself
  recorded and can be differentiated again.

`Function.apply` runs forward and, when grad mode is on and an input requires grad, turns the
`ctx` into a `Node`: the ``grad_fn`` of the outputs. A node keeps its saved tensors, the edges to
its inputs' nodes (``next_functions``) and a sequence number; `engine.py` replays nodes in
decreasing sequence order. Nodes are owned by the tensors that need them, so a forward pass that
is never differentiated frees its nodes with its tensors: nothing global grows.

`Function.apply` is the algorithm as written; built-in ops run `_apply_builtin`, the same steps
with the common case (one numpy array out) inlined, since it is paid on every op.

While a profiler records, ``_Recording.profile`` holds it and both applies hand the call to it
(profiler/_profile.py); when none records, that one test is all the profiler costs.

Naming: a built-in Function's class name is PyTorch's grad_fn name without the trailing
``Backward0`` (so ``y.grad_fn`` prints as PyTorch's does: ``Mul`` -> ``MulBackward0``,
``Convolution`` -> ``ConvolutionBackward0``, ``MaxPool2DWithIndices`` ->
``MaxPool2DWithIndicesBackward0``, ``AvgPool2D`` -> ``AvgPool2DBackward0``); a helper Function
with no PyTorch counterpart gets a descriptive name. A user Function's node is named
``<ClassName>Backward``, as in PyTorch.
"""
import itertools
import traceback

import numpy as np

from ..dtypes import is_float_dtype as _is_float
from ..tensor import Tensor
from .grad_mode import _State

_sequence = itertools.count()


class _Recording:
    tape = None       # a list while autograd.record_tape() is active
    anomaly = False   # True inside detect_anomaly()
    trace = None      # trace(cls, args, result) after every apply while graph.trace() runs
    profile = None    # the profiler's _Recorder while one records (profiler/_profile.py)


FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


class Node:
    """The record of one op: ``ctx`` during forward/backward and ``grad_fn`` of its outputs.

    Class attributes give the defaults, so recording an op only sets what differs (this is the
    hot path of every recorded op)."""
    _next = ()            # per input: (node, output_nr), (leaf_tensor, None) or None
    _seq = -1             # sequence number: the position on the tape
    _saved = None         # saved tensors: (tensor, counter, version, array, output_nr) entries
    _out_meta = ()        # per output: (shape, numpy dtype)
    _non_diff = None
    _pre_hooks = None     # tensor hooks on outputs: {output_nr: [hook, ...]}
    _retain = None        # retain_grad(): {output_nr: weakref to tensor}
    _freed = False
    _stack = None         # forward stack, recorded in anomaly mode
    _tensor_slots = None  # user Functions: which arguments were Tensors (for next_functions)
    _dirty = None         # user Functions: the inputs forward changed in place (mark_dirty)
    materialize_grads = True
    needs_input_grad = ()

    def __init__(self, fn):
        self._fn = fn

    # ---- the ctx API used inside forward/backward ------------------------------------------
    def save_for_backward(self, *tensors):
        """Keep tensors for backward; each remembers its version so that a later in-place change
        is detected when backward reads it. (Built-in ops may also pass Python scalars, which
        are kept as they are.)"""
        saved = []
        for t in tensors:
            if isinstance(t, Tensor):
                vc = t._vc
                saved.append((t, vc, vc[0], None, -1))
            else:
                saved.append((t, None, None, None, -2))
        self._saved = saved

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is None:
            if self._freed:
                raise RuntimeError(FREED_MSG)
            return ()
        return tuple(self._unpack(entry) for entry in saved)

    def _unpack(self, entry):
        tensor, counter, version, array, out_index = entry
        if counter is None:          # None or a Python scalar
            return tensor
        if counter[0] != version:
            from ..tensor import describe
            shown = tensor if tensor is not None else array
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{describe(shown)}], saved by {self.name()}, is at version "
                f"{counter[0]}; expected version {version} instead. The in-place op that changed "
                f"it was {counter[1]}_. Hint: use the out-of-place op ({counter[1]}) instead, or "
                f"clone() the tensor before modifying it.")
        if tensor is None:  # one of our own outputs: rebuild a Tensor that points back to us
            tensor = Tensor._make(array, self, out_index, counter)
        return tensor

    def mark_non_differentiable(self, *outputs):
        self._non_diff = [id(o) for o in outputs]

    def mark_dirty(self, *tensors):
        """Declare the inputs that forward modified in place (a user Function only; call it in
        forward, once). Each must be returned as an output: apply then returns that very tensor
        (not an alias), bumps its version counter, and, when recording, rebases its history onto
        this Function (its grad_fn becomes this node, whose edge for that input still leads to
        the input's old history), as PyTorch does."""
        self._dirty = tuple(tensors)

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    # ---- introspection ------------------------------------------------------------------------
    def name(self):
        return self._fn.__name__ + ("Backward0" if self._fn._builtin else "Backward")

    @property
    def next_functions(self):
        """One (node, output_nr) per input: (AccumulateGrad, 0) for a leaf, (None, 0) where no
        gradient flows. A user Function lists only its Tensor arguments, as PyTorch does."""
        out = []
        edges = self._next
        if self._tensor_slots is not None:
            edges = [e for e, is_tensor in zip(edges, self._tensor_slots) if is_tensor]
        for edge in edges:
            if edge is None:
                out.append((None, 0))
            elif edge[1] is None:
                out.append((AccumulateGrad(edge[0]), 0))
            else:
                out.append(edge)
        return tuple(out)

    @property
    def metadata(self):
        return self.__dict__.setdefault("_metadata", {})

    def register_prehook(self, hook):
        """hook(grad_outputs) -> new grad_outputs or None, called before this node's backward."""
        self.__dict__.setdefault("_node_prehooks", []).append(hook)

    def register_hook(self, hook):
        """hook(grad_inputs, grad_outputs) -> new grad_inputs or None, called after backward."""
        self.__dict__.setdefault("_node_hooks", []).append(hook)

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad:
    """Stands for a leaf in ``next_functions`` (the engine adds into ``leaf.grad`` directly)."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


class _NoRecordCtx:
    """The ctx built-in ops get when nothing is recorded: saving is a no-op."""
    needs_input_grad = ()
    materialize_grads = True

    def save_for_backward(self, *tensors):
        pass

    def mark_non_differentiable(self, *outputs):
        pass


_NO_RECORD = _NoRecordCtx()
_new = object.__new__


class Function:
    """Base class of every differentiable op; see the module docstring."""
    _builtin = False
    is_view = False      # outputs may share the memory of input 0 (reshape, transpose, split)
    save_output = False  # built-ins: also save output 0 (appended after save_for_backward's)

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Function subclasses are used through their classmethod apply(), "
                           "not instantiated")

    def __init_subclass__(cls, **kwargs):
        """A built-in op gets the fast path `_apply_builtin` as its apply, chosen once, here, so
        that a call pays no dispatch (a class that defines or inherits its own apply keeps it)."""
        super().__init_subclass__(**kwargs)
        if ("apply" not in cls.__dict__
                and getattr(cls.apply, "__func__", None) in (_apply_builtin, _apply_general)):
            cls.apply = classmethod(_apply_builtin if cls._builtin else _apply_general)

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("a Function must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function must implement backward(ctx, *grad_outputs)")

    @classmethod
    def apply(cls, *args):
        """Run forward; when grad mode is on and an input requires grad, record a Node."""
        if _Recording.profile is not None:
            return _Recording.profile.op(cls, args, False)
        return _apply_general_body(cls, args)


_apply_general = Function.apply.__func__   # the function behind Function.apply


def _apply_general_body(cls, args):
    """Function.apply for user Functions (and built-ins that define their own apply)."""
    # which inputs need a gradient: none while grad mode is off
    if _State.enabled:
        needs = tuple([isinstance(a, Tensor) and a._rg for a in args])
    else:
        needs = (False,) * len(args)
    record = any(needs)
    # forward, with the ctx it saves into; to autograd it is one op, so grad mode is off
    ctx = Node(cls)
    ctx.needs_input_grad = needs
    prev = _State.enabled
    _State.enabled = False
    try:
        out = cls.forward(ctx, *args)
    finally:
        _State.enabled = prev
    # wrap the results as Tensors
    result, outputs = _wrap_outputs(cls, out, args, ctx._dirty)
    if ctx._dirty is not None:
        _mark_dirty_outputs(cls, ctx._dirty, args, outputs, record)
    # when recording, ctx becomes the Node behind the outputs
    if record:
        ctx._next = _edges(args, needs)          # where each input's gradient goes
        ctx._seq = next(_sequence)               # its place on the tape
        if not cls._builtin:
            ctx._tensor_slots = tuple([isinstance(a, Tensor) for a in args])
        _connect_outputs(ctx, cls, out, outputs)  # the outputs' grad_fn; saved outputs
        if _Recording.anomaly or _Recording.tape is not None:
            _observe(ctx, args, outputs)
    if _Recording.trace is not None:
        _Recording.trace(cls, args, result)
    return result


def _apply_builtin(cls, *args):
    """`Function.apply` for built-in ops, the hot path of every op: the same steps, with the
    common case (forward returns one numpy array) written out by hand. A built-in's forward reads
    and returns numpy arrays, so it runs in any grad mode and a ctx that saves nothing will do
    when nothing is recorded."""
    if _Recording.profile is not None:     # a profiler records: it times this call
        return _Recording.profile.op(cls, args, True)
    record = False
    if _State.enabled:
        needs = []                      # (plain loops: cheaper than comprehensions here)
        for a in args:
            n = isinstance(a, Tensor) and a._rg
            needs.append(n)
            record = record or n
    if record:
        ctx = _new(Node)
        ctx._fn = cls
        ctx.needs_input_grad = tuple(needs)
    else:
        ctx = _NO_RECORD
    out = cls.forward(ctx, *args)
    if out.__class__ is not np.ndarray:   # several outputs, or Tensors: the general way
        result, outputs = _wrap_outputs(cls, out, args)
        if record:
            ctx._next = _edges(args, needs)
            ctx._seq = next(_sequence)
            _connect_outputs(ctx, cls, out, outputs)
            if _Recording.anomaly or _Recording.tape is not None:
                _observe(ctx, args, outputs)
        if _Recording.trace is not None:
            _Recording.trace(cls, args, result)
        return result

    result = _new(Tensor)                 # Tensor._make, inlined
    result._data = out
    result._grad = result._fn = result._hooks = result._retains = result._base = None
    result._nr = 0
    result._vc = [0, None]
    result._rg = False
    if cls.is_view and out.base is not None:
        _share_version(result, args[0])
    if record:
        ctx._next = _edges(args, needs)
        ctx._seq = next(_sequence)
        ctx._out_meta = ((out.shape, out.dtype),)   # _connect_outputs, inlined
        if (out.dtype.kind == "f" or _is_float(out.dtype)) and ctx._non_diff is None:
            result._rg = True
            result._fn = ctx
        if cls.save_output:
            entry = (None, result._vc, result._vc[0], out, 0)
            ctx._saved = ctx._saved + [entry] if ctx._saved else [entry]
        if _Recording.anomaly or _Recording.tape is not None:
            _observe(ctx, args, (result,))
    if _Recording.trace is not None:
        _Recording.trace(cls, args, result)
    return result


def _wrap_outputs(cls, out, args, dirty=None):
    """forward's result as Tensors: (what apply returns, the tuple of outputs). Views share
    their base's version counter."""
    if isinstance(out, tuple):
        outputs = tuple([_as_output(o, args, dirty) for o in out])
        result = outputs
    else:
        result = _as_output(out, args, dirty)
        outputs = (result,)
    if cls.is_view:
        for o in outputs:
            if o is not None and o._data.base is not None:
                _share_version(o, args[0])
    return result, outputs


def _edges(args, needs):
    """Per argument: (node, output_nr) for a recorded tensor, (leaf, None) for a leaf that
    requires grad, None for anything else."""
    edges = []
    for a, n in zip(args, needs):
        if not n:
            edges.append(None)
        elif a._fn is not None:
            edges.append((a._fn, a._nr))
        else:
            edges.append((a, None))
    return tuple(edges)


def _share_version(view, base):
    """A view shares its base's version counter (an in-place change to one is a change to
    both) and remembers the base. numpy may also hand back a fresh copy that merely has a
    `.base`, so the memory is checked."""
    if np.may_share_memory(view._data, base._data):
        view._vc = base._vc
        view._base = base._base if base._base is not None else base


def _as_output(o, args, dirty=None):
    if isinstance(o, Tensor):
        if dirty is not None and any(o is d for d in dirty):
            return o                   # modified in place (mark_dirty): the tensor itself
        if any(o is a for a in args):  # an input returned as is: output a new alias of it
            return Tensor._make(o._data, vc=o._vc)
        return o
    if o is None:
        return None
    return Tensor._make(np.asarray(o))


def _mark_dirty_outputs(cls, dirty, args, outputs, record):
    """mark_dirty, after forward: every dirty tensor must be an output; its version goes up (it
    was changed in place); when recording, a leaf that requires grad or a view cannot be
    rebased (PyTorch raises for the leaf; for a view it would rewrite the base's history,
    which minitorch_edge does not do). `_connect_outputs` then makes the node its grad_fn."""
    import warnings
    name = cls.__name__
    for t in dirty:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: mark_dirty() takes Tensors, got {type(t).__name__}")
        if not any(t is o for o in outputs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not "
                               "returned as output. The inputs that are modified inplace must all "
                               f"be outputs of the Function ({name}: return the modified input "
                               "from forward).")
        if not any(t is a for a in args):
            warnings.warn("Only input Tensors should be given to ctx.mark_dirty(). If a Tensor "
                          "is not an input, there is no need to pass it to mark_dirty().")
            continue
        t._vc[0] += 1
        t._vc[1] = name
        if record and _is_float(t._data.dtype):
            if t._fn is None and t._rg:
                raise RuntimeError(f"a leaf Variable that requires grad has been used in an "
                                   f"in-place operation. ({name} marked it dirty: pass a clone "
                                   f"of it, or run the Function under no_grad().)")
            if t._base is not None:
                raise RuntimeError(f"{name}: an input marked dirty is a view of another tensor; "
                                   f"rebasing a view's history is not supported while autograd "
                                   f"records. Pass a clone() of the view instead.")


def _connect_outputs(ctx, cls, raw_out, outputs):
    """Make `ctx` the grad_fn of several (or Tensor-valued) outputs and fix up saved outputs."""
    non_diff = ctx._non_diff
    raws = raw_out if isinstance(raw_out, tuple) else (raw_out,)
    for k, t in enumerate(outputs):
        if t is None:
            continue
        if non_diff and (id(t) in non_diff or id(raws[k]) in non_diff):
            continue
        if _is_float(t._data.dtype):    # bfloat16 included
            t._rg = True
            t._fn = ctx
            t._nr = k
    ctx._out_meta = tuple([None if t is None else (t._data.shape, t._data.dtype)
                           for t in outputs])
    saved = ctx._saved
    if cls.save_output:
        t = outputs[0]
        entry = (None, t._vc, t._vc[0], t._data, 0)
        ctx._saved = saved + [entry] if saved else [entry]
    elif saved and not cls._builtin:
        # user Functions may save their own outputs: keep those by value, not by reference, so
        # that output -> grad_fn -> saved -> output forms no cycle
        ids = {id(t): k for k, t in enumerate(outputs) if t is not None}
        for i, entry in enumerate(saved):
            if entry is not None and id(entry[0]) in ids:
                k = ids[id(entry[0])]
                t = outputs[k]
                saved[i] = (None, t._vc, t._vc[0], t._data, k)


def _observe(ctx, args, outputs):
    """Anomaly mode keeps the forward stack; record_tape() lists the node."""
    if _Recording.anomaly:
        ctx._stack = "".join(traceback.format_stack(limit=12)[:-2])
    if _Recording.tape is not None:
        _Recording.tape.append((ctx, [_meta(a) for a in args], [_meta(t) for t in outputs]))


def _meta(x):
    data = getattr(x, "_data", None)
    if data is None:
        return repr(x) if not isinstance(x, (list, tuple)) or len(x) < 6 else f"<{len(x)} items>"
    return (tuple(data.shape), data.dtype.name, bool(x._rg))
