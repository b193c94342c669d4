"""What a profile holds and how it is shown: events, their averages per name, torch's table and
the Chrome trace; standard library only.

An `Event` is one timed range on one thread (a forward op, a backward node, a native kernel, a
``record_function`` range, a graph node): name, category, start and end in nanoseconds from the
profile's start, the thread, optional input shapes, sequence number, FLOPs and the bytes
allocated (positive) or freed (negative) while it was the innermost open range ("self"
memory). `link_tree` nests the events of each thread by containment and derives self time
(total minus the children's totals) and total memory (self plus the children's totals).

`ProfileResult` is what every profiler returns (`profile`, `Executor.profile`, later the cffi
runtime's `Model.profile`): ``events()``, ``key_averages(group_by_input_shape)`` whose
``table(sort_by, row_limit)`` prints PyTorch's columns, and ``export_chrome_trace(path)``.
This module imports nothing of minitorch_edge, so a loader that must not import the tensor
library can use it.
"""
import json
import os
import tempfile

__all__ = ["Event", "EventList", "EventAverage", "KeyAverages", "ProfileResult", "link_tree",
           "format_time", "format_memory", "write_atomic"]

SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "cpu_time_avg", "count",
             "cpu_memory_usage", "self_cpu_memory_usage", "flops", "self_workspace_bytes")


class Event:
    """One timed range; times in ns from the profile start (see the module docstring)."""
    __slots__ = ("name", "cat", "start_ns", "end_ns", "tid", "input_shapes", "sequence_nr",
                 "flops", "self_cpu_memory_usage", "cpu_memory_usage", "workspace_bytes",
                 "args", "cpu_parent", "cpu_children", "self_ns", "id")

    def __init__(self, name, cat, start_ns, end_ns=None, tid=0, input_shapes=None,
                 sequence_nr=-1, flops=0, args=None):
        self.name, self.cat, self.start_ns, self.end_ns = name, cat, start_ns, end_ns
        self.tid, self.input_shapes, self.sequence_nr = tid, input_shapes, sequence_nr
        self.flops = flops
        self.self_cpu_memory_usage = self.cpu_memory_usage = self.workspace_bytes = 0
        self.args = args
        self.cpu_parent, self.cpu_children, self.self_ns, self.id = None, [], 0, -1

    key = property(lambda self: self.name)
    count = property(lambda self: 1)
    thread = property(lambda self: self.tid)
    cpu_time_total = property(lambda self: (self.end_ns - self.start_ns) / 1e3)   # microseconds
    self_cpu_time_total = property(lambda self: self.self_ns / 1e3)
    start_us = property(lambda self: self.start_ns / 1e3)
    end_us = property(lambda self: self.end_ns / 1e3)

    def __repr__(self):
        return (f"<Event {self.name} ({self.cat}) thread {self.tid} start {self.start_us:.1f}us "
                f"total {self.cpu_time_total:.1f}us self {self.self_cpu_time_total:.1f}us>")


def link_tree(events):
    """Nest the events of each thread by containment (parent = the innermost range that holds
    an event), set each one's self time and total memory, and number them; returns them
    ordered by (thread, start)."""
    events = sorted(events, key=lambda e: (e.tid, e.start_ns, -e.end_ns))
    stack, tid = [], None
    for i, e in enumerate(events):
        e.id, e.cpu_parent, e.cpu_children = i, None, []
        if e.tid != tid:
            stack, tid = [], e.tid
        while stack and stack[-1].end_ns <= e.start_ns:
            stack.pop()
        if stack and e.end_ns <= stack[-1].end_ns:
            e.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(e)
        stack.append(e)
    for e in reversed(events):        # children come after their parents: totals bottom-up
        e.self_ns = (e.end_ns - e.start_ns) - sum(c.end_ns - c.start_ns for c in e.cpu_children)
        e.cpu_memory_usage = e.self_cpu_memory_usage + sum(c.cpu_memory_usage
                                                           for c in e.cpu_children)
    return events


