"""fold_batch_norm: an inference-mode BatchNormalization (or a per-channel constant Mul or Add)
after a conv or linear layer with constant weights becomes new constant weights and bias of
that layer, so the normalisation costs nothing at run time.

    before:  x -> Conv(W, B) -> BatchNormalization(s, b, m, v; eps) -> y
    after:   x -> Conv(W', B') -> y
             W' = W * k[:, None, None, None],  B' = (B - m) k + b,  k = s / sqrt(v + eps)

    before:  x -> Gemm(W, C, transB=1) -> BatchNormalization(s, b, m, v; eps) -> y
    after:   x -> Gemm(W', C', transB=1) -> y      W' = W * k[:, None],  C' = (C - m) k + b

    before:  x -> Conv(W, B) -> Mul(., c1) -> y      after:  x -> Conv(W * c1, B * c1) -> y
    before:  x -> Conv(W, B) -> Add(., c2) -> y      after:  x -> Conv(W, B + c2) -> y

A missing bias counts as 0 (a Conv without bias gets one). The layer may be Conv, mte.ConvAct
with activation "none" and no residual, Gemm with transB=1 (alpha = beta = 1, C absent or one
value per output feature) or mte.GemmAct likewise. c1 and c2 are constants (either operand of
the Mul / Add) with one value per output channel, i.e. shaped like (C, 1, 1), (1, C, 1, 1),
(1, C) or a scalar: this is what a hand-written eval-mode BN ``x * k + b`` after a conv traces
to (the Mul then the Add both fold). The arithmetic is done in float64 and the results cast to
the weight's (and the bias's) dtype.

It folds only when the layer's weight (and bias, if any) and the BN's four parameters are
constants, the layer's output is read by that one node and is not a graph output, and the
result keeps the layer output's shape and dtype (no broadcasting or dtype promotion by the
Mul / Add). Anything else (BN on a graph input, a conv output that is also used elsewhere,
training-mode BN) is left as it is.

The layer node keeps its name; its output takes the folded node's output name (so a graph
output's name survives). The old constants stay in the graph for remove_unused_values.
"""
import re

import numpy as np

from .registry import register

__all__ = ["fold_batch_norm"]

_LAYERS = ("Conv", "mte.ConvAct", "Gemm", "mte.GemmAct")


@register("fold_batch_norm")
def fold_batch_norm(graph):
    g = graph
    producers, consumers = g.producers(), g.consumers()
    outputs = set(g.outputs)
    removed = set()
    for node in g.nodes:
        if node.op not in ("BatchNormalization", "Mul", "Add") or len(node.outputs) != 1:
            continue
        fold = _BN if node.op == "BatchNormalization" else _AFFINE
        x = fold.layer_input(node, g)
        if x is None:
            continue
        layer = producers.get(x)
        if (layer is None or x in outputs or consumers.get(x) != [node]
                or not _foldable_layer(g, layer, x)):
            continue
        if not _same_value(g, x, node.outputs[0]):
            continue
        w_name, b_name = layer.inputs[1], _opt(layer.inputs, 2)
        new = fold.apply(node, g, g.constants[w_name],
                         None if not b_name else g.constants[b_name])
        if new is None:
            continue
        w_new, b_new = new
        if w_new is not None:
            _set_input(layer, 1, g.add_constant(_folded(w_name), w_new))
        _set_input(layer, 2, g.add_constant(_folded(b_name or _bias_hint(w_name)), b_new))
        layer.outputs[0] = node.outputs[0]          # the folded node's output name survives
        producers[node.outputs[0]] = layer
        removed.add(id(node))
    g.nodes = [n for n in g.nodes if id(n) not in removed]
    return g


