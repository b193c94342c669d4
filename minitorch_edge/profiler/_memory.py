"""The memory analyser: where the bytes of one training step go.

`memory_summary(model, example_inputs, loss_fn=None, optimizer=None)` runs one step (forward,
loss, backward, optimizer step) under ``profile(profile_memory=True)`` and reports

* parameters, gradients and optimizer state: the ``nbytes`` of the distinct buffers held by
  ``model.parameters()``, their ``.grad`` and the tensors/arrays in ``optimizer.state``;
* saved activations by layer: before backward, the autograd graph is walked from the loss and
  every buffer a node keeps for backward (its saved tensors, arrays set on its ctx) is counted
  once, for the innermost module whose forward made that node (forward pre/post hooks take a
  sequence number each, so a node belongs to the module whose interval holds its number);
  parameters are not activations; nodes made outside any module count for "(outside modules)";
* peak: the most bytes held at once, the larger of (what was live before the step + the
  profiler's peak of tracked op results, see _profile.py) and what is live after it
  (parameters, gradients, optimizer state); plus the largest native workspace a libmte kernel
  used during the step.

`plot_memory_timeline(prof_or_summary, path)` draws the bytes held by tracked op results over
the profile (forward/backward/step ranges shaded) into a PNG, written atomically.
"""
import io

import numpy as np

from ..autograd import function as _function
from ..autograd.engine import reachable_nodes
from ..tensor import Tensor
from . import _table
from ._profile import _root, profile, record_function

__all__ = ["memory_summary", "MemorySummary", "plot_memory_timeline"]

OUTSIDE = "(outside modules)"


def _arrays(values):
    """The numpy arrays among values (Tensors give their data)."""
    for v in values:
        if isinstance(v, Tensor):
            yield v._data
        elif isinstance(v, np.ndarray):
            yield v


def _bytes(arrays, seen=None):
    """Bytes of the distinct buffers of `arrays` (adding their roots' ids to `seen`)."""
    seen = set() if seen is None else seen
    total = 0
    for a in arrays:
        root = _root(a)
        if id(root) not in seen:
            seen.add(id(root))
            total += int(root.nbytes)
    return total


def _saved_arrays(node):
    """The arrays a node keeps for backward: saved tensors and arrays set on its ctx."""
    for entry in node._saved or ():
        tensor, counter, _, array, _ = entry
        if isinstance(tensor, Tensor):
            yield tensor._data
        elif counter is not None and array is not None:
            yield array
    for key, value in node.__dict__.items():
        if not key.startswith("_"):
            if isinstance(value, (Tensor, np.ndarray)):
                yield from _arrays([value])
            elif isinstance(value, (tuple, list)):
                yield from _arrays(value)


class MemorySummary:
    """The figures of one step (bytes); str() is the table, as_dict() the numbers, `profile`
    the profile of the step (for plot_memory_timeline)."""

    def __init__(self, model_name, optimizer_name, parameters, gradients, optimizer_state,
                 activations, peak, native_workspace, baseline, prof):
        self.model_name, self.optimizer_name = model_name, optimizer_name
        self.parameters, self.gradients = parameters, gradients
        self.optimizer_state, self.activations = optimizer_state, activations
        self.peak, self.native_workspace, self.baseline = peak, native_workspace, baseline
        self.profile = prof

    @property
    def activations_total(self):
        return sum(self.activations.values())

    def as_dict(self):
        return {"parameters": self.parameters, "gradients": self.gradients,
                "optimizer_state": self.optimizer_state,
                "activations": dict(self.activations),
                "activations_total": self.activations_total, "peak": self.peak,
                "native_workspace": self.native_workspace}

    def __str__(self):
        fm = _table.format_memory
        rows = [("parameters", self.parameters), ("gradients", self.gradients),
                ("optimizer state", self.optimizer_state),
                ("saved activations", self.activations_total)]
        rows += [(f"  {name}", n) for name, n in self.activations.items()]
        rows += [("peak", self.peak), ("native workspace peak", self.native_workspace)]
        width = max(len(r[0]) for r in rows) + 2
        line = "-" * (width + 28)
        head = (f"Memory of one training step: {self.model_name}"
                + (f", {self.optimizer_name}" if self.optimizer_name else ""))
        out = [head, line, f"{'What':<{width}}{'Memory':>12}{'Bytes':>16}", line]
        out += [f"{name:<{width}}{fm(n):>12}{n:>16,}" for name, n in rows]
        out.append(line)
        return "\n".join(out)

    __repr__ = __str__


