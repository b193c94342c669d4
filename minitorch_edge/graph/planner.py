"""The memory planner: one arena for every intermediate value of a graph, instead of one
allocation per value.

1. Liveness. Node k of the graph is step k. A value written by step d and last read by step u
   (a graph output: by the caller, after the last step) is alive over [d, u]. Graph inputs and
   constants live outside the arena.
2. Buffers. Values that can share memory form one buffer:
   * a view op's output (Reshape, Flatten, Squeeze, Identity, ...: ``alias`` in opset.py) is
     its input's memory, so it joins its input's buffer;
   * in place: an elementwise op (Relu, Add, Clip, ...) whose input dies at that very step,
     with the output's shape and dtype, writes over it (the output joins the input's buffer).
   A buffer is alive from its first value's definition to its last value's last use.
3. Placement, greedy by size with best fit (as TFLite's and XNNPACK's planners): buffers in
   order of decreasing size; each goes into the smallest gap, among the buffers already placed
   that are alive at the same time as it, where it fits (else after the highest of them).
   Sizes are rounded up to 64 bytes, so every buffer is aligned for SIMD loads.

The plan reports three numbers: ``arena_bytes`` (what the placement needs), ``naive_bytes``
(one buffer per value, the sum of all) and ``lower_bound_bytes`` (the largest total of buffers
alive at one step: no placement of these buffers can do better).

                 time (steps) ->
    offset   |  [== conv out ==]
      |      |        [==== expand out ====]       two buffers alive at once never
      v      |  [dw out]            [== dw out ==]   overlap in offset
"""
from dataclasses import dataclass, field

import numpy as np

from . import opset

__all__ = ["Buffer", "MemoryPlan", "plan_memory"]

ALIGN = 64


@dataclass
class Buffer:
    """Memory shared by `values`, alive over steps [start, end], at `offset` in the arena."""
    values: list
    nbytes: int
    start: int
    end: int
    offset: int = -1


@dataclass
class MemoryPlan:
    buffers: list
    offsets: dict            # value name -> arena offset, for every value that owns a slot
    views: dict              # value name -> the value whose memory it views (alias ops)
    arena_bytes: int
    naive_bytes: int
    lower_bound_bytes: int
    steps: int = 0
    notes: list = field(default_factory=list)

    def buffer_of(self, name):
        for buf in self.buffers:
            if name in buf.values:
                return buf
        raise KeyError(f"value {name!r} has no buffer in this plan (graph input or constant?)")

    def check(self):
        """Raise AssertionError if two buffers alive at the same step overlap in memory."""
        for i, a in enumerate(self.buffers):
            if a.offset < 0 or a.offset + a.nbytes > self.arena_bytes:
                raise AssertionError(f"buffer {a.values[0]!r} lies outside the arena")
            for b in self.buffers[i + 1:]:
                if a.start <= b.end and b.start <= a.end and \
                        a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes:
                    raise AssertionError(f"buffers {a.values[0]!r} and {b.values[0]!r} are "
                                         f"alive together and overlap")
        return self

    def __str__(self):
        return (f"MemoryPlan: {len(self.buffers)} buffers over {self.steps} steps; arena "
                f"{self.arena_bytes:,} bytes, naive {self.naive_bytes:,}, lower bound "
                f"{self.lower_bound_bytes:,}")

    __repr__ = __str__

    def draw(self, ax=None):
        """The plan as a picture (matplotlib): one bar per buffer, x = the steps it is alive,
        y = its place in the arena. Returns the Axes."""
        import matplotlib.pyplot as plt
        if ax is None:
            _, ax = plt.subplots(figsize=(9, 4))
        for buf in self.buffers:
            ax.broken_barh([(buf.start - 0.4, buf.end - buf.start + 0.8)],
                           (buf.offset / 2 ** 20, buf.nbytes / 2 ** 20), edgecolor="black",
                           linewidth=0.3)
        ax.axhline(self.arena_bytes / 2 ** 20, color="red", linewidth=0.8)
        ax.set_xlabel("step (node)")
        ax.set_ylabel("arena offset (MiB)")
        ax.set_title(f"arena {self.arena_bytes / 2 ** 20:.2f} MiB (naive "
                     f"{self.naive_bytes / 2 ** 20:.2f} MiB)")
        return ax


def _aligned(n):
    return -(-n // ALIGN) * ALIGN


def plan_memory(graph, in_place=True):
    """The MemoryPlan of `graph` (see the module docstring); `in_place=False` turns off the
    in-place reuse of elementwise ops."""
    steps = len(graph.nodes)
    outside = set(graph.inputs) | set(graph.constants)
    last_use = {}
    for k, node in enumerate(graph.nodes):
        for name in node.inputs:
            if name:
                last_use[name] = k
    for name in graph.outputs:
        last_use[name] = steps          # read by the caller, after the last step

    owner, views, buffers = {}, {}, []  # value -> its Buffer; alias value -> viewed value
    naive = 0
    for k, node in enumerate(graph.nodes):
        spec = opset.OPS[node.op]
        for j, out in enumerate(node.outputs):
            v = graph.values[out]
            naive += v.nbytes
            end = last_use.get(out, k)
            src = node.inputs[0] if node.inputs else ""
            if spec.alias and j == 0 and src:
                if src in outside:
                    outside.add(out)    # a view of an input or constant: no arena memory
                    continue
                buf = owner[src]
                views[out] = src
            elif in_place and spec.elementwise and j == 0 and \
                    (src := _dying_input(graph, node, k, v, last_use, outside, owner)):
                buf = owner[src]
            else:
                buf = Buffer([], _aligned(v.nbytes), k, k)
                buffers.append(buf)
            buf.values.append(out)
            buf.end = max(buf.end, end)
            owner[out] = buf

    _place(buffers)
    offsets = {name: buf.offset for buf in buffers for name in buf.values if name not in views}
    arena = max((b.offset + b.nbytes for b in buffers), default=0)
    return MemoryPlan(buffers, offsets, views, arena, naive, _lower_bound(buffers, steps), steps)


def _dying_input(graph, node, k, v, last_use, outside, owner):
    """An input of `node` whose buffer dies at step k and that the output may overwrite."""
    for name in node.inputs:
        if not name or name in outside or name in graph.outputs:
            continue
        w = graph.values[name]
        buf = owner[name]
        if w.shape == v.shape and w.dtype == v.dtype and buf.end <= k and \
                all(last_use.get(m, -1) <= k for m in buf.values):
            return name
    return None


def _place(buffers):
    """Greedy by size, best fit (module docstring)."""
    placed = []
    for buf in sorted(buffers, key=lambda b: (-b.nbytes, b.start)):
        busy = sorted((p.offset, p.offset + p.nbytes) for p in placed
                      if p.start <= buf.end and buf.start <= p.end)
        best, best_gap, cursor = None, None, 0
        for lo, hi in busy:
            gap = lo - cursor
            if gap >= buf.nbytes and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, hi)
        buf.offset = best if best is not None else cursor
        placed.append(buf)


def _lower_bound(buffers, steps):
    alive = np.zeros(steps + 1, np.int64)
    for b in buffers:
        alive[b.start:b.end + 1] += b.nbytes
    return int(alive.max()) if len(alive) else 0
