"""The table-driven op harness: one `Row` per op, checked against PyTorch and by gradcheck.

A row names the op, how to call it (``fn(lib, *inputs)`` where lib is ``minitorch_edge`` or
``torch``; give ``torch_fn`` too when the spellings differ), and how to make inputs. For each
row the tests check, on hypothesis-drawn shapes:

* forward and backward against torch 2.13 in float32 at assert_close's float32 tolerances
  (row.rtol/row.atol override only where the row says why), with contiguous and
  non-contiguous inputs;
* gradcheck in float64 (``row.gradcheck``) and, for rows marked ``double``, gradgradcheck.

Adding an op to the suite means adding one Row to a table in a test_ops_*.py file and calling
``make_tests(TABLE)`` there.

The second half is for dtype semantics: `edge_cases` / `edge_operand` generate operands of every
dtype as dimensioned tensors, 0-d tensors and Python numbers (out-of-range ints included), and
`compare_with_torch` checks result dtype and values (or that both raise); see
test_dtype_semantics.py.
"""
import dataclasses
import os
from typing import Callable, Optional

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import minitorch_edge as mte
from minitorch_edge.autograd import gradcheck, gradgradcheck


def import_torch():
    try:
        import torch
    except ImportError:
        if os.environ.get("MTE_REQUIRE_TORCH") == "1":
            raise
        pytest.skip("torch not installed", allow_module_level=True)
    return torch


# ---- input makers: (rng, shapes, dtype) -> list of numpy arrays -------------------------------
def normal(rng, shapes, dtype):
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def positive(rng, shapes, dtype):
    return [(np.abs(rng.standard_normal(s)) + 0.5).astype(dtype) for s in shapes]


def unit_interval(rng, shapes, dtype):
    """Values in (-0.9, 0.9): for asin/atanh-like domains."""
    return [rng.uniform(-0.9, 0.9, s).astype(dtype) for s in shapes]


def away_from(points, gap=0.05):
    """Normal values kept at least `gap` away from each kink point (relu at 0, clamp at its
    bounds), so finite differences do not straddle a kink."""
    def make(rng, shapes, dtype):
        out = []
        for s in shapes:
            x = rng.standard_normal(s)
            for p in points:
                near = np.abs(x - p) < gap
                x = np.where(near, p + np.sign(x - p + 1e-12) * (gap + np.abs(x - p)), x)
            out.append(x.astype(dtype))
        return out
    return make


def distinct(rng, shapes, dtype):
    """Values with no ties (max/min/sort/median gradients are unambiguous)."""
    out = []
    for s in shapes:
        n = int(np.prod(s)) if len(s) else 1
        vals = rng.permutation(n) * 0.37 + rng.uniform(0, 0.1) - n * 0.18
        out.append(vals.reshape(s).astype(dtype))
    return out


# ---- shape strategies ---------------------------------------------------------------------------
def same_shape(arity=1, min_dims=0, max_dims=4, min_side=0, max_side=5):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side).map(lambda s: (s,) * arity)


def broadcast_shapes(arity=2, min_dims=0, max_dims=4, min_side=0, max_side=5):
    return hnp.mutually_broadcastable_shapes(num_shapes=arity, min_dims=min_dims,
                                             max_dims=max_dims, min_side=min_side,
                                             max_side=max_side).map(lambda r: r.input_shapes)


def fixed(*shapes):
    return st.just(tuple(shapes))


@dataclasses.dataclass
class Row:
    name: str
    fn: Callable                       # fn(lib, *inputs) -> Tensor or tuple
    shapes: object = None              # strategy of tuples of shapes; default same_shape(arity)
    arity: int = 1
    make: Callable = normal            # input maker
    torch_fn: Optional[Callable] = None
    grad: bool = True                  # differentiable: compare backward, run gradcheck
    gradcheck: bool = True
    double: bool = False               # also gradgradcheck
    int_inputs: tuple = ()             # indices of inputs that are integer (not differentiated)
    rtol: Optional[float] = None       # None: float32 assert_close defaults
    atol: Optional[float] = None
    dtype: str = "float32"
    noncontig: bool = True
    max_gradcheck_numel: int = 40      # keep finite differences cheap

    def shape_strategy(self):
        return self.shapes if self.shapes is not None else same_shape(self.arity)

    def call(self, lib, inputs):
        f = self.torch_fn if (self.torch_fn is not None and lib is not mte) else self.fn
        return f(lib, *inputs)