def memory_summary(model, example_inputs, loss_fn=None, optimizer=None):
    """Run one training step of `model` on `example_inputs` (a Tensor or a tuple of them) and
    return its MemorySummary (see the module docstring). The loss is ``loss_fn(output)``, or
    ``output.sum()`` without one; `optimizer` (optional) makes the step. The step really
    happens: parameters, gradients and optimizer state change as in training."""
    if not hasattr(model, "named_modules") or not callable(model):
        raise TypeError(f"memory_summary: model must be an nn.Module, got "
                        f"{type(model).__name__}")
    inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    params = list(model.parameters())
    param_roots = set()
    n_params = _bytes([p._data for p in params], param_roots)

    def held():
        grads = _bytes([p.grad._data for p in params if p.grad is not None])
        state = 0
        if optimizer is not None:
            for st in optimizer.state.values():
                state += _bytes(_arrays(st.values()))
        return grads, state

    grads0, state0 = held()
    baseline = n_params + grads0 + state0 + _bytes(_arrays(inputs))

    # forward hooks: each module's [start, end) of sequence numbers
    intervals, handles = [], []
    for name, module in model.named_modules():
        label = name or type(model).__name__
        label = f"{label} ({type(module).__name__})" if name else label
        opened = []

        def pre(mod, args, opened=opened):
            opened.append(next(_function._sequence))

        def post(mod, args, output, opened=opened, label=label):
            intervals.append((opened.pop(), next(_function._sequence), label))
        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]

    try:
        with profile(profile_memory=True) as prof:
            with record_function("forward"):
                output = model(*inputs)
                loss = loss_fn(output) if loss_fn is not None else output.sum()
            activations = _activations(loss, intervals, param_roots)
            with record_function("backward"):
                loss.backward()
            if optimizer is not None:
                with record_function("optimizer.step"):
                    optimizer.step()
    finally:
        for h in handles:
            h.remove()
    grads, state = held()
    peak = max(baseline + prof.peak_memory_bytes, n_params + grads + state)
    workspace = max([e.workspace_bytes for e in prof.events()] + [0])
    return MemorySummary(type(model).__name__, type(optimizer).__name__ if optimizer else None,
                         n_params, grads, state, activations, peak, workspace, baseline, prof)


def _activations(loss, intervals, param_roots):
    """{module label: bytes saved for backward by the nodes its forward made}."""
    if not isinstance(loss, Tensor) or loss._fn is None:
        raise ValueError("memory_summary: the loss has no autograd graph (does the model have "
                         "parameters that require grad, and is grad mode on?)")
    out = {label: 0 for _, _, label in sorted(intervals)}
    seen = set(param_roots)
    for node in reachable_nodes([loss._fn]):
        label = OUTSIDE
        best = -1
        for start, end, name in intervals:     # the innermost interval holding the node
            if start < node._seq < end and start > best:
                best, label = start, name
        n = _bytes(_saved_arrays(node), seen)
        if n or label == OUTSIDE:
            out[label] = out.get(label, 0) + n
    return {k: v for k, v in out.items() if v}


def plot_memory_timeline(prof_or_summary, path, title=None):
    """Plot the bytes held by tracked op results over the profile (a `profile` run with
    profile_memory=True, or a MemorySummary: then on top of what was live before the step) and
    write it as a PNG to `path`, atomically. Returns the path."""
    baseline = 0
    prof = prof_or_summary
    if isinstance(prof_or_summary, MemorySummary):
        prof, baseline = prof_or_summary.profile, prof_or_summary.baseline
    if not isinstance(prof, _table.ProfileResult):
        raise TypeError(f"plot_memory_timeline: expected a profile or a MemorySummary, got "
                        f"{type(prof_or_summary).__name__}")
    instants = prof._instants
    if not instants:
        raise ValueError("plot_memory_timeline: the profile holds no memory events; run it "
                         "with profile(profile_memory=True)")
    import matplotlib
    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure
    xs = [0.0] + [ts / 1e6 for ts, _, _, _ in instants]
    ys = [baseline / 2 ** 20] + [(baseline + in_use) / 2 ** 20 for _, _, _, in_use in instants]
    fig = Figure(figsize=(8, 3.5))
    ax = fig.add_subplot(1, 1, 1)
    ax.step(xs, ys, where="post", color="tab:blue")
    colors = ["tab:orange", "tab:green", "tab:red", "tab:purple"]
    annotations = [e for e in prof.events() if e.cat == "user_annotation" and e.cpu_parent is None]
    for i, e in enumerate(annotations[:12]):
        ax.axvspan(e.start_ns / 1e6, e.end_ns / 1e6, alpha=0.15, color=colors[i % len(colors)],
                   label=e.name)
    if annotations:
        ax.legend(loc="upper left", fontsize=8)
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("MiB held" + (" (incl. before the step)" if baseline else ""))
    ax.set_title(title or "Memory held by op results")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    _table.write_atomic(path, buf.getvalue(), mode="wb")
    return path
