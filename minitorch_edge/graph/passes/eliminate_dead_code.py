"""eliminate_dead_code: drop every node none of whose outputs reaches a graph output.

Walk the nodes backwards from the graph outputs: a node is live when one of its outputs is a
graph output or is read by a live node; then its inputs are live too. A node with several
outputs (Split) stays whole when any one of them is live. Constants that only dead nodes read
are dropped afterwards by `Graph.remove_unused_values` (run_passes calls it after each pass).

    before                                   after

    x ──> Conv ──> Relu ──> output           x ──> Conv ──> Relu ──> output
            │
            └────> Sigmoid ──> Mul ──> (nothing reads it)

Graph inputs are never removed, even when nothing reads them (the caller still passes them).
"""
from .registry import register


@register("eliminate_dead_code")
def eliminate_dead_code(graph):
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(out in live for out in node.outputs):
            kept.append(node)
            live.update(name for name in node.inputs if name)
    graph.nodes = kept[::-1]
    return graph
