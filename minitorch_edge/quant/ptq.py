"""Post-training quantization: a float model or graph and a few calibration batches in, an int8
Graph out; and QAT's convert (the per-layer sensitivity is in mixed_precision.py).

The path, in four steps, each a plain graph transformation:

1. the float graph: traced (from a Module) and optimized without the epilogue fusion, so every
   value an int8 op will read or write still exists (BatchNorm is folded into the convs);
2. calibration: the float graph runs on every calibration batch and an observer
   (quant/observers.py: min/max, moving average, histogram percentile, entropy) watches each
   float value; its range gives the value's scale and zero point (int8, per tensor);
3. QDQ insertion: around every op that has an int8 kernel (Conv, Gemm, Add, the pools, and the
   rearrangements between them) the values are routed through QuantizeLinear ->
   DequantizeLinear pairs with those parameters, and the weights become int8 constants read
   through a DequantizeLinear (symmetric, per output channel, [-127, 127]). This QDQ graph still
   computes in float; it is the format onnxruntime's quantizer writes;
4. `Graph.optimize()`: its fuse_quantized pass replaces each DQ -> op -> [activation] -> Q
   chain by the int8 op (graph/opset_quant.py), the activation folded into the clamp.

    x ─> Conv ─> Relu ─> Conv ─> y            (float graph, calibrated)
    x ─> Q ─> DQ ─> Conv(DQ(Wq)) ─> Relu ─> Q ─> DQ ─> Conv(DQ(Wq)) ─> Q ─> DQ ─> y   (QDQ)
    x ─> Q ─> mte.QLinearConv ─> mte.QLinearConv ─> DQ ─> y                         (int8)

Mixed precision is `keep_float=`: layers named there (module paths, e.g. "features.0", which
keeps every node under it) are left out of step 3 and run in float between a DQ and a Q.

QAT (quant/qat.py) ends in `convert`: the fine-tuned model is traced in eval mode, its fake
quantization nodes (mte.FakeQuantize) give the scales of the values and weights they watch,
and the same steps 3-4 build the int8 graph; values no fake quantizer watched (a residual
Add's output) are calibrated on the example inputs.
"""
import inspect
import warnings

import numpy as np

from ..backend.numpy_int8 import round_half_away
from ..graph import Graph, trace
from ..graph.executor import evaluate
from ..graph.passes import DEFAULT
from ..graph.passes.fuse_epilogue import activation_of
from ..graph.passes.fuse_quantized import is_global_mean
from ..graph.passes.remove_identities import replace_uses
from ..tensor import Tensor
from . import observers as _observers

__all__ = ["FLOAT_PASSES", "calibrate", "convert", "insert_qdq", "quantizable_layers", "quantize"]

# step 1's passes: the default order without the fusions (they run on the QDQ graph)
FLOAT_PASSES = [p for p in DEFAULT if p not in ("fuse_epilogue", "fuse_quantized")]
LAYERS = ("Conv", "Gemm")                   # ops with int8 weights
# ops whose output gets its own observed range (a mean's is narrower than its input's)
INT8_OPS = LAYERS + ("Add", "GlobalAveragePool", "ReduceMean")
# ops whose int8 output keeps its input's scale and zero point (a max, a rearrangement)
TAKES_ACTIVATION = LAYERS + ("Add",)        # a Relu / Clip after them folds into the clamp
SAME_SCALE = ("MaxPool", "AveragePool", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
              "Transpose")


# ---- inputs --------------------------------------------------------------------------------------
def _arrays(batch, n_inputs):
    """A calibration batch as a tuple of numpy arrays for a graph of `n_inputs` inputs; a
    DataLoader's (inputs..., labels) keeps its first n_inputs items."""
    items = tuple(batch) if isinstance(batch, (tuple, list)) else (batch,)
    if len(items) < n_inputs:
        raise ValueError(f"quant: a calibration batch has {len(items)} items, the model takes "
                         f"{n_inputs} inputs")
    return tuple(np.asarray(t._data if isinstance(t, Tensor) else t) for t in items[:n_inputs])