class EventAverage:
    """The events of one name (and input shapes, when grouped so) summed: torch's
    FunctionEventAvg. Times in microseconds."""

    def __init__(self, key, input_shapes=None):
        self.key, self.input_shapes = key, input_shapes
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = self.flops = 0
        self.self_workspace_bytes = 0
        self.cat = None

    def add(self, e):
        self.count += 1
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage
        self.flops += e.flops
        self.self_workspace_bytes = max(self.self_workspace_bytes, e.workspace_bytes)
        self.cat = self.cat or e.cat
        if self.input_shapes is None:
            self.input_shapes = e.input_shapes

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    cpu_time_avg = cpu_time

    def __repr__(self):
        return (f"<EventAverage {self.key} count={self.count} cpu_time_total="
                f"{self.cpu_time_total:.1f}us self={self.self_cpu_time_total:.1f}us>")


class KeyAverages(list):
    """A list of EventAverage rows with torch's ``table()``."""

    def __init__(self, rows, show=None):
        super().__init__(rows)
        self.show = show or {}

    def table(self, sort_by="cpu_time_total", row_limit=100, max_name_column_width=55,
              header=None, top_level_events_only=False):
        """torch's key_averages().table(): one row per name, sorted by `sort_by` (descending),
        the first `row_limit` rows (-1: all); footer "Self CPU time total"."""
        return format_table(self, sort_by, row_limit, max_name_column_width, header,
                            **self.show)

    def __str__(self):
        return self.table()


class EventList(list):
    """``prof.events()``: the Events, with torch's shortcuts."""

    def __init__(self, events, show=None):
        super().__init__(events)
        self.show = show or {}

    def key_averages(self, group_by_input_shape=False):
        return key_averages(self, group_by_input_shape, self.show)

    def table(self, sort_by="cpu_time_total", row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)


def key_averages(events, group_by_input_shape=False, show=None):
    """Rows of EventAverage per name (and input shapes), in first-seen order."""
    rows = {}
    for e in events:
        shapes = e.input_shapes
        key = (e.name, _shape_key(shapes)) if group_by_input_shape else e.name
        row = rows.get(key)
        if row is None:
            row = rows[key] = EventAverage(e.name, shapes if group_by_input_shape else None)
        row.add(e)
    return KeyAverages(rows.values(), show)


def _shape_key(shapes):
    return json.dumps(shapes) if shapes is not None else ""


# ---- torch's table ------------------------------------------------------------------------------
def format_time(us):
    """torch's _format_time: microseconds as "1.234s", "1.234ms" or "1.234us"."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes):
    """torch's _format_memory: "1.50 Gb", "2.00 Mb", "512.00 Kb" or "12 b" (1024-based)."""
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} Gb"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} Mb"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} Kb"
    return f"{int(nbytes)} b"


