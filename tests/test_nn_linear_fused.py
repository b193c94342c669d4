"""The fused Linear op (nn/functional/linear.py) and its backend kernel ``backend.linear``.

Checks: float64 gradcheck and gradgradcheck over generated shapes (leading dims, sizes 0, 1 and
primes, with and without bias, with only some inputs requiring grad); float32 forward and
backward against PyTorch (non-contiguous input and weight included); the native ``linear``
equals its numpy twin; the composed fallback still serves a 1-D weight, a broadcast bias and
mixed dtypes (which keep their error)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch_edge as mte
from minitorch_edge.autograd import gradcheck, gradgradcheck
from minitorch_edge.backend import numpy_backend
from minitorch_edge.nn import functional as F
from harness import import_torch

torch = import_torch()

SIZES = st.sampled_from([0, 1, 2, 3, 5, 7, 13])
LEAD = st.lists(st.sampled_from([1, 2, 3, 5]), min_size=0, max_size=2)


def _t64(rng, shape, rg=True):
    return mte.tensor(rng.standard_normal(shape), dtype=mte.float64, requires_grad=rg)


@settings(max_examples=12, deadline=None)
@given(lead=LEAD, n_in=SIZES, n_out=SIZES, bias=st.booleans(),
       needs=st.sampled_from([(1, 1, 1), (0, 1, 1), (1, 0, 0), (0, 0, 1)]),
       seed=st.integers(0, 2**16))
def test_gradcheck_and_gradgradcheck_float64(lead, n_in, n_out, bias, needs, seed):
    rng = np.random.default_rng(seed)
    x = _t64(rng, tuple(lead) + (n_in,), bool(needs[0]))
    w = _t64(rng, (n_out, n_in), bool(needs[1]))
    b = _t64(rng, (n_out,), bool(needs[2]))
    if not any(t.requires_grad for t in ((x, w, b) if bias else (x, w))):
        w.requires_grad_(True)
    inputs, fn = ((x, w, b), F.linear) if bias else ((x, w), lambda x, w: F.linear(x, w))
    assert fn(*inputs).grad_fn.name() == "AddmmBackward0"
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def _pair(rng, shape, transpose=False):
    """(ours, torch) leaf tensors with the same float32 values; transpose=True makes both a
    non-contiguous transposed view of a leaf of the reversed shape."""
    a = rng.standard_normal(shape[::-1] if transpose else shape).astype(np.float32)
    ours, theirs = mte.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    if transpose:
        return ours, theirs, ours.t(), theirs.t()
    return ours, theirs, ours, theirs


@settings(max_examples=10, deadline=None)
@given(lead=LEAD, n_in=st.sampled_from([1, 7, 64, 97]), n_out=st.sampled_from([1, 10, 33]),
       x_t=st.booleans(), w_t=st.booleans(), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_forward_backward_match_torch(lead, n_in, n_out, x_t, w_t, bias, seed):
    rng = np.random.default_rng(seed)
    x_t = x_t and len(lead) == 1          # a transposed input needs a 2-D leaf
    xl, txl, x, tx = _pair(rng, tuple(lead) + (n_in,), x_t)
    wl, twl, w, tw = _pair(rng, (n_out, n_in), w_t)
    leaves = [(xl, txl), (wl, twl)]
    args, targs = [x, w], [tx, tw]
    if bias:
        bl, tbl, b, tb = _pair(rng, (n_out,))
        leaves.append((bl, tbl))
        args.append(b)
        targs.append(tb)
    y, ty = F.linear(*args), torch.nn.functional.linear(*targs)
    scale = np.sqrt(n_in) + 1
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5,
                               atol=1e-5 * scale)
    g = rng.standard_normal(ty.shape).astype(np.float32)
    y.backward(mte.tensor(g))
    ty.backward(torch.tensor(g))
    for ours, theirs in leaves:
        ref = theirs.grad.numpy()
        np.testing.assert_allclose(ours.grad.numpy(), ref, rtol=1e-4,
                                   atol=1e-5 * (np.abs(ref).max() + 1))


def test_double_backward_matches_torch():
    rng = np.random.default_rng(0)
    xl, txl, _, _ = _pair(rng, (3, 4))
    wl, twl, _, _ = _pair(rng, (5, 4))
    bl, tbl, _, _ = _pair(rng, (5,))
    y = F.linear(xl, wl, bl)
    ty = torch.nn.functional.linear(txl, twl, tbl)
    (gx,) = mte.autograd.grad((y * y).sum(), xl, create_graph=True)
    (tgx,) = torch.autograd.grad((ty * ty).sum(), txl, create_graph=True)
    (gx * gx).sum().backward()
    (tgx * tgx).sum().backward()
    for ours, theirs in ((xl, txl), (wl, twl), (bl, tbl)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)


def test_saved_input_modified_in_place_is_detected():
    x = mte.randn(3, 4, requires_grad=True)
    w = mte.randn(2, 4, requires_grad=True)
    h = x * 1
    y = F.linear(h, w)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_no_grad_records_nothing():
    with mte.no_grad():
        y = F.linear(mte.randn(3, 4, requires_grad=True), mte.randn(2, 4, requires_grad=True))
    assert y.grad_fn is None and not y.requires_grad


def test_fallback_cases_still_work():
    rng = np.random.default_rng(1)
    x = _t64(rng, (3, 4))
    w1 = _t64(rng, (4,))
    assert F.linear(x, w1).shape == (3,)
    assert gradcheck(lambda x, w: F.linear(x, w, mte.tensor(0.5, dtype=mte.float64)), (x, w1))
    w = _t64(rng, (2, 4))
    b1 = _t64(rng, (1,))                       # a one-element bias broadcasts (composed path)
    assert F.linear(x, w, b1).grad_fn.name() != "AddmmBackward0"
    assert gradcheck(F.linear, (x, w, b1))
    with pytest.raises(RuntimeError, match="dtype"):
        F.linear(x, mte.randn(2, 4))           # float64 input, float32 weight
    with pytest.raises(RuntimeError, match="last dimension"):
        F.linear(x, mte.randn(2, 5, dtype=mte.float64))


def test_integer_linear_stays_integer():
    x = mte.tensor([[1, 2], [3, 4]])
    w = mte.tensor([[1, 0], [1, 1], [2, -1]])
    y = F.linear(x, w, mte.tensor([1, 1, 1]))
    assert y.dtype == mte.int64
    np.testing.assert_array_equal(y.numpy(), np.array([[2, 4, 1], [4, 8, 3]]))


# ---- the backend kernel: native equals its numpy twin ---------------------------------------
native_gemm = pytest.importorskip("minitorch_edge.backend.native_gemm")
DIMS = st.sampled_from([0, 1, 2, 3, 5, 7, 13, 17, 31, 64, 97, 257])


@settings(max_examples=30, deadline=None)
@given(rows=DIMS, n_in=DIMS, n_out=DIMS, bias=st.booleans(), w_layout=st.sampled_from(
    ["c", "t", "strided"]), seed=st.integers(0, 2**16))
def test_native_linear_equals_numpy_twin(rows, n_in, n_out, bias, w_layout, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    if w_layout == "t":
        w = np.ascontiguousarray(rng.standard_normal((n_in, n_out)).astype(np.float32)).T
    elif w_layout == "strided":
        w = rng.standard_normal((n_out, 2 * n_in)).astype(np.float32)[:, ::2]
    else:
        w = rng.standard_normal((n_out, n_in)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32) if bias else None
    got = native_gemm.linear(x, w, b)
    ref = numpy_backend.linear(x.astype(np.float64), w.astype(np.float64),
                               None if b is None else b.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == (rows, n_out)
    bound = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T + (
        0 if b is None else np.abs(b))
    assert np.all(np.abs(got - ref) <= 2 * (n_in + 4) * np.finfo(np.float32).eps * bound + 1e-30)


def test_native_linear_other_dtypes_go_to_the_twin():
    x, w = np.arange(6.0).reshape(2, 3), np.ones((4, 3))
    np.testing.assert_array_equal(native_gemm.linear(x, w, np.ones(4)),
                                  numpy_backend.linear(x, w, np.ones(4)))
    assert native_gemm.linear(x.astype(np.int32), w.astype(np.int32)).dtype == np.int32


# ---- the engine adopts Linear's fresh gradients as .grad (no copy): never an alias ----------
def test_adopted_grads_accumulate_and_never_alias():
    rng = np.random.default_rng(3)
    x = mte.tensor(rng.standard_normal((4, 3)).astype(np.float32))
    w = mte.tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    b = mte.tensor(rng.standard_normal(2).astype(np.float32), requires_grad=True)
    F.linear(x, w, b).sum().backward()
    first_w, first_b = w.grad.numpy().copy(), b.grad.numpy().copy()
    F.linear(x, w, b).sum().backward()                      # accumulates in place
    np.testing.assert_allclose(w.grad.numpy(), 2 * first_w, rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), 2 * first_b, rtol=1e-6)
    # dx passes through an Add to two leaves: their grads must be separate arrays
    a1 = mte.randn(4, 3, requires_grad=True)
    a2 = mte.randn(4, 3, requires_grad=True)
    F.linear(a1 + a2, w).sum().backward()
    assert not np.shares_memory(a1.grad.numpy(), a2.grad.numpy())
    a1.grad.numpy()[...] = 0
    assert np.abs(a2.grad.numpy()).sum() > 0


def test_hooks_that_keep_a_gradient_see_it_unchanged():
    x = mte.randn(4, 3)
    for where in ("tensor", "node"):
        w = mte.randn(2, 3, requires_grad=True)
        kept = []
        if where == "tensor":
            w.register_hook(lambda g: kept.append(g))
        y = F.linear(x, w)
        if where == "node":
            y.grad_fn.register_hook(lambda gi, go: kept.append(gi[1]))
        y.sum().backward(retain_graph=True)
        snap = kept[0].numpy().copy()
        y.sum().backward()
        np.testing.assert_array_equal(kept[0].numpy(), snap)
        np.testing.assert_allclose(w.grad.numpy(), 2 * snap, rtol=1e-6)
