"""Reductions (reduce.py, minmax.py, cumulative.py) through the table-driven harness, plus plain
tests for ties, zeros, empty dims, dtypes, extreme values and error messages. (softmax and
log_softmax: test_ops_softmax.py.)"""
import math

import numpy as np
import pytest

import minitorch_edge as mte
from harness import Row, broadcast_shapes, distinct, import_torch, make_tests, same_shape

torch = import_torch()

ANY = same_shape()                      # 0-4 dims, sides 0-5 (zero-sized dims included)
ND1 = same_shape(min_dims=1)
ND2 = same_shape(min_dims=2)
FULL1 = same_shape(min_dims=1, min_side=1)   # no empty dims: max/min/median need elements
FULL2 = same_shape(min_dims=2, min_side=1)
FULL = same_shape(min_side=1)
VAR1 = same_shape(min_dims=1, min_side=2)    # var/std: N >= 2 (N = 1 is nan; tested below)
VAR2 = same_shape(min_dims=2, min_side=2)
VAR = same_shape(min_dims=1, min_side=2)


def with_zeros(rng, shapes, dtype):
    """Normal values with about a third of them set to exactly 0 (prod/cumprod/count_nonzero)."""
    out = []
    for s in shapes:
        x = rng.standard_normal(s)
        x[rng.random(s) < 0.35] = 0.0
        out.append(np.asarray(x).astype(dtype))
    return out


def with_nans(rng, shapes, dtype):
    """Normal values with some NaNs (nansum/nanmean)."""
    out = []
    for s in shapes:
        x = rng.standard_normal(s)
        x[rng.random(s) < 0.3] = np.nan
        out.append(np.asarray(x).astype(dtype))
    return out


def distinct_across(rng, shapes, dtype):
    """No ties within or between the inputs (for max(a, b)): one permutation shared by all."""
    sizes = [int(np.prod(s)) for s in shapes]
    vals = (rng.permutation(np.sum(sizes)) - np.sum(sizes) / 2) * 0.37 + rng.uniform(0, 0.1)
    out, start = [], 0
    for s, n in zip(shapes, sizes):
        out.append(vals[start:start + n].reshape(s).astype(dtype))
        start += n
    return out


INF = math.inf

