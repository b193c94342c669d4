"""Autocast's one mechanism: a policy table {op name -> cast policy} and the decorator that
consults it where each listed op is entered.

PyTorch's autocast is a dispatch key in front of the ATen ops: a listed op casts its floating
Tensor inputs, then runs with autocast excluded, so the ops it is made of are not cast again;
an unlisted op passes through and the ops it is made of meet autocast themselves. Our public
functions (``matmul``, ``F.linear``, ``F.mse_loss``, ``cat``) play the ATen ops' part, so
``@autocast_op("name")`` on such a function does the same: while autocast is on it casts the
arguments as ``POLICY[name]`` says and runs the body with autocast off. Outside autocast the
whole cost is one attribute test per call.

Policies (PyTorch 2.13's CPU lists, aten/src/ATen/autocast_mode.cpp):

* ``"lower"``: floating inputs to the autocast dtype (bfloat16 or float16): conv, linear,
  matmul and friends, attention;
* ``"fp32"``: floating inputs to float32: losses, prod, cdist, trace, the decompositions;
* ``"promote"``: floating inputs to the widest of them and the autocast dtype (cat, stack).

As in PyTorch a float64 tensor is never cast ("eligible" = floating and not float64), and a
float32 leaf parameter that requires grad is cast once per autocast region (the cache) however
many ops use it; the cast is the differentiable ``to(dtype)``, so its gradient comes back to
the parameter in the parameter's own dtype. The cache is filled only while grad mode is on
(a cast made under no_grad has no history, and reusing it later would cut the gradient).
An op may do its casts itself (``autocast_op(name, fused=)``: linear's AutocastLinear); its
weight casts are arrays in the same cache (an entry holds the parameter, its cast Tensor or
None, and the cast's array), so one parameter is cast once per region whichever ops use it.
The state is process-wide, not per thread.
"""
import functools

import numpy as np

_F32 = np.dtype(np.float32)

__all__ = ["POLICY", "autocast_op", "call_as", "State", "clear_cache"]

# op name -> policy; the names are PyTorch's (the public function that plays that ATen op).
# "derived" entries are ops that PyTorch does not list but that it decomposes into a listed op
# (einsum and tensordot run bmm/mm; mv and dot do not), so their output dtype under autocast is that op's.
_LOWER = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
          "conv_transpose3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm",
          "linear", "matmul", "prelu", "scaled_dot_product_attention", "_convolution")
_LOWER_DERIVED = ("einsum", "tensordot")
_FP32 = ("binary_cross_entropy", "prod", "cdist", "trace", "cholesky", "inverse", "pinverse",
         "max_unpool2d", "mse_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss",
         "poisson_nll_loss", "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss",
         "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
         "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits",
         "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals",
         "linalg_eigvalsh", "linalg_inv", "linalg_qr", "linalg_svd", "linalg_eigh", "qr", "svd",
         "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d",
         "replication_pad3d")
_PROMOTE = ("stack", "cat", "index_copy")
POLICY = {**{n: "lower" for n in _LOWER + _LOWER_DERIVED}, **{n: "fp32" for n in _FP32},
          **{n: "promote" for n in _PROMOTE}}


class State:
    """Autocast's state. ``active`` is the dtype ops cast to while autocast is on (None when
    off, or inside a listed op, where PyTorch excludes autocast); ``dtype`` is the configured
    dtype (what ``get_autocast_dtype("cpu")`` answers, also while disabled)."""
    active = None
    dtype = None          # set to bfloat16 on first use (dtypes imports lazily)
    cache_enabled = True
    nesting = 0           # entered autocast contexts (enabled or not); the cache dies at 0
    cache = {}            # id(fp32 leaf parameter) -> (parameter, its cast Tensor or None,
    #                       the cast's array: fused ops such as AutocastLinear take only that)


def clear_cache():
    """Drop the cached casts of parameters (PyTorch's torch.clear_autocast_cache)."""
    State.cache.clear()


def _eligible(t):
    """A Tensor autocast may cast: floating and not float64, as PyTorch's is_eligible."""
    from .dtypes import is_float_dtype
    dt = t._data.dtype
    return is_float_dtype(dt) and dt.itemsize != 8


