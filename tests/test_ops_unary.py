"""Unary math (ops/unary.py) and activations (ops/activation.py) against PyTorch.

The table rows keep inputs away from kinks and inside domains, so gradcheck's finite
differences are meaningful; the plain tests below check the kinks themselves, extreme inputs,
dtypes and errors.
"""
import warnings

import numpy as np
import pytest

import minitorch_edge as mte
from harness import (Row, away_from, broadcast_shapes, fixed, import_torch, make_tests, normal,
                     positive, unit_interval)

torch = import_torch()
F = torch.nn.functional
import minitorch_edge.ops.activation as A  # noqa: E402  (nn.functional re-exports these later)

BIN = broadcast_shapes(2)
# bounds broadcast to x; x itself is not broadcast up here (torch's backward fails when a 0-d x
# meets a zero-size bound; that case has its own plain test with non-empty shapes)
BOUNDS2 = BIN.map(lambda s: (np.broadcast_shapes(*s),) + tuple(s[1:]))
BOUNDS3 = broadcast_shapes(3).map(lambda s: (np.broadcast_shapes(*s),) + tuple(s[1:]))


# ---- input makers -------------------------------------------------------------------------------
def spread(points=(), scale=3.0, gap=0.05):
    """Normal values times `scale` (to reach kinks such as relu6's 6 or hardswish's +-3), kept
    `gap` away from each point in `points`."""
    inner = away_from([p / scale for p in points], gap / scale)

    def make(rng, shapes, dtype):
        return [(a.astype(np.float64) * scale).astype(dtype) for a in inner(rng, shapes, dtype)]
    return make


def non_integer(rng, shapes, dtype):
    """Values at least 0.1 from every integer and every half-integer (floor/round kinks)."""
    out = []
    for s in shapes:
        base = np.floor(rng.standard_normal(s) * 3)
        frac = rng.choice([0.15, 0.3, 0.65, 0.85], size=s) + rng.uniform(-0.04, 0.04, s)
        out.append((base + frac).astype(dtype))
    return out


def above_one(rng, shapes, dtype):
    return [(np.abs(rng.standard_normal(s)) + 1.2).astype(dtype) for s in shapes]


def fn(name, **kw):
    """Row caller: the function `name` of minitorch_edge / torch with keyword arguments."""
    return lambda m, *xs: getattr(m, name)(*xs, **kw)


def act(name, **kw):
    """Row caller for an activation: ours from ops/activation.py, theirs from F."""
    return dict(fn=lambda m, x: getattr(A, name)(x, **kw),
                torch_fn=lambda t, x: getattr(F, name)(x, **kw))


NONZERO = away_from([0.0])