TABLE = [
    # ---- sum / mean / nansum / nanmean
    Row("sum", lambda m, x: x.sum()),
    Row("sum_dim0", lambda m, x: x.sum(0), shapes=ND1),
    Row("sum_dim_neg", lambda m, x: m.sum(x, -1), shapes=ND1),
    Row("sum_tuple", lambda m, x: x.sum((0, -1)), shapes=ND2),
    Row("sum_keepdim", lambda m, x: x.sum(-1, keepdim=True), shapes=ND1),
    Row("sum_tuple_keepdim", lambda m, x: x.sum(dim=(1, 0), keepdim=True), shapes=ND2),
    Row("sum_empty_tuple", lambda m, x: x.sum(dim=()), shapes=ND1),
    Row("sum_dtype", lambda m, x: x.sum(0, dtype=m.float64), shapes=ND1),
    Row("mean", lambda m, x: x.mean(), double=True),
    Row("mean_dim", lambda m, x: m.mean(x, 0), shapes=ND1, double=True),
    Row("mean_dim_neg_keepdim", lambda m, x: x.mean(-1, keepdim=True), shapes=ND1),
    Row("mean_tuple", lambda m, x: x.mean((0, -1)), shapes=ND2, double=True),
    Row("mean_tuple_keepdim", lambda m, x: x.mean((-2, -1), True), shapes=ND2),
    Row("nansum", lambda m, x: m.nansum(x), make=with_nans),
    Row("nansum_dim", lambda m, x: m.nansum(x, -1, keepdim=True), shapes=ND1, make=with_nans),
    Row("nanmean_dim", lambda m, x: m.nanmean(x, 0), shapes=ND1, make=with_nans,
        gradcheck=False),   # all-NaN slices give NaN, which finite differences cannot compare
    Row("nanmean_no_nan", lambda m, x: m.nanmean(x, (0, -1)), shapes=ND2),
    # ---- prod
    Row("prod", lambda m, x: x.prod(), double=True),
    Row("prod_dim", lambda m, x: m.prod(x, 0), shapes=ND1, double=True),
    Row("prod_dim_neg_keepdim", lambda m, x: x.prod(-1, keepdim=True), shapes=ND1),
    Row("prod_zeros", lambda m, x: x.prod(), make=with_zeros),
    Row("prod_zeros_dim", lambda m, x: x.prod(-1), shapes=ND1, make=with_zeros),
    Row("prod_zeros_keepdim", lambda m, x: x.prod(0, True), shapes=ND1, make=with_zeros),
    # ---- var / std / var_mean / std_mean
    Row("var", lambda m, x: x.var(), shapes=VAR, double=True),
    Row("var_dim", lambda m, x: m.var(x, 0), shapes=VAR1, double=True),
    Row("var_dim_neg_keepdim", lambda m, x: x.var(-1, keepdim=True), shapes=VAR1),
    Row("var_tuple", lambda m, x: x.var((0, -1)), shapes=VAR2, double=True),
    Row("var_unbiased_false", lambda m, x: x.var(0, unbiased=False, keepdim=True), shapes=VAR1),
    Row("var_positional", lambda m, x: m.var(x, -1, False, True), shapes=VAR1),
    Row("var_correction2", lambda m, x: x.var(dim=(0,), correction=2),
        shapes=same_shape(min_dims=1, min_side=3)),
    Row("std", lambda m, x: x.std(), shapes=VAR, double=True),
    Row("std_dim", lambda m, x: x.std(-1), shapes=VAR1),
    Row("std_tuple_keepdim", lambda m, x: m.std(x, (0, 1), keepdim=True), shapes=VAR2),
    Row("std_correction0", lambda m, x: x.std(0, correction=0), shapes=VAR1),
    Row("var_mean", lambda m, x: m.var_mean(x, -1), shapes=VAR1),
    Row("std_mean", lambda m, x: m.std_mean(x, (0, -1), keepdim=True), shapes=VAR2),
    # ---- logsumexp
    Row("logsumexp_dim", lambda m, x: m.logsumexp(x, 0), shapes=ND1, double=True),
    Row("logsumexp_neg_keepdim", lambda m, x: x.logsumexp(-1, keepdim=True), shapes=ND1,
        double=True),
    Row("logsumexp_tuple", lambda m, x: x.logsumexp((0, -1)), shapes=ND2, double=True),
    Row("logsumexp_all", lambda m, x: x.logsumexp(tuple(range(x.ndim))), shapes=ND1),
    # ---- norm
    Row("norm", lambda m, x: x.norm(), double=True),
    Row("norm_dim", lambda m, x: m.norm(x, 2, 0), shapes=ND1, double=True),
    Row("norm_neg_keepdim", lambda m, x: x.norm(dim=-1, keepdim=True), shapes=ND1),
    Row("norm_fro_tuple", lambda m, x: x.norm("fro", dim=(0, 1)), shapes=ND2, double=True),
    Row("norm_p1", lambda m, x: x.norm(1)),
    Row("norm_p1_dim", lambda m, x: x.norm(p=1, dim=-1), shapes=ND1),
    Row("norm_inf", lambda m, x: x.norm(INF), shapes=FULL, make=distinct, double=True),
    Row("norm_ninf_dim", lambda m, x: x.norm(-INF, dim=0), shapes=FULL1, make=distinct),
    Row("norm_p3", lambda m, x: x.norm(3, dim=(0, -1), keepdim=True), shapes=ND2, double=True),
    Row("norm_p1_5", lambda m, x: x.norm(1.5)),
    Row("norm_p0_5", lambda m, x: x.norm(0.5, -1), shapes=ND1),
    Row("norm_p0", lambda m, x: x.norm(0, 0), shapes=ND1, make=with_zeros),
    # ---- max / min / amax / amin / argmax / argmin / median
    Row("max", lambda m, x: x.max(), shapes=FULL, make=distinct),
    Row("max_dim", lambda m, x: x.max(0), shapes=FULL1, make=distinct, double=True),
    Row("max_dim_neg_keepdim", lambda m, x: m.max(x, -1, keepdim=True), shapes=FULL1,
        make=distinct),
    Row("max_dim_kw", lambda m, x: x.max(dim=1, keepdim=False).values, shapes=FULL2,
        make=distinct),
    Row("max_binary", lambda m, a, b: m.max(a, b), shapes=broadcast_shapes(2), arity=2,
        make=distinct_across),
    Row("min_binary", lambda m, a, b: m.min(a, other=b), shapes=broadcast_shapes(2), arity=2,
        make=distinct_across),
    Row("min", lambda m, x: m.min(x), shapes=FULL, make=distinct),
    Row("min_dim", lambda m, x: x.min(-1), shapes=FULL1, make=distinct),
    Row("min_dim_keepdim", lambda m, x: x.min(0, True), shapes=FULL1, make=distinct),
    Row("amax", lambda m, x: x.amax(), shapes=FULL, make=distinct),
    Row("amax_dim", lambda m, x: m.amax(x, 0), shapes=FULL1, make=distinct),
    Row("amax_tuple_keepdim", lambda m, x: x.amax((0, -1), keepdim=True), shapes=FULL2,
        make=distinct, double=True),
    Row("amin_neg", lambda m, x: x.amin(-1), shapes=FULL1, make=distinct),
    Row("amin_tuple", lambda m, x: m.amin(x, (1, 0)), shapes=FULL2, make=distinct),
    Row("argmax", lambda m, x: x.argmax(), shapes=FULL, make=distinct, grad=False),
    Row("argmax_keepdim_none", lambda m, x: m.argmax(x, keepdim=True), shapes=FULL,
        make=distinct, grad=False),
    Row("argmax_dim", lambda m, x: x.argmax(0), shapes=FULL1, make=distinct, grad=False),
    Row("argmin_neg_keepdim", lambda m, x: m.argmin(x, -1, True), shapes=FULL1,
        make=distinct, grad=False),
    Row("median", lambda m, x: x.median(), shapes=FULL, make=distinct),
    Row("median_dim", lambda m, x: x.median(0), shapes=FULL1, make=distinct, double=True),
    Row("median_neg_keepdim", lambda m, x: m.median(x, -1, keepdim=True), shapes=FULL1,
        make=distinct),
    # ---- cumsum / cumprod
    Row("cumsum", lambda m, x: x.cumsum(0), shapes=ND1, double=True),
    Row("cumsum_neg", lambda m, x: m.cumsum(x, -1), shapes=ND1, double=True),
    Row("cumsum_0d", lambda m, x: x.cumsum(0), shapes=same_shape(max_dims=0)),
    Row("cumsum_dtype", lambda m, x: x.cumsum(-1, dtype=m.float64), shapes=ND1),
    Row("cumprod", lambda m, x: x.cumprod(0), shapes=ND1, double=True),
    Row("cumprod_neg", lambda m, x: m.cumprod(x, -1), shapes=ND1, double=True),
    Row("cumprod_zeros", lambda m, x: x.cumprod(-1), shapes=ND1, make=with_zeros),
    # ---- logical and counting (not differentiable)
    Row("all", lambda m, x: (x > 0).all(), grad=False),
    Row("all_dim", lambda m, x: m.all(x > 0, 0), shapes=ND1, grad=False),
    Row("any_neg_keepdim", lambda m, x: (x > 0).any(-1, keepdim=True), shapes=ND1, grad=False),
    Row("any_tuple", lambda m, x: m.any(x > 0, (0, -1)), shapes=ND2, grad=False),
    Row("all_float", lambda m, x: x.all(-1), shapes=ND1, make=with_zeros, grad=False),
    Row("count_nonzero", lambda m, x: m.count_nonzero(x), make=with_zeros, grad=False),
    Row("count_nonzero_dim", lambda m, x: x.count_nonzero(-1), shapes=ND1, make=with_zeros,
        grad=False),
    Row("count_nonzero_tuple", lambda m, x: m.count_nonzero(x, (0, 1)), shapes=ND2,
        make=with_zeros, grad=False),
]

