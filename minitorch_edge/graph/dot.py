"""A Graph as a Graphviz DOT picture (`Graph.to_dot()`), to look at with ``dot -Tsvg``, an
online viewer, or a notebook.

    print(g.to_dot())                               # text only: no Graphviz needed to make it
    open("model.dot", "w").write(g.to_dot(rankdir="LR"))
    # dot -Tsvg model.dot -o model.svg

What is drawn:

* graph inputs (green) and outputs (red) as ellipses, labelled with name, dtype and shape;
* one box per node: its op in bold, its name (the module path where the tracer saw it, e.g.
  ``features.3/Conv_8``), its main attributes in short form (``kernel 3x3``, ``stride 2``,
  ``pad 1``, ``group 32``, ``act relu``; defaults such as dilation 1 or no padding are left
  out) and the dtype and shape of what it writes, e.g. ``float32[1,32,112,112]``. Our fused
  ``mte.*`` ops are filled orange, ONNX ops blue;
* constants (weights, folded scalars) are not drawn as nodes: each box lists the constants it
  reads (their shapes, or the value of a tiny one, e.g. ReLU6's ``0`` and ``6``), unless
  ``show_constants=True``, which draws each constant as a small note with a dashed edge to
  every node that reads it;
* one edge per value read, from its producer to the reader, labelled with the value's shape
  (its dtype too when it is not float32).

Every label is an HTML-like label (``label=<...>``) with ``&``, ``<``, ``>`` and ``"``
escaped, and node identifiers are generated (``n0``, ``in0``, ...), so names such as
``<top>/Reshape_14`` or ``features.0.weight`` need no further care.
"""
import numpy as np

__all__ = ["graph_to_dot"]

RANKDIRS = ("TB", "LR", "BT", "RL")

COLORS = {
    "input": "#d5e8d4",     # green
    "output": "#f8cecc",    # red
    "onnx": "#dae8fc",      # blue: an ONNX op
    "mte": "#ffe6cc",       # orange: one of our fused ops
    "constant": "#f5f5f5",  # grey notes (show_constants=True)
}


