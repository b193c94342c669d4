"""Affine maps: ``linear`` (y = x W^T + b) and ``bilinear`` (y_k = x1^T W_k x2 + b_k).

``linear`` with a 2-D weight is one fused op, `Addmm`: the forward is a single backend call
(``backend.linear``: one GEMM reading W transposed in place, the bias added into its result),
the leading dims of x folded into the rows of that one product. Its backward is two GEMMs and a
column sum, each only for the inputs that need a gradient. Other cases (a 1-D weight, mixed
dtypes, a broadcast bias) are composed of Tensor ops (matmul, add), whose gradients, and
gradients of gradients, come from those ops. ``bilinear`` is composed too.

The fused op is named after PyTorch's grad_fn of linear on a batch of vectors, AddmmBackward0
(PyTorch runs addmm(b, x, W^T); it records MmBackward0 without a bias and ViewBackward0 for
inputs of more than 2 dims).

Under autocast, linear is one `AutocastLinear` (autocast_linear.py: the casts inside the op,
float32 parameter gradients straight from the GEMM) where it covers the arguments.
"""
import math

import numpy as np

from ... import backend
from ..._autocast import autocast_op
from ... import dtypes as _dt
from ...autograd.engine import mark_fresh
from ...autograd.function import Function
from ...autograd.grad_mode import _State
from ...ops._util import shape_str
from ...ops.linalg import matmul
from ...tensor import Tensor
from .autocast_linear import autocast_linear

__all__ = ["linear", "bilinear"]


def _need_tensor(x, name, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(x).__name__}")