make_tests(TABLE, globals())


# ---- helpers for the plain tests ---------------------------------------------------------------
def _pair(values, dtype=np.float32, grad=True):
    a = np.asarray(values, dtype)
    ours, theirs = mte.tensor(a), torch.tensor(a)
    if grad:
        ours.requires_grad_()
        theirs.requires_grad_()
    return ours, theirs


def _close(ours, theirs, **kw):
    torch.testing.assert_close(torch.from_numpy(np.array(ours.detach().numpy())),
                               theirs.detach(), equal_nan=True, check_dtype=False, **kw)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


def _grads(fn, values, dtype=np.float32):
    """fn applied to both libraries; returns (ours, theirs) for the output and the input grad."""
    o, t = _pair(values, dtype)
    yo, yt = fn(mte, o), fn(torch, t)
    yo = yo[0] if isinstance(yo, tuple) else yo
    yt = yt[0] if isinstance(yt, tuple) else yt
    go = np.arange(1, yo.numel() + 1, dtype=dtype).reshape(tuple(yo.shape))
    yo.backward(mte.tensor(go))
    yt.backward(torch.tensor(go))
    return (yo, yt), (o.grad, t.grad)


def _check_grads(fn, values, dtype=np.float32):
    (yo, yt), (go, gt) = _grads(fn, values, dtype)
    _close(yo, yt)
    _close(go, gt)


