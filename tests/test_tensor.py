"""The Tensor itself: dtypes and promotion, creation, attributes, conversions, printing."""
import itertools

import numpy as np
import pytest

import minitorch_edge as mte
from harness import import_torch

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
if mte.dtypes.bf16_available():          # bfloat16 needs the optional ml_dtypes package
    DTYPES.insert(7, "bfloat16")


def _name(d):
    return str(d).split(".")[-1]


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promotion_matches_torch_for_tensor_pairs(a, b):
    torch = import_torch()
    for dims in [(2, 2), (2, 0), (0, 2), (0, 0)]:   # dimensioned and 0-dim operands
        ta = torch.ones((2,) * dims[0], dtype=getattr(torch, a))
        tb = torch.ones((2,) * dims[1], dtype=getattr(torch, b))
        ma = mte.ones(*(2,) * dims[0], dtype=getattr(mte, a))
        mb = mte.ones(*(2,) * dims[1], dtype=getattr(mte, b))
        assert _name(mte.result_type(ma, mb)) == _name(torch.result_type(ta, tb)), (a, b, dims)
        if a != "bool" or b != "bool":
            assert _name((ma + mb).dtype) == _name((ta + tb).dtype), (a, b, dims)
        assert _name((ma * mb).dtype) == _name((ta * tb).dtype)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_promotion_with_python_scalars(a, scalar):
    torch = import_torch()
    t = torch.ones(3, dtype=getattr(torch, a))
    m = mte.ones(3, dtype=getattr(mte, a))
    assert _name((m * scalar).dtype) == _name((t * scalar).dtype)
    assert _name((scalar * m).dtype) == _name((scalar * t).dtype)
    assert _name((m / 2).dtype) == _name((t / 2).dtype)


def test_creation_matches_torch():
    torch = import_torch()
    cases = [
        lambda L: L.tensor([[1, 2], [3, 4]]),
        lambda L: L.tensor([1.5, 2]),
        lambda L: L.tensor([True, False]),
        lambda L: L.tensor(3.0),
        lambda L: L.tensor([]),
        lambda L: L.zeros(2, 3),
        lambda L: L.zeros((2, 3), dtype=L.int32),
        lambda L: L.ones(0, 4),
        lambda L: L.full((2, 2), 7),
        lambda L: L.full((2,), 1.5),
        lambda L: L.eye(3, 2),
        lambda L: L.arange(5),
        lambda L: L.arange(1, 2, 0.25),
        lambda L: L.arange(0, 1, 0.1),
        lambda L: L.linspace(-1, 1, 7),
        lambda L: L.zeros_like(L.ones(2, dtype=L.int8)),
        lambda L: L.ones_like(L.ones(2, 2)),
        lambda L: L.full_like(L.ones(3), 4),
        lambda L: L.tensor(np.arange(4, dtype=np.int32)),
    ]
    for make in cases:
        ours, theirs = make(mte), make(torch)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert _name(ours.dtype) == _name(theirs.dtype)
        np.testing.assert_allclose(ours.numpy().astype(float), theirs.numpy().astype(float),
                                   rtol=1e-6, atol=1e-7)


def test_random_creation_shapes_dtypes_and_seeding():
    mte.manual_seed(3)
    a = mte.rand(3, 4)
    mte.manual_seed(3)
    b = mte.rand(3, 4)
    assert mte.equal(a, b) and a.dtype == mte.float32
    assert 0 <= a.min().item() and a.max().item() < 1
    assert mte.randn(2, 2, dtype=mte.float64).dtype == mte.float64
    r = mte.randint(2, 5, (100,))
    assert r.dtype == mte.int64 and r.min().item() >= 2 and r.max().item() < 5
    assert sorted(mte.randperm(6).tolist()) == list(range(6))
    g1, g2 = mte.Generator().manual_seed(7), mte.Generator().manual_seed(7)
    assert mte.equal(mte.randn(5, generator=g1), mte.randn(5, generator=g2))
    state = g1.get_state()
    x = mte.rand(4, generator=g1)
    g1.set_state(state)
    assert mte.equal(x, mte.rand(4, generator=g1))
    assert mte.rand_like(a).shape == a.shape and mte.randn_like(a).dtype == a.dtype


def test_from_numpy_shares_memory_and_as_tensor():
    a = np.zeros(3, np.float32)
    t = mte.from_numpy(a)
    a[1] = 5
    assert t.tolist() == [0.0, 5.0, 0.0]
    assert mte.as_tensor(a)._data is a
    assert mte.tensor(a)._data is not a
    with pytest.raises(TypeError, match="from_numpy"):
        mte.from_numpy([1, 2])
    with pytest.raises(TypeError, match="complex128"):
        mte.from_numpy(np.zeros(2, complex))


def test_attributes_and_conversions():
    x = mte.arange(6).reshape(2, 3).float()
    assert x.shape == (2, 3) and x.size() == (2, 3) and x.size(1) == 3 and x.size(-1) == 3
    assert repr(x.shape) == "minitorch_edge.Size([2, 3])"
    assert x.ndim == 2 and x.dim() == 2 and x.numel() == 6
    assert str(x.device) == "cpu" and x.device == "cpu"
    assert x.is_leaf and x.grad_fn is None and x.grad is None and not x.requires_grad
    assert x.T.shape == (3, 2) and x.mT.shape == (3, 2)
    assert x.to(mte.float64).dtype == mte.float64 and x.to("cpu") is x
    assert x.half().dtype == mte.float16 and x.long().dtype == mte.int64
    assert x.int().dtype == mte.int32 and x.bool().dtype == mte.bool and x.double().dtype == \
        mte.float64
    assert x.float() is x
    assert mte.tensor(2.5).item() == 2.5 and x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        x.item()
    c = x.clone()
    c[0, 0] = 9
    assert x[0, 0].item() == 0 and x.contiguous() is x
    assert x.detach()._data is x._data
    with pytest.raises(AssertionError, match="not compiled with CUDA"):   # as CPU-only torch
        x.to("cuda")
    with pytest.raises(TypeError):
        x.to("complex64")


@pytest.mark.parametrize("make", [
    lambda L: L.tensor([[1.0, 2.5], [3.0, 4.0]]),
    lambda L: L.tensor([1.0, 2.0, 3.0]),
    lambda L: L.tensor([1, 2, 3]),
    lambda L: L.tensor(3.0),
    lambda L: L.tensor([True, False]),
    lambda L: L.tensor([1.0, 2.0], dtype=L.float64),
    lambda L: L.tensor([1, 2], dtype=L.int32),
    lambda L: L.tensor([0.001, 1234.5]),
    lambda L: L.tensor([1.0, 2.0], requires_grad=True),
    lambda L: L.zeros(0, 3),
    lambda L: L.tensor([]),
    lambda L: L.tensor([-1.0, 0.5, 100.0]),
])
def test_repr_matches_torch(make):
    torch = import_torch()
    ours = repr(make(mte)).replace("minitorch_edge.", "torch.")
    assert ours == repr(make(torch))


def test_repr_shows_grad_fn():
    x = mte.ones(2, requires_grad=True)
    assert repr(x * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"


def test_bad_input_messages():
    with pytest.raises(RuntimeError, match=r"add: shapes \(2, 3\) and \(4, 3\) cannot be broadcast"):
        mte.ones(2, 3) + mte.ones(4, 3)
    with pytest.raises(TypeError, match="unsupported operand"):
        mte.ones(2) + "a"
    with pytest.raises(RuntimeError, match="negative dimension"):
        mte.zeros(-1)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(mte.ones(2))
