"""Dtype semantics against PyTorch: promotion, conversion of each operand, out-of-range numbers,
bool/uint8/int8 mixes, integer division by zero, Scalar-argument checks.

`test_binary_op_sweep` runs every binary op over every dtype pair and every operand kind
(dimensioned tensor, 0-d tensor, Python number; see harness.edge_cases) and compares the result
dtype and values with torch 2.13, or that both raise. The fixed rows below pin the cases a
differential fuzz found, one row each.
"""
import warnings

import numpy as np
import pytest

import minitorch_edge as mte
from harness import compare_with_torch, describe_case, edge_cases, edge_operand, import_torch

torch = import_torch()

# ---- the sweep --------------------------------------------------------------------------------
BINARY = {
    "add": lambda L, a, b: a + b if _tensor(a) else L.add(a, b),
    "sub": lambda L, a, b: a - b if _tensor(a) else L.sub(a, b),
    "mul": lambda L, a, b: a * b if _tensor(a) else L.mul(a, b),
    "div": lambda L, a, b: a / b if _tensor(a) else L.div(a, b),
    "true_divide": lambda L, a, b: L.true_divide(a, b),
    "div_trunc": lambda L, a, b: L.div(a, b, rounding_mode="trunc"),
    "floor_divide": lambda L, a, b: a // b if _tensor(a) else L.floor_divide(a, b),
    "remainder": lambda L, a, b: a % b if _tensor(a) else L.remainder(a, b),
    "fmod": lambda L, a, b: L.fmod(a, b),
    "pow": lambda L, a, b: a ** b if _tensor(a) else L.pow(a, b),
    "atan2": lambda L, a, b: L.atan2(a, b),
    "bitwise_and": lambda L, a, b: a & b if _tensor(a) else L.bitwise_and(a, b),
    "bitwise_or": lambda L, a, b: a | b if _tensor(a) else L.bitwise_or(a, b),
    "bitwise_xor": lambda L, a, b: a ^ b if _tensor(a) else L.bitwise_xor(a, b),
    "eq": lambda L, a, b: a == b if _tensor(a) else b == a,
    "ne": lambda L, a, b: a != b if _tensor(a) else b != a,
    "lt": lambda L, a, b: a < b if _tensor(a) else b > a,
    "le": lambda L, a, b: a <= b if _tensor(a) else b >= a,
    "gt": lambda L, a, b: a > b if _tensor(a) else b < a,
    "ge": lambda L, a, b: a >= b if _tensor(a) else b <= a,
    "maximum": lambda L, a, b: L.maximum(a, b),
    "minimum": lambda L, a, b: L.minimum(a, b),
    "where": lambda L, a, b: L.where(L.tensor([True, False, False, True]) if _dims(a, b)
                                     else L.tensor(False), a, b),
    "logical_and": lambda L, a, b: L.logical_and(a, b),
    "logical_xor": lambda L, a, b: L.logical_xor(a, b),
    "xlogy": lambda L, a, b: L.xlogy(a, b),
}


def _tensor(x):
    return isinstance(x, (mte.Tensor, torch.Tensor))


def _dims(*xs):
    return any(_tensor(x) and x.dim() for x in xs)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_op_sweep(op):
    """Every dtype pair x {tensor, 0-d tensor, number} operand kinds: result dtype and values as
    torch's, or both raise."""
    fn = BINARY[op]
    failures, checked = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # numpy's and torch's overflow/divide warnings
        for case in edge_cases():
            ka, da, va, kb, db, vb = case

            def args(lib, case=case):
                return (edge_operand(lib, ka, da, value=va),
                        edge_operand(lib, kb, db, second=True, value=vb))
            diff = compare_with_torch(fn, args, f"{op}{describe_case(*case)}")
            if diff == "skip":
                continue
            checked += 1
            if diff is not None:
                failures.append(diff)
    assert checked > 300
    assert not failures, f"{len(failures)} of {checked} cases differ from torch:\n" + \
        "\n".join(failures[:25])