def _outs(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _noncontig(a):
    """The same values in a non-contiguous array (a strided view into a bigger buffer)."""
    if a.ndim == 0 or a.size == 0:
        return a
    big = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
    big[..., ::2] = a
    view = big[..., ::2]
    assert not view.flags.c_contiguous or a.shape[-1] <= 1
    return view


def check_against_torch(row, shapes, seed, noncontig=False):
    torch = import_torch()
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a) for a in row.make(rng, shapes, np.dtype(row.dtype))]
    diff = [i for i in range(len(arrays)) if row.grad and i not in row.int_inputs
            and arrays[i].dtype.kind == "f"]
    ours_in = [mte.from_numpy(_noncontig(a) if noncontig else a) for a in arrays]
    theirs_in = [torch.from_numpy(np.array(a, order="C")) for a in arrays]
    for i in diff:
        ours_in[i].requires_grad_()
        theirs_in[i].requires_grad_()
    ours = _outs(row.call(mte, ours_in))
    theirs = _outs(row.call(torch, theirs_in))
    assert len(ours) == len(theirs), f"{row.name}: {len(ours)} outputs vs torch's {len(theirs)}"
    kw = {} if row.rtol is None else dict(rtol=row.rtol, atol=row.atol)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        if not isinstance(t, torch.Tensor):
            assert o == t, f"{row.name} output {k}: {o} != {t}"
            continue
        assert isinstance(o, mte.Tensor), f"{row.name} output {k} is {type(o).__name__}"
        assert tuple(o.shape) == tuple(t.shape), \
            f"{row.name} output {k}: shape {tuple(o.shape)} vs torch {tuple(t.shape)}"
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], \
            f"{row.name} output {k}: dtype {o.dtype} vs torch {t.dtype}"
        torch.testing.assert_close(torch.from_numpy(np.array(o.detach().numpy())), t.detach(),
                                   equal_nan=True, check_dtype=False, **kw,
                                   msg=lambda m: f"{row.name} output {k} forward: {m}")
    if not diff:
        return
    float_out = [k for k, t in enumerate(theirs)
                 if isinstance(t, torch.Tensor) and t.requires_grad]
    if not float_out:
        return
    ups = [np.asarray(rng.standard_normal(tuple(theirs[k].shape))).astype(row.dtype)
           for k in float_out]
    t_loss = sum((theirs[k] * torch.from_numpy(u)).sum() for k, u in zip(float_out, ups))
    t_grads = torch.autograd.grad(t_loss, [theirs_in[i] for i in diff], allow_unused=True)
    o_loss = sum((ours[k] * mte.from_numpy(u)).sum() for k, u in zip(float_out, ups))
    o_grads = mte.autograd.grad(o_loss, [ours_in[i] for i in diff], allow_unused=True)
    for i, og, tg in zip(diff, o_grads, t_grads):
        if tg is None:
            assert og is None or not og.numpy().any(), f"{row.name}: grad {i} should be None"
            continue
        assert og is not None, f"{row.name}: no gradient for input {i}"
        torch.testing.assert_close(torch.from_numpy(np.array(og.numpy())), tg, equal_nan=True,
                                   check_dtype=False, **kw,
                                   msg=lambda m: f"{row.name} grad of input {i}: {m}")


def check_gradcheck(row, shapes, seed, double=False):
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a) for a in row.make(rng, shapes, np.dtype(np.float64))]
    if sum(a.size for a in arrays) > row.max_gradcheck_numel:
        return
    inputs = [mte.from_numpy(a) for a in arrays]
    for i, t in enumerate(inputs):
        if i not in row.int_inputs and t.is_floating_point():
            t.requires_grad_()
    f = lambda *xs: row.call(mte, xs)  # noqa: E731
    assert gradcheck(f, inputs)
    if double:
        assert gradgradcheck(f, inputs)


