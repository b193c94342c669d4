"""nn.init and nn.utils.

init: each random initialiser is checked statistically against the formula PyTorch uses (mean,
std and bounds of ~10^5 samples from a fixed seed, within a few standard errors);
calculate_gain and the fan computation equal torch's; the deterministic ones (eye_, dirac_,
constant_) equal torch's exactly; orthogonal_ gives W W^T = I.
utils: clip_grad_norm_ / clip_grad_value_ / get_total_norm / parameters_to_vector against torch
on the same parameters (nn.Parameter directly)."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import minitorch_edge as mte
from minitorch_edge import nn
from harness import import_torch

torch = import_torch()
init = nn.init


def _gen(seed=0):
    return mte.Generator().manual_seed(seed)


def _stats(t):
    x = t.detach().numpy().astype(np.float64).ravel()
    return x, x.mean(), x.std()


def _assert_moments(t, mean, std, k=5.0):
    """Sample mean and std within k standard errors of the formula's values."""
    x, m, s = _stats(t)
    n = x.size
    assert abs(m - mean) <= k * std / math.sqrt(n), f"mean {m} vs {mean}"
    # the std of the sample std of a distribution with kurtosis <= 3 is about std / sqrt(2n)
    assert abs(s - std) <= k * std / math.sqrt(2 * n) * 1.5, f"std {s} vs {std}"


# ---- gain and fans ----------------------------------------------------------------------------
GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
         ("conv_transpose1d", None), ("conv_transpose2d", None), ("conv_transpose3d", None),
         ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
         ("leaky_relu", 0.2), ("leaky_relu", 0), ("leaky_relu", 1), ("leaky_relu", math.sqrt(5)),
         ("selu", None)]