# ---- rows the differential fuzz found (issue 10) ----------------------------------------------
ROWS = [
    # a 0-d integer operand is converted by value into the compute dtype, never wrapped into the
    # other operand's integer dtype first
    "u8 / L.tensor(-5)", "L.atan2(u8, L.tensor(-5))", "L.true_divide(u8, L.tensor(-300))",
    "L.xlogy(u8, L.tensor(-5))", "i8 / L.tensor(300)", "u8 + L.tensor(-5)", "u8 < L.tensor(-1)",
    # bool & | ^ int: bitwise, promoted
    "b | L.tensor([2, 3])", "b & L.tensor([2, 3])", "b ^ L.tensor([2, 3])", "b | 2", "2 | b",
    "b | True", "b ^ L.tensor(True)",
    # out-of-range Python ints wrap in integer ops; comparisons see the wrapped value
    "u8 * -1", "i8 + 300", "u8 - 300", "i8 * 1000", "u8 // -3", "u8 % -3", "L.fmod(u8, -3)",
    "u8 < -1", "u8 == 300", "u8 == 266", "i8 < 200", "u8 + 2 ** 63", "u8 + 2 ** 70",
    "u8.clone().fill_(-1)", "u8.clone().fill_(300)",
    # float-only ops on integer/bool inputs give the default float dtype
    "L.atan2(u8, u8)", "L.atan2(b, b)", "L.atan2(i8, L.tensor(2.0, dtype=L.float64))",
    # reductions with dtype=
    "L.tensor([100, 100]).sum(dtype=L.int8)", "L.tensor([1, 2], dtype=L.int16).sum(dtype=L.int8)",
    "L.tensor([100, 100], dtype=L.int8).prod(dtype=L.int8)",
    "L.tensor([100, 100], dtype=L.int8).nansum(dtype=L.int8)",
    "L.tensor([True, True]).sum(dtype=L.bool)",
    # alpha is applied in the result dtype, and checked against it
    "L.add(i8, b, alpha=2)", "L.add(b, b, alpha=2)", "L.add(i8, b, alpha=300)",
    "L.add(i8, 2, alpha=2.5)", "L.add(L.tensor([1.0]), L.tensor([1.0]), alpha=True)",
    "L.add(u8, u8, alpha=-255)", "L.sub(u8, u8, alpha=300)", "L.add(b, b, alpha=0)",
    # pow with bool and integer operands
    "b ** True", "b ** False", "b ** 2", "b ** b", "True ** b", "u8 ** True",
    "L.tensor([2, 3]) ** L.tensor([-1, 2])",
    "L.tensor([1, -1, 2, 0]) ** L.tensor([-1, -3, -2, -1])",
    "L.tensor([2, -1], dtype=L.int8) ** L.tensor([-3, -4], dtype=L.int8)",
    "2 ** L.tensor([-1, 2])", "L.tensor([2, 3]) ** -1", "u8 ** L.tensor(-1)",
    # where with numbers, and one-argument where
    "L.where(b, 1, 2.0)", "L.where(b, 1, 2)", "L.where(b, True, 2)", "L.where(b, u8, -1)",
    "L.where(b, u8, 300)", "L.where(b, u8, 2.5)", "L.where(b)",
    "L.where(L.tensor([[1, 0], [0, 1]]))",
    # number first
    "L.add(2.0, L.tensor([1, 2]))", "L.add(2, 3)", "L.mul(2, 3.0)", "L.sub(2.0, L.tensor([1, 2]))",
    "L.div(2, L.tensor([1, 2]))", "L.floor_divide(2, L.tensor([1, 2]))",
    # integer division by zero raises; float division does not
    "L.tensor([5]) // 0", "L.tensor([5]) % 0", "L.fmod(L.tensor([5]), 0)",
    "L.tensor([5]) // L.tensor([0])", "L.tensor([5]) % L.tensor(0)",
    "L.tensor([5], dtype=L.uint8) // L.tensor([0], dtype=L.uint8)", "L.tensor([5]) // False",
    "L.tensor([5]).div(0, rounding_mode='trunc')", "L.tensor([5]).div(0, rounding_mode='floor')",
    "L.tensor([], dtype=L.int64) // 0", "L.tensor([5.0]) // 0", "L.tensor([5]) / 0",
    "L.tensor([5, -7]).div(L.tensor([-2, 2]), rounding_mode='trunc')",
    # subtraction with bool raises
    "b - L.tensor([1, 2])", "L.tensor([1, 2]) - b", "b - 1", "1 - b", "b - True", "b - b",
    "L.sub(L.tensor([1, 2]), True)", "L.rsub(b, 1)",
    # Scalar arguments are checked: masked_fill, clamp, fill_, index_fill
    "i8.masked_fill(b, 300)", "i8.masked_fill(b, -129)", "u8.masked_fill(b, -1)",
    "u8.masked_fill(b, 256)", "u8.masked_fill(b, -256)", "i8.masked_fill(b, 1.7)",
    "u8.masked_fill(b, L.tensor(300))", "u8.masked_fill(b, L.tensor(-1))", "b.masked_fill(b, 2)",
    "i8.clamp(max=300)", "i8.clamp(min=-300)", "u8.clamp(min=-1)", "u8.clamp(max=256)",
    "i8.clamp(max=1.5)", "L.clamp(u8, min=L.tensor(300))", "u8.clamp(-1, 300)",
    "L.ones(2, dtype=L.float16).clamp(max=1e10)", "i8.clone().fill_(-129)",
    "i8.clone().fill_(1.7)", "L.zeros(2, dtype=L.int8).fill_(L.tensor(300))",
    "L.zeros(2, dtype=L.float16).fill_(1e10)", "L.zeros(2, dtype=L.int8).fill_(float('nan'))",
    "L.zeros(2, dtype=L.int8).index_fill(0, L.tensor([0]), 300)",
    # lerp: floating-point tensors of one dtype only
    "L.lerp(L.tensor([1, 2]), L.tensor([3, 4]), 0.5)",
    "L.lerp(L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0], dtype=L.float64), 0.5)",
    # float16 mul/div by a one-element operand of another dtype use its float32 value
    "L.tensor([0.0, -2.5], dtype=L.float16) * 1e10",
    "1e10 * L.tensor([0.0, -2.5], dtype=L.float16)",
    "L.tensor([1.0, -2.5], dtype=L.float16) / L.tensor(-70000)",
    "L.tensor([0.0, -2.5], dtype=L.float16) * L.tensor([70000], dtype=L.int32)",
]


