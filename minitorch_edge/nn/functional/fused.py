"""Fused layer pairs: a Linear or Conv2d and the activation after it, run as one backend call.

libmte applies bias and an activation to each tile of a GEMM's (or conv's) result while the
tile is still in cache (``backend.linear(x, w, b, act=)``, ``backend.conv2d(..., act=)``): the
activation then costs no extra pass over the output and no extra array. This file is where the
layers use that; the results equal those of the two layers run one after the other (to float32
rounding):

    pair                          fused when                            recorded as
    Linear -> ReLU / ReLU6        always (training too)                 LinearRelu / LinearRelu6
    Linear -> GELU (none / tanh)  nothing is recorded (eval, no_grad),  nothing (no node)
                                  float32, native backend
    Conv2d -> ReLU / ReLU6        nothing is recorded                   nothing (no node)

* Linear + ReLU/ReLU6 is exact in training as well: the activation's gradient mask can be read
  from the fused output (relu: y > 0 exactly where z > 0; relu6: 0 < y < 6 exactly where
  0 < z < 6, z the pre-activation), so the pre-activation is never needed (see `_LinearMasked`).
* GELU's gradient needs the pre-activation z, which the fused op never materialises; keeping it
  would cost what the fusion saves, so with a graph the pair runs unfused. On the numpy backend
  (or another dtype than float32) it runs unfused too: the numpy twin's GELU is evaluated in
  float64 and is slower than the unfused one (see `_gelu_pays`).
* Conv2d + ReLU/ReLU6 is fused when no graph is recorded (no_grad / inference_mode, or frozen
  weights and an input without grad); the backend may then take its inference paths too
  (``inference=True``: Winograd, prepacked weights). A recorded conv + relu stays two nodes:
  the saving (one pass over the output, the ReLU's) is small next to a training step's
  convolutions and their backward.
* Not fused here: Conv2d -> BatchNorm -> ReLU (ResNet, MobileNetV2, EfficientNet-Lite0) and
  ResNet's relu(bn(conv(x)) + identity). The BatchNorm in between has to be folded into the
  conv's weight and bias first (eval mode only), a rewrite of the model's parameters that
  belongs to the graph passes, not to eager layers.

Who fuses: ``nn.Sequential`` (an exact nn.Linear or nn.Conv2d followed by an exact nn.ReLU,
nn.ReLU6 or nn.GELU; see `can_fuse`) and the Transformer layers' feed-forward block
(``linear1`` + ``activation``), both through `pair_forward`. Only exact types fuse (a subclass
may change forward) and only modules without forward hooks or pre-hooks (a hook on the first
module must see its output, which the fused op never makes). ``inplace=True`` on the
activation changes nothing: its input is the first layer's fresh output, seen by no one else.

Under autocast, Linear -> ReLU / ReLU6 is one `AutocastLinear` (autocast_linear.py: the
casts inside the op, the activation on the GEMM's float32 sums before the one rounding, which
gives autocast's values: relu commutes with rounding); the other pairs run as their two ops,
so that each op's autocast policy applies.

The switch: ``enabled`` below (``MTE_FUSE=0`` in the environment starts it False; assign
``fused.enabled = False`` to compare in one process, as bench/fused_layers.py does).

Difference from PyTorch: grad_fn names. PyTorch records Linear -> ReLU as AddmmBackward0 then
ReluBackward0; a fused pair here is one node, ``LinearReluBackward0`` (``LinearRelu6Backward0``),
a name PyTorch does not have.
"""
import math
import os

import numpy as np

from ... import _autocast, backend
from ...autograd.function import Function
from ...autograd.grad_mode import _State
from ...ops import activation as A
from ...tensor import Tensor
from ..layers.activation import GELU, ReLU, ReLU6
from ..layers.conv import Conv2d
from ..layers.linear import Linear
from .autocast_linear import autocast_linear
from .linear import linear, linear_grads

__all__ = ["linear_act", "can_fuse", "pair_forward"]

enabled = os.environ.get("MTE_FUSE", "1") != "0"

_ACT_FN = {"relu": A.relu, "relu6": A.relu6,
           "gelu": A.gelu, "gelu_tanh": lambda x: A.gelu(x, approximate="tanh")}