def _first(data):
    for batch in data:
        return batch
    raise ValueError("quant: the calibration data is empty; pass an iterable of input batches "
                     "(e.g. a few hundred training images)")


class _FloatModel:
    """The float graph (step 1) of a Module or Graph, one per input shape seen."""

    def __init__(self, model_or_graph, example):
        self.module = None if isinstance(model_or_graph, Graph) else model_or_graph
        if self.module is None:
            self.graph = model_or_graph.optimize(FLOAT_PASSES)
        else:
            self.graph = self._trace(example)
        self.n_inputs = len(self.graph.inputs)
        self._by_shape = {self._key(example): self.graph}

    def _trace(self, arrays):
        return trace(self.module, *arrays, check=False).optimize(FLOAT_PASSES)

    def _key(self, arrays):
        return tuple((a.shape, a.dtype.str) for a in arrays)

    def graph_for(self, arrays):
        """The float graph for inputs shaped like `arrays` (traced again for a new batch size,
        with the same value names), or None when that is impossible."""
        key = self._key(arrays)
        if key not in self._by_shape:
            g = None
            if self.module is not None:
                g = self._trace(arrays)
                if [n.op for n in g.nodes] != [n.op for n in self.graph.nodes] or \
                        set(g.values) != set(self.graph.values):
                    g = None
            self._by_shape[key] = g
        return self._by_shape[key]


# ---- step 2: calibration -------------------------------------------------------------------------
def _observed_values(g):
    """The float values whose range an int8 graph needs: inputs and outputs of INT8_OPS."""
    names = set()
    for node in g.nodes:
        if node.op in INT8_OPS + SAME_SCALE:
            names.update(n for n in node.inputs[:2 if node.op == "Add" else 1]
                         if n and not g.is_constant(n))
            out = node.outputs[0]
            act = _activation_reader(g, out) if node.op in TAKES_ACTIVATION else None
            names.add(act.outputs[0] if act is not None else out)
    return {n for n in names if g.values[n].dtype == "float32"}


def _activation_reader(g, name):
    """The Relu / Clip node fuse_quantized would fold into the op writing `name`, or None."""
    readers = g.consumers().get(name, [])
    if len(readers) == 1 and name not in g.outputs and readers[0].op in ("Relu", "Clip") \
            and activation_of(g, readers[0]) is not None:
        return readers[0]
    return None


def calibrate(model, data, observer, names):
    """{value name: observer} after running every batch of `data` through the float graph."""
    watch = {n: _observers.observer(observer) if isinstance(observer, str) else observer()
             for n in names}
    seen = 0
    for batch in data:
        arrays = _arrays(batch, model.n_inputs)
        g = model.graph_for(arrays)
        if g is None:
            raise ValueError(f"quant: a calibration batch has input shapes "
                             f"{[a.shape for a in arrays]}, the graph was built for "
                             f"{[model.graph.values[i].shape for i in model.graph.inputs]}; "
                             f"give batches of one shape (or a Module, which is traced again)")
        env = evaluate(g, arrays)
        for name, obs in watch.items():
            obs(env[name])
        seen += 1
    if not seen:
        raise ValueError("quant: the calibration data is empty")
    return watch


def _act_params(obs):
    scale, zp = obs.calculate_qparams()
    return (np.asarray(scale, np.float32).reshape(()),
            np.asarray(zp).astype(np.int8).reshape(()))


# ---- step 3: QDQ insertion ----------------------------------------------------------------------
def _layer_of(node):
    """The module path a node was traced under ("features.3.conv.0" of
    "features.3.conv.0/Conv"; the node name itself for a graph not made by trace)."""
    return node.name.rsplit("/", 1)[0] if "/" in node.name else node.name


def _kept(node, keep_float, only):
    path = _layer_of(node)
    inside = lambda names: any(path == k or path.startswith(k + ".") or node.name == k
                               for k in names)
    if keep_float and inside(keep_float):
        return True
    return only is not None and not inside(only)


