"""Affine maps: ``linear`` (y = x W^T + b) and ``bilinear`` (y_k = x1^T W_k x2 + b_k).

Both are composed of Tensor ops (matmul, add, mul, sum), so their gradients, and gradients of
gradients, come from those ops. matmul already folds a batch of rows into one matrix product
when a 2-D weight is shared by every row, so a (B, T, in) input costs one GEMM forward and two
backward.
"""
from ...ops._util import shape_str
from ...ops.linalg import matmul
from ...tensor import Tensor

__all__ = ["linear", "bilinear"]


def _need_tensor(x, name, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(x).__name__}")


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
    out = matmul(input, weight.t() if weight._data.ndim == 2 else weight)
    if bias is not None:
        _need_tensor(bias, "bias", "linear")
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
