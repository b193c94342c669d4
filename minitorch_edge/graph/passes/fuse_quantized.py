"""fuse_quantized: a QDQ graph becomes an int8 graph.

A QDQ graph computes in float between DequantizeLinear (DQ) and QuantizeLinear (Q) nodes: it
is what post-training quantization (quant/ptq.py) and QAT's convert write, and what
onnxruntime's quantizer writes. Each float op whose inputs all come from DQ nodes and whose
output goes only to one Q node is replaced by the int8 op that computes the same thing in
integers (graph/opset_quant.py); an activation between the op and the Q is folded into the
int8 op's clamp:

    before:  xq ─> DQ(Xs, Xz) ─> x ─┐
             Wq<c> ─> DQ(Ws) ─> W ──┼─> Conv ─> c ─> [Relu | Clip] ─> y ─> Q(Ys, Yz) ─> yq
             Bq<c> ─> DQ ─────> B ──┘
    after:   xq ─> mte.QLinearConv(xq, Xs, Xz, Wq, Ws, Wz, Ys, Yz, Bq; act_min, act_max) ─> yq

    Gemm (transB=1 or 0, alpha = beta = 1)        -> mte.QLinearGemm
    Add(DQ(a), DQ(b)) [act]                       -> mte.QLinearAdd
    GlobalAveragePool, ReduceMean over H, W       -> mte.QLinearGlobalAveragePool
    AveragePool                                   -> mte.QLinearAveragePool
    MaxPool, Reshape, Flatten, Squeeze, Unsqueeze,
    Transpose (same parameters in and out)        -> the same op on the int8 value
        (other parameters: the op, then mte.Requantize)
    Relu / Clip alone between DQ and Q            -> mte.Requantize with the clamp
    Q(DQ(xq)) with xq's parameters                -> xq     (other parameters: mte.Requantize)

A float bias B (not DQ'd) is quantized here to int32 with scale Xs * Ws[o]. The act clamp is
TFLite's: act_min = max(-128, Yz + round(lo / Ys)), act_max = min(127, Yz + round(hi / Ys))
for Relu (lo 0) and Clip(lo, hi). Whatever is left (DQ of a constant feeding a float op, the
weights of a layer kept in float) is folded to a float constant, and DQ / Q nodes that nothing
reads any more are removed. A graph with no Q or DQ node is returned unchanged.
"""
import numpy as np

from ...backend.numpy_int8 import round_half_away
from .. import opset
from ..ir import Node, Value
from .eliminate_dead_code import eliminate_dead_code
from .registry import register
from .remove_identities import replace_uses

__all__ = ["fuse_quantized", "is_global_mean"]

PASS_THROUGH = ("MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
                "Identity")


class _Maps:
    """producers / consumers of the graph as it is now."""

    def __init__(self, g):
        self.g = g
        self.producer = g.producers()
        self.readers = g.consumers()
        self.outputs = set(g.outputs)

    def sole_reader(self, name):
        users = self.readers.get(name, [])
        return users[0] if len(users) == 1 and name not in self.outputs else None

    def dq(self, name, activation=True):
        """(xq, scale name, zero point name) when `name` is a DQ's output with constant
        parameters (an activation: per tensor int8 of a non-constant; a weight: a constant)."""
        node = self.producer.get(name)
        if node is None or node.op != "DequantizeLinear":
            return None
        g = self.g
        src, s, z = (node.inputs + ["", ""])[:3]
        if not g.is_constant(s) or (z and not g.is_constant(z)):
            return None
        if activation and (g.is_constant(src) or g.values[src].dtype != "int8"
                           or g.constants[s].size != 1):
            return None
        if not z:
            z = _const(g, np.zeros((), g.values[src].dtype), "zero_point")
        return src, s, z


def _clamp_of(g, act, ys, yz):
    """(act_min, act_max) of a Relu / Clip node in the output's int8 parameters."""
    lo, hi = -np.inf, np.inf
    if act is not None:
        if act.op == "Relu":
            lo = 0.0
        else:
            bounds = (act.inputs + ["", ""])[1:3]
            if any(b and not g.is_constant(b) for b in bounds):
                return None
            lo = float(g.constants[bounds[0]]) if bounds[0] else -np.inf
            hi = float(g.constants[bounds[1]]) if bounds[1] else np.inf
    s, z = float(np.asarray(ys).reshape(-1)[0]), int(np.asarray(yz).reshape(-1)[0])
    q = lambda v: z + int(round_half_away(np.float64(v) / s))
    act_min = -128 if lo == -np.inf else max(-128, min(127, q(lo)))
    act_max = 127 if hi == np.inf else min(127, max(-128, q(hi)))
    return (act_min, act_max) if act_min <= act_max else None