def quantizable_layers(g):
    """[(layer path, op)] of the graph's nodes with int8 weights: what `keep_float` and
    `sensitivity` name."""
    return [(_layer_of(n), n.op) for n in g.nodes if _int8_layer(g, n)]


def _int8_layer(g, node):
    if node.op not in LAYERS or len(node.inputs) < 2 or not g.is_constant(node.inputs[1]):
        return False
    if node.op == "Gemm":
        a = node.attrs
        return not a.get("transA", 0) and a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0
    return len(g.values[node.inputs[0]].shape) == 4


def _weight_params(w, axis, per_channel, known=None):
    """(int8 weights, float32 scales) symmetric in [-127, 127], per output channel (axis) or
    per tensor; `known` scales (from QAT) are used as they are."""
    if known is not None:
        scale = np.asarray(known, np.float32)
    elif per_channel:
        obs = _observers.PerChannelMinMaxObserver(ch_axis=axis, quant_min=-127, quant_max=127,
                                                  symmetric=True)
        obs(w)
        scale = np.asarray(obs.calculate_qparams()[0], np.float32)
    else:
        obs = _observers.MinMaxObserver(quant_min=-127, quant_max=127, symmetric=True)
        obs(w)
        scale = np.asarray(obs.calculate_qparams()[0], np.float32).reshape(())
    shape = [1] * w.ndim
    if scale.ndim:
        shape[axis] = scale.size
    q = round_half_away(w.astype(np.float32) / scale.reshape(shape))
    return np.clip(q, -127, 127).astype(np.int8), scale


def insert_qdq(g, params, keep_float=(), only=None, per_channel=True, weight_scales=None):
    """Step 3 on float graph `g` (a copy is changed): `params` {value: (scale, zero point)}
    for every value that needs one. Returns the QDQ graph."""
    g = g.copy()
    weight_scales = weight_scales or {}
    int8 = set()                    # values that will be int8 (their producer is quantized)
    qdq = {}                        # value -> the name of its DequantizeLinear output
    weight_dq = []                  # (node, [Q/DQ nodes to put before it])
    plan = []                       # the nodes to quantize, in order

    for node in g.nodes:
        if _kept(node, keep_float, only) or not node.outputs:
            continue
        x = node.inputs[0] if node.inputs else ""
        if _int8_layer(g, node) or (node.op == "Add" and len(node.inputs) == 2 and not any(
                g.is_constant(i) for i in node.inputs)) or (
                node.op in ("GlobalAveragePool", "ReduceMean") and is_global_mean(g, node)):
            ins = node.inputs[:2] if node.op == "Add" else [x]
        elif node.op in SAME_SCALE and x in int8 and all(
                g.is_constant(i) for i in node.inputs[1:] if i):
            ins = [x]
        else:
            continue
        if any(i not in params for i in ins if i not in int8):
            continue
        act = _activation_reader(g, node.outputs[0]) if node.op in TAKES_ACTIVATION else None
        out = (act or node).outputs[0]
        if node.op in SAME_SCALE:
            params[out] = params[x]
        if out not in params:
            continue
        plan.append((node, ins))
        int8.add(out)
        int8.update(ins)

    pending = {}                    # value -> its [Q, DQ] pair, placed after its producer
    for node, ins in plan:
        for name in set(ins) | {(_activation_reader(g, node.outputs[0]) or node).outputs[0]
                                if node.op in TAKES_ACTIVATION else node.outputs[0]}:
            if name not in qdq:
                qdq[name], pending[name] = _qdq_pair(g, name, params[name])
        if node.op in LAYERS:
            axis = 0 if node.op == "Conv" or node.attrs.get("transB", 0) else 1
            w = node.inputs[1]
            wq, ws = _weight_params(g.constants[w], axis, per_channel, weight_scales.get(w))
            wq_name = g.add_constant(g.fresh_name(w + "_q"), wq)
            s_name = g.add_constant(g.fresh_name(w + "_scale"), ws)
            z_name = g.add_constant(g.fresh_name(w + "_zero"), np.zeros(ws.shape, np.int8))
            dq = g.add_node("DequantizeLinear", [wq_name, s_name, z_name], axis=axis,
                            name=g.fresh_name(node.name + "/weight/DequantizeLinear"))
            g.nodes.remove(dq)
            node.inputs[1] = dq.outputs[0]
            weight_dq.append((node, dq))
    # every reader of a quantized value reads its DQ'd copy (float readers too, as in ORT)
    for name, dq_name in qdq.items():
        q_node = pending[name][0]
        for n in g.nodes:
            if n is not q_node and name in n.inputs:
                n.inputs = [dq_name if i == name else i for i in n.inputs]
        g.outputs = [dq_name if o == name else o for o in g.outputs]
    _place(g, pending, weight_dq)
    _keep_output_names(g, qdq)
    return g.check()