def make_tests(table, namespace):
    """Create test_torch / test_torch_noncontig / test_gradcheck for `table` in `namespace`."""
    ids = [r.name for r in table]

    @pytest.mark.parametrize("row", table, ids=ids)
    @given(data=st.data())
    def test_against_torch(row, data):
        shapes = data.draw(row.shape_strategy(), label="shapes")
        check_against_torch(row, shapes, data.draw(st.integers(0, 2 ** 31)))

    @pytest.mark.parametrize("row", [r for r in table if r.noncontig], ids=lambda r: r.name)
    @given(data=st.data())
    def test_against_torch_noncontiguous(row, data):
        shapes = data.draw(row.shape_strategy(), label="shapes")
        check_against_torch(row, shapes, data.draw(st.integers(0, 2 ** 31)), noncontig=True)

    grad_rows = [r for r in table if r.grad and r.gradcheck]

    @pytest.mark.parametrize("row", grad_rows, ids=lambda r: r.name)
    @given(data=st.data())
    def test_gradcheck(row, data):
        shapes = data.draw(row.shape_strategy(), label="shapes")
        check_gradcheck(row, shapes, data.draw(st.integers(0, 2 ** 31)), double=row.double)

    namespace["test_against_torch"] = test_against_torch
    namespace["test_against_torch_noncontiguous"] = test_against_torch_noncontiguous
    namespace["test_gradcheck"] = test_gradcheck


# ---- dtype edges: operands of every dtype as dimensioned tensors, 0-d tensors and numbers ------
# PyTorch's promotion has three kinds of operand: dimensioned tensors decide the result dtype,
# 0-d tensors and Python numbers only by category. The generators below give, for one dtype, the
# values most likely to expose a wrong conversion (each dtype's extremes, 0, +-1, values that do
# not fit a narrower dtype) and, for numbers, out-of-range Python ints, floats and bools.
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
NUMBER_TYPES = ("bool", "int", "float")

# the first operand of a binary op (zeros included) ...
EDGE_VALUES = {
    "bool": [True, False, True, False],
    "uint8": [0, 1, 200, 255],
    "int8": [-128, -1, 0, 127],
    "int16": [-32768, -300, 0, 32767],
    "int32": [-2 ** 31 + 1, -7, 0, 2 ** 31 - 1],    # (not INT_MIN: torch traps on INT_MIN / -1)
    "int64": [-2 ** 63 + 1, -5, 0, 2 ** 40],
    "float16": [-1.5, 0.0, 2.5, 60000.0],
    "float32": [-1.5, 0.0, 2.5, 1e30],
    "float64": [-1.5, 0.0, 2.5, 1e300],
}
# ... and the second (no zeros, so integer division by zero does not hide the values; that case
# has rows of its own)
EDGE_DIVISORS = {
    "bool": [True, True, True, True],
    "uint8": [3, 1, 250, 7],
    "int8": [-3, 2, -128, 5],
    "int16": [-7, 3, 300, -32768],
    "int32": [5, -2, 70000, -1],
    "int64": [-5, 3, 2 ** 33, 7],
    "float16": [-0.5, 3.0, 100.0, -7.25],
    "float32": [-0.5, 3.0, 1e-20, -7.25],
    "float64": [-0.5, 3.0, 1e-200, -7.25],
}
# 0-d operands: values that do not fit most other dtypes (a 0-d int64 -5 against uint8, 300
# against int8, a float64 1e10 against float16)
EDGE_ZERO_DIM = {"bool": True, "uint8": 200, "int8": -100, "int16": 300, "int32": -70000,
                 "int64": -5, "float16": -2.5, "float32": 1.5, "float64": 1e10}
EDGE_NUMBERS = {"bool": [True, False], "int": [-1, 3, 300, -129, 2 ** 31 + 5],
                "float": [2.5, -0.5, 1e10]}

KINDS = ("tensor", "0d", "number")


def edge_operand(lib, kind, dtype, second=False, value=None):
    """One operand of `kind` ("tensor": 4 elements, "0d", "number") and `dtype` (a dtype name;
    for numbers one of NUMBER_TYPES, with `value` picking one of EDGE_NUMBERS)."""
    if kind == "number":
        return value
    dt = getattr(lib, dtype)
    if kind == "0d":
        return lib.tensor(EDGE_ZERO_DIM[dtype], dtype=dt)
    return lib.tensor((EDGE_DIVISORS if second else EDGE_VALUES)[dtype], dtype=dt)