TABLE = [
    # sign-like
    Row("neg", lambda m, a: -a),
    Row("negative", fn("negative")),
    Row("abs", lambda m, a: a.abs(), make=NONZERO),
    Row("sign", fn("sign"), make=NONZERO),
    Row("sgn", fn("sgn"), make=NONZERO),
    Row("reciprocal", fn("reciprocal"), make=NONZERO, double=True),
    Row("square", fn("square"), double=True),
    # exponentials and logarithms
    Row("exp", lambda m, a: a.exp(), double=True),
    Row("exp2", fn("exp2")),
    Row("expm1", fn("expm1")),
    Row("log", fn("log"), make=positive, double=True),
    Row("log2", fn("log2"), make=positive),
    Row("log10", fn("log10"), make=positive),
    Row("log1p", fn("log1p"), make=positive),
    Row("sqrt", lambda m, a: a.sqrt(), make=positive, double=True),
    Row("rsqrt", fn("rsqrt"), make=positive, double=True),
    # trigonometric and hyperbolic
    Row("sin", lambda m, a: a.sin(), double=True),
    Row("cos", fn("cos"), double=True),
    Row("tan", fn("tan"), make=unit_interval, double=True),
    Row("asin", fn("asin"), make=unit_interval),
    Row("acos", fn("acos"), make=unit_interval),
    Row("atan", fn("atan")),
    Row("arcsin", fn("arcsin"), make=unit_interval),
    Row("sinh", fn("sinh")),
    Row("cosh", fn("cosh")),
    Row("tanh", lambda m, a: a.tanh(), double=True),
    Row("asinh", fn("asinh")),
    Row("acosh", fn("acosh"), make=above_one),
    Row("atanh", fn("atanh"), make=unit_interval),
    Row("sigmoid", lambda m, a: a.sigmoid(), double=True),
    Row("erf", fn("erf"), double=True),
    Row("erfinv", fn("erfinv"), make=unit_interval, double=True),
    # rounding: zero gradient (frac: one), checked away from the jumps
    Row("floor", fn("floor"), make=non_integer),
    Row("ceil", fn("ceil"), make=non_integer),
    Row("round", lambda m, a: a.round(), make=non_integer),
    Row("round_decimals", fn("round", decimals=1), gradcheck=False),
    Row("round_decimals_neg", fn("round", decimals=-1), make=spread(scale=100.0),
        gradcheck=False),
    Row("trunc", fn("trunc"), make=non_integer),
    Row("fix", lambda m, a: a.fix(), make=non_integer),
    Row("frac", fn("frac"), make=non_integer),
    # clamp
    Row("clamp", fn("clamp", min=-0.5, max=0.5), make=away_from([-0.5, 0.5]), double=True),
    Row("clamp_min_only", lambda m, a: a.clamp(min=-0.2), make=away_from([-0.2])),
    Row("clamp_max_only", lambda m, a: a.clamp(max=0.3), make=away_from([0.3])),
    Row("clip", lambda m, a: a.clip(-1, 1), make=away_from([-1.0, 1.0])),
    Row("clamp_tensor_bounds", lambda m, a, lo, hi: m.clamp(a, lo, hi),
        shapes=BOUNDS3, arity=3),
    Row("clamp_tensor_min", lambda m, a, lo: m.clamp(a, min=lo), shapes=BOUNDS2, arity=2),
    Row("clamp_tensor_max", lambda m, a, hi: a.clamp(max=hi), shapes=BOUNDS2, arity=2),
    Row("clamp_min_fn", fn("clamp_min", min=0.1), make=away_from([0.1])),
    # others
    Row("nan_to_num", fn("nan_to_num", nan=0.5, posinf=2.0)),  # specials: see below
    Row("xlogy", fn("xlogy"), shapes=BIN, arity=2, make=positive, double=True),
    Row("xlogy_scalar_other", fn("xlogy", other=2.5)),
    Row("xlogy_scalar_self", lambda m, b: m.xlogy(3.0, b), make=positive),
    # activations (torch.nn.functional for the reference)
    Row("relu", lambda m, a: a.relu(), make=NONZERO),
    Row("relu_fn", make=NONZERO, **act("relu")),
    Row("relu6", make=spread([0.0, 6.0]), **act("relu6")),
    Row("leaky_relu", make=NONZERO, **act("leaky_relu")),
    Row("leaky_relu_slope", make=NONZERO, double=True, **act("leaky_relu", negative_slope=0.2)),
    Row("elu", make=NONZERO, double=True, **act("elu")),
    Row("elu_alpha", make=NONZERO, **act("elu", alpha=0.5)),
    Row("selu", make=NONZERO, **act("selu")),
    Row("celu", make=NONZERO, double=True, **act("celu", alpha=2.0)),
    Row("gelu", double=True, **act("gelu")),
    Row("gelu_tanh", double=True, **act("gelu", approximate="tanh")),
    Row("silu", double=True, **act("silu")),
    Row("mish", double=True, **act("mish")),
    Row("hardswish", make=spread([-3.0, 3.0]), double=True, **act("hardswish")),
    Row("hardsigmoid", make=spread([-3.0, 3.0]), **act("hardsigmoid")),
    Row("hardtanh", make=away_from([-1.0, 1.0]), **act("hardtanh")),
    Row("hardtanh_bounds", make=away_from([-2.0, 0.5]),
        **act("hardtanh", min_val=-2.0, max_val=0.5)),
    Row("softplus", double=True, **act("softplus")),
    Row("softplus_beta_threshold", make=spread([0.5]), double=True,
        **act("softplus", beta=2.0, threshold=1.0)),
    Row("logsigmoid", double=True, **act("logsigmoid")),
    Row("softsign", **act("softsign")),
    Row("tanhshrink", **act("tanhshrink")),
    Row("threshold", make=away_from([0.1]), **act("threshold", threshold=0.1, value=20.0)),
    Row("sigmoid_fn", fn=lambda m, a: m.sigmoid(a), torch_fn=lambda t, a: F.sigmoid(a)),
    Row("tanh_big_shape", lambda m, a: m.tanh(a), shapes=fixed((3, 1, 4, 5))),
]

