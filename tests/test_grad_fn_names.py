"""grad_fn names match PyTorch's: ``y.grad_fn.name()`` is what ``type(y.grad_fn).__name__`` is
for the same op in torch 2.13.

A built-in Function's class name is PyTorch's grad_fn name without ``Backward0`` (autograd/
function.py). PyTorch numbers the overloads of one op (``x.sum()`` is SumBackward0, ``x.sum(0)``
SumBackward1); we do not, so the trailing number is not compared. Each case runs the op in both
libraries on the same inputs and compares the names of every output's grad_fn.

DIFFERENT lists the ops whose name is known to differ, each with the reason (most are composed
of other ops here, or PyTorch's name depends on a path we do not take); they are strict xfails,
so a case that starts to match fails until it moves to CASES.
"""
import re

import numpy as np
import pytest

import minitorch_edge as mte
from harness import import_torch

torch = import_torch()

RNG = np.random.default_rng(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def positive(*shape):
    return (np.abs(randn(*shape)) + 0.5).astype(np.float32)


def unit(*shape):
    return RNG.uniform(-0.9, 0.9, shape).astype(np.float32)


class Const:
    """An input that does not require grad (floating point ones otherwise do)."""

    def __init__(self, value):
        self.value = np.asarray(value)


def ints(*values):
    return Const(np.array(values, np.int64))


X, Y, V, W = randn(3, 4), randn(3, 4), randn(4), randn(5, 4)
P = 1 / (1 + np.exp(-randn(3, 4)))                  # probabilities
MASK = Const(randn(3, 4) > 0)
IMG, KERNEL = randn(2, 3, 6, 6), randn(4, 3, 3, 3)
F = lambda m: m.nn.functional  # noqa: E731


def _copy_of_transpose(m, x):
    return x.t().contiguous()


CASES = [
    # ---- arithmetic
    ("add", lambda m, a, b: a + b, X, Y),
    ("add_scalar", lambda m, a: a + 2, X),
    ("sub", lambda m, a, b: a - b, X, Y),
    ("rsub_number", lambda m, a: 3 - a, X),
    ("rsub", lambda m, a, b: m.rsub(a, b), X, Y),
    ("mul", lambda m, a, b: a * b, X, Y),
    ("div", lambda m, a, b: a / b, X, positive(3, 4)),
    ("pow_scalar", lambda m, a: a ** 3, X),
    ("pow", lambda m, a, b: a ** b, positive(3, 4), Y),
    ("remainder", lambda m, a, b: a % b, X, positive(3, 4)),
    ("fmod", lambda m, a, b: m.fmod(a, b), X, positive(3, 4)),
    ("maximum", lambda m, a, b: m.maximum(a, b), X, Y),
    ("minimum", lambda m, a, b: m.minimum(a, b), X, Y),
    ("where", lambda m, c, a, b: m.where(c, a, b), MASK, X, Y),
    ("lerp", lambda m, a, b: m.lerp(a, b, 0.3), X, Y),
    ("atan2", lambda m, a, b: m.atan2(a, b), X, Y),
    ("neg", lambda m, a: -a, X),
    # ---- unary math
    ("abs", lambda m, a: a.abs(), X),
    ("sign", lambda m, a: a.sign(), X),
    ("sgn", lambda m, a: a.sgn(), X),
    ("reciprocal", lambda m, a: a.reciprocal(), positive(3, 4)),
    ("square", lambda m, a: a.square(), X),
    ("exp", lambda m, a: a.exp(), X),
    ("exp2", lambda m, a: m.exp2(a), X),
    ("expm1", lambda m, a: a.expm1(), X),
    ("log", lambda m, a: a.log(), positive(3, 4)),
    ("log2", lambda m, a: a.log2(), positive(3, 4)),
    ("log10", lambda m, a: a.log10(), positive(3, 4)),
    ("log1p", lambda m, a: a.log1p(), positive(3, 4)),
    ("sqrt", lambda m, a: a.sqrt(), positive(3, 4)),
    ("rsqrt", lambda m, a: a.rsqrt(), positive(3, 4)),
    ("sin", lambda m, a: a.sin(), X),
    ("cos", lambda m, a: a.cos(), X),
    ("tan", lambda m, a: a.tan(), unit(3, 4)),
    ("asin", lambda m, a: a.asin(), unit(3, 4)),
    ("acos", lambda m, a: a.acos(), unit(3, 4)),
    ("atan", lambda m, a: a.atan(), X),
    ("sinh", lambda m, a: a.sinh(), X),
    ("cosh", lambda m, a: a.cosh(), X),
    ("tanh", lambda m, a: a.tanh(), X),
    ("asinh", lambda m, a: a.asinh(), X),
    ("acosh", lambda m, a: a.acosh(), positive(3, 4) + 1),
    ("atanh", lambda m, a: a.atanh(), unit(3, 4)),
    ("sigmoid", lambda m, a: a.sigmoid(), X),
    ("erf", lambda m, a: a.erf(), X),
    ("erfinv", lambda m, a: a.erfinv(), unit(3, 4)),
    ("floor", lambda m, a: a.floor(), X),
    ("ceil", lambda m, a: a.ceil(), X),
    ("round", lambda m, a: a.round(), X),
    ("trunc", lambda m, a: a.trunc(), X),
    ("frac", lambda m, a: a.frac(), X),
    ("clamp", lambda m, a: a.clamp(-0.5, 0.5), X),
    ("clamp_min", lambda m, a: m.clamp_min(a, 0.0), X),
    ("clamp_max", lambda m, a: m.clamp_max(a, 0.0), X),
    ("nan_to_num", lambda m, a: a.nan_to_num(), X),
    ("xlogy", lambda m, a, b: m.xlogy(a, b), X, positive(3, 4)),
    # ---- activations
    ("relu", lambda m, a: F(m).relu(a), X),
    ("relu_inplace", lambda m, a: (a * 1).relu_(), X),
    ("relu6", lambda m, a: F(m).relu6(a), X),
    ("hardtanh", lambda m, a: F(m).hardtanh(a), X),
    ("leaky_relu", lambda m, a: F(m).leaky_relu(a, 0.1), X),
    ("elu", lambda m, a: F(m).elu(a), X),
    ("selu", lambda m, a: F(m).selu(a), X),
    ("celu", lambda m, a: F(m).celu(a, 0.5), X),
    ("gelu", lambda m, a: F(m).gelu(a), X),
    ("gelu_tanh", lambda m, a: F(m).gelu(a, approximate="tanh"), X),
    ("silu", lambda m, a: F(m).silu(a), X),
    ("mish", lambda m, a: F(m).mish(a), X),
    ("softplus", lambda m, a: F(m).softplus(a), X),
    ("logsigmoid", lambda m, a: F(m).logsigmoid(a), X),
    ("hardsigmoid", lambda m, a: F(m).hardsigmoid(a), X),
    ("hardswish", lambda m, a: F(m).hardswish(a), X),
    ("threshold", lambda m, a: F(m).threshold(a, 0.1, 0.0), X),
    # ---- reductions
    ("sum", lambda m, a: a.sum(), X),
    ("sum_dim", lambda m, a: a.sum(1), X),
    ("mean", lambda m, a: a.mean(), X),
    ("mean_dim", lambda m, a: a.mean(0, keepdim=True), X),
    ("nansum", lambda m, a: m.nansum(a), X),
    ("prod", lambda m, a: a.prod(1), X),
    ("var", lambda m, a: a.var(1), X),
    ("std", lambda m, a: a.std(), X),
    ("logsumexp", lambda m, a: a.logsumexp(1), X),
    ("norm", lambda m, a: a.norm(), X),
    ("norm_p1_dim", lambda m, a: a.norm(1, dim=0), X),
    ("max", lambda m, a: a.max(), X),
    ("max_dim", lambda m, a: a.max(1), X),
    ("min", lambda m, a: a.min(), X),
    ("min_dim", lambda m, a: a.min(0), X),
    ("amax", lambda m, a: a.amax(1), X),
    ("amin", lambda m, a: a.amin(0), X),
    ("median", lambda m, a: a.median(), X),
    ("median_dim", lambda m, a: a.median(1), X),
    ("cumsum", lambda m, a: a.cumsum(1), X),
    ("cumprod", lambda m, a: a.cumprod(0), X),
    # ---- softmax
    ("softmax", lambda m, a: a.softmax(-1), X),
    ("softmax_functional", lambda m, a: F(m).softmax(a, 0), X),
    ("softmin", lambda m, a: F(m).softmin(a, 1), X),
    ("log_softmax", lambda m, a: a.log_softmax(1), X),
    # ---- shapes and views
    ("view", lambda m, a: a.view(12), X),
    ("reshape", lambda m, a: a.reshape(2, 6), X),
    ("flatten", lambda m, a: a.flatten(), X),
    ("unflatten", lambda m, a: a.unflatten(1, (2, 2)), X),
    ("squeeze", lambda m, a: a.squeeze(), randn(3, 1, 4)),
    ("unsqueeze", lambda m, a: a.unsqueeze(1), X),
    ("permute", lambda m, a: a.permute(2, 0, 1), randn(2, 3, 4)),
    ("movedim", lambda m, a: a.movedim(0, 2), randn(2, 3, 4)),
    ("transpose", lambda m, a: a.transpose(0, 1), X),
    ("swapaxes", lambda m, a: a.swapaxes(0, 1), X),
    ("mT", lambda m, a: a.mT, randn(2, 3, 4)),
    ("T", lambda m, a: a.T, X),
    ("expand", lambda m, a: a.expand(3, 4), V),
    ("narrow", lambda m, a: a.narrow(1, 1, 2), X),
    ("diagonal", lambda m, a: a.diagonal(), X),
    ("contiguous", _copy_of_transpose, X),
    ("clone", lambda m, a: a.clone(), X),
    ("to_dtype", lambda m, a: a.to(m.float64), X),
    ("double", lambda m, a: a.double(), X),
    ("cat", lambda m, a, b: m.cat([a, b], 1), X, Y),
    ("stack", lambda m, a, b: m.stack([a, b]), X, Y),
    ("split", lambda m, a: a.split(2, 1), X),
    ("split_sizes", lambda m, a: a.split([1, 3], 1), X),
    ("chunk", lambda m, a: a.chunk(2, 1), X),
    ("unbind", lambda m, a: a.unbind(0), X),
    ("repeat", lambda m, a: a.repeat(2, 1), X),
    ("flip", lambda m, a: a.flip(0), X),
    ("roll", lambda m, a: a.roll(1, 1), X),
    ("tril", lambda m, a: a.tril(), X),
    ("triu", lambda m, a: a.triu(1), X),
    ("diag_embed", lambda m, a: m.diag_embed(a), X),
    ("diag_vector", lambda m, a: m.diag(a), V),
    ("pad_constant", lambda m, a: F(m).pad(a, (1, 2)), X),
    # ---- indexing
    ("select", lambda m, a: a[1], X),
    ("select_column", lambda m, a: a[:, 0], X),
    ("index_tensor", lambda m, a, i: a[i], X, ints(0, 2, 2)),
    ("index_mask", lambda m, a, k: a[k], X, MASK),
    ("take", lambda m, a, i: a.take(i), X, ints(0, 5, 11)),
    ("gather", lambda m, a, i: a.gather(1, i), X, Const(RNG.integers(0, 4, (3, 2)))),
    ("take_along_dim", lambda m, a, i: m.take_along_dim(a, i, 1), X,
     Const(RNG.integers(0, 4, (3, 2)))),
    ("scatter", lambda m, a, i, s: a.scatter(1, i, s), X, Const([[0], [1], [3]]), randn(3, 1)),
    ("scatter_add", lambda m, a, i, s: a.scatter_add(1, i, s), X, Const(RNG.integers(0, 4, (3, 2))),
     randn(3, 2)),
    ("index_select", lambda m, a, i: a.index_select(1, i), X, ints(0, 3, 3)),
    ("index_add", lambda m, a, i, s: a.index_add(0, i, s), X, ints(0, 2), randn(2, 4)),
    ("index_fill", lambda m, a, i: a.index_fill(1, i, 0.5), X, ints(1, 2)),
    ("index_put", lambda m, a, i, v: a.index_put((i,), v), X, ints(0, 2), randn(4)),
    ("masked_fill", lambda m, a, k: a.masked_fill(k, 0.0), X, MASK),
    ("masked_select", lambda m, a, k: a.masked_select(k), X, MASK),
    ("sort", lambda m, a: a.sort(1), X),
    ("topk", lambda m, a: a.topk(2, 1), X),
    # ---- linear algebra
    ("matmul", lambda m, a, b: a @ b, X, W.T.copy()),
    ("matmul_vector", lambda m, a, b: a @ b, X, V),
    ("matmul_dot", lambda m, a, b: a @ b, V, V.copy()),
    ("mm", lambda m, a, b: m.mm(a, b), X, W.T.copy()),
    ("bmm", lambda m, a, b: m.bmm(a, b), randn(2, 3, 4), randn(2, 4, 5)),
    ("mv", lambda m, a, b: m.mv(a, b), X, V),
    ("dot", lambda m, a, b: m.dot(a, b), V, V.copy()),
    ("trace", lambda m, a: a.trace(), X),
    # ---- layers as functions
    ("linear", lambda m, x, w, b: F(m).linear(x, w, b), X.T.copy(), randn(5, 3), randn(5)),
    ("embedding", lambda m, i, w: F(m).embedding(i, w), ints(1, 0, 3), W),
    ("layer_norm", lambda m, x: F(m).layer_norm(x, (4,)), X),
    ("batch_norm", lambda m, x: F(m).batch_norm(x, None, None, training=True), X),
    ("batch_norm_eval", lambda m, x: F(m).batch_norm(x, m.zeros(4), m.ones(4)), X),
    ("dropout", lambda m, x: F(m).dropout(x, 0.5), X),
    ("conv2d", lambda m, x, w: F(m).conv2d(x, w, padding=1), IMG, KERNEL),
    ("max_pool2d", lambda m, x: F(m).max_pool2d(x, 2), IMG),
    ("avg_pool2d", lambda m, x: F(m).avg_pool2d(x, 2), IMG),
    ("adaptive_max_pool2d", lambda m, x: F(m).adaptive_max_pool2d(x, 3), IMG),
    # ---- losses
    ("cross_entropy", lambda m, x, t: F(m).cross_entropy(x, t), X, ints(0, 3, 1)),
    ("cross_entropy_sum", lambda m, x, t: F(m).cross_entropy(x, t, reduction="sum"), X,
     ints(0, 3, 1)),
    ("binary_cross_entropy", lambda m, p, t: F(m).binary_cross_entropy(p, t, reduction="none"),
     P, Const(P)),
    ("l1_loss", lambda m, a, b: F(m).l1_loss(a, b), X, Y),
    ("kl_div", lambda m, a, b: F(m).kl_div(a, b, reduction="batchmean"), X, Const(P)),
]

DIFFERENT = [
    # PyTorch's name depends on a path that ours does not take
    ("matmul_batched", "one Mm for every shape; PyTorch's batched matmul ends in a reshape "
     "(UnsafeViewBackward0)", lambda m, a, b: a @ b, randn(2, 3, 4), randn(2, 4, 5)),
    ("slice", "basic indexing is one Select; PyTorch records x[1:3] as SliceBackward0",
     lambda m, a: a[1:3], X),
    ("index_none", "basic indexing is one Select; PyTorch records x[None] as "
     "UnsqueezeBackward0", lambda m, a: a[None], X),
    ("t", "t() is a Permute (PyTorch: TBackward0)", lambda m, a: a.t(), X),
    ("reshape_copy", "reshape is a View even when it copies (PyTorch: UnsafeViewBackward0)",
     lambda m, a: a.t().reshape(12), X),
    ("tensor_split", "one multi-output Split (PyTorch: a SliceBackward0 per piece)",
     lambda m, a: a.tensor_split(2, 1), X),
    ("linear_no_bias", "the fused linear is Addmm with or without a bias (PyTorch: "
     "MmBackward0)", lambda m, x, w: F(m).linear(x, w), X.T.copy(), randn(5, 3)),
    ("linear_3d", "the fused linear is Addmm for any rank (PyTorch: ViewBackward0)",
     lambda m, x, w, b: F(m).linear(x, w, b), randn(2, 3, 4), W, randn(5)),
    ("vdot", "vdot is dot for real tensors (PyTorch: VdotBackward0)",
     lambda m, a, b: m.vdot(a, b), V, V.copy()),
    ("rdiv_number", "2 / x is a Div (PyTorch: reciprocal times 2, MulBackward0)",
     lambda m, a: 2 / a, positive(3, 4)),
    ("cross_entropy_smoothing", "label smoothing is fused into NllLoss (PyTorch composes it: "
     "AddBackward0)", lambda m, x, t: F(m).cross_entropy(x, t, label_smoothing=0.1), X,
     ints(0, 3, 1)),
    # composed of other ops here, one Function in PyTorch
    ("mse_loss", "composed (MeanBackward0)", lambda m, a, b: F(m).mse_loss(a, b), X, Y),
    ("nll_loss", "composed", lambda m, x, t: F(m).nll_loss(x, t), X, ints(0, 3, 1)),
    ("binary_cross_entropy_mean", "BinaryCrossEntropy then a mean",
     lambda m, p, t: F(m).binary_cross_entropy(p, t), P, Const(P)),
    ("bce_with_logits", "composed", lambda m, x, t: F(m).binary_cross_entropy_with_logits(x, t),
     X, Const(P)),
    ("smooth_l1_loss", "composed", lambda m, a, b: F(m).smooth_l1_loss(a, b), X, Y),
    ("addmm", "composed (matmul, add)", lambda m, c, a, b: m.addmm(c, a, b), randn(3, 5), X,
     W.T.copy()),
    ("var_mean", "two Functions (Var, Mean)", lambda m, a: m.var_mean(a, 1), X),
    ("kthvalue", "a Gather and a View", lambda m, a: a.kthvalue(2, 1), X),
    ("repeat_interleave", "a Reindex (PyTorch: ViewBackward0 or IndexSelectBackward0)",
     lambda m, a: a.repeat_interleave(2, 1), X),
    ("pad_reflect", "a Reindex per dim (PyTorch: ReflectionPad1DBackward0)",
     lambda m, a: F(m).pad(a, (1, 1), mode="reflect"), randn(2, 3, 4)),
    ("einsum", "one Einsum (PyTorch decomposes einsum into bmm and views)",
     lambda m, a, b: m.einsum("ij,kj->ik", a, b), X, W),
    ("interpolate", "separable: one Resample per dim (PyTorch: UpsampleBilinear2DBackward0)",
     lambda m, x: F(m).interpolate(x, scale_factor=2, mode="bilinear"), IMG),
    ("group_norm", "NativeGroupNorm on a view, then a View back",
     lambda m, x: F(m).group_norm(x, 1), IMG),
]


def _inputs(lib, arrays):
    out = []
    for a in arrays:
        if isinstance(a, Const):
            out.append(lib.tensor(a.value))
            continue
        t = lib.tensor(np.array(a))
        if t.is_floating_point():
            t.requires_grad_()
        out.append(t)
    return out


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _names(fn, arrays):
    """(ours, torch's): the grad_fn name of each output, the overload number dropped."""
    ours = [None if o.grad_fn is None else o.grad_fn.name()
            for o in _outputs(fn(mte, *_inputs(mte, arrays)))]
    theirs = [None if t.grad_fn is None else re.sub(r"(Backward)\d+$", r"\g<1>0",
                                                      type(t.grad_fn).__name__)
              for t in _outputs(fn(torch, *_inputs(torch, arrays)))]
    return ours, theirs


@pytest.mark.parametrize("name,fn,arrays", [(c[0], c[1], c[2:]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_grad_fn_name_matches_torch(name, fn, arrays):
    ours, theirs = _names(fn, arrays)
    assert ours == theirs
    assert any(n is not None for n in ours), f"{name}: no output has a grad_fn"


@pytest.mark.parametrize("name,fn,arrays", [
    pytest.param(c[0], c[2], c[3:],
                 marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=c[1]))
    for c in DIFFERENT], ids=[c[0] for c in DIFFERENT])
def test_known_differences(name, fn, arrays):
    ours, theirs = _names(fn, arrays)
    assert ours == theirs


def test_case_names_are_unique():
    names = [c[0] for c in CASES + DIFFERENT]
    assert len(names) == len(set(names))