TIES = [[1., 3., 3.], [2., 2., 2.], [-4., 0.5, -4.]]


@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(), lambda m, x: x.min(), lambda m, x: x.amax(1), lambda m, x: x.amin(0),
    lambda m, x: m.amax(x, (0, 1), keepdim=True), lambda m, x: x.norm(INF, dim=1),
    lambda m, x: x.norm(-INF, dim=1), lambda m, x: x.norm(INF), lambda m, x: x.median(),
    lambda m, x: x.max(1), lambda m, x: x.min(0, keepdim=True), lambda m, x: x.median(1),
], ids=["max", "min", "amax_dim", "amin_dim", "amax_tuple", "norm_inf_dim", "norm_ninf_dim",
        "norm_inf", "median", "max_dim", "min_dim", "median_dim"])
def test_ties_match_torch(fn):
    """Value-only reductions split the gradient among ties; max(dim)/median(dim) send it to the
    returned index (the first one for max/min, as PyTorch)."""
    _check_grads(fn, TIES)
    o, t = _pair(TIES, grad=False)
    yo, yt = fn(mte, o), fn(torch, t)
    if isinstance(yt, tuple):
        assert np.array_equal(yo.indices.numpy(), yt.indices.numpy())


def test_max_dim_returns_values_and_indices():
    x = mte.tensor([[1., 5., 2.], [7., 0., 3.]])
    r = x.max(1)
    assert isinstance(r, tuple) and len(r) == 2
    assert r.values.tolist() == [5., 7.] and r.indices.tolist() == [1, 0]
    assert r.indices.dtype == mte.int64 and not r.indices.requires_grad
    v, i = mte.min(x, dim=0, keepdim=True)
    assert v.shape == (1, 3) and i.tolist() == [[0, 1, 0]]
    assert mte.max(x, mte.tensor([4., 4., 4.])).tolist() == [[4., 5., 4.], [7., 4., 4.]]


@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(), lambda m, x: x.max(1), lambda m, x: x.argmax(1),
    lambda m, x: x.argmin(), lambda m, x: x.median(1), lambda m, x: x.median(),
    lambda m, x: x.amax(1),
], ids=["max", "max_dim", "argmax_dim", "argmin", "median_dim", "median", "amax"])
def test_nan_propagates_like_torch(fn):
    vals = [[1., math.nan, 3.], [2., 5., math.nan], [0., 1., 2.]]
    o, t = _pair(vals, grad=False)
    yo, yt = fn(mte, o), fn(torch, t)
    for a, b in zip(yo if isinstance(yo, tuple) else [yo], yt if isinstance(yt, tuple) else [yt]):
        _close(a, b)
    if isinstance(yo, tuple) or yo.is_floating_point():      # argmax/argmin: no gradient
        _check_grads(fn, vals)


def test_prod_with_zeros_matches_torch():
    vals = [[0., 2., 3.], [0., 0., 4.], [1., 2., 3.], [5., 0., -2.]]
    for fn in (lambda m, x: x.prod(1), lambda m, x: x.prod(0), lambda m, x: x.prod(),
               lambda m, x: x.prod(1, keepdim=True)):
        _check_grads(fn, vals)
    _check_grads(lambda m, x: x.prod(), [1., 0., 3.])            # one zero: product of others
    (_, _), (go, gt) = _grads(lambda m, x: x.prod(), [1., 0., 3.])
    assert go.tolist() == [0., 3., 0.]