def _qdq_pair(g, name, param):
    scale, zp = param
    s = g.add_constant(g.fresh_name(name + "_scale"), np.asarray(scale, np.float32).reshape(()))
    z = g.add_constant(g.fresh_name(name + "_zero_point"), np.asarray(zp, np.int8).reshape(()))
    q = g.add_node("QuantizeLinear", [name, s, z], [_free(g, name + "_int8")],
                   name=g.fresh_name(name + "/QuantizeLinear"))
    dq = g.add_node("DequantizeLinear", [q.outputs[0], s, z], [_free(g, name + "_dq")],
                    name=g.fresh_name(name + "/DequantizeLinear"))
    g.nodes.remove(q)
    g.nodes.remove(dq)
    return dq.outputs[0], [q, dq]


def _free(g, name):
    """`name` if no value has it yet, else a fresh name built from it."""
    return name if name not in g.values else g.fresh_name(name)


def _place(g, pending, weight_dq):
    """Put each value's Q/DQ pair right after its producer (graph inputs': first) and each
    weight's DQ right before its reader."""
    before = {id(node): dq for node, dq in weight_dq}
    after = {}
    produced = {o: n for n in g.nodes for o in n.outputs}
    head = []
    for name, pair in pending.items():
        if name in produced:
            after.setdefault(id(produced[name]), []).extend(pair)
        else:
            head.extend(pair)
    nodes = list(head)
    for n in g.nodes:
        if id(n) in before:
            nodes.append(before[id(n)])
        nodes.append(n)
        nodes.extend(after.get(id(n), []))
    g.nodes = nodes


def _keep_output_names(g, qdq):
    """A graph output that now comes out of a DQ gets its old name back."""
    for k, out in enumerate(g.outputs):
        original = next((name for name, d in qdq.items() if d == out), None)
        if original is None or original in g.inputs:
            continue
        inner = g.fresh_name(original + "_float")
        _rename(g, original, inner)
        _rename(g, out, original)
        g.outputs[k] = original


def _rename(g, old, new):
    v = g.values.pop(old)
    v.name = new
    g.values[new] = v
    for n in g.nodes:
        n.outputs = [new if o == old else o for o in n.outputs]
    replace_uses(g, old, new)


# ---- the public entry points --------------------------------------------------------------------
def quantize(model_or_graph, calibration_data, observer="minmax", per_channel=True,
             keep_float=(), example_inputs=None):
    """Post-training static quantization: an int8 Graph of `model_or_graph` (a Module, traced
    in eval mode, or a float Graph), calibrated on `calibration_data` (an iterable of input
    batches; (inputs..., labels) tuples keep the inputs). `observer`: "minmax",
    "moving_average", "percentile", "entropy" (quant/observers.py), or an Observer class.
    `per_channel`: weight scales per output channel (else one per tensor). `keep_float`:
    layer names (module paths, see `quantizable_layers`) kept in float. The graph takes inputs
    shaped like `example_inputs` (default: the first calibration batch) and is optimized
    (int8 ops fused): compile() it to run it."""
    return _Quantizer(model_or_graph, calibration_data, observer, example_inputs).build(
        keep_float=keep_float, per_channel=per_channel)


