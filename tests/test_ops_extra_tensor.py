"""Tensor-level additions of issue 10 outside the op table: in-place shape ops and resize_
(ops/inplace_views.py), new_* / type / type_as / can_cast (ops/construct.py), clone's strides
(ops/_layout.py) and flip(dims=), each checked against torch (their harness rows are in
test_ops_extra.py)."""
import warnings

import numpy as np
import pytest

import minitorch_edge as mte
from harness import import_torch

torch = import_torch()


def both(fn, *arrays):
    """fn(lib, *tensors) for both libraries (tensors made from the arrays)."""
    return (fn(mte, *[mte.tensor(a) for a in arrays]),
            fn(torch, *[torch.tensor(a) for a in arrays]))


def same(o, t):
    assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (o.dtype, t.dtype)
    assert tuple(o.shape) == tuple(t.shape), (o.shape, t.shape)
    np.testing.assert_allclose(np.asarray(o.detach().numpy(), np.float64),
                               t.detach().double().numpy(), rtol=1e-6, atol=1e-6)


# ---- in-place shape ops -------------------------------------------------------------------------
def test_inplace_shape_ops_follow_torch():
    for L in (mte, torch):
        a = L.randn(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            a.t_()
        b = a * 1
        assert b.t_() is b and b._version == 1 and tuple(b.shape) == (3, 2)
        assert b.grad_fn.name().startswith("T") or b.grad_fn.name().startswith("Permute")
        b.unsqueeze_(0)
        assert tuple(b.shape) == (1, 3, 2) and b._version == 2
        with pytest.raises(RuntimeError, match="view of a leaf Variable"):
            a[0].unsqueeze_(0)
        x = L.randn(2, 3, requires_grad=True)
        y = x * 1
        z = y * y                        # saves y; t_ changes it
        y.t_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
        with L.no_grad():
            a.t_()                        # allowed without grad mode, stays a leaf
        assert tuple(a.shape) == (3, 2) and a.is_leaf


def test_inplace_shape_ops_gradient():
    grads = []
    for L in (mte, torch):
        a = L.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        b = a * 2
        b.transpose_(0, 1).squeeze_().unsqueeze_(-1)
        c = (a * 1)[0]                   # a view of a non-leaf: allowed
        c.unsqueeze_(0)
        ((b * L.arange(6.0).reshape(3, 2, 1)).sum() + (c * 3).sum()).backward()
        grads.append(a.grad)
    same(grads[0], grads[1])


def test_resize():
    cases = [((6,), (2, 2)), ((6,), (3, 3)), ((2, 3), (2, 3)), ((6,), (0,)), ((4,), (2, 3))]
    for shape, new in cases:
        o, t = mte.arange(6.0)[:int(np.prod(shape))].reshape(shape), \
            torch.arange(6.0)[:int(np.prod(shape))].reshape(shape)
        o.resize_(*new)
        t.resize_(*new)
        assert tuple(o.shape) == tuple(t.shape)
        n = min(int(np.prod(new)), int(np.prod(shape)))
        np.testing.assert_array_equal(o.numpy().reshape(-1)[:n], t.numpy().reshape(-1)[:n])
    o, t = mte.arange(6.0).reshape(2, 3).t(), torch.arange(6.0).reshape(2, 3).t()
    o.resize_(2, 3)
    t.resize_(2, 3)
    same(o, t)
    assert o.stride() == t.stride()
    base = mte.arange(6.0)
    v = base.resize_(2, 2)               # a smaller resize shares the memory
    v[0, 0] = 10
    assert base is v and base[0, 0].item() == 10
    o = mte.zeros(3)
    o.resize_as_(mte.zeros(2, 2))
    assert tuple(o.shape) == (2, 2)
    for L in (mte, torch):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            L.zeros(2, requires_grad=True).resize_(3)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            (L.zeros(2, requires_grad=True) * 1).resize_(3)


# ---- new_*, type, type_as, can_cast -------------------------------------------------------------
def test_new_constructors():
    for L in (mte, torch):
        x = L.randn(2, 3, dtype=L.float64)
        assert x.new_zeros(2, 3).dtype == L.float64 and tuple(x.new_zeros((2,)).shape) == (2,)
        assert x.new_ones([2]).tolist() == [1.0, 1.0]
        assert x.new_full((2,), 3).tolist() == [3.0, 3.0]
        assert x.new_empty(2, 0).shape == (2, 0)
        assert x.new_empty((2, 3), dtype=L.float32).dtype == L.float32
        assert x.new_zeros(2, dtype=L.int64).dtype == L.int64
        assert x.new_zeros(2, requires_grad=True).requires_grad
        assert x.new_tensor([1, 2]).dtype == L.float64
        assert x.new_tensor(3).shape == ()
        i = L.zeros(2, dtype=L.int32)
        assert i.new_tensor([1.5]).dtype == L.int32
        assert i.new_full((2,), 1.5).tolist() == [1, 1]
        with pytest.raises(RuntimeError):
            L.zeros(2, dtype=L.int64).new_zeros(2, requires_grad=True)
        with pytest.raises(TypeError):
            x.new_full(2, 1.0)
        t = L.randn(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            n = x.new_tensor(t)
        assert any("sourceTensor.detach().clone()" in str(m.message) for m in w)
        assert not n.requires_grad and n.dtype == L.float64


def test_type_strings_and_conversion():
    for name in ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
                 "bool"):
        assert mte.zeros(2, dtype=getattr(mte, name)).type() == \
            torch.zeros(2, dtype=getattr(torch, name)).type()
    x = mte.zeros(2)
    assert x.type("torch.DoubleTensor").dtype == mte.float64
    assert x.type(mte.int32).dtype == mte.int32
    assert x.type(mte.float32) is x
    with pytest.raises(ValueError, match="invalid type: 'torch.Foo'"):
        x.type("torch.Foo")
    assert x.type_as(mte.zeros(1, dtype=mte.int64)).dtype == mte.int64
    with pytest.raises(TypeError):
        x.type_as(3)
    a = mte.ones(2, requires_grad=True)
    a.type(mte.float64).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]