def _cast(t, to):
    """`t` as dtype `to` (a minitorch_edge dtype) through the differentiable to(); a float32
    leaf that requires grad is cast once per region when the cache is on."""
    if t._data.dtype == to.np or not _eligible(t):
        return t
    from .autograd.grad_mode import _State as _grad
    # (only while grad mode is on: a cast made under no_grad has no history to reuse)
    cacheable = (State.cache_enabled and to is State.active and t._data.dtype == _F32
                 and t._rg and t._fn is None and t._base is None and _grad.enabled)
    if not cacheable:
        return t.to(to)
    hit = State.cache.get(id(t))
    if hit is not None and hit[0] is t and hit[1] is not None:
        return hit[1]
    cast = t.to(to)
    State.cache[id(t)] = (t, cast, cast._data)   # keeps t alive: its id cannot be reused
    return cast


def _tensors_in(args, kwargs):
    from .tensor import Tensor
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, Tensor))


def _target(kind, lower, args, kwargs):
    """The dtype `kind` casts the eligible inputs to."""
    from . import dtypes as _dt
    if kind == "lower":
        return lower
    if kind == "fp32":
        return _dt.float32
    to = lower      # promote: PyTorch's prioritize, over the eligible inputs in order
    for t in _tensors_in(args, kwargs):
        if not _eligible(t) or to is _dt.float32:
            continue
        nxt = _dt._FROM_NP[t._data.dtype]
        if nxt is _dt.float32:
            to = _dt.float32
        elif nxt is not lower:
            raise RuntimeError(f"autocast: a {nxt.name} tensor met a {lower.name} autocast "
                               f"region in a promoting op (cat, stack, index_copy) with no "
                               f"float32 input before it (PyTorch: Unexpected floating "
                               f"ScalarType in at::autocast::prioritize); cast it to "
                               f"{lower.name} or float32 first")
    return to


def _cast_all(args, kwargs, to):
    from .tensor import Tensor

    def one(a):
        if isinstance(a, Tensor):
            return _cast(a, to)
        if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
            return type(a)(_cast(x, to) if isinstance(x, Tensor) else x for x in a)
        return a
    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def run_with_policy(kind, fn, args, kwargs):
    """Call `fn` as a listed op while autocast is on: cast, then run with autocast off."""
    lower = State.active
    args, kwargs = _cast_all(args, kwargs, _target(kind, lower, args, kwargs))
    State.active = None
    try:
        return fn(*args, **kwargs)
    finally:
        State.active = lower


def call_as(name, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` as the op PyTorch calls `name`, for a function that plays
    several ATen ops by its arguments (F.pad: reflection_pad2d, replication_pad3d, ...): the
    policy applies when autocast is on and `name` is listed."""
    kind = POLICY.get(name)
    if State.active is None or kind is None:
        return fn(*args, **kwargs)
    return run_with_policy(kind, fn, args, kwargs)


def autocast_op(name, fused=None):
    """Decorator: `fn` is the op PyTorch calls `name`; under autocast it casts its inputs as
    ``POLICY[name]`` says. Outside autocast it calls `fn` after one test.

    `fused(lower, *args, **kwargs)`, when given, is tried first under autocast (with autocast
    off, as the op's body): an op that does the casts itself (AutocastLinear), returning its
    result, or None for a case it does not cover (then the casts and `fn` run as usual)."""
    try:
        kind = POLICY[name]
    except KeyError:
        raise KeyError(f"autocast_op: {name!r} is not in the autocast policy table "
                       f"(minitorch_edge/_autocast.py POLICY); add it there first") from None

    def wrap(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if State.active is None:
                return fn(*args, **kwargs)
            if fused is not None:
                lower = State.active
                State.active = None
                try:
                    out = fused(lower, *args, **kwargs)
                finally:
                    State.active = lower
                if out is not None:
                    return out
            return run_with_policy(kind, fn, args, kwargs)
        op.autocast_policy = (name, kind)
        return op
    return wrap