@pytest.mark.parametrize("expr", ROWS)
def test_fuzz_row(expr):
    def fn(L):
        u8 = L.tensor([10, 20], dtype=L.uint8)      # noqa: F841 (used by the expressions)
        i8 = L.tensor([10, -20], dtype=L.int8)      # noqa: F841
        b = L.tensor([True, False])                 # noqa: F841
        return eval(expr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        diff = compare_with_torch(lambda L: fn(L), lambda L: (), expr)
    assert diff in (None, "skip"), diff
    assert diff is None, f"{expr}: torch refuses the arguments"


@pytest.mark.parametrize("code", ["x[0] = 300", "x[0] = -129", "u[0] = -1", "u[0] = -256",
                                  "x[[0, 1]] = 300", "x[:] = 300", "x[0] = 1.7",
                                  "x[0] = L.tensor(300)", "f[0] = 1e10", "x += 300", "x *= -1",
                                  "u -= 300", "u.add_(-1)", "x.clamp_(max=300)",
                                  "x.masked_fill_(L.tensor([True, False, True]), 300)",
                                  "x.fill_(True)", "u.sub_(1, alpha=-1)"])
def test_inplace_and_setitem_numbers(code):
    def fn(L):
        x = L.tensor([10, -20, 5], dtype=L.int8)
        u = L.tensor([1, 2, 3], dtype=L.uint8)
        f = L.zeros(3, dtype=L.float16)
        exec(code, {"L": L, "x": x, "u": u, "f": f})
        return x, u, f
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert compare_with_torch(fn, lambda L: (), code) is None


def test_numpy_scalar_operands_keep_the_tensor_dtype():
    x = mte.ones(3)
    assert (x + np.float64(2.0)).dtype is mte.float32
    assert (mte.ones(3, dtype=mte.uint8) + np.int64(300)).dtype is mte.uint8
    assert (mte.ones(3, dtype=mte.uint8) + np.int64(300)).tolist() == [45, 45, 45]


# ---- zero-size pooling and convolution, on both backends ------------------------------------
def _on_backends(check):
    from minitorch_edge import backend
    before = backend.active()
    try:
        for name in ("numpy", "native"):
            try:
                backend.use(name)
            except Exception:       # noqa: BLE001 -- the native library may be missing
                continue
            check(name)
    finally:
        backend.use(before)


def _pool_call(op, shape):
    def fn(L):
        F = L.nn.functional
        x = L.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32),
                     requires_grad=True)
        y = getattr(F, op)(x, 2)
        y.sum().backward()
        return y, x.grad
    return fn