_FUNCTIONS = ((A.relu, "relu"), (A.relu6, "relu6"), (A.gelu, "gelu"))  # activations as functions


# ---- Linear + activation ------------------------------------------------------------------------
def _linear_act_array(x, w, b, act):
    """act(x W^T + b) on arrays, the leading dims of x folded into the GEMM's rows."""
    lead = x.shape[:-1]
    out = backend.linear(x.reshape(math.prod(lead), x.shape[-1]), w, b, act=act)
    return out.reshape(lead + (w.shape[0],))


class _LinearMasked(Function):
    """y = act(z), z = x W^T + b, for an act whose derivative is a 0/1 mask readable from y
    (the subclasses below give act and the mask).

    With X = x viewed as (rows, in), G = dy as (rows, out) and M = mask(y):
    dz = G * M, dx = dz W, dW = dz^T X, db = dz summed over the rows.
    M is a constant (the activation is piecewise linear), so the backward, written with Tensor
    ops when it is itself recorded (create_graph=True), gives gradients of gradients too."""
    _builtin = True

    @staticmethod
    def _forward(ctx, x, w, b, act, mask):
        out = _linear_act_array(x._data, w._data, None if b is None else b._data, act)
        needs = ctx.needs_input_grad
        if needs:  # dx reads W, dW reads x; both read the mask
            ctx.save_for_backward(x if needs[1] else None, w if needs[0] else None)
            ctx.mask = mask(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        if _State.enabled:   # recorded (create_graph): the mask as a constant Tensor factor
            dz = grad * Tensor._make(ctx.mask.astype(grad._data.dtype))
        else:                # (a bool mask keeps grad's dtype)
            dz = Tensor._make(grad._data * ctx.mask)
        return linear_grads(dz, x, w, ctx.needs_input_grad)


def _relu_mask(y):
    return y > 0


def _relu6_mask(y):
    return (y > 0) & (y < 6)


class LinearRelu(_LinearMasked):
    """y = relu(x W^T + b) as one GEMM; its mask is y > 0 (see _LinearMasked)."""

    @staticmethod
    def forward(ctx, x, w, b):
        return _LinearMasked._forward(ctx, x, w, b, "relu", _relu_mask)


class LinearRelu6(_LinearMasked):
    """y = relu6(x W^T + b) as one GEMM; its mask is 0 < y < 6 (see _LinearMasked)."""

    @staticmethod
    def forward(ctx, x, w, b):
        return _LinearMasked._forward(ctx, x, w, b, "relu6", _relu6_mask)


_MASKED = {"relu": LinearRelu, "relu6": LinearRelu6}


def _records(*tensors):
    """True when an op on these tensors would be recorded (grad mode on, one requires grad)."""
    return _State.enabled and any(t is not None and t._rg for t in tensors)


def _linear_act_fused(x, w, b, act):
    """act(x W^T + b) as one fused op, or None when the case is not covered: the fused op
    takes float tensors of one dtype, a 2-D weight, x (*, in), b (out,) or None, and GELU only
    when nothing is recorded (see the file header)."""
    if not (isinstance(x, Tensor) and isinstance(w, Tensor)
            and (b is None or isinstance(b, Tensor))):
        return None
    wd, xd = w._data, x._data
    if not (wd.ndim == 2 and wd.dtype.kind == "f" and xd.dtype == wd.dtype and xd.ndim >= 1
            and xd.shape[-1] == wd.shape[1]
            and (b is None or (b._data.dtype == wd.dtype and b._data.shape == wd.shape[:1]))):
        return None
    if act in _MASKED:
        return _MASKED[act].apply(x, w, b)
    if _records(x, w, b) or not _gelu_pays(xd.dtype):
        return None
    return Tensor._make(_linear_act_array(xd, wd, None if b is None else b._data, act))


def _gelu_pays(dtype):
    """GELU is fused only where libmte evaluates it (float32 on the native backend): the numpy
    twin evaluates it in float64, two times slower than the unfused float32 gelu (measured by
    bench/fused_layers.py), so there the pair runs unfused."""
    return dtype == np.float32 and backend.active() == "native"


def linear_act(input, weight, bias=None, act=None):
    """act(linear(input, weight, bias)) for act None, "relu", "relu6", "gelu", "gelu_tanh":
    one fused op where that is exact (see the file header and `enabled`), else the two ops."""
    if act is None:
        return linear(input, weight, bias)
    if act not in _ACT_FN:
        raise ValueError(f"linear_act: act must be one of None, {', '.join(map(repr, _ACT_FN))}"
                         f", got {act!r}")
    out = None
    if enabled:
        out = _linear_act_fused(input, weight, bias, act) if _autocast.State.active is None \
            else _autocast_linear_act(input, weight, bias, act)
    return out if out is not None else _ACT_FN[act](linear(input, weight, bias))


def _autocast_linear_act(x, w, b, act):
    """act(linear(x, w, b)) under autocast as one AutocastLinear (ReLU / ReLU6), or None;
    it runs with autocast off, as a listed op's body does."""
    if act not in _MASKED:
        return None
    lower = _autocast.State.active
    _autocast.State.active = None
    try:
        return autocast_linear(lower, x, w, b, act)
    finally:
        _autocast.State.active = lower


# ---- Conv2d + activation (nothing recorded) -----------------------------------------------------
def _conv2d_act_inference(conv, x, act):
    """act(conv(x)) as one backend call with the inference paths allowed, or None when the
    case is not covered (the caller then runs the layers unfused, with their checks)."""
    w, b = conv.weight, conv.bias
    if not (isinstance(x, Tensor) and conv.padding_mode == "zeros"
            and not _records(x, w, b)):
        return None
    xd, wd = x._data, w._data
    if (xd.ndim != 4 or wd.ndim != 4 or xd.dtype != wd.dtype or xd.dtype.kind != "f"
            or (b is not None and b._data.dtype != wd.dtype)
            or xd.shape[1] != wd.shape[1] * conv.groups):
        return None
    left, right, top, bottom = conv._reversed_padding_repeated_twice
    padding = (top, bottom, left, right)
    stride, dilation = tuple(conv.stride), tuple(conv.dilation)
    spans = [d * (k - 1) + 1 for k, d in zip(wd.shape[2:], dilation)]
    if (min(stride + dilation) < 1 or xd.shape[2] + top + bottom < spans[0]
            or xd.shape[3] + left + right < spans[1]):
        return None
    y = backend.conv2d(xd, wd, None if b is None else b._data, stride, padding, dilation,
                       conv.groups, act=act, inference=True)
    return Tensor._make(y)


# ---- the pairs ----------------------------------------------------------------------------------
def _hookless(m):
    return not (m._forward_pre_hooks or m._forward_hooks)


def _epilogue(act):
    """The backend's name for an activation (Module or function) that can be fused, or None."""
    kind = type(act)
    if kind is ReLU or kind is ReLU6 or kind is GELU:
        if not _hookless(act):
            return None
        if kind is GELU:
            return {"none": "gelu", "tanh": "gelu_tanh"}.get(act.approximate)
        return "relu" if kind is ReLU else "relu6"
    return next((name for fn, name in _FUNCTIONS if act is fn), None)


def can_fuse(first, second):
    """True when the pair has a fused form (fusion enabled; an exact nn.Linear followed by an
    exact ReLU / ReLU6 / GELU, or an exact nn.Conv2d followed by ReLU / ReLU6, as Modules or
    ops functions; no forward hooks on either). Whether a call is fused also depends on its
    input: pair_forward decides."""
    if not enabled or not (type(first) is Linear or type(first) is Conv2d):
        return False
    act = _epilogue(second)
    return (act is not None and _hookless(first)
            and (type(first) is Linear or act in ("relu", "relu6")))


def pair_forward(first, second, input):
    """second(first(input)), computed as one fused op where can_fuse holds and the input is
    covered (else the two modules are called as usual)."""
    out = None
    if can_fuse(first, second):
        act = _epilogue(second)
        if _autocast.State.active is not None:   # autocast: Linear + ReLU/ReLU6, else two ops
            if type(first) is Linear:
                out = _autocast_linear_act(input, first.weight, first.bias, act)
        elif type(first) is Linear:
            out = _linear_act_fused(input, first.weight, first.bias, act)
        else:
            out = _conv2d_act_inference(first, input, act)
    return out if out is not None else second(first(input))

