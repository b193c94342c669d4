"""summary(model, input_shape): a per-layer table of output shapes, parameters and MACs, in the
spirit of torchinfo's ``summary``.

How it works: a forward pre-hook and a forward hook are registered on every sub-module; one
forward pass (eval mode, no_grad) on a random input of ``input_shape`` (batch dim included)
records, for each module call in call order, its nesting depth, output shape and
multiply-accumulate count. The hooks are removed and every module's train/eval mode restored
afterwards, even when the forward pass fails.

MACs (one multiply-accumulate = one multiply + one add) are counted for the whole batch:

=========================  ==========================================================
Conv1d/2d/3d               output elements * (C_in / groups) * prod(kernel)
ConvTranspose1d/2d         input elements * (C_out / groups) * prod(kernel)
Linear                     output elements * in_features (Bilinear: * in1 * in2)
BatchNorm/LayerNorm/...    one per output element when affine (scale and shift)
MultiheadAttention         q, k, v and output projections + the two attention matmuls
                           (Q K^T and A V): N * (L*E*E + S*kdim*E + S*vdim*E + 2*L*S*E + L*E*E)
everything else            0 (activations, pooling, dropout, embedding lookups)
=========================  ==========================================================

A row shows a module's own parameters when its children are listed below it, and all the
parameters of its subtree when they are not (deeper than ``depth``); its MACs likewise. Totals
come from ``model.parameters()`` (a shared parameter counts once).
"""
import numpy as np

from .. import creation
from ..autograd.grad_mode import no_grad
from ..dtypes import float32, to_dtype
from ..tensor import Tensor
from .. import nn

__all__ = ["summary", "ModelSummary"]

_CONV = (nn.Conv1d, nn.Conv2d)
_CONV_T = (nn.ConvTranspose1d, nn.ConvTranspose2d)
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm,
          nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d, nn.RMSNorm)


class ModelSummary(str):
    """The table as a string, with the numbers as attributes: ``total_params``,
    ``trainable_params``, ``total_macs``, ``forward_bytes`` and ``rows`` (one dict per module
    call: name, type, depth, index, output_shape, params, macs)."""


def _first_tensor(x):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (tuple, list)):
        for v in x:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def _all_tensors(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _all_tensors(v)]
    return []


def _prod(xs):
    out = 1
    for v in xs:
        out *= int(v)
    return out