def test_prod_double_backward_without_zeros():
    x = mte.tensor([[1.5, -2., 0.7], [0.3, 1.1, -0.9]], dtype=mte.float64, requires_grad=True)
    assert mte.autograd.gradgradcheck(lambda t: t.prod(1), [x])


def test_cumprod_with_zeros_matches_torch():
    vals = [[0., 2., 3., 4.], [2., 0., 0., 4.], [1., 2., 3., 0.], [3., 0., 1., 2.]]
    _check_grads(lambda m, x: x.cumprod(1), vals)
    _check_grads(lambda m, x: x.cumprod(0), vals)


# ---- empty reductions ------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda m, x: x.sum(0), lambda m, x: x.sum(), lambda m, x: x.prod(0), lambda m, x: x.prod(),
    lambda m, x: x.mean(0), lambda m, x: x.mean(), lambda m, x: x.var(0), lambda m, x: x.std(),
    lambda m, x: m.logsumexp(x, 0), lambda m, x: x.logsumexp(1), lambda m, x: x.norm(),
    lambda m, x: x.norm(dim=0), lambda m, x: x.max(1), lambda m, x: x.amax(1),
    lambda m, x: x.argmax(1), lambda m, x: x.median(), lambda m, x: x.cumsum(0),
    lambda m, x: x.cumprod(1), lambda m, x: x.all(0), lambda m, x: x.any(), lambda m, x: x.count_nonzero(0),
    lambda m, x: m.nansum(x, 0), lambda m, x: m.nanmean(x, 0),
])
def test_empty_reductions_match_torch(fn):
    o, t = _pair(np.zeros((0, 3)), grad=False)
    yo, yt = fn(mte, o), fn(torch, t)
    for a, b in zip(yo if isinstance(yo, tuple) else [yo], yt if isinstance(yt, tuple) else [yt]):
        assert tuple(a.shape) == tuple(b.shape)
        _close(a, b)
    if isinstance(yo, tuple) or yo.is_floating_point():
        (_, _), (go, gt) = _grads(fn, np.zeros((0, 3)))
        assert go.shape == (0, 3)


@pytest.mark.parametrize("op,fn,exc,msg", [
    ("max", lambda x: x.max(0), IndexError, "max(): Expected reduction dim 0 to have non-zero"),
    ("min", lambda x: x.min(-2), IndexError, "min(): Expected reduction dim 0 to have non-zero"),
    ("max", lambda x: x.max(), RuntimeError, "Specify the reduction dim with the 'dim'"),
    ("amax", lambda x: x.amax(0), IndexError, "amax(): Expected reduction dim 0"),
    ("amin", lambda x: x.amin(), RuntimeError, "amin(): Expected reduction dim to be specified"),
    ("argmax", lambda x: x.argmax(), IndexError, "argmax(): Expected reduction dim to be"),
    ("argmin", lambda x: x.argmin(0), IndexError, "argmin(): Expected reduction dim 0"),
    ("median", lambda x: x.median(0), IndexError, "median(): Expected reduction dim 0"),
    ("norm", lambda x: x.norm(INF), RuntimeError, "does not have an identity"),
])
def test_empty_reduction_errors(op, fn, exc, msg):
    x = mte.zeros(0, 3)
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        fn(x)
    t = torch.zeros(0, 3)
    with pytest.raises(exc):                # torch raises the same exception type
        fn(t)