def _activation(m, name):
    """The Relu / Clip node that is the sole reader of `name`, when it is one."""
    node = m.sole_reader(name)
    if node is not None and node.op in ("Relu", "Clip") and node.inputs[0] == name \
            and node.inputs.count(name) == 1:
        return node
    return None


def _const(g, array, hint):
    return g.add_constant(g.fresh_name(hint), np.asarray(array))


def _layer_inputs(m, core, wq_axis):
    """[xq, Xs, Xz, Wq, Ws, Wz] and the int32 bias name ("" if none) of a Conv / Gemm whose X
    and W come from DQ nodes; None when it does not match."""
    g = m.g
    x, w, b = (core.inputs + ["", ""])[:3]
    xin, win = m.dq(x), m.dq(w, activation=False)
    if xin is None or win is None or not g.is_constant(win[0]):
        return None
    wq, ws, wz = win[0], g.constants[win[1]], g.constants[win[2]]
    if g.values[wq].dtype != "int8" or np.any(wz != 0):
        return None
    if ws.size not in (1, g.values[wq].shape[wq_axis]):
        return None
    if ws.size > 1 and m.producer[w].attrs.get("axis", 1) % len(g.values[wq].shape) != wq_axis:
        return None
    xq, xs_name, xz_name = xin
    xs = g.constants[xs_name]
    channels = g.values[wq].shape[wq_axis]
    ws_full = np.broadcast_to(np.asarray(ws, np.float32).reshape(-1), (channels,))
    bias = ""
    if b:
        bin_ = m.dq(b, activation=False)
        if bin_ is not None and g.values[bin_[0]].dtype == "int32":
            bias = bin_[0]
        elif g.is_constant(b):       # a float bias: quantized with scale Xs * Ws[o]
            real = np.asarray(g.constants[b], np.float64).reshape(-1)
            step = np.float64(np.asarray(xs).reshape(-1)[0]) * ws_full.astype(np.float64)
            bias = _const(g, np.clip(round_half_away(real / step), -2**31, 2**31 - 1)
                          .astype(np.int32), "bias_q")
        else:
            return None
    wq_name = wq
    if wq_axis == 1:                 # Gemm with transB=0: store W as (out, in)
        wq_name = _const(g, np.ascontiguousarray(g.constants[wq].T), "weight_q")
    names = [xq, xs_name, xz_name, wq_name,
             _const(g, ws_full.copy(), "w_scale"), _const(g, np.zeros((), np.int8), "w_zero")]
    return names, bias


def _rewrite(m, q):
    """The int8 replacement for the chain ending in QuantizeLinear node `q`, as
    (nodes to remove, new node(s)); None when nothing matches."""
    g = m.g
    ys_name, yz_name = (q.inputs + ["", ""])[1:3]
    if not g.is_constant(ys_name) or not yz_name or not g.is_constant(yz_name):
        return None
    ys, yz = g.constants[ys_name], g.constants[yz_name]
    if np.size(ys) != 1 or g.constants[yz_name].dtype != np.int8:
        return None
    yq = q.outputs[0]
    src = m.producer.get(q.inputs[0])
    if src is None:
        return None
    act = None
    if src.op in ("Relu", "Clip") and m.sole_reader(src.outputs[0]) is q and src.inputs[0]:
        core = m.producer.get(src.inputs[0])
        if core is not None and core.op in ("Conv", "Gemm", "Add") \
                and _activation(m, core.outputs[0]) is src:
            act, src = src, core
    clamp = _clamp_of(g, act, ys, yz)
    if clamp is None:
        return None
    attrs_q = {"act_min": clamp[0], "act_max": clamp[1]}
    chain = [n for n in (src, act, q) if n is not None]
    out_params = [ys_name, yz_name]
    layer_output_private = act is not None or m.sole_reader(src.outputs[0]) is q
    if src.op in ("Conv", "Gemm", "Add") and not layer_output_private:
        return None

    if src.op == "Conv" and len(src.outputs) == 1:
        found = _layer_inputs(m, src, 0)
        if found is None:
            return None
        names, bias = found
        return chain, [("mte.QLinearConv", names + out_params + [bias], [yq],
                        {**src.attrs, **attrs_q}, src.name)]
    if src.op == "Gemm":
        a = src.attrs
        if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
            return None
        found = _layer_inputs(m, src, 0 if a.get("transB", 0) else 1)
        if found is None:
            return None
        names, bias = found
        return chain, [("mte.QLinearGemm", names + out_params + [bias], [yq], attrs_q,
                        src.name)]
    if src.op == "Add" and len(src.inputs) == 2:
        ins = [m.dq(name) for name in src.inputs]
        if any(i is None for i in ins) or g.values[ins[0][0]].shape != g.values[ins[1][0]].shape:
            return None
        names = [name for found in ins for name in found]
        return chain, [("mte.QLinearAdd", names + out_params, [yq], attrs_q, src.name)]

    if act is not None:
        return None
    if src.op == "DequantizeLinear":         # Q(DQ(xq)): the DQ may have other readers
        xin = m.dq(src.outputs[0])
        if xin is None:
            return None
        xq, xs, xz = xin
        if _same(g, xs, ys_name) and _same(g, xz, yz_name):
            return [q], [("=", xq, yq)]
        return [q], [("mte.Requantize", [xq, xs, xz] + out_params, [yq], {}, q.name)]
    xin = m.dq(src.inputs[0]) if src.inputs else None
    if xin is None or m.sole_reader(src.outputs[0]) is not q \
            or any(name and not g.is_constant(name) for name in src.inputs[1:]):
        return None
    xq, xs, xz = xin
    in_params = [xs, xz]
    if is_global_mean(g, src):
        return chain, [("mte.QLinearGlobalAveragePool", [xq] + in_params + out_params, [yq],
                        {}, src.name)]
    if src.op == "AveragePool":
        return chain, [("mte.QLinearAveragePool", [xq] + in_params + out_params, [yq],
                        dict(src.attrs), src.name)]
    if src.op in ("Relu", "Clip"):           # a lone activation on an int8 value
        clamp = _clamp_of(g, src, ys, yz)
        if clamp is None:
            return None
        return chain, [("mte.Requantize", [xq] + in_params + out_params, [yq],
                        {"act_min": clamp[0], "act_max": clamp[1]}, src.name)]
    if src.op in PASS_THROUGH and len(src.outputs) == 1:
        rest = src.inputs[1:]
        if _same(g, xs, ys_name) and _same(g, xz, yz_name):
            return chain, [(src.op, [xq] + rest, [yq], dict(src.attrs), src.name)]
        mid = g.fresh_name(src.op.lower())
        return chain, [(src.op, [xq] + rest, [mid], dict(src.attrs), src.name),
                       ("mte.Requantize", [mid] + in_params + out_params, [yq], {}, q.name)]
    return None