def escape(text):
    """`text` made safe inside an HTML-like DOT label (and inside a quoted DOT string: the
    quote is escaped too)."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def quote(text):
    """A DOT quoted string (for the graph's name)."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def spec(value):
    """``float32[1,32,112,112]`` (no spaces, so it stays on one line)."""
    return f"{value.dtype}[{','.join(str(d) for d in value.shape)}]"


def _edge_label(value):
    shape = f"[{','.join(str(d) for d in value.shape)}]"
    return shape if value.dtype == "float32" else f"{value.dtype}{shape}"


def _dims(v, sep="x", same=True):
    """[3, 3] -> '3x3'; with `same`, [2, 2] -> '2' (all the same); 5 -> '5'."""
    if isinstance(v, (list, tuple, np.ndarray)):
        v = [int(d) if float(d).is_integer() else d for d in np.asarray(v).ravel().tolist()]
        if same and len(v) > 1 and all(d == v[0] for d in v):
            return str(v[0])
        return sep.join(str(d) for d in v)
    return str(v)


def _all(v, what):
    return isinstance(v, (list, tuple, np.ndarray)) and all(d == what for d in
                                                            np.asarray(v).ravel().tolist())


def _value_text(v, limit=24):
    if isinstance(v, np.ndarray):
        return f"array[{','.join(str(d) for d in v.shape)}]" if v.size > 8 else \
            _value_text(v.tolist(), limit)
    if isinstance(v, float):
        text = f"{v:.4g}"
    elif isinstance(v, (list, tuple)):
        text = "[" + ",".join(_value_text(x, limit) for x in v) + "]"
    else:
        text = str(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def attr_lines(attrs):
    """The main attributes in short form, one string each (defaults left out)."""
    out = []
    for key, v in attrs.items():
        if key == "kernel_shape":
            out.append(f"kernel {_dims(v, same=False)}")
        elif key == "strides":
            if not _all(v, 1):
                out.append(f"stride {_dims(v)}")
        elif key == "pads":
            if not _all(v, 0):
                out.append(f"pad {_dims(v, ',')}")
        elif key == "dilations":
            if not _all(v, 1):
                out.append(f"dilation {_dims(v)}")
        elif key == "group":
            if v != 1:
                out.append(f"group {v}")
        elif key == "activation":
            if v not in (None, "none"):
                out.append(f"act {v}")
        elif key in ("transA", "transB", "ceil_mode", "count_include_pad", "keepdims") and \
                not v:
            continue
        elif key == "epsilon":
            out.append(f"eps {v:.3g}" if isinstance(v, float) else f"eps {v}")
        else:
            out.append(f"{key}={_value_text(v)}")
    return out


def _const_text(graph, name):
    a = graph.constants[name]
    if a.size <= 4:
        return "=" + _value_text(a.tolist() if a.ndim else a.item())
    return spec(graph.values[name])


def _node_label(graph, node, show_constants):
    rows = [f"<b>{escape(node.op)}</b>", f"<font point-size=\"9\">{escape(node.name)}</font>"]
    rows += [escape(line) for line in attr_lines(node.attrs)]
    consts = [i for i in node.inputs if i and graph.is_constant(i)]
    if consts and not show_constants:
        if len(consts) <= 4:
            rows.append("consts: " + escape(", ".join(_const_text(graph, c) for c in consts)))
        else:
            n = sum(graph.constants[c].size for c in consts)
            rows.append(escape(f"{len(consts)} consts ({n:,} elements)"))
    outs = [spec(graph.values[o]) for o in node.outputs if o in graph.values]
    if outs:
        rows.append("&#8594; " + escape(", ".join(outs)))
    return "<" + "<br/>".join(rows) + ">"


def graph_to_dot(graph, show_constants=False, rankdir="TB"):
    """The DOT text of `graph` (see the module docstring). `rankdir`: "TB" (top to bottom),
    "LR", "BT" or "RL"; `show_constants`: draw each constant as its own note node."""
    if rankdir not in RANKDIRS:
        raise ValueError(f"to_dot: rankdir must be one of {', '.join(RANKDIRS)}, got "
                         f"{rankdir!r}")
    n_params = sum(a.size for a in graph.constants.values())
    title = f"{graph.name}: {len(graph.nodes)} nodes, {n_params:,} constant elements"
    lines = [
        f"digraph {quote(graph.name)} {{",
        (f'  graph [rankdir={rankdir}, fontname="Helvetica", labelloc=t, '
         f'label=<{escape(title)}>];'),
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8, color="#555555"];',
    ]
    source = {}   # value name -> the DOT id that provides it
    for k, name in enumerate(graph.inputs):
        ident = f"in{k}"
        source[name] = ident
        v = graph.values[name]
        lines.append(f'  {ident} [shape=ellipse, style=filled, fillcolor="{COLORS["input"]}", '
                     f'label=<<b>{escape(name)}</b><br/>{escape(spec(v))}>];')
    const_ids = {}

    def const_node(name):
        if name not in const_ids:
            ident = const_ids[name] = f"c{len(const_ids)}"
            lines.append(f'  {ident} [shape=note, style=filled, fillcolor="{COLORS["constant"]}", '
                         f'fontsize=8, label=<{escape(name)}<br/>'
                         f'{escape(_const_text(graph, name))}>];')
        return const_ids[name]

    edges = []
    for k, node in enumerate(graph.nodes):
        ident = f"n{k}"
        color = COLORS["mte"] if node.op.startswith("mte.") else COLORS["onnx"]
        lines.append(f'  {ident} [fillcolor="{color}", '
                     f'label={_node_label(graph, node, show_constants)}];')
        for name in node.inputs:
            if not name:
                continue
            if graph.is_constant(name):
                if show_constants:
                    edges.append(f"  {const_node(name)} -> {ident} [style=dashed, "
                                 f"arrowsize=0.5];")
                continue
            src = source.get(name)
            if src is not None:
                edges.append(f"  {src} -> {ident} "
                             f"[label=<{escape(_edge_label(graph.values[name]))}>];")
        for name in node.outputs:
            source[name] = ident
    for k, name in enumerate(graph.outputs):
        ident = f"out{k}"
        v = graph.values.get(name)
        text = escape(spec(v)) if v is not None else "?"
        lines.append(f'  {ident} [shape=ellipse, style=filled, fillcolor="{COLORS["output"]}", '
                     f'label=<<b>{escape(name)}</b><br/>{text}>];')
        src = source.get(name)
        if src is None and graph.is_constant(name):
            src = const_node(name)
        if src is not None:
            label = f" [label=<{escape(_edge_label(v))}>]" if v is not None else ""
            edges.append(f"  {src} -> {ident}{label};")
    lines += edges
    lines.append("}")
    return "\n".join(lines) + "\n"