@pytest.mark.parametrize("op", ["max_pool2d", "adaptive_max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("shape", [(0, 3, 4, 4), (2, 0, 4, 4), (0, 0, 4, 4), (0, 4, 4),
                                   (3, 4, 4)])
def test_zero_size_pooling(op, shape):
    def check(name):
        diff = compare_with_torch(_pool_call(op, shape), lambda L: (), f"{name} {op}{shape}")
        assert diff is None, diff
    _on_backends(check)


@pytest.mark.parametrize("op,shape", [("max_pool1d", (0, 3, 8)), ("max_pool1d", (2, 0, 8)),
                                      ("adaptive_max_pool1d", (0, 3, 8)),
                                      ("adaptive_max_pool1d", (2, 0, 8))])
def test_zero_size_pooling_1d(op, shape):
    def check(name):
        diff = compare_with_torch(_pool_call(op, shape), lambda L: (), f"{name} {op}{shape}")
        assert diff is None, diff
    _on_backends(check)


@pytest.mark.parametrize("w_shape,x_shape,groups", [
    ((0, 3, 3, 3), (1, 3, 5, 5), 1), ((0, 1, 3, 3), (1, 2, 5, 5), 2),
    ((2, 3, 3, 3), (0, 3, 5, 5), 1)])
def test_zero_output_channel_conv(w_shape, x_shape, groups):
    def fn(L):
        rng = np.random.default_rng(1)
        x = L.tensor(rng.standard_normal(x_shape).astype(np.float32), requires_grad=True)
        w = L.tensor(rng.standard_normal(w_shape).astype(np.float32), requires_grad=True)
        y = L.nn.functional.conv2d(x, w, groups=groups)
        y.sum().backward()
        return y, x.grad, w.grad

    def check(name):
        diff = compare_with_torch(fn, lambda L: (), f"{name} conv2d {w_shape} {x_shape}")
        assert diff is None, diff
    _on_backends(check)


def test_zero_channel_conv_messages():
    F = mte.nn.functional
    with pytest.raises(RuntimeError, match=r"Given groups=2, expected weight to be at least 2 at "
                                           r"dimension 0, but got weight of size \[0, 1, 3, 3\]"):
        F.conv2d(mte.zeros(1, 2, 5, 5), mte.zeros(0, 1, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match=r"Given groups=1, expected weight to be at least 1 at "
                                           r"dimension 0, but got weight of size \[0, 3, 3\]"):
        F.conv1d(mte.zeros(1, 3, 5), mte.zeros(0, 3, 3))
    with pytest.raises(RuntimeError, match="non-empty 2D or 4D weight tensor expected"):
        F.conv_transpose2d(mte.zeros(1, 3, 5, 5), mte.zeros(3, 0, 3, 3))