def _same(g, a, b):
    """Two constants holding the same numbers."""
    return np.array_equal(np.asarray(g.constants[a], np.float64).reshape(-1),
                          np.asarray(g.constants[b], np.float64).reshape(-1))


def is_global_mean(g, node):
    if node.op == "GlobalAveragePool":
        return len(g.values[node.inputs[0]].shape) == 4
    if node.op != "ReduceMean" or len(g.values[node.inputs[0]].shape) != 4:
        return False
    axes = sorted(a % 4 for a in node.attrs.get("axes", ()) or ())
    return axes == [2, 3] and node.attrs.get("keepdims", 1) == 1


def _apply(g, chain, replacements):
    """Swap the chain's nodes for the replacement nodes (at the place of the chain's last)."""
    drop = {id(n) for n in chain}
    new_nodes = []
    for spec in replacements:
        if spec[0] == "=":                   # yq is xq: rewire its readers
            _, xq, yq = spec
            if yq in g.outputs:
                new_nodes.append(Node("Identity", [xq], [yq], {}, g.fresh_name("Identity")))
            else:
                replace_uses(g, yq, xq)
            continue
        op, inputs, outputs, attrs, name = spec
        node = Node(op, list(inputs), list(outputs), attrs, name)
        for out, (shape, dtype) in zip(outputs, opset.infer(g, node)):
            g.values[out] = Value(out, shape, dtype)
        new_nodes.append(node)
    last = max(k for k, n in enumerate(g.nodes) if id(n) in drop)
    nodes = []
    for k, n in enumerate(g.nodes):
        if k == last:
            nodes.extend(new_nodes)
        if id(n) not in drop:
            nodes.append(n)
    g.nodes = nodes


def _fold_weight_dequantize(g):
    """DQ nodes of constants that are left (float layers' weights) become float constants."""
    kept = []
    for node in g.nodes:
        if node.op == "DequantizeLinear" and all(not n or g.is_constant(n) for n in node.inputs):
            args = [g.constants[n] if n else None for n in node.inputs]
            g.constants[node.outputs[0]] = np.asarray(opset.run_node(node, args)[0])
            continue
        kept.append(node)
    g.nodes = kept


@register("fuse_quantized")
def fuse_quantized(graph):
    g = graph
    if not any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in g.nodes):
        return g
    changed = True
    while changed:
        changed = False
        m = _Maps(g)
        for node in g.nodes:
            if node.op != "QuantizeLinear":
                continue
            found = _rewrite(m, node)
            if found is not None:
                _apply(g, *found)
                g = eliminate_dead_code(g)
                changed = True
                break
    _fold_weight_dequantize(g)
    return eliminate_dead_code(g)