KIND_PAIRS = tuple((k1, k2) for k1 in KINDS for k2 in KINDS if (k1, k2) != ("number", "number"))


def edge_cases(kinds=KIND_PAIRS):
    """(kind_a, dtype_a, value_a, kind_b, dtype_b, value_b) over every dtype pair and kind pair;
    numbers run through EDGE_NUMBERS."""
    for ka, kb in kinds:
        for da in (NUMBER_TYPES if ka == "number" else DTYPES):
            for va in (EDGE_NUMBERS[da] if ka == "number" else (None,)):
                for db in (NUMBER_TYPES if kb == "number" else DTYPES):
                    for vb in (EDGE_NUMBERS[db] if kb == "number" else (None,)):
                        yield ka, da, va, kb, db, vb


def _torch_rejects_arguments(exc):
    """torch's argument parser refusing a number where it wants a Tensor (an API restriction,
    which minitorch_edge relaxes; not a dtype rule)."""
    text = str(exc)
    return isinstance(exc, TypeError) and ("must be Tensor" in text or
                                           "invalid combination of arguments" in text)


def compare_with_torch(fn, make_args, what=""):
    """Run ``fn(lib, *make_args(lib))`` for both libraries. Returns None when they agree (same
    result dtype and values, or both raise), "skip" when torch's argument parser refuses the
    call, else a one-line description of the difference."""
    torch = import_torch()
    try:
        theirs = fn(torch, *make_args(torch))
        t_err = None
    except Exception as e:          # noqa: BLE001 -- any exception counts as "raises"
        if _torch_rejects_arguments(e):
            return "skip"
        theirs, t_err = None, e
    try:
        ours = fn(mte, *make_args(mte))
        o_err = None
    except Exception as e:          # noqa: BLE001
        ours, o_err = None, e
    if t_err is not None or o_err is not None:
        if t_err is not None and o_err is not None:
            return None
        if t_err is not None:
            return f"{what}: torch raises {type(t_err).__name__}({t_err}) but ours gives {ours!r}"
        return f"{what}: ours raises {type(o_err).__name__}({o_err}) but torch gives {theirs!r}"
    outs_o, outs_t = _outs(ours), _outs(theirs)
    if len(outs_o) != len(outs_t):
        return f"{what}: {len(outs_o)} outputs vs torch's {len(outs_t)}"
    for o, t in zip(outs_o, outs_t):
        od, td = str(o.dtype).split(".")[-1], str(t.dtype).split(".")[-1]
        if od != td:
            return f"{what}: dtype {od} vs torch {td} (ours {o.tolist()}, torch {t.tolist()})"
        if tuple(o.shape) != tuple(t.shape):
            return f"{what}: shape {tuple(o.shape)} vs torch {tuple(t.shape)}"
        ov = torch.from_numpy(np.array(o.detach().numpy()))
        try:
            if t.dtype.is_floating_point:
                torch.testing.assert_close(ov, t.detach(), equal_nan=True, check_dtype=False)
            elif not torch.equal(ov, t):
                raise AssertionError("values differ")
        except AssertionError:
            return f"{what}: values {o.tolist()} vs torch {t.tolist()}"
    return None


def describe_case(ka, da, va, kb, db, vb):
    def one(k, d, v):
        return repr(v) if k == "number" else f"{k}:{d}"
    return f"({one(ka, da, va)}, {one(kb, db, vb)})"


def randomize_bn(model, rng):
    """Give every BatchNorm2d of `model` non-trivial running statistics and affine parameters
    (drawn from `rng`), so that folding BatchNorm is really exercised; returns the model."""
    for m in model.modules():
        if isinstance(m, mte.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean._data[...] = rng.normal(0, 0.1, c)
            m.running_var._data[...] = rng.uniform(0.5, 1.5, c)
            m.weight._data[...] = rng.uniform(0.5, 1.5, c)
            m.bias._data[...] = rng.normal(0, 0.1, c)
    return model


def peak_traced_bytes(call):
    """The peak of what numpy and Python allocate during `call()` (tracemalloc)."""
    import tracemalloc
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