# ---- the layer before the folded node -------------------------------------------------------
def _foldable_layer(g, layer, x):
    """The layer writes x as its only output, its weight (and bias) are float constants and it
    applies nothing after its bias (no activation, no residual)."""
    if len(layer.outputs) != 1 or layer.outputs[0] != x or layer.op not in _LAYERS:
        return False
    attrs = layer.attrs
    if layer.op.startswith("mte.") and (attrs.get("activation", "none") != "none"
                                        or _opt(layer.inputs, 3)):
        return False
    w, b = layer.inputs[1], _opt(layer.inputs, 2)
    if not g.is_constant(w) or (b and not g.is_constant(b)):
        return False
    if g.constants[w].dtype.kind != "f" or (b and g.constants[b].dtype.kind != "f"):
        return False
    n_out = g.constants[w].shape[0]
    if layer.op in ("Gemm", "mte.GemmAct"):
        if (attrs.get("transB", 0) != 1 or attrs.get("alpha", 1.0) != 1.0
                or attrs.get("beta", 1.0) != 1.0 or len(g.values[x].shape) != 2):
            return False
        if b and _per_channel(g.constants[b], 2, n_out) is None:
            return False
    elif b and g.constants[b].shape != (n_out,):
        return False
    return True


def _bias(b, n_out):
    """The layer's bias as a float64 vector of its n_out outputs (zeros when absent)."""
    if b is None:
        return np.zeros(n_out)
    return np.array(_per_channel(b, 2, n_out), dtype=np.float64)


# ---- BatchNormalization ----------------------------------------------------------------------
class _BN:
    @staticmethod
    def layer_input(node, g):
        if len(node.inputs) != 5 or node.attrs.get("training_mode", 0):
            return None
        if not all(g.is_constant(p) for p in node.inputs[1:]):
            return None
        return node.inputs[0]

    @staticmethod
    def apply(node, g, w, b):
        n_out = w.shape[0]
        s, beta, mean, var = (np.asarray(g.constants[p], np.float64) for p in node.inputs[1:])
        if s.shape != (n_out,):
            return None
        k = s / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
        w_new = w.astype(np.float64) * k.reshape((-1,) + (1,) * (w.ndim - 1))
        b_new = (_bias(b, n_out) - mean) * k + beta
        return w_new.astype(w.dtype), b_new.astype(w.dtype if b is None else b.dtype)


# ---- a per-channel constant Mul or Add -------------------------------------------------------
class _AFFINE:
    @staticmethod
    def layer_input(node, g):
        if len(node.inputs) != 2:
            return None
        a, c = node.inputs
        if g.is_constant(a) and not g.is_constant(c):
            a, c = c, a
        if g.is_constant(a) or not g.is_constant(c):
            return None
        return a

    @staticmethod
    def apply(node, g, w, b):
        n_out = w.shape[0]
        x = _AFFINE.layer_input(node, g)
        c_name = node.inputs[1] if node.inputs[0] == x else node.inputs[0]
        rank = len(g.values[x].shape)
        c = _per_channel(g.constants[c_name], rank, n_out)
        if c is None:
            return None
        c = np.asarray(c, np.float64)
        bias = _bias(b, n_out)
        b_dtype = w.dtype if b is None else b.dtype
        if node.op == "Mul":
            w_new = w.astype(np.float64) * c.reshape((-1,) + (1,) * (w.ndim - 1))
            return w_new.astype(w.dtype), (bias * c).astype(b_dtype)
        return None, (bias + c).astype(b_dtype)


# ---- helpers ---------------------------------------------------------------------------------
def _per_channel(array, rank, channels):
    """`array` as a vector of `channels` values when, broadcast against a rank-`rank` tensor,
    it varies only along axis 1 (one value per channel, or one for all); else None."""
    a = np.asarray(array)
    if a.ndim > rank or rank < 2:
        return None
    shape = (1,) * (rank - a.ndim) + a.shape
    if any(d != 1 for i, d in enumerate(shape) if i != 1) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(a.reshape(-1), (channels,))


def _same_value(g, a, b):
    va, vb = g.values[a], g.values[b]
    return va.shape == vb.shape and va.dtype == vb.dtype


def _opt(inputs, i):
    return inputs[i] if len(inputs) > i else ""


def _set_input(node, i, name):
    while len(node.inputs) <= i:
        node.inputs.append("")
    node.inputs[i] = name


def _folded(name):
    """The hint for a folded constant's name: `name` + "_folded" (once)."""
    return re.sub(r"_folded(_\d+)?$", "", name) + "_folded"


def _bias_hint(w_name):
    return w_name.removesuffix(".weight") + ".bias"