# ---- dtypes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("np_dtype", [np.int32, np.int64, np.uint8, np.bool_, np.int8])
@pytest.mark.parametrize("fn", [
    lambda m, x: x.sum(), lambda m, x: x.sum(0, keepdim=True), lambda m, x: x.prod(1),
    lambda m, x: x.cumsum(0), lambda m, x: x.cumprod(1), lambda m, x: m.nansum(x),
    lambda m, x: x.count_nonzero(0), lambda m, x: x.all(1), lambda m, x: x.any(),
    lambda m, x: x.amax(0), lambda m, x: x.max(), lambda m, x: x.min(1),
    lambda m, x: x.sum(dtype=m.float32), lambda m, x: x.mean(dtype=m.float64),
    lambda m, x: x.median(), lambda m, x: m.logsumexp(x, 1),
])
def test_integer_and_bool_dtypes_match_torch(np_dtype, fn):
    vals = np.array([[0, 1, 2], [3, 1, 1]]).astype(np_dtype)
    o, t = mte.tensor(vals), torch.tensor(vals)
    try:
        yt = fn(torch, t)
    except NotImplementedError:             # e.g. torch has no median for bool
        pytest.skip("torch does not implement this op for this dtype")
    yo = fn(mte, o)
    for a, b in zip(yo if isinstance(yo, tuple) else [yo], yt if isinstance(yt, tuple) else [yt]):
        _close(a, b)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.sum(), lambda m, x: x.mean(0), lambda m, x: x.prod(1), lambda m, x: x.var(),
    lambda m, x: x.std(1), lambda m, x: x.norm(), lambda m, x: x.norm(1, 0),
    lambda m, x: m.logsumexp(x, 1), lambda m, x: x.cumsum(1), lambda m, x: x.amax(0),
    lambda m, x: x.max(1), lambda m, x: x.median(),
])
def test_float16_results_match_torch(fn):
    vals = np.array([[0.5, 1.25, 2.0], [3.0, -1.5, 0.75]], np.float16)
    o, t = mte.tensor(vals), torch.tensor(vals)
    yo, yt = fn(mte, o), fn(torch, t)
    for a, b in zip(yo if isinstance(yo, tuple) else [yo], yt if isinstance(yt, tuple) else [yt]):
        _close(a, b)


def test_index_results_are_int64():
    x = mte.randn(3, 4)
    for r in (x.argmax(), x.argmin(1), x.max(0).indices, x.median(1).indices):
        assert r.dtype == mte.int64
    assert (x > 0).all().dtype == mte.bool and (x > 0).any(0).dtype == mte.bool


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: x.mean(), RuntimeError, "mean().*floating point"),
    (lambda x: mte.nanmean(x), RuntimeError, "nanmean().*floating point"),
    (lambda x: x.var(), RuntimeError, "var().*floating point"),
    (lambda x: x.std(0), RuntimeError, "std().*floating point"),
    (lambda x: x.norm(), RuntimeError, "norm().*floating point"),
])
def test_integer_input_rejected_like_torch(call, exc, msg):
    x = mte.tensor([[1, 2], [3, 4]])
    with pytest.raises(exc, match=msg):
        call(x)
    with pytest.raises(Exception):
        call(torch.tensor([[1, 2], [3, 4]]))
    assert x.tolist() == [[1, 2], [3, 4]]


def test_argmax_bool_rejected():
    with pytest.raises(RuntimeError, match="argmax"):
        mte.tensor([True, False]).argmax()


# ---- var / std details ------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda m, x: x.var(correction=3), lambda m, x: x.var(correction=5),
    lambda m, x: x.var(0), lambda m, x: x.std(0), lambda m, x: x.var(True),
    lambda m, x: x.var(unbiased=False), lambda m, x: x.std(correction=1.5),
    lambda m, x: m.var(x, 1, True, True),
])
def test_var_corrections_match_torch(fn):
    o, t = _pair([[1., 2., 3.]], grad=False)
    _close(fn(mte, o), fn(torch, t))


def test_var_single_element_and_constant_grads_match_torch():
    _check_grads(lambda m, x: x.var(), [2.5])         # 0/0: nan value and gradient
    _check_grads(lambda m, x: x.std(), [2.5])
    _check_grads(lambda m, x: x.std(0), [[1., 1.], [1., 1.]])   # std 0: gradient 0
    _check_grads(lambda m, x: x.var(correction=3), [1., 1., 1.])


def test_var_rejects_unbiased_and_correction_together():
    with pytest.raises(TypeError, match="unbiased.*correction"):
        mte.ones(3).var(unbiased=False, correction=1)


# ---- extreme values --------------------------------------------------------------------------
BIG = [[1e4, -1e4, 0.0], [1e4, 1e4 - 1, -1e4], [-1e4, -1e4, -1e4]]