make_tests(TABLE, globals())


# ---- plain tests --------------------------------------------------------------------------------
def _both(values, dtype="float32", requires_grad=True):
    arr = np.asarray(values, dtype=dtype)
    ours = mte.from_numpy(arr.copy())
    theirs = torch.from_numpy(arr.copy())
    if requires_grad:
        ours.requires_grad_()
        theirs.requires_grad_()
    return ours, theirs


def _grad_pair(ours_fn, torch_fn, values, dtype="float32"):
    """Outputs and input gradients (of the sum) of ours and torch's on `values`."""
    xo, xt = _both(values, dtype)
    yo, yt = ours_fn(xo), torch_fn(xt)
    go, = mte.autograd.grad(yo.sum(), [xo])
    gt, = torch.autograd.grad(yt.sum(), [xt])
    return yo.detach().numpy(), yt.detach().numpy(), go.numpy(), gt.numpy()


KINKS = [
    ("relu", A.relu, F.relu, [0.0]),
    ("relu6", A.relu6, F.relu6, [0.0, 6.0]),
    ("leaky_relu", lambda x: A.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2), [0.0]),
    ("elu", lambda x: A.elu(x, 2.0), lambda x: F.elu(x, 2.0), [0.0]),
    ("selu", A.selu, F.selu, [0.0]),
    ("celu", lambda x: A.celu(x, 2.0), lambda x: F.celu(x, 2.0), [0.0]),
    ("hardswish", A.hardswish, F.hardswish, [-3.0, 3.0]),
    ("hardsigmoid", A.hardsigmoid, F.hardsigmoid, [-3.0, 3.0]),
    ("hardtanh", A.hardtanh, F.hardtanh, [-1.0, 1.0]),
    ("threshold", lambda x: A.threshold(x, 0.5, 3.0), lambda x: F.threshold(x, 0.5, 3.0), [0.5]),
    ("softplus", lambda x: A.softplus(x, 2.0, 1.0), lambda x: F.softplus(x, 2.0, 1.0), [0.5]),
    ("abs", mte.abs, torch.abs, [0.0]),
    ("sign", mte.sign, torch.sign, [0.0]),
    ("clamp", lambda x: x.clamp(-1, 1), lambda x: x.clamp(-1, 1), [-1.0, 1.0]),
    ("clamp_min", lambda x: x.clamp(min=0), lambda x: x.clamp(min=0), [0.0]),
    ("floor", mte.floor, torch.floor, [1.0, -2.0]),
    ("round", mte.round, torch.round, [0.5, 1.5, -2.5]),
    ("softsign", A.softsign, F.softsign, [0.0]),
    ("sqrt", mte.sqrt, torch.sqrt, [0.0]),
    ("log", mte.log, torch.log, [0.0]),
    ("rsqrt", mte.rsqrt, torch.rsqrt, [0.0]),
    ("reciprocal", mte.reciprocal, torch.reciprocal, [0.0]),
    ("erfinv", mte.erfinv, torch.erfinv, [1.0, -1.0]),
]