@pytest.mark.parametrize("name,param", GAINS)
def test_calculate_gain_equals_torch(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(
        torch.nn.init.calculate_gain(name, param), rel=1e-15)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity softmax"):
        init.calculate_gain("softmax")
    for bad in (True, "0.1"):
        with pytest.raises(ValueError, match="not a valid number"):
            init.calculate_gain("leaky_relu", bad)


@pytest.mark.parametrize("shape", [(2, 3), (4, 3, 5), (6, 2, 3, 3), (2, 2, 2, 2, 2), (3, 0)])
def test_fan_in_and_fan_out_equal_torch(shape):
    assert init._calculate_fan_in_and_fan_out(mte.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_fan_needs_two_dims():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(mte.empty(5))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(mte.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(mte.empty(3, 4), mode="fan_avg")


# ---- distributions ----------------------------------------------------------------------------
N_ROWS, N_COLS = 250, 400          # 10^5 samples


def test_uniform_and_normal():
    t = init.uniform_(mte.empty(N_ROWS, N_COLS), -0.5, 2.0, generator=_gen())
    x, _, _ = _stats(t)
    assert x.min() >= -0.5 and x.max() < 2.0
    _assert_moments(t, 0.75, 2.5 / math.sqrt(12))
    t = init.normal_(mte.empty(N_ROWS, N_COLS), 1.5, 0.3, generator=_gen(1))
    _assert_moments(t, 1.5, 0.3)


@pytest.mark.parametrize("shape", [(250, 400), (64, 32, 7, 7)])
@pytest.mark.parametrize("gain", [1.0, 5.0 / 3])
def test_xavier(shape, gain):
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(mte.empty(*shape))
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    t = init.xavier_uniform_(mte.empty(*shape), gain=gain, generator=_gen(2))
    x, _, _ = _stats(t)
    assert -bound <= x.min() < -0.99 * bound and 0.99 * bound < x.max() <= bound
    _assert_moments(t, 0.0, std)
    _assert_moments(init.xavier_normal_(mte.empty(*shape), gain=gain, generator=_gen(3)), 0.0, std)


@pytest.mark.parametrize("a,mode,nonlinearity", [
    (0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"), (0, "fan_out", "relu"),
    (0.1, "fan_out", "leaky_relu"), (0, "fan_in", "tanh"), (0, "FAN_IN", "selu")])
def test_kaiming(a, mode, nonlinearity):
    shape = (64, 32, 7, 7)
    fan = 32 * 49 if mode.lower() == "fan_in" else 64 * 49
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    t = init.kaiming_uniform_(mte.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity,
                              generator=_gen(4))
    x, _, _ = _stats(t)
    assert -bound <= x.min() < -0.99 * bound and 0.99 * bound < x.max() <= bound
    _assert_moments(t, 0.0, std)
    t = init.kaiming_normal_(mte.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity,
                             generator=_gen(5))
    _assert_moments(t, 0.0, std)


def test_kaiming_zero_element_is_a_noop():
    with pytest.warns(UserWarning, match="zero-element"):
        t = init.kaiming_uniform_(mte.empty(0, 3))
    assert t.shape == (0, 3)


def _phi(x):
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _Phi(x):
    return (1 + math.erf(x / math.sqrt(2))) / 2


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04),
                                          (1.0, 2.0, 0.0, 3.0), (0.0, 1.0, 1.5, 4.0),
                                          (0.0, 1.0, -100.0, 100.0)])
def test_trunc_normal_matches_the_truncated_distribution(mean, std, a, b):
    t = init.trunc_normal_(mte.empty(N_ROWS, N_COLS), mean, std, a, b, generator=_gen(6))
    x, m, s = _stats(t)
    assert x.min() >= a and x.max() <= b
    al, be = (a - mean) / std, (b - mean) / std
    Z = _Phi(be) - _Phi(al)
    tmean = mean + std * (_phi(al) - _phi(be)) / Z
    tvar = std ** 2 * (1 + (al * _phi(al) - be * _phi(be)) / Z - ((_phi(al) - _phi(be)) / Z) ** 2)
    _assert_moments(t, tmean, math.sqrt(tvar))
    # the empirical CDF at a few points is within a Kolmogorov-Smirnov band of the exact CDF
    for q in np.linspace(a, b, 7)[1:-1]:
        exact = (_Phi((q - mean) / std) - _Phi(al)) / Z
        assert abs((x <= q).mean() - exact) < 1.63 / math.sqrt(x.size) * 1.5


def test_constant_ones_zeros_eye_dirac_equal_torch():
    pairs = [(lambda m, t: m.constant_(t, 0.25), (3, 4)), (lambda m, t: m.ones_(t), (2, 5)),
             (lambda m, t: m.zeros_(t), (4, 2)), (lambda m, t: m.eye_(t), (3, 5)),
             (lambda m, t: m.eye_(t), (5, 3)), (lambda m, t: m.dirac_(t), (4, 3, 3)),
             (lambda m, t: m.dirac_(t), (3, 5, 3, 2)), (lambda m, t: m.dirac_(t, groups=2),
                                                        (6, 2, 3, 3)),
             (lambda m, t: m.dirac_(t), (2, 2, 3, 3, 3))]
    for fill, shape in pairs:
        ours = fill(init, mte.full(shape, 7.0))
        theirs = fill(torch.nn.init, torch.full(shape, 7.0))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(mte.empty(2, 2, 2))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(mte.empty(2, 2))
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(mte.empty(5, 2, 3), groups=2)


@pytest.mark.parametrize("shape", [(5, 5), (3, 8), (8, 3), (4, 2, 3), (6, 2, 2, 2)])
@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_orthogonal(shape, gain):
    w = init.orthogonal_(mte.empty(*shape), gain=gain, generator=_gen(7)).numpy()
    flat = w.reshape(shape[0], -1).astype(np.float64) / gain
    r, c = flat.shape
    gram = flat @ flat.T if r <= c else flat.T @ flat
    np.testing.assert_allclose(gram, np.eye(min(r, c)), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(mte.empty(4))


def test_orthogonal_is_haar_distributed():
    """With the sign correction the diagonal of Q has mean 0 (without it, it is biased)."""
    g = _gen(8)
    diag = np.concatenate([np.diag(init.orthogonal_(mte.empty(6, 6), generator=g).numpy())
                           for _ in range(400)])
    assert abs(diag.mean()) < 5 * diag.std() / math.sqrt(diag.size)


def test_sparse():
    rows, cols, sparsity = 100, 300, 0.33
    t = init.sparse_(mte.empty(rows, cols), sparsity, std=0.5, generator=_gen(9))
    x = t.numpy()
    assert ((x == 0).sum(0) == math.ceil(sparsity * rows)).all()
    nz = x[x != 0]
    assert abs(nz.std() - 0.5) < 0.02 and abs(nz.mean()) < 0.02
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.sparse_(mte.empty(2, 2, 2), 0.1)


ALL_RANDOM = [lambda t, g: init.uniform_(t, generator=g), lambda t, g: init.normal_(t, generator=g),
              lambda t, g: init.trunc_normal_(t, generator=g),
              lambda t, g: init.xavier_uniform_(t, generator=g),
              lambda t, g: init.xavier_normal_(t, generator=g),
              lambda t, g: init.kaiming_uniform_(t, generator=g),
              lambda t, g: init.kaiming_normal_(t, generator=g),
              lambda t, g: init.orthogonal_(t, generator=g),
              lambda t, g: init.sparse_(t, 0.5, generator=g)]


@pytest.mark.parametrize("fill", ALL_RANDOM)
def test_in_place_on_parameters_without_recording(fill):
    """Works on a Parameter with grad mode on, returns the same tensor, records nothing, bumps
    the version counter, and is reproducible from a seeded generator."""
    p = nn.Parameter(mte.zeros(6, 4))
    out = fill(p, _gen(10))
    assert out is p and p.grad_fn is None and p.requires_grad and p._version > 0
    q = fill(nn.Parameter(mte.zeros(6, 4)), _gen(10))
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert p.detach().numpy().any()
    mte.manual_seed(3)
    a = fill(mte.zeros(6, 4), None).numpy().copy()
    mte.manual_seed(3)
    np.testing.assert_array_equal(a, fill(mte.zeros(6, 4), None).numpy())


def test_init_of_non_contiguous_view():
    base = mte.zeros(4, 6)
    view = base.t()
    init.eye_(view)
    np.testing.assert_array_equal(base.numpy(), np.eye(6, 4).T)


# ---- nn.utils: gradient clipping and parameter vectors ----------------------------------------
def _params(shapes, rng, scale=1.0, with_none=False):
    """The same parameters (and gradients) in minitorch_edge and torch."""
    ours, theirs = [], []
    for k, s in enumerate(shapes):
        w = rng.standard_normal(s).astype(np.float32)
        g = (rng.standard_normal(s) * scale).astype(np.float32)
        o, t = nn.Parameter(mte.tensor(w)), torch.nn.Parameter(torch.tensor(w))
        if not (with_none and k == 0):
            o.grad, t.grad = mte.tensor(g), torch.tensor(g)
        ours.append(o)
        theirs.append(t)
    return ours, theirs


def _same_grads(ours, theirs, **tol):
    for o, t in zip(ours, theirs):
        if t.grad is None:
            assert o.grad is None
        else:
            torch.testing.assert_close(torch.from_numpy(o.grad.numpy().copy()), t.grad, **tol)


SHAPES = st.lists(st.lists(st.integers(1, 5), max_size=3).map(tuple), min_size=1, max_size=4)


@given(shapes=SHAPES, norm_type=st.sampled_from([2.0, 1.0, 3.0, 0.5, math.inf, "inf"]),
       max_norm=st.sampled_from([0.1, 1.0, 100.0]), with_none=st.booleans(),
       seed=st.integers(0, 2 ** 31))
def test_clip_grad_norm_against_torch(shapes, norm_type, max_norm, with_none, seed):
    ours, theirs = _params(shapes, np.random.default_rng(seed), with_none=with_none)
    o = nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    t = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert o.shape == () and str(o.dtype).endswith("float32")
    torch.testing.assert_close(torch.tensor(o.item()), t, rtol=1e-5, atol=1e-6)
    _same_grads(ours, theirs, rtol=1e-5, atol=1e-6)


def test_get_total_norm_and_clip_grads_with_norm_against_torch():
    ours, theirs = _params([(3, 4), (5,)], np.random.default_rng(0))
    o = nn.utils.get_total_norm([p.grad for p in ours], 3.0)
    t = torch.nn.utils.get_total_norm([p.grad for p in theirs], 3.0)
    torch.testing.assert_close(torch.tensor(o.item()), t)
    nn.utils.clip_grads_with_norm_(ours, 0.5, o)
    torch.nn.utils.clip_grads_with_norm_(theirs, 0.5, t)
    _same_grads(ours, theirs)


def test_clip_grad_norm_single_tensor_generator_and_no_grads():
    ours, theirs = _params([(4, 4)], np.random.default_rng(1), scale=10.0)
    o = nn.utils.clip_grad_norm_(ours[0], 1.0)
    t = torch.nn.utils.clip_grad_norm_(theirs[0], 1.0)
    torch.testing.assert_close(torch.tensor(o.item()), t)
    assert ours[0].grad.norm().item() == pytest.approx(1.0, rel=1e-5)
    o = nn.utils.clip_grad_norm_((p for p in ours), 0.5)       # a generator works too
    assert o.item() == pytest.approx(1.0, rel=1e-5)
    assert nn.utils.clip_grad_norm_([nn.Parameter(mte.ones(2))], 1.0).item() == 0.0


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_clip_grad_norm_nonfinite(bad):
    rng = np.random.default_rng(2)
    ours, theirs = _params([(3,), (2, 2)], rng)
    ours[1].grad.numpy()[0, 0] = bad
    theirs[1].grad[0, 0] = bad
    before = [p.grad.numpy().copy() for p in ours]
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
    for p, b in zip(ours, before):
        np.testing.assert_array_equal(p.grad.numpy(), b)   # nothing changed
    o = nn.utils.clip_grad_norm_(ours, 1.0)
    t = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    torch.testing.assert_close(torch.tensor(o.item()), t, equal_nan=True)
    _same_grads(ours, theirs, equal_nan=True)


@given(shapes=SHAPES, clip=st.sampled_from([0.1, 0.5, 2.0]), seed=st.integers(0, 2 ** 31))
def test_clip_grad_value_against_torch(shapes, clip, seed):
    # (torch fails when no parameter has a gradient, so only the first one may lack it)
    ours, theirs = _params(shapes, np.random.default_rng(seed), with_none=len(shapes) > 1)
    assert nn.utils.clip_grad_value_(ours, clip) is None
    torch.nn.utils.clip_grad_value_(theirs, clip)
    _same_grads(ours, theirs)


@given(shapes=SHAPES, seed=st.integers(0, 2 ** 31))
def test_parameters_to_vector_and_back(shapes, seed):
    ours, theirs = _params(shapes, np.random.default_rng(seed))
    o = nn.utils.parameters_to_vector(ours)
    t = torch.nn.utils.parameters_to_vector(theirs)
    np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())
    # differentiable: the gradient reaches every parameter
    for p in ours:
        p.grad = None
    (o * o).sum().backward()
    for p in ours:
        np.testing.assert_allclose(p.grad.numpy(), 2 * p.detach().numpy(), rtol=1e-6)
    new = np.arange(o.numel(), dtype=np.float32)
    vec = mte.tensor(new)
    nn.utils.vector_to_parameters(vec, ours)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), theirs)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    vec.numpy()[0] = -1.0                          # shares memory with vec, as in torch
    assert ours[0].detach().numpy().reshape(-1)[0] == -1.0


def test_vector_to_parameters_errors():
    params = [nn.Parameter(mte.zeros(2, 2)), nn.Parameter(mte.zeros(3))]
    with pytest.raises(TypeError, match="expected a Tensor"):
        nn.utils.vector_to_parameters(np.zeros(7), params)
    with pytest.raises(RuntimeError, match="expected a 1-D vector of 7 elements.*\\(6,\\)"):
        nn.utils.vector_to_parameters(mte.zeros(6), params)
    assert all(not p.detach().numpy().any() for p in params)   # nothing changed


def test_utils_exports():
    for name in ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
                 "vector_to_parameters", "get_total_norm", "clip_grads_with_norm_"]:
        assert callable(getattr(nn.utils, name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from minitorch_edge.nn import utils  # noqa: F401