def format_table(rows, sort_by="cpu_time_total", row_limit=100, max_name_column_width=55,
                 header=None, profile_memory=False, record_shapes=False, with_flops=False,
                 with_workspace=False, shapes_header="Input Shapes"):
    """The table of torch's key_averages().table() for `rows` (EventAverage or Event)."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f"table: sort_by={sort_by!r} is not a column; use one of "
                         f"{', '.join(SORT_KEYS)}")
    rows = sorted(rows, key=lambda r: getattr(r, sort_by), reverse=True)
    self_total = sum(r.self_cpu_time_total for r in rows) or 1e-9
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    name_w = min(max([len(r.key) for r in rows] + [4]) + 4, max_name_column_width)
    cols = [("Name", name_w, "<"), ("Self CPU %", 12, ">"), ("Self CPU", 12, ">"),
            ("CPU total %", 12, ">"), ("CPU total", 12, ">"), ("CPU time avg", 12, ">")]
    if profile_memory:
        cols += [("CPU Mem", 12, ">"), ("Self CPU Mem", 12, ">")]
    if with_workspace:
        cols += [("Workspace", 12, ">")]
    cols += [("# of Calls", 12, ">")]
    if record_shapes:
        shapes_w = min(max([len(str(r.input_shapes or [])) for r in rows] + [12]) + 2, 80)
        cols += [(shapes_header, shapes_w, "<")]
    if with_flops:
        cols += [("Total MFLOPs", 12, ">")]
    fmt = "  ".join("{:" + align + str(width) + "}" for _, width, align in cols)
    line = "  ".join("-" * width for _, width, _ in cols)
    out = [header] if header else []
    out += [line, fmt.format(*[c[0] for c in cols]), line]
    for r in rows:
        name = r.key if len(r.key) <= name_w - 3 else r.key[:name_w - 6] + "..."
        cells = [name, f"{r.self_cpu_time_total * 100 / self_total:.2f}%",
                 format_time(r.self_cpu_time_total),
                 f"{r.cpu_time_total * 100 / self_total:.2f}%", format_time(r.cpu_time_total),
                 format_time(r.cpu_time_total / max(r.count, 1))]
        if profile_memory:
            cells += [format_memory(r.cpu_memory_usage), format_memory(r.self_cpu_memory_usage)]
        if with_workspace:
            ws = getattr(r, "self_workspace_bytes", 0)
            cells += [format_memory(ws) if ws else "--"]
        cells += [str(r.count)]
        if record_shapes:
            cells += [str(r.input_shapes if r.input_shapes is not None else [])]
        if with_flops:
            cells += [f"{r.flops / 1e6:,.3f}" if r.flops else "--"]
        out.append(fmt.format(*cells))
    out += [line, f"Self CPU time total: {format_time(self_total)}", ""]
    return "\n".join(out)


# ---- Chrome trace -------------------------------------------------------------------------------
def chrome_trace(events, pid=None, instants=(), base_ns=0):
    """The Trace Event format dict: one complete event (ph "X", ts/dur in microseconds) per
    Event; a forward op and the backward node that has its sequence number are linked by a flow
    (ph "s" at the forward, ph "f" at the backward, cat "fwdbwd", as torch writes it); memory
    changes are instant events named "[memory]". `instants` are (ts_ns, tid, bytes, in_use)."""
    pid = os.getpid() if pid is None else pid
    out, forward_of = [], {}
    for e in events:
        args = dict(e.args or {})
        if e.input_shapes is not None:
            args["Input Dims"] = e.input_shapes
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        if e.flops:
            args["flops"] = e.flops
        if e.self_cpu_memory_usage:
            args["Self CPU Mem (bytes)"] = e.self_cpu_memory_usage
        if e.workspace_bytes:
            args["Native workspace (bytes)"] = e.workspace_bytes
        out.append({"ph": "X", "cat": e.cat, "name": e.name, "pid": pid, "tid": e.tid,
                    "ts": e.start_ns / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3, "args": args})
        if e.sequence_nr >= 0 and e.cat == "cpu_op" and not e.name.endswith("Backward0"):
            forward_of.setdefault(e.sequence_nr, e)
    for e in events:
        fwd = forward_of.get(e.sequence_nr) if e.name.endswith("Backward0") else None
        if fwd is not None:
            common = {"cat": "fwdbwd", "name": "fwdbwd", "id": e.sequence_nr, "pid": pid}
            out.append(dict(common, ph="s", tid=fwd.tid, ts=fwd.start_ns / 1e3))
            out.append(dict(common, ph="f", bp="e", tid=e.tid, ts=e.start_ns / 1e3))
    for ts_ns, tid, nbytes, in_use in instants:
        out.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]",
                    "pid": pid, "tid": tid, "ts": ts_ns / 1e3,
                    "args": {"Bytes": nbytes, "Total Allocated": in_use, "Device Type": 0}})
    return {"schemaVersion": 1, "deviceProperties": [], "baseTimeNanoseconds": base_ns,
            "displayTimeUnit": "ms", "traceEvents": out}


def write_atomic(path, data, mode="w"):
    """Write `data` to `path` through a temporary file in the same folder and a rename, so a
    reader never sees half a file."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ProfileResult:
    """What a profiler returns: the finished events and what to show of them. Subclasses fill
    `_events` (Events), `_instants` (memory changes) and `_show` (which optional columns)."""
    _events = ()
    _instants = ()
    _show = None
    _base_ns = 0

    def _set_events(self, events, instants=(), show=None, base_ns=0):
        self._events = EventList(link_tree(events), show or self._show)
        self._instants = list(instants)
        self._show = show or self._show
        self._base_ns = base_ns

    def events(self):
        return self._events if isinstance(self._events, EventList) else EventList([])

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return self.events().key_averages(group_by_input_shape)

    def table(self, sort_by="cpu_time_total", row_limit=100, **kwargs):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    @property
    def self_cpu_time_total(self):
        return self.events().self_cpu_time_total

    def export_chrome_trace(self, path):
        """Write the Trace Event JSON ({"traceEvents": [...]}) to `path`, atomically."""
        trace = chrome_trace(self.events(), instants=self._instants, base_ns=self._base_ns)
        write_atomic(path, json.dumps(trace))
        return path