@pytest.mark.parametrize("name,ours,theirs,points", KINKS, ids=[k[0] for k in KINKS])
def test_gradient_at_kinks_matches_torch(name, ours, theirs, points):
    yo, yt, go, gt = _grad_pair(ours, theirs, points + [0.25, -4.0, 7.0])
    np.testing.assert_allclose(yo, yt, rtol=1e-6, err_msg=f"{name} forward")
    np.testing.assert_allclose(go, gt, rtol=1e-6, err_msg=f"{name} gradient")


EXTREMES = [
    ("sigmoid", mte.sigmoid, torch.sigmoid),
    ("tanh", mte.tanh, torch.tanh),
    ("softplus", A.softplus, F.softplus),
    ("logsigmoid", A.logsigmoid, F.logsigmoid),
    ("mish", A.mish, F.mish),
    ("silu", A.silu, F.silu),
    ("gelu", A.gelu, F.gelu),
    ("elu", A.elu, F.elu),
]


@pytest.mark.parametrize("name,ours,theirs", EXTREMES, ids=[e[0] for e in EXTREMES])
def test_large_inputs_stay_finite_without_warnings(name, ours, theirs):
    values = [1e4, -1e4, 88.0, -88.0, 100.0, -100.0, 0.0, 3e38, -3e38]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no overflow / invalid-value warnings from numpy
        yo, yt, go, gt = _grad_pair(ours, theirs, values)
        # second derivatives stay finite too
        x = mte.tensor(values[:6], requires_grad=True)
        g, = mte.autograd.grad(ours(x).sum(), [x], create_graph=True)
        gg, = mte.autograd.grad(g.sum(), [x])
    assert np.isfinite(yo).all() and np.isfinite(go).all() and np.isfinite(gg.numpy()).all()
    ok = np.isfinite(yt)    # torch's gelu(3e38) overflows to inf; ours gives 3e38
    np.testing.assert_allclose(yo[ok], yt[ok], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(go, gt, rtol=1e-6, atol=1e-6)


def test_softplus_is_finite_even_with_a_huge_threshold():
    # PyTorch overflows to inf here (e^(beta x) in float32); ours stays exact: softplus(x) = x
    x = mte.tensor([1e4, -1e4], requires_grad=True)
    y = A.softplus(x, beta=1.0, threshold=1e30)
    g, = mte.autograd.grad(y.sum(), [x])
    assert y.tolist() == [1e4, 0.0] and g.tolist() == [1.0, 0.0]


INT_OPS = ["exp", "sqrt", "sin", "log", "sigmoid", "tanh", "erf", "erfinv", "reciprocal",
           "exp2", "rsqrt", "abs", "sign", "sgn", "square", "floor", "ceil", "round", "trunc",
           "neg", "nan_to_num"]


@pytest.mark.parametrize("name", INT_OPS)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_inputs_give_torchs_dtype(name, dtype):
    arr = np.array([[0, 1], [2, 3]], dtype=dtype)
    ours = getattr(mte, name)(mte.from_numpy(arr))
    theirs = getattr(torch, name)(torch.from_numpy(arr))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy().astype(np.float64),
                               theirs.numpy().astype(np.float64), rtol=1e-6)
    assert not ours.requires_grad


