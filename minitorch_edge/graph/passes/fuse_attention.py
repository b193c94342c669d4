"""fuse_attention: scaled dot-product attention written as ONNX ops becomes mte.Attention.

Our tracer emits mte.Attention itself; an imported graph (torch.onnx.export of
nn.MultiheadAttention / scaled_dot_product_attention, or our own export, which expands
mte.Attention back) holds the ops it replaces. Both forms are matched:

    before:  q ─> [Mul(a)] ─────────────────────┐
             k ─> Transpose(swap last 2) ─> [Mul(b)] ─> MatMul ─> [Mul(c) | Div(d)]* ─>
             [Add(mask)] ─> Softmax(last axis) ─> p ─> MatMul(p, v) ─> y
    after:   q, k, v, mask ─> mte.Attention(scale = a b c / d ...) ─> y

where a, b, c, d are scalar constants (one element) and the mask broadcasts to the scores'
shape (B, H, L, S). Q, K, V are 4-D (B, H, L, D), (B, H, S, D), (B, H, S, Dv). Every value
between the first MatMul and the last one must be read only by the next node of the chain and
not be a graph output. The matched nodes are left for eliminate_dead_code. (One difference:
mte.Attention gives 0 for a row of only -inf scores where Softmax gives NaN.)
"""
import numpy as np

from ..ir import Node
from .eliminate_dead_code import eliminate_dead_code
from .registry import register

__all__ = ["fuse_attention"]


class _Chain:
    def __init__(self, g):
        self.g, self.producer, self.readers = g, g.producers(), g.consumers()
        self.outputs = set(g.outputs)

    def private(self, name):
        """The node writing `name`, when `name` is read by one node only and is no output."""
        if name in self.outputs or len(self.readers.get(name, [])) != 1:
            return None
        return self.producer.get(name)

    def scalar(self, name):
        c = self.g.constants.get(name)
        return None if c is None or c.size != 1 else float(np.asarray(c).reshape(-1)[0])

    def scaled(self, name):
        """(source, factor): `name` as source * factor through Mul / Div by scalar constants
        (Mul with the constant on either side)."""
        factor = 1.0
        while True:
            node = self.private(name)
            if node is None or node.op not in ("Mul", "Div") or len(node.inputs) != 2:
                return name, factor
            a, b = node.inputs
            if node.op == "Mul" and self.scalar(a) is not None and self.scalar(b) is None:
                a, b = b, a
            s = self.scalar(b)
            if s is None or (node.op == "Div" and s == 0.0):
                return name, factor
            factor = factor * s if node.op == "Mul" else factor / s
            name = a


def _match(m, node):
    """(q, k, v, mask, scale) for MatMul `node` = attention, or None."""
    g = m.g
    if node.op != "MatMul" or len(node.inputs) != 2:
        return None
    p, v = node.inputs
    soft = m.private(p)
    if soft is None or soft.op != "Softmax":
        return None
    rank = len(g.values[p].shape)
    if rank != 4 or soft.attrs.get("axis", -1) % rank != rank - 1:
        return None
    scores, mask = soft.inputs[0], ""
    add = m.private(scores)
    if add is not None and add.op == "Add" and len(add.inputs) == 2:
        for s_in, m_in in (add.inputs, add.inputs[::-1]):
            src = m.private(s_in)
            if src is not None and src.op in ("Mul", "Div", "MatMul") and np.broadcast_shapes(
                    g.values[m_in].shape, g.values[s_in].shape) == g.values[s_in].shape:
                scores, mask = s_in, m_in
                break
    raw, scale = m.scaled(scores)
    qk = m.private(raw)
    if qk is None or qk.op != "MatMul" or len(qk.inputs) != 2:
        return None
    q, a = m.scaled(qk.inputs[0])
    kt, b = m.scaled(qk.inputs[1])
    tr = m.private(kt)
    if tr is None or tr.op != "Transpose" or list(tr.attrs.get("perm", [])) != [0, 1, 3, 2]:
        return None
    k = tr.inputs[0]
    shapes = [g.values[n].shape for n in (q, k, v)]
    if any(len(s) != 4 for s in shapes) or g.values[q].dtype != "float32":
        return None
    return q, k, v, mask, scale * a * b


@register("fuse_attention")
def fuse_attention(graph):
    g = graph
    m = _Chain(g)
    found = {id(n): _match(m, n) for n in g.nodes if n.op == "MatMul"}
    if not any(found.values()):
        return g
    nodes = []
    for n in g.nodes:
        hit = found.get(id(n))
        if hit is None:
            nodes.append(n)
            continue
        q, k, v, mask, scale = hit
        nodes.append(Node("mte.Attention", [q, k, v, mask], list(n.outputs),
                          {"scale": float(scale), "causal": 0}, n.name))
    g.nodes = nodes
    return eliminate_dead_code(g)
