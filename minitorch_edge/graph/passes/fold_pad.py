"""fold_pad: a zero Pad of the spatial dims in front of a conv becomes part of the conv's own
padding (which the conv applies while it gathers its windows, without a padded copy of x).

    before:  x -> Pad(pads=[0, 0, h0, w0, 0, 0, h1, w1], mode="constant", value 0) -> p
               -> Conv(p, W, B; pads=[t, l, b, r]) -> y
    after:   x -> Conv(x, W, B; pads=[t + h0, l + w0, b + h1, r + w1]) -> y

(ONNX Pad's pads are the begins of every dim, then the ends; Conv's are [top, left, bottom,
right].) It folds when the Pad has mode "constant" with value 0 (absent, or a constant that is
all zeros), its pads are a constant of 8 non-negative entries that leave the batch and channel
dims alone, and its output is not a graph output and is read by exactly one node: a Conv or an
mte.ConvAct, as its X input only. Reflect / edge padding, a non-zero fill, negative pads
(cropping) or padded channels stay as they are. The conv keeps its node name; chains of Pads
fold one after the other.
"""
import numpy as np

from .registry import register

__all__ = ["fold_pad"]

_CONVS = ("Conv", "mte.ConvAct")


@register("fold_pad")
def fold_pad(graph):
    g = graph
    while True:
        consumers = g.consumers()
        outputs = set(g.outputs)
        removed = set()
        for node in g.nodes:
            if node.op != "Pad" or len(node.outputs) != 1:
                continue
            spatial = _spatial_pads(g, node)
            p = node.outputs[0]
            users = consumers.get(p, [])
            if spatial is None or p in outputs or len(users) != 1:
                continue
            conv = users[0]
            if (conv.op not in _CONVS or conv.inputs[0] != p or p in conv.inputs[1:]
                    or conv.attrs.get("auto_pad", "NOTSET") != "NOTSET"):
                continue
            h0, w0, h1, w1 = spatial
            t, left, b, r = (int(v) for v in conv.attrs.get("pads", (0, 0, 0, 0)))
            conv.attrs["pads"] = [t + h0, left + w0, b + h1, r + w1]
            conv.inputs[0] = node.inputs[0]
            removed.add(id(node))
        if not removed:
            return g
        g.nodes = [n for n in g.nodes if id(n) not in removed]


def _spatial_pads(g, node):
    """(h_begin, w_begin, h_end, w_end) of a zero, constant-mode Pad of a 4-D tensor that pads
    only the two spatial dims by non-negative amounts; else None."""
    if node.attrs.get("mode", "constant") != "constant":
        return None
    if any(node.attrs.get(k, 0) not in (0, 0.0) for k in ("value", "constant_value")):
        return None
    x = node.inputs[0]
    pads = node.inputs[1] if len(node.inputs) > 1 else ""
    value = node.inputs[2] if len(node.inputs) > 2 else ""
    if len(node.inputs) > 3 and node.inputs[3]:       # `axes` (opset 18): not handled
        return None
    if not pads or not g.is_constant(pads) or len(g.values[x].shape) != 4:
        return None
    if value and (not g.is_constant(value) or np.any(g.constants[value] != 0)):
        return None
    p = [int(v) for v in np.asarray(g.constants[pads]).reshape(-1)]
    if len(p) != 8 or any(v < 0 for v in p) or p[0] or p[1] or p[4] or p[5]:
        return None
    return p[2], p[3], p[6], p[7]