@pytest.mark.parametrize("call", [
    lambda m, x: m.clamp(x, min=0), lambda m, x: m.clamp(x, min=0.5),
    lambda m, x: m.clamp(x, max=m.tensor([1.5, 2.5, 3.5, 4.5])),
    lambda m, x: m.nn.functional.relu(x) if m is torch else A.relu(x),
    lambda m, x: m.nn.functional.relu6(x) if m is torch else A.relu6(x),
    lambda m, x: (m.nn.functional.hardtanh(x, -1.5, 1.5) if m is torch
                  else A.hardtanh(x, -1.5, 1.5)),
    lambda m, x: (m.nn.functional.threshold(x, 1.5, 7.7) if m is torch
                  else A.threshold(x, 1.5, 7.7)),
    lambda m, x: m.nn.functional.softsign(x) if m is torch else A.softsign(x),
    lambda m, x: m.xlogy(x, x),
])
def test_integer_inputs_more(call):
    arr = np.array([1, -2, 3, 0])
    ours, theirs = call(mte, mte.from_numpy(arr)), call(torch, torch.from_numpy(arr))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy().astype(np.float64),
                               theirs.numpy().astype(np.float64), rtol=1e-6, equal_nan=True)


def test_clamp_min_greater_than_max_follows_torch():
    vals = [-2.0, 0.0, 0.5, 1.0, 3.0]
    yo, yt, go, gt = _grad_pair(lambda x: x.clamp(1.0, 0.0), lambda x: x.clamp(1.0, 0.0), vals)
    np.testing.assert_array_equal(yo, yt)            # every element becomes max
    np.testing.assert_array_equal(go, gt)            # no gradient reaches x
    # tensor bounds: max gets the gradient everywhere, min nowhere
    xo, xt = _both(vals)
    lo_o, lo_t = _both([1.0] * 5)
    hi_o, hi_t = _both([0.0, 2.0, 0.0, 2.0, 0.0])
    yo, yt = mte.clamp(xo, lo_o, hi_o), torch.clamp(xt, lo_t, hi_t)
    np.testing.assert_array_equal(yo.detach().numpy(), yt.detach().numpy())
    ours = mte.autograd.grad(yo.sum(), [xo, lo_o, hi_o])
    theirs = torch.autograd.grad(yt.sum(), [xt, lo_t, hi_t])
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_clamp_tensor_bound_broadcasts_the_input_up():
    x, xt = _both(np.linspace(-1, 1, 3))
    lo, lo_t = _both(np.linspace(-0.5, 0.5, 6).reshape(2, 3))
    yo, yt = mte.clamp(x, min=lo), torch.clamp(xt, min=lo_t)
    assert tuple(yo.shape) == (2, 3)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy())
    for o, t in zip(mte.autograd.grad(yo.sum(), [x, lo]),
                    torch.autograd.grad(yt.sum(), [xt, lo_t])):
        np.testing.assert_allclose(o.numpy(), t.numpy())


def test_clamp_nan_propagates_like_torch():
    arr = np.array([np.nan, 1.0, -3.0], np.float32)
    ours = mte.clamp(mte.from_numpy(arr), -1, 0.5).numpy()
    theirs = torch.clamp(torch.from_numpy(arr), -1, 0.5).numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_erfinv_float64_accuracy_and_edges():
    x = np.concatenate([np.linspace(-0.999999, 0.999999, 2001),
                        [1 - 2.0 ** -53, -1 + 2.0 ** -53, 1 - 1e-12, 1e-300, -0.0,
                         1.0, -1.0, 1.5, -2.0, np.nan]])
    ours = mte.erfinv(mte.from_numpy(x)).numpy()
    theirs = torch.erfinv(torch.from_numpy(x)).numpy()
    # torch's float64 erfinv is itself ~1e-7 off very near +-1; there we check erfc(y) instead
    near = np.abs(x) > 1 - 1e-9
    np.testing.assert_allclose(ours[~near], theirs[~near], rtol=1e-13, atol=0, equal_nan=True)
    import math
    for xi, yi in zip(x[near], ours[near]):
        if abs(xi) < 1:
            assert math.erfc(abs(yi)) == pytest.approx(1 - abs(xi), rel=1e-12)


