"""The profiler: torch.profiler's `profile`, `record_function`, `schedule` and
`tensorboard_trace_handler`, recording into a `_Recorder` while it runs.

How ops reach it: `autograd.function._Recording.profile` is None when no profiler runs; every
Function.apply tests it once (the whole cost when off). While a profiler records, it holds the
`_Recorder`, whose ``op`` times the apply (the built-in forward runs with the flag cleared: it
works on numpy arrays, so no op nests inside it), ``backward`` times each node's backward in
the engine, and ``call`` times a range (optimizer step, DataLoader ``__next__``). Native
kernels are timed by swapping the ``_C`` of each ``backend/native_*`` module for a proxy whose
functions open a "kernel" range around every call that is given an array; the proxy is only
installed while recording. (While a built-in forward runs on one thread, another thread's
ops are not recorded: the flag is process-wide.)

Memory (``profile_memory=True``), the rule: an op allocates the memory of each result array
whose underlying buffer (the root of its ``.base`` chain) is new, i.e. is not the buffer of an
input and not already tracked; its size is that buffer's ``nbytes``. The memory is freed when
that buffer is garbage collected (a weak reference's callback), and the free (negative bytes)
goes to the innermost range open on that thread at that moment (e.g. the backward node that
drops saved tensors). A backward node allocates its new gradient arrays. Self memory is what
was allocated and freed while a range was the innermost one; total adds its children. The peak
is the most bytes held by tracked buffers at once during the profile. A kernel's native
workspace is the peak of libmte's workspace arenas (``_C.arena_peak_bytes``, Winograd's own)
during the call.
"""
import contextlib
import enum
import functools
import os
import socket
import sys
import threading
import time
import warnings
import weakref

import numpy as np