def layer_macs(module, inputs, output):
    """Multiply-accumulates of one call of `module` (see the table in the file header)."""
    out = _first_tensor(output)
    inp = _first_tensor(inputs)
    if out is None:
        return 0
    if isinstance(module, _CONV):
        return out.numel() * (module.in_channels // module.groups) * _prod(module.kernel_size)
    if isinstance(module, _CONV_T) and inp is not None:
        return inp.numel() * (module.out_channels // module.groups) * _prod(module.kernel_size)
    if isinstance(module, nn.Linear):
        return out.numel() * module.in_features
    if isinstance(module, nn.Bilinear):
        return out.numel() * module.in1_features * module.in2_features
    if isinstance(module, _NORMS):
        affine = getattr(module, "affine", None)
        if affine is None:
            affine = getattr(module, "elementwise_affine", True)
        return out.numel() if affine else 0
    if isinstance(module, nn.MultiheadAttention) and len(inputs) >= 3:
        q, k = inputs[0], inputs[1]
        batch_first = module.batch_first and q.dim() == 3
        n = (q.shape[0] if batch_first else q.shape[1]) if q.dim() == 3 else 1
        seq_q = q.shape[1 if batch_first else 0]
        seq_k = k.shape[1 if batch_first else 0]
        e = module.embed_dim
        proj = seq_q * e * e + seq_k * module.kdim * e + seq_k * module.vdim * e
        return n * (proj + 2 * seq_q * seq_k * e + seq_q * e * e)
    return 0


def _make_inputs(input_shape, dtype):
    shapes = [input_shape] if input_shape and isinstance(input_shape[0], int) else input_shape
    dtypes = dtype if isinstance(dtype, (list, tuple)) else [dtype] * len(shapes)
    out = []
    for shape, dt in zip(shapes, dtypes):
        dt = to_dtype(dt)
        if dt.is_floating_point:
            out.append(creation.randn(*shape, dtype=dt))
        else:   # token ids etc.: ones (0 is often the padding index)
            out.append(creation.ones(*shape, dtype=dt))
    return out


def _fmt(n):
    return f"{n:,}" if n else "--"


def _human(n):
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return str(n)


def summary(model, input_shape=None, dtype=float32, depth=3, input_data=None, verbose=True):
    """Print (when ``verbose``) and return a per-layer table of `model`.

    ``input_shape``: the input's full shape, batch dim included (e.g. ``(1, 3, 224, 224)``), or
    a list of shapes for a model with several inputs; a random input of ``dtype`` is made
    (integer dtypes get ones). Or pass ``input_data`` (a Tensor or a list of Tensors).
    ``depth``: how many levels of nesting to list. Returns a `ModelSummary` (a str).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"summary: model must be an nn.Module, got {type(model).__name__}")
    if input_data is None:
        if input_shape is None:
            raise ValueError("summary: give input_shape (batch dim included) or input_data")
        inputs = _make_inputs(tuple(input_shape) if not isinstance(input_shape[0], (list, tuple))
                              else [tuple(s) for s in input_shape], dtype)
    else:
        inputs = [input_data] if isinstance(input_data, Tensor) else list(input_data)

    root = {"module": model, "name": type(model).__name__, "depth": 0, "index": 1,
            "children": [], "macs": 0, "output_shape": None, "out_bytes": 0}
    stack, rows, handles = [root], [], []

    def pre_hook(module, args):
        parent = stack[-1]
        row = {"module": module, "name": type(module).__name__, "depth": len(stack),
               "index": len(parent["children"]) + 1, "children": [], "macs": 0,
               "output_shape": None, "out_bytes": 0}
        parent["children"].append(row)
        rows.append(row)
        stack.append(row)

    def hook(module, args, output):
        row = stack.pop()
        row["macs"] = layer_macs(module, args, output)
        out = _first_tensor(output)
        if out is not None:
            row["output_shape"] = list(out.shape)
        row["out_bytes"] = sum(t._data.nbytes for t in _all_tensors(output))

    modes = [(m, m.training) for m in model.modules()]
    try:
        for m in model.modules():
            if m is not model:
                handles.append(m.register_forward_pre_hook(pre_hook))
                handles.append(m.register_forward_hook(hook))
        model.eval()
        with no_grad():
            output = model(*inputs)
    finally:
        for h in handles:
            h.remove()
        for m, mode in modes:
            object.__setattr__(m, "training", mode)
    out = _first_tensor(output)
    root["output_shape"] = list(out.shape) if out is not None else None

    def subtree_macs(row):
        return row["macs"] + sum(subtree_macs(c) for c in row["children"])

    lines, table = [], []
    for row in [root] + rows:
        if row["depth"] > depth:
            continue
        module = row["module"]
        shown_children = row["depth"] < depth and row["children"]
        if shown_children:
            params = sum(p.numel() for p in module._parameters.values() if p is not None)
            macs = row["macs"]
        else:
            params = sum(p.numel() for p in module.parameters())
            macs = subtree_macs(row)
        label = row["name"] if row["depth"] == 0 else \
            "  " * (row["depth"] - 1) + f"└─{row['name']}: {row['depth']}-{row['index']}"
        shape = str(row["output_shape"]) if row["output_shape"] is not None else "--"
        table.append((label, shape, _fmt(params), _fmt(macs)))
        row["params"], row["macs_shown"] = params, macs

    header = ("Layer (type:depth-idx)", "Output Shape", "Param #", "MACs")
    widths = [max(len(r[i]) for r in table + [header]) + 2 for i in range(4)]

    def fmt_row(r):
        return r[0].ljust(widths[0]) + r[1].ljust(widths[1]) + r[2].rjust(widths[2]) + \
            r[3].rjust(widths[3])

    rule = "=" * sum(widths)
    lines += [rule, fmt_row(header), rule] + [fmt_row(r) for r in table] + [rule]

    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    trainable = sum(p.numel() for p in params if p.requires_grad)
    total_macs = sum(r["macs"] for r in rows)
    leaf_bytes = sum(r["out_bytes"] for r in rows if not r["children"])
    input_bytes = sum(t._data.nbytes for t in inputs)
    state_bytes = sum(p._data.nbytes for p in params) + \
        sum(b._data.nbytes for b in model.buffers())
    mb = 1024.0 ** 2
    lines += [f"Total params: {total:,}",
              f"Trainable params: {trainable:,}",
              f"Non-trainable params: {total - trainable:,}",
              f"Total MACs: {total_macs:,} ({_human(total_macs)})",
              rule,
              f"Input size (MB): {input_bytes / mb:.2f}",
              f"Forward pass size (MB): {leaf_bytes / mb:.2f}",
              f"Params + buffers size (MB): {state_bytes / mb:.2f}",
              f"Estimated total size (MB): {(input_bytes + leaf_bytes + state_bytes) / mb:.2f}",
              rule]
    result = ModelSummary("\n".join(lines))
    result.total_params, result.trainable_params = total, trainable
    result.total_macs, result.forward_bytes = total_macs, leaf_bytes
    result.rows = [{"name": r["name"], "type": type(r["module"]), "depth": r["depth"],
                    "index": r["index"], "output_shape": r["output_shape"],
                    "params": r.get("params"), "macs": r["macs"]} for r in rows]
    if verbose:
        print(result)
    return result