def test_sigmoid_float16_and_sign_of_nan():
    arr = np.array([-1.0, 0.0, 30.0], np.float16)
    ours = mte.sigmoid(mte.from_numpy(arr))
    assert ours.dtype == mte.float16
    np.testing.assert_allclose(ours.numpy(), torch.sigmoid(torch.from_numpy(arr)).numpy(),
                               rtol=1e-3)
    arr = np.array([np.nan, -0.0, -2.0, 5.0], np.float32)
    np.testing.assert_array_equal(mte.sign(mte.from_numpy(arr)).numpy(),
                                  torch.sign(torch.from_numpy(arr)).numpy())


@pytest.mark.parametrize("decimals", [0, 1, 2, -1, -2])
def test_round_decimals_matches_torch(decimals):
    arr = np.array([2.5, 1.25, 1250.0, -0.5, 0.15, 1350.0, 15.0, -2.675, 3.14159], np.float32)
    np.testing.assert_array_equal(mte.round(mte.from_numpy(arr), decimals=decimals).numpy(),
                                  torch.round(torch.from_numpy(arr), decimals=decimals).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_nan_to_num_special_values(dtype):
    vals = [np.nan, np.inf, -np.inf, 1.5, -0.5]
    for kw in [{}, dict(nan=1.0, posinf=9.0, neginf=-9.0), dict(posinf=3.0)]:
        xo, xt = _both(vals, dtype)
        yo, yt = mte.nan_to_num(xo, **kw), torch.nan_to_num(xt, **kw)
        np.testing.assert_array_equal(yo.detach().numpy(), yt.detach().numpy())
        go, = mte.autograd.grad(yo.sum(), [xo])
        gt, = torch.autograd.grad(yt.sum(), [xt])
        np.testing.assert_array_equal(go.numpy(), gt.numpy())


def test_xlogy_at_zero_matches_torch():
    xs, ys = [0.0, 0.0, 0.0, 1.0, 2.0], [0.0, np.nan, 3.0, 0.0, 0.5]
    xo, xt = _both(xs)
    yo_, yt_ = _both(ys)
    out_o, out_t = mte.xlogy(xo, yo_), torch.xlogy(xt, yt_)
    np.testing.assert_array_equal(out_o.detach().numpy(), out_t.detach().numpy())
    for o, t in zip(mte.autograd.grad(out_o.sum(), [xo, yo_]),
                    torch.autograd.grad(out_t.sum(), [xt, yt_])):
        np.testing.assert_allclose(o.numpy(), t.numpy(), equal_nan=True)


def test_tensor_methods_exist_where_torch_has_them():
    names = ["neg", "negative", "abs", "absolute", "sign", "sgn", "reciprocal", "exp", "exp2",
             "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "square", "sin", "cos",
             "tan", "asin", "acos", "atan", "arcsin", "sinh", "cosh", "tanh", "asinh", "acosh",
             "atanh", "sigmoid", "erf", "erfinv", "floor", "ceil", "round", "trunc", "fix",
             "frac", "clamp", "clip", "clamp_min", "clamp_max", "nan_to_num", "xlogy", "relu"]
    for n in names:
        assert hasattr(torch.Tensor, n), n          # the list itself is PyTorch's
        assert callable(getattr(mte.Tensor, n, None)), f"Tensor.{n} is missing"
    x = mte.tensor([-1.5, 2.0])
    assert abs(x).tolist() == [1.5, 2.0] and (-x).tolist() == [1.5, -2.0]
    assert (+x) is x


# ---- errors -------------------------------------------------------------------------------------
def test_neg_of_bool_raises_and_leaves_input():
    # PyTorch raises RuntimeError here; minitorch_edge reports dtype misuse as TypeError
    with pytest.raises(RuntimeError, match="bool"):
        -torch.tensor([True, False])
    x = mte.tensor([True, False])
    with pytest.raises(TypeError, match="neg.*bool"):
        -x
    with pytest.raises(TypeError, match="bool"):
        mte.neg(x)
    assert x.tolist() == [True, False]


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: mte.abs(x > 0), TypeError, "abs.*bool"),
    (lambda x: mte.floor(x > 0), TypeError, "floor.*bool"),
    (lambda x: mte.frac(x.long()), TypeError, "frac.*int64"),
    (lambda x: mte.round(x.long(), decimals=1), TypeError, "round.*int64"),
    (lambda x: mte.clamp(x), RuntimeError, "At least one of 'min' or 'max'"),
    (lambda x: mte.clamp(x, min=mte.zeros(4)), RuntimeError, r"clamp.*\(2, 3\).*\(4,\)"),
    (lambda x: mte.clamp(x, min="a"), TypeError, "clamp.*str"),
    (lambda x: mte.exp(2.0), TypeError, "exp.*Tensor.*float"),
    (lambda x: mte.xlogy(2.0, 3.0), TypeError, "xlogy"),
    (lambda x: A.gelu(x, approximate="fast"), RuntimeError, "approximate.*'fast'"),
    (lambda x: A.hardtanh(x, 2.0, 1.0), ValueError, "min_val cannot be greater than max_val"),
    (lambda x: A.celu(x, alpha=0.0), RuntimeError, "alpha cannot be 0"),
    (lambda x: A.gelu(x.long()), TypeError, "gelu.*int64.*float"),
    (lambda x: A.softplus(x.long()), TypeError, "softplus.*int64"),
    (lambda x: A.relu(x > 0), TypeError, "relu.*bool"),
    (lambda x: A.relu([1.0]), TypeError, "relu.*Tensor.*list"),
])
def test_errors_leave_inputs_unchanged(call, exc, msg):
    x = mte.tensor([[1.5, -2.0, 0.0], [3.0, 0.25, -0.5]], requires_grad=True)
    before = x.detach().numpy().copy()
    version = x._version
    with pytest.raises(exc, match=msg):
        call(x)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._version == version and x.grad is None