class _Quantizer:
    """A float graph with its calibrated parameters, ready to build int8 graphs from."""

    def __init__(self, model_or_graph, data, observer, example_inputs=None, known=None,
                 weight_scales=None):
        data = iter(data) if data is not None else iter(())
        first = None if example_inputs is not None else _first(data)
        example = _arrays(example_inputs if example_inputs is not None else first,
                          _n_inputs(model_or_graph))
        self.model = _FloatModel(model_or_graph, example)
        self.graph = self.model.graph
        known = dict(known or {})
        todo = _observed_values(self.graph) - set(known)
        batches = list(data) if first is None else [first] + list(data)
        if not batches and todo:
            batches = [example]
        watch = calibrate(self.model, batches, observer, todo) if todo else {}
        self.params = {name: _act_params(obs) for name, obs in watch.items()}
        self.params.update(known)
        self.weight_scales = weight_scales or {}
        self.batches = batches

    def build(self, keep_float=(), only=None, per_channel=True):
        qdq = insert_qdq(self.graph, dict(self.params), keep_float, only, per_channel,
                         self.weight_scales)
        return qdq.optimize()


def _n_inputs(model_or_graph):
    """How many inputs the model takes: a Graph's inputs, a Module's required positional
    forward arguments (so a DataLoader's (x, labels) batch feeds x alone)."""
    if isinstance(model_or_graph, Graph):
        return len(model_or_graph.inputs)
    forward = getattr(model_or_graph, "forward", model_or_graph)
    try:
        params = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return max(1, sum(p.kind in kinds and p.default is p.empty for p in params))


def convert(qat_model, *example_inputs, observer="minmax"):
    """The int8 Graph of a QAT model (quant.prepare_qat, then fine-tuned): traced in eval mode
    on `example_inputs`; the scales its fake quantizers learned or observed become the int8
    graph's parameters (values no fake quantizer watched are calibrated on the example
    inputs)."""
    if not example_inputs:
        raise ValueError("quant.convert: give the example inputs the graph is traced with")
    g = trace(qat_model, *example_inputs, check=False).optimize(FLOAT_PASSES)
    g, known, weight_scales = _harvest_fake_quant(g)
    arrays = tuple(np.asarray(t._data if isinstance(t, Tensor) else t) for t in example_inputs)
    q = _Quantizer(g, [arrays], observer, example_inputs=arrays, known=known,
                   weight_scales=weight_scales)
    return q.build()


def _harvest_fake_quant(g):
    """Remove the graph's mte.FakeQuantize nodes, returning ({activation value: (scale, zero
    point)}, {weight constant: per-channel scales}) read from them."""
    g = g.copy()
    known, weights = {}, {}
    for node in list(g.nodes):
        if node.op != "mte.FakeQuantize":
            continue
        x, s, z = node.inputs
        scale, zp = g.constants[s], g.constants[z]
        if g.is_constant(x):
            weights[x] = np.asarray(scale, np.float32)
        elif np.size(scale) == 1 and node.attrs.get("quant_min", -128) >= -128:
            known[x] = (np.asarray(scale, np.float32).reshape(()),
                        np.asarray(zp).astype(np.int8).reshape(()))
        else:
            warnings.warn(f"quant.convert: {node.name}: a per-channel activation quantizer is "
                          f"not supported; the value is calibrated instead")
        out = node.outputs[0]
        if out in g.outputs:       # the output keeps its name: the node becomes an Identity
            node.op, node.inputs, node.attrs = "Identity", [x], {}
        else:
            g.nodes.remove(node)
            replace_uses(g, out, x)
    g.remove_unused_values()
    return g.check().optimize(FLOAT_PASSES), known, weights