@pytest.mark.parametrize("fn", [
    lambda m, x: m.logsumexp(x, 1), lambda m, x: m.logsumexp(x, (0, 1)),
])
def test_large_inputs_stay_finite(fn):
    (yo, yt), (go, gt) = _grads(fn, BIG)
    assert np.isfinite(yo.detach().numpy()).all() and np.isfinite(go.numpy()).all()
    _close(yo, yt)
    _close(go, gt)


def test_logsumexp_of_infinite_inputs_like_torch():
    vals = [[-INF, -INF, -INF], [1., -INF, 0.], [INF, 1., 0.], [INF, INF, 2.]]
    _check_grads(lambda m, x: m.logsumexp(x, 1), vals)


def test_logsumexp_requires_dim():
    with pytest.raises(TypeError, match="dim"):
        mte.logsumexp(mte.randn(2, 3))


# ---- norm details --------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, INF, -INF, 3, 0.5, 1.5, "fro", 0])
def test_norm_gradient_at_zero_matches_torch(p):
    for vals, dim in (([0., 0., 0.], None), ([[0., 0.], [0., 2.], [-1., 0.]], 1)):
        (yo, yt), (go, gt) = _grads(lambda m, x: x.norm(p, dim=dim), vals)
        _close(yo, yt)
        if gt is None:              # torch leaves p=0's gradient undefined: ours is all zeros
            assert p == 0 and not go.numpy().any()
        else:
            _close(go, gt)


def test_norm_nuc_and_bad_p():
    with pytest.raises(NotImplementedError, match="nuc"):
        mte.ones(2, 2).norm("nuc")
    with pytest.raises(ValueError, match="norm type"):
        mte.ones(2, 2).norm("bogus")


def test_norm_double_backward_at_zero_is_finite():
    x = mte.zeros(3, dtype=mte.float64, requires_grad=True)
    g, = mte.autograd.grad(x.norm(), [x], create_graph=True)
    gg, = mte.autograd.grad(g.sum(), [x])
    assert np.isfinite(gg.numpy()).all()


# ---- bad dims -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,call", [
    ("sum", lambda x: x.sum(3)), ("mean", lambda x: x.mean((0, -4))),
    ("prod", lambda x: x.prod(2)), ("var", lambda x: x.var(5)), ("std", lambda x: x.std(-3)),
    ("logsumexp", lambda x: x.logsumexp(2)), ("norm", lambda x: x.norm(dim=2)),
    ("max", lambda x: x.max(2)), ("min", lambda x: x.min(-3)), ("amax", lambda x: x.amax(2)),
    ("amin", lambda x: x.amin((0, 7))), ("argmax", lambda x: x.argmax(2)),
    ("argmin", lambda x: x.argmin(-3)), ("median", lambda x: x.median(2)),
    ("cumsum", lambda x: x.cumsum(2)), ("cumprod", lambda x: x.cumprod(-3)),
    ("all", lambda x: x.all(2)), ("any", lambda x: x.any(-3)),
    ("count_nonzero", lambda x: x.count_nonzero(4)), ("nansum", lambda x: mte.nansum(x, 2)),
])
def test_bad_dim_raises_index_error_naming_op(name, call):
    x = mte.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    with pytest.raises(IndexError, match=rf"^{name}\(\): Dimension out of range \(expected to be "
                                         r"in range of \[-2, 1\]"):
        call(x)
    assert x.detach().tolist() == [[1., 2., 3.], [4., 5., 6.]] and x.grad is None


def test_repeated_dim_rejected():
    with pytest.raises(RuntimeError, match="sum().*multiple times"):
        mte.ones(2, 3).sum((0, -2))


def test_cumsum_requires_dim():
    with pytest.raises(TypeError):
        mte.ones(3).cumsum()


def test_nan_reductions_match_torch():
    vals = [[1., math.nan, 3.], [math.nan, math.nan, math.nan], [0., 1., 2.]]
    for fn in (lambda m, x: m.nansum(x, 1), lambda m, x: m.nanmean(x, 1),
               lambda m, x: m.nanmean(x), lambda m, x: m.nansum(x)):
        _check_grads(fn, vals)