INPLACE = [("relu", {}), ("relu6", {}), ("leaky_relu", dict(negative_slope=0.2)), ("elu", {}),
           ("selu", {}), ("celu", dict(alpha=2.0)), ("hardtanh", dict(min_val=-1.0, max_val=1.5)),
           ("threshold", dict(threshold=0.1, value=2.0)), ("silu", {}), ("mish", {}),
           ("hardswish", {}), ("hardsigmoid", {})]


@pytest.mark.parametrize("name,kw", INPLACE, ids=[i[0] for i in INPLACE])
def test_inplace_activation_matches_torch(name, kw):
    vals = [-1.5, -0.2, 0.3, 2.0]
    xo, xt = _both(vals)
    ho, ht = xo * 2, xt * 2                       # non-leaf: in-place is allowed
    ro, rt = getattr(A, name)(ho, inplace=True, **kw), getattr(F, name)(ht, inplace=True, **kw)
    assert ro is ho and rt is ht and ho._version == 1
    np.testing.assert_allclose(ho.detach().numpy(), ht.detach().numpy(), rtol=1e-6)
    (ho * ho).sum().backward()
    (ht * ht).sum().backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-6)


def test_inplace_activation_on_leaf_raises_and_underscore_forms():
    x = mte.tensor([-1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        A.relu(x, inplace=True)
    assert x.tolist() == [-1.0, 2.0] and x._version == 0
    y = mte.tensor([-1.0, 0.5, 2.0])
    assert A.relu_(y) is y and y.tolist() == [0.0, 0.5, 2.0]
    A.threshold_(y, 1.0, 5.0)
    A.hardtanh_(y, -1.0, 3.0)
    assert y.tolist() == [3.0, 3.0, 2.0]
    z = mte.tensor([-1.0, 1.0])
    A.elu_(z)
    A.leaky_relu_(z, 0.5)
    np.testing.assert_allclose(z.numpy(), F.leaky_relu(F.elu(torch.tensor([-1.0, 1.0])), 0.5))