from ..autograd import function as _function
from ..autograd.function import _Recording
from ..tensor import Tensor
from . import _table

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1     # accepted for torch compatibility; nothing runs on a GPU here
    XPU = 2
    MTIA = 3


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*args, wait=None, warmup=None, active=None, repeat=0, skip_first=0,
             skip_first_wait=0):
    """torch.profiler.schedule: step -> ProfilerAction. After `skip_first` steps, cycles of
    `wait` idle, `warmup` warming and `active` recorded steps (the last one RECORD_AND_SAVE),
    `repeat` cycles (0: forever)."""
    names = ("wait", "warmup", "active", "repeat", "skip_first")
    given = dict(zip(names, args))
    wait = given.get("wait", wait)
    warmup = given.get("warmup", warmup)
    active = given.get("active", active)
    repeat = given.get("repeat", repeat)
    skip_first = given.get("skip_first", skip_first)
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if not isinstance(v, int) or v < (1 if name == "active" else 0):
            raise ValueError(f"schedule: {name} must be an integer >= "
                             f"{1 if name == 'active' else 0}, got {v!r}")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results")

    def schedule_fn(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _default_schedule(step):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """on_trace_ready that writes ``<dir_name>/<worker>.<ms>.pt.trace.json`` (the layout of
    TensorBoard's profile plugin), atomically."""
    def handler(prof):
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json"
        path = os.path.join(os.fspath(dir_name), name)
        if use_gzip:
            import gzip
            import json
            data = gzip.compress(json.dumps(_table.chrome_trace(
                prof.events(), instants=prof._instants, base_ns=prof._base_ns)).encode())
            _table.write_atomic(path + ".gz", data, mode="wb")
        else:
            prof.export_chrome_trace(path)
    return handler


# ---- what a running profiler records into -------------------------------------------------------
def _root(a):
    """The array that owns a's memory (the end of its .base chain of arrays)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _matmul_flops(args, out):
    k = args[0]._data.shape[-1] if args[0]._data.ndim else 1
    return 2 * out.size * k


def _addmm_flops(args, out):
    return 2 * out.size * args[0]._data.shape[-1]


def _conv_flops(args, out):          # Convolution(x, w, b, geom): 2 N K Ho Wo (C/g) kh kw
    return 2 * out.size * int(np.prod(args[1]._data.shape[1:]))


def _conv_input_flops(args, out):    # ConvBackwardInput(gy, w, ...): the same product
    return 2 * args[0]._data.size * int(np.prod(args[1]._data.shape[1:]))


def _conv_weight_flops(args, out):   # ConvBackwardWeight(gy, x, w_shape, ...)
    return 2 * args[0]._data.size * int(np.prod(args[2][1:]))


# forward FLOPs per Function class name (a subclass takes its base's rule), from its arguments
# and its (first) result array
FLOPS = {"Mm": _matmul_flops, "Addmm": _addmm_flops, "_LinearMasked": _addmm_flops,
         "Convolution": _conv_flops, "ConvBackwardInput": _conv_input_flops,
         "ConvBackwardWeight": _conv_weight_flops}


def _addmm_backward_flops(grads, result):
    """dx = G W and dW = G^T X, each 2 * rows * out * in, computed on arrays by the node."""
    if grads[0] is None:
        return 0
    made = [g for g in result[:2] if g is not None]
    return sum(2 * grads[0]._data.size * g._data.shape[-1] for g in made)


# backward FLOPs of the nodes that compute on arrays themselves, by the forward class's name
# (the others call Functions, which are counted as their children)
BACKWARD_FLOPS = {"Addmm": _addmm_backward_flops, "_LinearMasked": _addmm_backward_flops}


def _rule(table, cls):
    """The rule of cls or of its nearest base in `table`, or None."""
    for klass in cls.__mro__:
        rule = table.get(klass.__name__)
        if rule is not None:
            return rule
    return None


class _Recorder:
    """The events of one recording window (see the module docstring)."""

    def __init__(self, record_shapes, profile_memory, with_flops, with_stack):
        self.shapes = record_shapes or with_flops
        self.record_shapes, self.memory, self.flops = record_shapes, profile_memory, with_flops
        self.stack_on = with_stack
        self.active = False
        self.events, self.instants = [], []
        self.open = {}                 # thread id -> stack of open Events
        self.live = {}                 # id(weakref) -> (weakref, id(root), nbytes)
        self.live_roots = set()
        self.in_use = self.peak = 0
        self.t0 = time.perf_counter_ns()
        self.proxies = []

    # ---- ranges ----------------------------------------------------------------------------
    def begin(self, name, cat, shapes=None, seq=-1):
        tid = threading.get_ident()
        e = _table.Event(name, cat, time.perf_counter_ns() - self.t0, tid=tid,
                         input_shapes=shapes, sequence_nr=seq)
        stack = self.open.get(tid)
        if stack is None:
            stack = self.open[tid] = []
        stack.append(e)
        if self.stack_on:
            e.args = {"Call stack": _user_frames()}
        return e

    def end(self, e):
        e.end_ns = time.perf_counter_ns() - self.t0
        stack = self.open.get(e.tid)
        if stack and stack[-1] is e:
            stack.pop()
        elif stack and e in stack:
            stack.remove(e)
        if self.active:
            self.events.append(e)

    def call(self, name, cat, fn, *args, **kwargs):
        """fn(*args, **kwargs) inside a range `name`."""
        e = self.begin(name, cat)
        try:
            return fn(*args, **kwargs)
        finally:
            self.end(e)

    # ---- ops -------------------------------------------------------------------------------
    def op(self, cls, args, builtin):
        """Function.apply of cls on args, timed (called by Function.apply when the flag is set;
        `builtin`: from the built-ins' fast apply)."""
        shapes = None
        if self.shapes:
            shapes = [list(a._data.shape) if isinstance(a, Tensor) else [] for a in args]
        e = self.begin(cls.__name__, "cpu_op", shapes)
        try:
            if builtin:
                _Recording.profile = None       # a built-in's forward nests no op
                try:
                    result = _function._apply_builtin(cls, *args)
                finally:
                    if self.active:
                        _Recording.profile = self
            else:
                result = _function._apply_general_body(cls, args)
            outputs = result if isinstance(result, tuple) else (result,)
            for t in outputs:
                if isinstance(t, Tensor) and t._fn is not None and t._fn._fn is cls:
                    e.sequence_nr = t._fn._seq
                    break
            rule = _rule(FLOPS, cls) if self.flops else None
            if rule is not None and isinstance(outputs[0], Tensor):
                e.flops = rule(args, outputs[0]._data)
            if self.memory:
                self.track(outputs, args, e)
            return result
        finally:
            self.end(e)

    def backward(self, node, grads, call_backward):
        """call_backward(node, grads) (the engine's), timed as the node's name with its
        sequence number."""
        shapes = None
        if self.shapes:
            shapes = [list(g._data.shape) if isinstance(g, Tensor) else [] for g in grads]
        name = node.name()
        e = self.begin(name, "cpu_op", shapes, seq=node._seq)
        try:
            result = call_backward(node, grads)
            rule = _rule(BACKWARD_FLOPS, node._fn) if self.flops else None
            if rule is not None:
                e.flops = rule(grads, result)
            if self.memory:
                self.track(result, grads, e)
            return result
        finally:
            self.end(e)

    # ---- memory ----------------------------------------------------------------------------
    def track(self, outputs, inputs, event):
        """Count the new buffers of `outputs` as allocated by `event` (the module's rule)."""
        in_roots = {id(_root(a._data)) for a in inputs if isinstance(a, Tensor)}
        for t in outputs:
            if not isinstance(t, Tensor):
                continue
            root = _root(t._data)
            key = id(root)
            if key in in_roots or key in self.live_roots:
                continue
            nbytes = int(root.nbytes)
            try:
                ref = weakref.ref(root, self._freed)
            except TypeError:
                continue
            self.live[id(ref)] = (ref, key, nbytes)
            self.live_roots.add(key)
            in_roots.add(key)
            event.self_cpu_memory_usage += nbytes
            self._changed(nbytes, event.tid)

    def _freed(self, ref):
        entry = self.live.pop(id(ref), None)
        if entry is None or not self.active:
            return
        self.live_roots.discard(entry[1])
        tid = threading.get_ident()
        stack = self.open.get(tid)
        if stack:
            stack[-1].self_cpu_memory_usage -= entry[2]
        self._changed(-entry[2], tid)

    def _changed(self, nbytes, tid):
        self.in_use += nbytes
        self.peak = max(self.peak, self.in_use)
        self.instants.append((time.perf_counter_ns() - self.t0, tid, nbytes, self.in_use))

    # ---- on / off --------------------------------------------------------------------------
    def start(self):
        if _Recording.profile is not None:
            raise RuntimeError("profile: another profiler is already recording; finish it "
                               "(leave its with-block) before starting a new one")
        self.active = True
        self.proxies = _install_kernel_proxies(self)
        _Recording.profile = self

    def stop(self):
        if _Recording.profile is self:
            _Recording.profile = None
        self.active = False
        for module, real in self.proxies:
            module._C = real
        self.proxies = []
        now = time.perf_counter_ns() - self.t0
        for stack in self.open.values():   # ranges still open: closed at the stop
            for e in stack:
                e.end_ns = now
                self.events.append(e)
        self.open = {}
        self.live.clear()                  # their weak references die: no callbacks later
        self.live_roots.clear()


def _user_frames(limit=5):
    """'file:line: function' of the innermost frames outside minitorch_edge."""
    frames, f = [], sys._getframe(2)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    while f is not None and len(frames) < limit:
        if not f.f_code.co_filename.startswith(package):
            frames.append(f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return frames


class _KernelProxy:
    """Stands for ``_C`` in a native backend module while recording: each function call given
    an array runs inside a "kernel" range named ``mte::<function>``."""

    def __init__(self, real, rec):
        self._real, self._rec = real, rec
        self._ws = rec.memory and hasattr(real, "arena_reset_peak")
        self._wino = self._ws and hasattr(real, "winograd_workspace_reset_peak")

    def __getattr__(self, name):
        fn = getattr(self._real, name)
        if not callable(fn) or isinstance(fn, type):
            return fn
        rec, real, ws, wino = self._rec, self._real, self._ws, self._wino

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if not rec.active or not any(type(a) is np.ndarray for a in args):
                return fn(*args, **kwargs)
            e = rec.begin("mte::" + name, "kernel")
            if ws:
                real.arena_reset_peak()
                if wino:
                    real.winograd_workspace_reset_peak()
            try:
                return fn(*args, **kwargs)
            finally:
                if ws:
                    e.workspace_bytes = int(real.arena_peak_bytes()) + (
                        int(real.winograd_workspace_peak_bytes()) if wino else 0)
                rec.end(e)
        self.__dict__[name] = timed
        return timed


def _install_kernel_proxies(rec):
    """Swap the _C of every loaded backend/native_* module for a proxy; returns what to undo."""
    undo = []
    for name, module in list(sys.modules.items()):
        if name.startswith("minitorch_edge.backend.native_") and hasattr(module, "_C"):
            real = module._C
            if isinstance(real, _KernelProxy):
                real = real._real
            module._C = _KernelProxy(real, rec)
            undo.append((module, real))
    return undo


# ---- the public API -----------------------------------------------------------------------------
class record_function(contextlib.ContextDecorator):
    """A named range in the profile (cat "user_annotation"); a context manager and a decorator.
    Costs one flag check when no profiler records."""

    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a str, got {type(name).__name__}")
        self.name, self.args = name, args
        self._event = self._rec = None

    def __enter__(self):
        rec = _Recording.profile
        if rec is not None:
            self._rec, self._event = rec, rec.begin(self.name, "user_annotation")
            if self.args:
                self._event.args = dict(self._event.args or {}, args=self.args)
        return self

    def __exit__(self, *exc):
        if self._event is not None:
            self._rec.end(self._event)
            self._event = self._rec = None
        return False


class profile(_table.ProfileResult):
    """torch.profiler.profile: a context manager that records what runs inside it.

    ``prof.step()`` marks a training step: with a `schedule`, steps are waited, warmed and
    recorded as it says ("ProfilerStep#N" ranges), and `on_trace_ready(prof)` runs at the end
    of each recorded cycle (and, without a schedule, once at the end). Then ``prof.events()``,
    ``prof.key_averages().table()`` and ``prof.export_chrome_trace(path)`` show the last
    recorded window. `activities` is accepted for compatibility (CPU is what runs);
    `with_stack` keeps the caller's frames in each event's args."""

    def __init__(self, activities=None, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, schedule=None, on_trace_ready=None,
                 with_modules=False, experimental_config=None, use_cuda=None,
                 acc_events=False):
        if activities is not None:
            for a in activities:
                if not isinstance(a, ProfilerActivity):
                    raise TypeError(f"profile: activities must be ProfilerActivity members, "
                                    f"got {a!r}")
        if schedule is not None and not callable(schedule):
            raise TypeError(f"profile: schedule must be a callable step -> ProfilerAction "
                            f"(profiler.schedule(...)), got {schedule!r}")
        self.activities = set(activities or [ProfilerActivity.CPU])
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops = with_stack, with_flops
        self.schedule = schedule or _default_schedule
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = None
        self.peak_memory_bytes = 0
        self._rec = None
        self._step_event = None
        self._show = {"profile_memory": profile_memory, "record_shapes": record_shapes,
                      "with_flops": with_flops, "with_workspace": profile_memory}

    # ---- the window's life ------------------------------------------------------------------
    def _prepare(self):
        self._rec = _Recorder(self.record_shapes, self.profile_memory, self.with_flops,
                              self.with_stack)

    def _start(self):
        if self._rec is None:
            self._prepare()
        self._rec.start()

    def _stop(self):
        rec = self._rec
        if rec is None:
            return
        self._end_step()
        rec.stop()
        self._rec = None
        self.peak_memory_bytes = rec.peak
        base = time.time_ns() - (time.perf_counter_ns() - rec.t0)
        self._set_events(rec.events, rec.instants, self._show, base_ns=base)

    def _ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, prev, cur):
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev in (None, A.NONE):
            if cur == A.WARMUP:
                self._prepare()
            elif cur in recording:
                self._start()
        elif prev == A.WARMUP:
            if cur in recording or cur is None or cur == A.NONE:
                self._start()
            if cur is None or cur == A.NONE:
                self._stop()
        elif prev == A.RECORD:
            if cur in (A.NONE, A.WARMUP) or cur is None:
                self._stop()
                if cur is None:
                    self._ready()
        elif prev == A.RECORD_AND_SAVE:
            self._stop()
            self._ready()
            if cur == A.WARMUP:
                self._prepare()
            elif cur in recording:
                self._start()

    def _begin_step(self):
        rec = self._rec
        if self.record_steps and rec is not None and rec.active:
            self._step_event = rec.begin(f"ProfilerStep#{self.step_num}", "user_annotation")

    def _end_step(self):
        if self._step_event is not None and self._rec is not None:
            self._rec.end(self._step_event)
        self._step_event = None

    def start(self):
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._transit(None, self.current_action)
        self._begin_step()

    def stop(self):
        self._end_step()
        self._transit(self.current_action, None)

    def step(self):
        """One training step done: move along the schedule."""
        self._end_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._begin_step()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __del__(self):
        rec = self.__dict__.get("_rec")
        if rec is not None and rec.active:
            rec.stop()