class Addmm(Function):
    """y = x W^T + b for x (*, in), W (out, in), b (out,) or None, all of one float dtype.

    With X = x viewed as (rows, in) and G = dy as (rows, out):
    dx = G W (reshaped to x's shape), dW = G^T X, db = G summed over the rows.
    The backward is written with Tensor ops when it is itself recorded (create_graph=True), so
    gradients of gradients work; otherwise it calls the backend on the arrays directly."""
    _builtin = True

    @staticmethod
    def forward(ctx, x, w, b):
        needs = ctx.needs_input_grad
        if needs:  # keep only what the wanted gradients read: dx reads W, dW reads x
            ctx.save_for_backward(x if needs[1] else None, w if needs[0] else None)
        xd = x._data         # bfloat16/float16 go to the backend's half GEMM as they are
        lead = xd.shape[:-1]
        out = backend.linear(xd.reshape(math.prod(lead), xd.shape[-1]), w._data,
                             None if b is None else _dt.compute_array(b._data))
        return _dt.result_array(out.reshape(lead + (w._data.shape[0],)), xd.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return linear_grads(grad, x, w, ctx.needs_input_grad)


def linear_grads(grad, x, w, needs):
    """(dx, dw, db) of y = x W^T + b for the gradient `grad` of y, each only where `needs` asks:
    with X = x as (rows, in) and G = grad as (rows, out), dx = G W, dW = G^T X, db = sum_rows G.
    Written with Tensor ops when the backward is itself recorded (create_graph=True), else on
    the arrays, each result a new array the engine may adopt."""
    n_out = grad._data.shape[-1]
    lead = grad._data.shape[:-1]
    rows = math.prod(lead)
    dx = dw = db = None
    if not _State.enabled:
        t = grad._data.dtype   # bfloat16/float16: half GEMMs (float32 sums, rounded once)
        g = grad._data.reshape(rows, n_out)

        def fresh(a):
            return Tensor._make(mark_fresh(_dt.result_array(a, t)))
        if needs[0]:
            dx = fresh(backend.matmul(g, w._data).reshape(lead + w._data.shape[1:]))
        if needs[1]:
            xd = x._data
            dw = fresh(backend.matmul(g.T, xd.reshape(rows, xd.shape[-1])))
        if needs[2]:   # half: the column sums as a GEMM with a row of ones (float32 sums,
            # no widened copy of g)
            db = fresh(g.sum(0) if g.dtype.itemsize > 2 else backend.half_gemm(
                np.ones((1, rows), g.dtype), g, out_float32=True).reshape(n_out))
        return dx, dw, db
    g = grad.reshape(rows, n_out)
    if needs[0]:
        dx = matmul(g, w).reshape(lead + w._data.shape[1:])
    if needs[1]:
        dw = matmul(g.t(), x.reshape(rows, x._data.shape[-1]))
    if needs[2]:
        db = g.sum(0)
    return dx, dw, db


def _fusable(input, weight, bias):
    """The fused op covers a 2-D weight, one float dtype, and a bias of shape (out,) or none."""
    dt = weight._data.dtype
    return (weight._data.ndim == 2 and _dt.is_float_dtype(dt) and input._data.dtype == dt
            and (bias is None or (bias._data.dtype == dt
                                  and bias._data.shape == weight._data.shape[:1])))


@autocast_op("linear", fused=autocast_linear)
def linear(input, weight, bias=None):
    """y = x W^T + b for input (*, in), weight (out, in) or (in,), bias (out,) or ().

    Gradients: dx = dy W, dW = dy^T x (summed over the leading dims), db = dy summed over them.
    """
    _need_tensor(input, "input", "linear")
    _need_tensor(weight, "weight", "linear")
    ws, xs = weight._data.shape, input._data.shape
    if weight._data.ndim not in (1, 2):
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D (out_features x in_features), "
                           f"got shape {tuple(ws)}")
    if not xs or xs[-1] != ws[-1]:
        raise RuntimeError(f"linear: expected input with last dimension {ws[-1]} (weight "
                           f"{shape_str(ws)}), got input of shape {tuple(xs)}")
    if bias is not None:
        _need_tensor(bias, "bias", "linear")
    if _fusable(input, weight, bias):
        return Addmm.apply(input, weight, bias)
    out = matmul(input, weight.t() if weight._data.ndim == 2 else weight)
    if bias is not None:
        want = ws[:1] if weight._data.ndim == 2 else ()
        if bias._data.shape != want and bias._data.size != 1:
            raise RuntimeError(f"linear: bias of shape {tuple(bias._data.shape)} does not match "
                               f"out_features {ws[0] if ws else 1}")
        out = out + bias
    return out


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = sum_ij x1[..., i] W[k, i, j] x2[..., j] + b[k].

    input1 (*, in1), input2 (*, in2) with the same leading dims, weight (out, in1, in2).
    Computed as (x1 @ W') * x2 summed over j, where W' (in1, out*in2) is W with its first two
    dims swapped: one matrix product and one broadcast multiply.
    """
    for x, name in ((input1, "input1"), (input2, "input2"), (weight, "weight")):
        _need_tensor(x, name, "bilinear")
    s1, s2, ws = input1._data.shape, input2._data.shape, weight._data.shape
    if len(ws) != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out x in1 x in2), got shape "
                           f"{tuple(ws)}")
    if not s1 or not s2 or s1[:-1] != s2[:-1]:
        raise RuntimeError(f"bilinear(): input1 {tuple(s1)} and input2 {tuple(s2)} must have "
                           f"the same leading (batch) dims")
    if s1[-1] != ws[1] or s2[-1] != ws[2]:
        raise RuntimeError(f"bilinear: expected inputs with last dimensions {ws[1]} and {ws[2]} "
                           f"(weight {shape_str(ws)}), got input1 {tuple(s1)} and input2 "
                           f"{tuple(s2)}")
    out_f, in1, in2 = ws
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    t = matmul(input1, w).reshape(*s1[:-1], out_f, in2)
    out = (t * input2.unsqueeze(-2)).sum(-1)
    if bias is not None:
        _need_tensor(bias, "bias", "bilinear")
        if bias._data.shape != (out_f,):
            raise RuntimeError(f"bilinear: bias must have shape ({out_f},), got "
                               f"{tuple(bias._data.shape)}")
        out = out + bias
    return out
