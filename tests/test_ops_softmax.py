"""softmax, log_softmax and the safe softmax (ops/softmax.py) against PyTorch: the op harness
on drawn shapes, then fixed inputs (empty, float16, extreme and infinite values, fully masked
rows for the safe softmax) and the error messages."""
import math

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge.ops.softmax import SafeSoftmax
from harness import Row, check_against_torch, import_torch, make_tests, same_shape

torch = import_torch()

ND1 = same_shape(min_dims=1)
INF = math.inf

TABLE = [
    Row("softmax", lambda m, x: m.softmax(x, -1), shapes=ND1, double=True),
    Row("softmax_dim0", lambda m, x: x.softmax(0), shapes=ND1, double=True),
    Row("softmax_0d", lambda m, x: m.softmax(x, 0), shapes=same_shape(max_dims=0)),
    Row("softmax_dtype", lambda m, x: x.softmax(dim=-1, dtype=m.float64), shapes=ND1),
    Row("log_softmax", lambda m, x: m.log_softmax(x, -1), shapes=ND1, double=True),
    Row("log_softmax_dim0", lambda m, x: x.log_softmax(0), shapes=ND1, double=True),
    Row("safe_softmax", lambda m, x: SafeSoftmax.apply(x, -1), shapes=ND1, double=True,
        torch_fn=lambda t, x: t._safe_softmax(x, -1)),
]

make_tests(TABLE, globals())


# ---- fixed inputs --------------------------------------------------------------------------------
FNS = {
    "softmax_dim0": lambda m, x: x.softmax(0),
    "softmax_dim1": lambda m, x: x.softmax(1),
    "log_softmax_dim0": lambda m, x: m.log_softmax(x, 0),
    "log_softmax_dim1": lambda m, x: x.log_softmax(1),
}
BIG = [[1e4, -1e4, 0.0], [1e4, 1e4 - 1, -1e4], [-1e4, -1e4, -1e4]]
INFS = [[-INF, -INF, -INF], [1., -INF, 0.], [INF, 1., 0.], [INF, INF, 2.]]


FIXED = {   # case: (input, Row settings)
    "empty": (np.zeros((0, 3)), {}),
    # forward only; rtol 5e-3 (about 2 float16 ulps): torch's CPU float16 log_softmax rounds an
    # intermediate to float16, we round only the result, so the two differ by an ulp or two
    "float16": ([[0.5, 1.25, 2.0], [3.0, -1.5, 0.75]],
                dict(dtype="float16", grad=False, rtol=5e-3, atol=1e-5)),
    "large": (BIG, {}),
    "infinite": (INFS, {}),
}


def _fixed(name, fn, values, **settings):
    """A harness Row whose input is always `values` (in the row's dtype), and its shapes."""
    def make(rng, shapes, dtype):
        return [np.asarray(values, dtype)]
    return Row(name, fn, make=make, **settings), [np.shape(values)]


@pytest.mark.parametrize("name", FNS)
@pytest.mark.parametrize("case", FIXED)
def test_fixed_inputs_match_torch(case, name):
    """Forward and backward as torch's on each FIXED input; on +-1e4 also finite."""
    values, settings = FIXED[case]
    check_against_torch(*_fixed(f"{name}_{case}", FNS[name], values, **settings), seed=0)
    if case == "large":
        x = mte.tensor(BIG, requires_grad=True)
        y = FNS[name](mte, x)
        y.sum().backward()
        assert np.isfinite(y.detach().numpy()).all() and np.isfinite(x.grad.numpy()).all()


def test_safe_softmax_gives_zero_for_a_fully_masked_row():
    """A row of only -inf: plain softmax gives nan, the safe one 0 and a zero gradient (as
    torch._safe_softmax, which scaled_dot_product_attention uses)."""
    safe = TABLE[-1]
    check_against_torch(*_fixed("safe_softmax_infs", safe.fn, INFS, torch_fn=safe.torch_fn),
                        seed=0)
    x = mte.tensor([[-INF, -INF], [0., 1.]], requires_grad=True)
    y = SafeSoftmax.apply(x, -1)
    (y * mte.tensor([[1., 2.], [3., 4.]])).sum().backward()
    assert y.detach().tolist()[0] == [0., 0.] and x.grad.tolist()[0] == [0., 0.]
    assert np.isnan(x.detach().softmax(-1).numpy()[0]).all()


# ---- errors ------------------------------------------------------------------------------------
ERRORS = [
    ("int_input", lambda m: m.tensor([[1, 2], [3, 4]]).softmax(0), NotImplementedError,
     r"softmax\(\).*int64"),
    ("int_input_log", lambda m: m.log_softmax(m.tensor([[1, 2], [3, 4]]), 0),
     NotImplementedError, r"log_softmax\(\).*int64"),
    ("no_dim", lambda m: m.softmax(m.ones(2, 3)), TypeError, "dim"),
    ("no_dim_log", lambda m: m.ones(2, 3).log_softmax(), TypeError, "dim"),
    ("bad_dim", lambda m: m.ones(2, 3, requires_grad=True).softmax(2), IndexError,
     r"^softmax\(\): Dimension out of range \(expected to be in range of \[-2, 1\]"),
    ("bad_dim_log", lambda m: m.ones(2, 3, requires_grad=True).log_softmax(-3), IndexError,
     r"^log_softmax\(\): Dimension out of range \(expected to be in range of \[-2, 1\]"),
]


@pytest.mark.parametrize("call,exc,pattern", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_like_torch(call, exc, pattern):
    """Our message names the op and says what to do; torch raises too (its own type)."""
    with pytest.raises(exc, match=pattern):
        call(mte)
    with pytest.raises(Exception):
        call(torch)
