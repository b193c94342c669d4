"""The recorded autograd graph of a result as a Graphviz DOT picture, as torchviz's
``make_dot`` draws it.

    loss = criterion(model(x), y)
    text = autograd.to_dot(loss, params=dict(model.named_parameters()))
    open("loss.dot", "w").write(text)          # dot -Tsvg loss.dot -o loss.svg

It walks ``loss.grad_fn`` and, from each Node, its ``next_functions`` (function.py), so it
draws what backward will replay:

* the result as a yellow box (its dtype and shape);
* one grey box per Node, named as PyTorch names it (``AddmmBackward0``, ``ReluBackward0``,
  ...), with the shapes of the tensors it saved for backward (``Node._saved``; a saved output
  is marked ``(out)``) when `show_saved`; after ``backward()`` they are gone and the box says
  ``saved: freed`` (the reason a second backward needs ``retain_graph=True``);
* every leaf that requires grad (an ``AccumulateGrad`` edge: its ``.variable``) as a
  light-blue box, named by its parameter name when `params` maps names to Parameters (e.g.
  ``dict(model.named_parameters())``), else by its shape;
* one edge per ``next_functions`` link that leads somewhere (``(None, 0)``: no gradient flows
  into that input, nothing is drawn), pointing the way the forward ran (input -> op), plus
  one edge from the result's grad_fn to the result. A node reached twice (a tensor used twice)
  is drawn once, with two edges out of it.

No Graphviz is needed to make the text; only to render it.
"""
import numpy as np

from ..tensor import Tensor

__all__ = ["to_dot"]

COLORS = {"result": "#fff2a8", "leaf": "#cfe2f3", "node": "#eeeeee"}


def _escape(text):
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _spec(shape, dtype):
    return f"{np.dtype(dtype).name}[{','.join(str(int(d)) for d in shape)}]"


def _tensor_spec(t):
    return _spec(t._data.shape, t._data.dtype)


def _saved_lines(node):
    """The saved tensors of `node` as short strings; ["freed"] after backward."""
    saved = getattr(node, "_saved", None)
    if saved is None:
        return ["freed"] if getattr(node, "_freed", False) else []
    out = []
    for entry in saved:
        if entry is None:
            continue
        tensor, counter, _version, array, _out_index = entry
        if counter is None:                  # a Python scalar or None kept as it is
            if tensor is not None:
                text = repr(tensor)
                out.append(text if len(text) <= 16 else text[:13] + "...")
        elif tensor is None:                 # one of the node's own outputs, kept by value
            out.append(_spec(array.shape, array.dtype) + " (out)")
        else:
            out.append(_tensor_spec(tensor))
    return out


def to_dot(tensor, params=None, show_saved=True):
    """The DOT text of the autograd graph behind `tensor` (see the module docstring).
    `params`: {name: Parameter} used to name the leaves; `show_saved`: list each node's saved
    tensors. A tensor without a grad_fn gives a graph of one box."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dot: expected a Tensor, got {type(tensor).__name__}")
    names = {}
    if params is not None:
        items = params.items() if hasattr(params, "items") else params
        for name, p in items:
            if not isinstance(p, Tensor):
                raise TypeError(f"to_dot: params[{name!r}] is a {type(p).__name__}, not a "
                                f"Tensor")
            names.setdefault(id(p), name)

    lines = ["digraph autograd {",
             '  graph [rankdir=TB, fontname="Helvetica"];',
             '  node [shape=box, style=filled, fontname="Helvetica", fontsize=10, '
             'fillcolor="' + COLORS["node"] + '"];',
             '  edge [color="#555555", arrowsize=0.7];']
    edges = []
    ids = {}         # id(Node) or id(leaf tensor) -> DOT id

    def leaf_id(var):
        key = ("leaf", id(var))
        if key not in ids:
            ident = ids[key] = f"leaf{len(ids)}"
            rows = []
            if id(var) in names:
                rows.append(f"<b>{_escape(names[id(var)])}</b>")
            rows.append(_escape(_tensor_spec(var)))
            lines.append(f'  {ident} [fillcolor="{COLORS["leaf"]}", label=<'
                         + "<br/>".join(rows) + ">];")
        return ids[key]

    result_rows = []
    if id(tensor) in names:
        result_rows.append(f"<b>{_escape(names[id(tensor)])}</b>")
    result_rows.append(_escape(_tensor_spec(tensor)))
    root = tensor.grad_fn
    if root is None:
        color = COLORS["leaf"] if tensor.requires_grad else COLORS["result"]
        lines.append(f'  result [fillcolor="{color}", label=<' + "<br/>".join(result_rows)
                     + ">];")
        lines.append("}")
        return "\n".join(lines) + "\n"

    lines.append(f'  result [fillcolor="{COLORS["result"]}", label=<'
                 + "<br/>".join(result_rows) + ">];")

    def node_id(node):
        key = ("node", id(node))
        new = key not in ids
        if new:
            ident = ids[key] = f"n{len(ids)}"
            rows = [f"<b>{_escape(node.name())}</b>"]
            if show_saved:
                saved = _saved_lines(node)
                if saved:
                    rows.append('<font point-size="8">saved: '
                                + _escape(", ".join(saved)) + "</font>")
            lines.append(f"  {ident} [label=<" + "<br/>".join(rows) + ">];")
        return ids[key], new

    root_id, _ = node_id(root)
    edges.append(f"  {root_id} -> result;")
    stack, keep = [root], [root]      # (keep: the Nodes stay alive, so their ids stay unique)
    while stack:
        node = stack.pop()
        here = ids[("node", id(node))]
        for nxt, nr in node.next_functions:
            if nxt is None:
                continue
            var = getattr(nxt, "variable", None)
            if var is not None:                         # AccumulateGrad: a leaf
                edges.append(f"  {leaf_id(var)} -> {here};")
                keep.append(var)
                continue
            src, new = node_id(nxt)
            meta = getattr(nxt, "_out_meta", ())
            label = f' [label="{nr}"]' if len(meta) > 1 else ""
            edges.append(f"  {src} -> {here}{label};")
            if new:
                keep.append(nxt)
                stack.append(nxt)
    lines += edges
    lines.append("}")
    return "\n".join(lines) + "\n"
