"""Mixed precision: which layers mind being int8: quantize one at a time and measure the output.

`sensitivity` builds, for every layer with int8 weights, the graph in which only that layer
(and the activation fused into it) is int8, runs it on the calibration batches and reports
the output's signal-to-quantization-noise ratio against float, and `eval_fn`'s metric when
given. Mixed precision is then "keep the least robust layers in float":

    rows = quant.sensitivity(model, calib)             # most sensitive first
    g = quant.quantize(model, calib, keep_float=[r.layer for r in rows[:2]])
"""
from typing import NamedTuple

import numpy as np

from ..graph.executor import evaluate
from .ptq import _arrays, _Quantizer, quantizable_layers

__all__ = ["Sensitivity", "sensitivity", "sqnr"]


def sqnr(reference, approx):
    """Signal-to-quantization-noise ratio in dB: 10 log10(sum ref^2 / sum (ref - approx)^2)."""
    ref = np.asarray(reference, np.float64)
    err = ref - np.asarray(approx, np.float64)
    noise = float(np.sum(err * err))
    return float("inf") if noise == 0 else 10 * np.log10(float(np.sum(ref * ref)) / noise)


class Sensitivity(NamedTuple):
    layer: str          # module path (what keep_float takes)
    op: str             # Conv or Gemm
    sqnr_db: float      # output SQNR with only this layer in int8 (higher: less sensitive)
    metric: float       # eval_fn of that graph (None without eval_fn)


def sensitivity(model_or_graph, calibration_data, eval_fn=None, observer="minmax",
                per_channel=True):
    """For each layer with int8 weights: the model with only that layer quantized, its
    output SQNR against float over the calibration batches (and `eval_fn(run)` of it, where
    run is the compiled graph, when given). Returns [Sensitivity], most sensitive first
    (lowest SQNR); keep_float the first few for mixed precision."""
    q = _Quantizer(model_or_graph, calibration_data, observer)
    batches = [_arrays(b, q.model.n_inputs) for b in q.batches]
    batches = [b for b in batches if q.model.graph_for(b) is q.graph] or batches[:1]
    reference = [evaluate(q.graph, b) for b in batches]
    rows = []
    for layer, op in quantizable_layers(q.graph):
        run = q.build(only={layer}, per_channel=per_channel).compile(prepare=False)
        sig = noise = 0.0
        for b, env in zip(batches, reference):
            got = run(*b)
            got = got if isinstance(got, tuple) else (got,)
            for name, y in zip(q.graph.outputs, got):
                ref = np.asarray(env[name], np.float64)
                sig += float(np.sum(ref * ref))
                noise += float(np.sum((ref - y) ** 2))
        db = float("inf") if noise == 0 else 10 * np.log10(sig / noise)
        rows.append(Sensitivity(layer, op, db, None if eval_fn is None else eval_fn(run)))
    return sorted(rows, key=lambda r: r.sqnr_db)