def test_can_cast_matches_torch():
    names = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64")
    for f in names:
        for t in names:
            assert mte.can_cast(getattr(mte, f), getattr(mte, t)) == \
                torch.can_cast(getattr(torch, f), getattr(torch, t)), (f, t)
    with pytest.raises(TypeError, match="must be minitorch_edge.dtype"):
        mte.can_cast(mte.zeros(1), mte.int32)


# ---- clone strides and flip(dims=) --------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda L: L.randn(3, 4).t(), lambda L: L.randn(3, 4)[:, ::2],
    lambda L: L.randn(2, 3, 4).permute(2, 0, 1), lambda L: L.randn(2, 1, 4).transpose(0, 1),
    lambda L: L.randn(4).expand(3, 4), lambda L: L.randn(3, 4).t()[1:],
    lambda L: L.randn(3, 4).t()[::2], lambda L: L.randn(2, 3, 4, 5).permute(0, 2, 3, 1),
    lambda L: L.randn(3, 1, 2).expand(3, 4, 2), lambda L: L.randn(2, 3),
])
def test_clone_preserves_strides(make):
    o, t = make(mte), make(torch)
    assert o.stride() == t.stride()
    assert o.clone().stride() == t.clone().stride()
    assert o.clone(memory_format=mte.contiguous_format).stride() == \
        t.clone(memory_format=torch.contiguous_format).stride()
    assert o.clone(memory_format=mte.preserve_format).stride() == \
        t.clone(memory_format=torch.preserve_format).stride()
    c = o.clone()
    np.testing.assert_array_equal(c.numpy(), o.numpy())
    assert not np.shares_memory(c.numpy(), o.numpy())


def test_clone_channels_last():
    o, t = mte.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    assert o.clone(memory_format=mte.channels_last).stride() == \
        t.clone(memory_format=torch.channels_last).stride()
    with pytest.raises(RuntimeError, match="required rank 4"):
        mte.randn(2, 3).clone(memory_format=mte.channels_last)


def test_flip_dims_keyword():
    x = np.arange(6).reshape(2, 3)
    for fn in (lambda L, a: L.flip(a, dims=[0]), lambda L, a: a.flip(dims=(0, 1)),
               lambda L, a: a.flip(1), lambda L, a: a.flip(0, 1), lambda L, a: a.flip((1,))):
        same(*both(fn, x))
    for L in (mte, torch):
        with pytest.raises(TypeError):
            L.arange(4).flip()
        with pytest.raises(TypeError):
            L.arange(4).flip(dims=0)
