"""The C runtime's tensor ops (native/runtime/ops_tensor.c, ops_elementwise.c) against the
Python reference (graph/opset_tensor.py): every op on several shapes (broadcasting, 0-d,
size-1 and empty dims), attributes and dtypes, one node at a time through runtime_harness;
a chain of ops (in-place reuse in the arena); the TransformerClassifier zoo graph; and
malformed nodes, which prepare must refuse with MTE_EFORMAT naming the node."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_harness import CRuntimeError, check_c, load_c, op_graph

from minitorch_edge import graph, models
from minitorch_edge.graph import Graph

EFORMAT, EUNSUPPORTED, EINVAL = -8, -4, -1
RNG = np.random.default_rng(1234)


def rand(shape, dtype="float32", lo=-3.0, hi=3.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True,
                            dtype=dtype)
    return RNG.uniform(lo, hi, shape).astype(dtype)


def check_op(op, inputs, constants=(), exact=False, n_outputs=1, **attrs):
    g = op_graph(op, inputs, constants, n_outputs=n_outputs, **attrs)
    return check_c(g, inputs, exact=exact)


# ---- binary elementwise ------------------------------------------------------------------
SHAPE_PAIRS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), ()), ((), (2, 3)), ((2, 3, 4), (4,)),
               ((2, 1, 4), (3, 1)), ((1,), (5, 1, 1)), ((4, 1), (1, 6)), ((0, 3), (1, 3)),
               ((2, 0), ()), ((), ()), ((1, 1), (1,)), ((3, 1, 5, 1), (1, 4, 1, 2))]
ARITH = ["Add", "Sub", "Mul", "Max", "Min"]


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS)
@pytest.mark.parametrize("op", ARITH + ["Div"])
def test_binary_float32_broadcast(op, sa, sb):
    a, b = rand(sa), rand(sb)
    if op == "Div":
        b = np.where(np.abs(b) < 0.1, np.float32(0.5), b).astype(np.float32)
    check_op(op, [a, b], exact=True)


@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("op", ARITH + ["Div"])
def test_binary_other_dtypes(op, dtype):
    a, b = rand((3, 4), dtype), rand((4,), dtype)
    if op == "Div":
        b[b == 0] = 3
    check_op(op, [a, b], exact=True)


def test_integer_wraparound():
    a = np.array([2**62, -2**63, 2**63 - 1], np.int64)
    b = np.array([4, -1, 1], np.int64)
    for op in ["Add", "Sub", "Mul"]:
        check_op(op, [a, b], exact=True)
    i8 = np.array([127, -128, 100], np.int8)
    for op in ["Add", "Mul", "Sub"]:
        check_op(op, [i8, i8], exact=True)


def test_max_min_nan():
    a = np.array([np.nan, 1, 2, np.nan], np.float32)
    b = np.array([1, np.nan, 3, np.nan], np.float32)
    check_op("Max", [a, b], exact=True)
    check_op("Min", [a, b], exact=True)


def test_div_by_zero_float():
    a = np.array([1, -1, 0, 2], np.float32)
    b = np.array([0, 0, 0, 4], np.float32)
    with np.errstate(all="ignore"):
        check_op("Div", [a, b], exact=True)


def test_binary_constant_operand():
    a = rand((2, 5))
    check_op("Add", [a], [np.float32(1.5)], exact=True)
    check_op("Mul", [a], [rand((5,))], exact=True)


def test_pow():
    a = rand((3, 4), lo=0.1, hi=3)
    check_op("Pow", [a, rand((4,), lo=-2, hi=2)])
    check_op("Pow", [a], [np.float32(2.0)])


@pytest.mark.parametrize("sa,sb", SHAPE_PAIRS[:8])
@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons(op, sa, sb):
    a = rand(sa).round()   # rounded: ties happen
    b = rand(sb).round()
    check_op(op, [a, b], exact=True)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float64", "bool"])
def test_comparisons_dtypes(dtype):
    a, b = rand((4, 3), dtype), rand((3,), dtype)
    for op in ["Equal", "Less", "GreaterOrEqual"]:
        check_op(op, [a, b], exact=True)


def test_comparisons_nan():
    a = np.array([np.nan, 1, np.nan], np.float32)
    b = np.array([np.nan, np.nan, 1], np.float32)
    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        check_op(op, [a, b], exact=True)


@pytest.mark.parametrize("sa,sb", [((2, 3), (2, 3)), ((4, 1), (5,)), ((), (3,)), ((0,), ())])
@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op, sa, sb):
    check_op(op, [rand(sa, "bool"), rand(sb, "bool")], exact=True)


def test_not():
    for shape in [(3, 4), (), (0, 2)]:
        check_op("Not", [rand(shape, "bool")], exact=True)


# ---- unary elementwise -------------------------------------------------------------------
UNARY_SHAPES = [(2, 3, 4), (), (1,), (0, 5), (7,)]
EXACT_UNARY = ["Neg", "Abs", "Relu", "Floor", "Ceil", "Sqrt", "Reciprocal"]
MATH_UNARY = ["Exp", "Log", "Tanh", "Sin", "Cos", "Erf", "Sigmoid", "Softplus", "Elu",
              "HardSigmoid", "HardSwish", "LeakyRelu", "mte.Gelu", "mte.Silu"]


@pytest.mark.parametrize("shape", UNARY_SHAPES)
@pytest.mark.parametrize("op", EXACT_UNARY + MATH_UNARY)
def test_unary_float32(op, shape):
    positive = op in ("Log", "Sqrt")
    x = rand(shape, lo=0.01 if positive else -4, hi=4)
    check_op(op, [x], exact=op in EXACT_UNARY)


@pytest.mark.parametrize("op", ["Exp", "Log", "Sqrt", "Tanh", "Sin", "Cos", "Floor", "Ceil",
                                "Reciprocal", "Neg", "Abs", "Relu"])
def test_unary_float64(op):
    x = rand((3, 5), "float64", lo=0.1 if op in ("Log", "Sqrt") else -3)
    check_op(op, [x])


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("op", ["Neg", "Abs", "Relu"])
def test_unary_int(op, dtype):
    x = rand((4, 5), dtype)
    check_op(op, [x], exact=True)


def test_unary_specials():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 80.0, -80.0, 1e-30, -1e-30], np.float32)
    with np.errstate(all="ignore"):
        for op in ["Relu", "Abs", "Neg", "Floor", "Ceil", "Sigmoid", "Softplus", "Exp", "Tanh",
                   "Erf", "Elu", "LeakyRelu", "HardSigmoid", "HardSwish", "mte.Silu"]:
            check_op(op, [x], exact=op in ("Relu", "Abs", "Neg", "Floor", "Ceil"))


def test_activation_attrs():
    x = rand((4, 6), lo=-6, hi=6)
    check_op("LeakyRelu", [x], alpha=0.2)
    check_op("Elu", [x], alpha=0.5)
    check_op("HardSigmoid", [x], alpha=1 / 6, beta=0.5)
    check_op("mte.Gelu", [x], approximate="tanh")
    check_op("mte.Gelu", [x], approximate="none")


def test_clip():
    x = rand((3, 4), lo=-8, hi=8)
    lo, hi = np.float32(-1), np.float32(6)
    check_op("Clip", [x], [lo, hi], exact=True)
    check_op("Clip", [x], [lo], exact=True)
    check_op("Clip", [x], [None, hi], exact=True)
    check_op("Clip", [x], exact=True)
    check_op("Clip", [x, lo, hi], exact=True)            # bounds as graph inputs
    check_op("Clip", [x], [rand((4,)), np.float32(2)], exact=True)   # broadcast bounds
    xi = rand((5,), "int32")
    check_op("Clip", [xi], [np.int32(-10), np.int32(10)], exact=True)


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((3,), (2, 3), ()),
                                    ((2, 1), (1, 4), (4,)), ((), (), ()), ((0, 2), (2,), ())])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "int16", "uint8"])
def test_where(shapes, dtype):
    c = rand(shapes[0], "bool")
    a, b = rand(shapes[1], dtype), rand(shapes[2], dtype)
    check_op("Where", [c, a, b], exact=True)


# ---- Cast ----------------------------------------------------------------------------------
DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _cast_source(dtype):
    if dtype == "bool":
        return rand((3, 7), "bool")
    if np.dtype(dtype).kind == "f":     # values every target holds (uint8: 0..127)
        return (RNG.uniform(0, 127, (3, 7)) * RNG.choice([1, -1, 0.5], (3, 7))).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -100), min(info.max, 127), (3, 7), dtype=dtype)


@pytest.mark.parametrize("src", DTYPES)
def test_cast_all_pairs(src):
    x = _cast_source(src)
    for to in DTYPES:
        xs = x
        if to == "uint8" and x.dtype.kind in "fi":
            xs = np.abs(x)                       # negative -> uint8 is undefined for floats
        check_op("Cast", [xs], exact=True, to=to)


def test_cast_float16_rounding():
    # every float16 bit pattern's neighbours: ties, subnormals, overflow to inf
    bits = np.arange(0, 0x7c00, 7, dtype=np.uint32).astype(np.uint16)
    h = bits.view(np.float16).astype(np.float64)
    nxt = np.nextafter(bits.view(np.float16), np.float16(np.inf)).astype(np.float64)
    mid = (h + nxt) / 2                                   # exact ties
    vals = np.concatenate([h, mid, mid + 1e-12 * np.abs(mid) + 1e-30, mid * (1 - 1e-9),
                           [65504.0, 65519.99, 65520.0, 1e6, 2.0**-25, 2.0**-24, 3 * 2.0**-26,
                            0.0, -0.0, np.inf, -np.inf]])
    vals = np.concatenate([vals, -vals])
    with np.errstate(over="ignore"):
        check_op("Cast", [vals], exact=True, to="float16")
        check_op("Cast", [vals.astype(np.float32)], exact=True, to="float16")
    allh = np.arange(0, 65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    check_op("Cast", [allh], exact=True, to="float32")
    check_op("Cast", [allh], exact=True, to="float64")
    check_op("Cast", [np.array([np.nan, -np.nan], np.float32)], exact=True, to="float16")


def test_cast_int_to_float_rounding():
    x = np.array([2**53 + 1, 2**62 + 2**38 + 1, -(2**40) - 3, 16777217], np.int64)
    check_op("Cast", [x], exact=True, to="float32")
    check_op("Cast", [x], exact=True, to="float64")
    f = np.array([1.9, -1.9, 0.5, -0.5, 126.99], np.float32)
    check_op("Cast", [f], exact=True, to="int8")
    check_op("Cast", [f], exact=True, to="int64")
    check_op("Cast", [np.array([np.nan, 0.0, -0.0, 0.1], np.float32)], exact=True, to="bool")


# ---- movement ops ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape,perm", [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 2, 1)),
                                        ((2, 3), (1, 0)), ((5,), (0,)),
                                        ((2, 1, 3, 4), (3, 1, 0, 2)), ((0, 3), (1, 0)),
                                        ((2, 3, 4, 5, 2), (4, 2, 0, 3, 1)),
                                        ((17, 33), (1, 0))])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_transpose(shape, perm, dtype):
    check_op("Transpose", [rand(shape, dtype)], exact=True, perm=list(perm))


def test_transpose_0d():
    """Python's run gives shape (1,) here (np.ascontiguousarray makes a 0-d array 1-d) while
    its infer rule says (); the C runtime follows the rule."""
    x = np.array(1.25, np.float32)
    (y,) = load_c(op_graph("Transpose", [x], perm=[]))(x)
    assert y.shape == () and y == x
    (y,) = load_c(op_graph("Expand", [x], [np.zeros(0, np.int64)]))(x)   # the same in Python
    assert y.shape == () and y == x


@pytest.mark.parametrize("shape,target", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((), (2, 2)),
                                          ((2, 3), (1, 1)), ((2, 1), (2, 0)), ((4,), ()),
                                          ((1, 3, 1), (2, 1, 1, 5))])
def test_expand(shape, target):
    check_op("Expand", [rand(shape)], [np.array(target, np.int64)], exact=True)


def test_expand_int32_shape_and_int_data():
    check_op("Expand", [rand((3, 1), "int64")], [np.array([2, 3, 2], np.int32)], exact=True)


BIG = np.iinfo(np.int64).max
SLICES = [  # shape, starts, ends, axes, steps
    ((10,), [2], [7], None, None), ((10,), [-3], [BIG], None, None),
    ((10,), [8], [1], None, [-2]), ((10,), [-1], [-BIG - 1], None, [-1]),
    ((4, 5, 6), [1, 0], [3, -1], [0, 2], [1, 2]), ((4, 5, 6), [0], [100], [-2], None),
    ((4, 5), [5], [10], [1], None), ((4, 5), [3], [1], [0], None),
    ((4, 5, 6), [-100, 1], [100, 4], [1, -1], [3, 1]), ((3, 4), [0, 1], [2, 3], None, None),
    ((6,), [5], [-BIG], None, [-1]), ((6,), [0], [6], None, [BIG]),
    ((6,), [5], [0], None, [-(2**63)]), ((2, 3), [0, 2], [1, 1], [1, 1], None),
    ((0, 4), [0], [2], [1], None),
]


@pytest.mark.parametrize("shape,starts,ends,axes,steps", SLICES)
def test_slice(shape, starts, ends, axes, steps):
    consts = [np.array(starts, np.int64), np.array(ends, np.int64),
              None if axes is None else np.array(axes, np.int64),
              None if steps is None else np.array(steps, np.int64)]
    while consts and consts[-1] is None:
        consts.pop()
    check_op("Slice", [rand(shape)], consts, exact=True)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data())
def test_slice_hypothesis(shape, data):
    rank = len(shape)
    k = data.draw(st.integers(1, rank))
    axes = data.draw(st.permutations(range(rank)))[:k]
    starts = data.draw(st.lists(st.integers(-7, 7), min_size=k, max_size=k))
    ends = data.draw(st.lists(st.integers(-7, 7), min_size=k, max_size=k))
    steps = data.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=k, max_size=k))
    axes = [a - rank if data.draw(st.booleans()) else a for a in axes]
    check_op("Slice", [rand(tuple(shape), "int32")],
             [np.array(v, np.int64) for v in (starts, ends, axes, steps)], exact=True)


@pytest.mark.parametrize("shapes,axis", [(((2, 3), (2, 4)), 1), (((2, 3), (1, 3), (4, 3)), 0),
                                         (((2, 3, 4), (2, 3, 1)), -1), (((3,),), 0),
                                         (((2, 0), (2, 3)), 1), (((1, 2, 2),) * 3, -2)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_concat(shapes, axis, dtype):
    check_op("Concat", [rand(s, dtype) for s in shapes], exact=True, axis=axis)


def test_concat_constant_input():
    check_op("Concat", [rand((2, 3))], [rand((2, 2))], exact=True, axis=-1)


@pytest.mark.parametrize("shape,sizes,axis", [((6, 2), [2, 4], 0), ((2, 6), [1, 2, 3], -1),
                                              ((2, 3, 4), [0, 3], 1), ((4,), [4], 0),
                                              ((2, 0, 3), [1, 1], 0), ((3, 8), [2, 2, 2, 2], 1)])
def test_split(shape, sizes, axis):
    check_op("Split", [rand(shape)], [np.array(sizes, np.int64)], exact=True,
             n_outputs=len(sizes), axis=axis)


@pytest.mark.parametrize("shape,ishape,axis", [((10, 4), (2, 3), 0), ((3, 5, 2), (4,), 1),
                                               ((3, 5), (), -1), ((4, 3), (0,), 0),
                                               ((2, 3, 4), (2, 2), 2), ((5,), (3, 1), 0)])
@pytest.mark.parametrize("idtype", ["int64", "int32"])
def test_gather(shape, ishape, axis, idtype):
    dim = shape[axis]
    idx = RNG.integers(-dim, dim, ishape).astype(idtype)
    x = rand(shape)
    check_op("Gather", [x, idx], exact=True, axis=axis)        # indices an input
    check_op("Gather", [x], [idx], exact=True, axis=axis)      # indices a constant


def test_gather_embedding_int_data():
    w = rand((100, 8), "int64")
    tok = RNG.integers(0, 100, (2, 16))
    check_op("Gather", [w, tok], exact=True)


def test_gather_out_of_range_at_run_time():
    g = op_graph("Gather", [rand((4, 3)), np.array([0, 1], np.int64)])
    m = load_c(g)
    m(rand((4, 3)), np.array([3, -4], np.int64))               # in range
    for bad in ([4, 0], [0, -5]):
        with pytest.raises(CRuntimeError) as e:
            m(rand((4, 3)), np.array(bad, np.int64))
        assert e.value.status == EINVAL


# ---- reductions and softmax -----------------------------------------------------------------
@pytest.mark.parametrize("shape,axes", [((2, 3, 4), [1]), ((2, 3, 4), [0, 2]), ((2, 3, 4), None),
                                        ((2, 3, 4), [-1]), ((5,), [0]), ((), None),
                                        ((2, 1, 3), [1]), ((2, 3, 4), []), ((0, 3), [1]),
                                        ((4, 5, 6, 2), [-3, 3]), ((2, 3), [0])])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax"])
def test_reduce(op, shape, axes, keepdims):
    x = rand(shape)
    attrs = {"keepdims": keepdims} if axes is None else {"keepdims": keepdims, "axes": axes}
    check_op(op, [x], exact=op == "ReduceMax", **attrs)


def test_reduce_empty_axis():
    x = np.zeros((0, 3), np.float32)
    check_op("ReduceSum", [x], axes=[0], keepdims=0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # numpy: "Mean of empty slice"
        check_op("ReduceMean", [x], axes=[0], keepdims=1)


def test_reduce_mean_long_rows():
    x = rand((3, 4096), lo=0, hi=10)
    check_op("ReduceMean", [x], axes=[-1])
    check_op("ReduceMean", [x], axes=[0])


@pytest.mark.parametrize("shape,axis", [((2, 3, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), 0),
                                        ((5,), 0), ((3, 0), 0), ((0, 3), -1),
                                        ((4, 1), 1)])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax(op, shape, axis):
    check_op(op, [rand(shape, lo=-10, hi=10)], axis=axis)


@pytest.mark.parametrize("op,want", [("Softmax", 1.0), ("LogSoftmax", 0.0)])
def test_softmax_0d(op, want):
    """Python's run gives shape (1,) for a 0-d input (backend.softmax reshapes it and does not
    reshape back) while its infer rule says (); the C runtime follows the rule."""
    x = np.array(3.5, np.float32)
    (y,) = load_c(op_graph(op, [x], axis=0))(x)
    assert y.shape == () and y == want


def test_softmax_inf_nan():
    x = np.array([[0, -np.inf, 1], [np.nan, 0, 1], [-np.inf] * 3], np.float32)
    with np.errstate(all="ignore"):
        for op in ["Softmax", "LogSoftmax"]:
            for axis in (0, 1):
                check_op(op, [x], axis=axis)


# ---- graphs --------------------------------------------------------------------------------
def test_chain_in_place():
    """Elementwise ops over dying inputs run in place in the arena."""
    g = Graph("chain")
    g.add_input("x", (4, 8), "float32")
    g.add_input("b", (8,), "float32")
    g.add_constant("s", np.array([0.5], np.float32))
    g.add_node("Add", ["x", "b"], ["a"])
    g.add_node("Mul", ["a", "s"], ["m"])
    g.add_node("Neg", ["m"], ["n"])
    g.add_node("Relu", ["n"], ["r"])
    g.add_node("Tanh", ["r"], ["t"])
    g.add_node("Sub", ["t", "a"], ["d"])
    g.add_node("Transpose", ["d"], ["tr"], perm=[1, 0])
    g.add_node("Exp", ["tr"], ["e"])
    g.add_node("ReduceSum", ["e"], ["rs"], axes=[1], keepdims=1)
    g.add_node("Div", ["e", "rs"], ["y"])
    g.add_node("Less", ["y", "s"], ["mask"])
    g.add_node("Where", ["mask", "y", "e"], ["w"])
    g.set_outputs(["w", "rs"])
    g.check()
    x, b = rand((4, 8)), rand((8,))
    check_c(g, [x, b])
    plan = g.plan_memory()
    assert plan.buffer_of("n") is plan.buffer_of("m") is plan.buffer_of("r")   # in place
    assert plan.buffer_of("e") is plan.buffer_of("tr")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=4), st.data())
def test_broadcast_hypothesis(shape, data):
    """Random broadcastable shape pairs: b drops leading dims and sets some dims to 1."""
    keep = data.draw(st.integers(0, len(shape)))
    other = [1 if data.draw(st.booleans()) else d for d in shape[len(shape) - keep:]]
    a, b = rand(tuple(shape)), rand(tuple(other))
    if data.draw(st.booleans()):
        a, b = b, a
    op = data.draw(st.sampled_from(["Add", "Mul", "Sub", "Max", "Greater"]))
    check_op(op, [a, b], exact=True)


def test_slice_many_duplicate_axes():
    """Python lets later entries for one axis win; more entries than dims must not overflow."""
    k = 100
    consts = [np.arange(k, dtype=np.int64) % 3, np.full(k, 5, np.int64),
              np.zeros(k, np.int64), np.ones(k, np.int64)]
    check_op("Slice", [rand((6, 2))], consts, exact=True)


def _transformer_graph():
    m = models.TransformerClassifier(100, 5)
    m.eval()
    x = np.random.default_rng(0).integers(0, 100, (2, 16))
    return m, x, graph.trace(m, x).optimize()


def test_transformer_classifier_end_to_end():
    _, x, g = _transformer_graph()
    check_c(g, [x], rtol=1e-4, atol=1e-5)


def _int8_graph():
    from minitorch_edge import quant
    m, x, _ = _transformer_graph()
    return x, quant.quantize(m, [x])


MINE = {"Gather", "Add", "Split", "Squeeze", "Transpose", "ReduceMean", "Relu", "Reshape"}


@pytest.mark.parametrize("which", ["float", "int8"])
def test_transformer_classifier_nodes_one_by_one(which):
    """Every node of the zoo graph (float or int8) whose op is implemented here, alone, on
    random inputs of its real shapes and dtypes, with its real constants."""
    g = _transformer_graph()[2] if which == "float" else _int8_graph()[1]
    ran = set()
    for k, node in enumerate(g.nodes):
        if node.op not in MINE:
            continue
        one, arrays = Graph(f"node{k}"), []
        for name in dict.fromkeys(n for n in node.inputs if n):
            if name in g.constants:
                one.add_constant(name, g.constants[name])
                continue
            v = g.values[name]
            tokens = node.op == "Gather" and np.dtype(v.dtype).kind == "i"
            arrays.append(RNG.integers(0, 100, v.shape) if tokens else rand(v.shape, v.dtype))
            one.add_input(name, v.shape, v.dtype)
        one.add_node(node.op, node.inputs, node.outputs, **node.attrs)
        one.set_outputs(node.outputs)
        check_c(one.check(), arrays, exact=node.op != "ReduceMean")
        ran.add(node.op)
    assert {"Gather", "Transpose", "ReduceMean"} <= ran, ran


def test_transformer_classifier_int8():
    x, g = _int8_graph()
    check_c(g, [x], rtol=1e-4, atol=1e-4)


# ---- malformed nodes --------------------------------------------------------------------------
def _malformed(op, inputs, constants=(), outputs=None, **attrs):
    """A one-node graph saved without Graph.check: `outputs` [(shape, dtype)] declared as
    given (not inferred)."""
    g = Graph(f"bad_{op}")
    names = [g.add_input(f"x{i}", a.shape, a.dtype) for i, a in enumerate(inputs)]
    names += ["" if c is None else g.add_constant(f"c{i}", np.asarray(c))
              for i, c in enumerate(constants)]
    outs = [f"y{i}" for i in range(len(outputs))]
    g.add_node(op, names, outs, name="bad_node", infer=False, **attrs)
    for name, (shape, dtype) in zip(outs, outputs):
        g._new_value(name, tuple(shape), dtype, "test")
    g.set_outputs(outs)
    g.check = lambda: g          # save without Python's check: the C runtime must refuse it
    return g


def _refused(g, status=EFORMAT, words=()):
    with pytest.raises(CRuntimeError) as e:
        load_c(g)
    assert e.value.status == status, e.value.message
    assert "bad_node" in e.value.message
    for w in words:
        assert w in e.value.message, e.value.message
    return e.value.message


F = np.zeros((2, 3), np.float32)
I64 = np.array([0, 1], np.int64)
MALFORMED = [
    ("Transpose", [F], (), [((3, 2), "float32")], {"perm": [0, 0]}, ["permutation"]),
    ("Transpose", [F], (), [((3, 2), "float32")], {"perm": [1, 0, 2]}, ["permutation"]),
    ("Transpose", [F], (), [((3, 2), "float32")], {"perm": 1}, ["perm"]),
    ("Transpose", [F], (), [((3, 2), "float32")], {}, ["perm"]),
    ("Transpose", [F], (), [((2, 3), "float32")], {"perm": [1, 0]}, ["declared", "[3, 2]"]),
    ("Add", [F, F], (), [((2, 4), "float32")], {}, ["[2, 3]"]),
    ("Add", [F, np.zeros((4,), np.float32)], (), [((2, 4), "float32")], {}, ["broadcast"]),
    ("Equal", [F, F], (), [((2, 3), "float32")], {}, ["bool"]),
    ("Add", [F], (), [((2, 3), "float32")], {}, ["inputs"]),
    ("Relu", [F], (), [((2, 3), "float32"), ((2, 3), "float32")], {}, ["outputs"]),
    ("LeakyRelu", [F], (), [((2, 3), "float32")], {"alpha": "big"}, ["alpha"]),
    ("Softmax", [F], (), [((2, 3), "float32")], {"axis": 2}, ["axis 2"]),
    ("Softmax", [F], (), [((2, 3), "float32")], {"axis": -3}, ["axis -3"]),
    ("Softmax", [F], (), [((2, 3), "float32")], {"axis": 1.5}, ["axis"]),
    ("ReduceMean", [F], (), [((2,), "float32")], {"axes": [2], "keepdims": 0}, ["axis 2"]),
    ("ReduceMean", [F], (), [((2,), "float32")], {"axes": [1, -1], "keepdims": 0}, ["twice"]),
    ("ReduceMean", [F], (), [((2, 1), "float32")], {"axes": [1], "keepdims": 0}, ["[2]"]),
    ("ReduceSum", [F], (), [((2,), "float32")], {"axes": 1, "keepdims": 0}, ["axes"]),
    ("Concat", [F, np.zeros((3, 3), np.float32)], (), [((5, 3), "float32")], {"axis": 1},
     ["outside axis"]),
    ("Concat", [F, F], (), [((4, 3), "float32")], {}, ["axis"]),
    ("Concat", [F, F], (), [((4, 3), "float32")], {"axis": 2}, ["axis 2"]),
    ("Split", [F], [np.array([1, 1], np.int64)], [((2, 1), "float32"), ((2, 1), "float32")],
     {"axis": 1}, ["add up"]),
    ("Split", [F], [np.array([1, 2], np.int64)], [((2, 1), "float32")], {"axis": 1},
     ["split sizes"]),
    ("Split", [F], [np.array([-1, 4], np.int64)], [((2, 0), "float32"), ((2, 4), "float32")],
     {"axis": 1}, ["-1"]),
    ("Split", [F], [np.array([1, 2], np.int64)], [((2, 1), "float32"), ((2, 2), "float32")],
     {"axis": 5}, ["axis 5"]),
    ("Gather", [F], [np.array([0, 2], np.int64)], [((2, 3), "float32")], {}, ["index 2"]),
    ("Gather", [F], [np.array([-3], np.int64)], [((1, 3), "float32")], {}, ["index -3"]),
    ("Gather", [F, I64], (), [((2, 3), "float32")], {"axis": 2}, ["axis 2"]),
    ("Gather", [F, I64], (), [((2, 2), "float32")], {"axis": 0}, ["declared"]),
    ("Slice", [F], [np.array([0]), np.array([1]), np.array([3])], [((2, 3), "float32")], {},
     ["axis 3"]),
    ("Slice", [F], [np.array([0]), np.array([1]), np.array([0]), np.array([0])],
     [((2, 3), "float32")], {}, ["step"]),
    ("Slice", [F], [np.array([0, 0, 0]), np.array([1, 1, 1])], [((1, 1), "float32")], {},
     ["rank"]),
    ("Slice", [F], [np.array([0]), np.array([1])], [((2, 3), "float32")], {}, ["[1, 3]"]),
    ("Expand", [F], [np.array([4, 3], np.int64)], [((4, 3), "float32")], {}, ["expand"]),
    ("Expand", [F], [np.array([[2, 3]], np.int64)], [((2, 3), "float32")], {}, ["1-D"]),
    ("Cast", [F], (), [((2, 3), "int32")], {"to": "complex64"}, ["to"]),
    ("Cast", [F], (), [((2, 3), "int32")], {}, ["to"]),
    ("Cast", [F], (), [((2, 3), "int32")], {"to": "int64"}, ["int32", "int64"]),
    ("mte.Gelu", [F], (), [((2, 3), "float32")], {"approximate": "fast"}, ["approximate"]),
    ("Gather", [F, I64], (), [((2, 3), "float32")], {"axis": "0"}, ["axis"]),
    ("Cast", [F], (), [((2, 3), "int32")], {"to": 6}, ["to"]),
    ("Concat", [F], (), [((2, 3), "float32")], {"axis": [0]}, ["axis"]),
    ("HardSigmoid", [F], (), [((2, 3), "float32")], {"beta": [1, 2]}, ["beta"]),
    ("Where", [F > 0, F, F], (), [((2, 3), "float32"), ((2, 3), "float32")], {}, ["outputs"]),
    ("Clip", [F], [np.zeros((2, 1, 1), np.float32)], [((2, 3), "float32")], {}, ["[2, 2, 3]"]),
]


@pytest.mark.parametrize("op,inputs,consts,outputs,attrs,words", MALFORMED,
                         ids=[f"{m[0]}-{k}" for k, m in enumerate(MALFORMED)])
def test_malformed_node_refused(op, inputs, consts, outputs, attrs, words):
    _refused(_malformed(op, inputs, consts, outputs, **attrs), EFORMAT, words)


UNSUPPORTED = [
    ("Exp", [np.zeros(3, np.int64)], (), [((3,), "int64")], {}),
    ("Add", [F, np.zeros((2, 3), np.float64)], (), [((2, 3), "float64")], {}),
    ("And", [np.zeros(3, np.int32), np.zeros(3, np.int32)], (), [((3,), "bool")], {}),
    ("Softmax", [np.zeros(3, np.float64)], (), [((3,), "float64")], {}),
    ("Gather", [F, np.array([0.0])], (), [((1, 3), "float32")], {}),
    ("Slice", [F, np.array([0]), np.array([1])], (), [((1, 3), "float32")], {}),
]


@pytest.mark.parametrize("op,inputs,consts,outputs,attrs", UNSUPPORTED,
                         ids=[f"{m[0]}-{k}" for k, m in enumerate(UNSUPPORTED)])
def test_unsupported_variant(op, inputs, consts, outputs, attrs):
    _refused(_malformed(op, inputs, consts, outputs, **attrs), EUNSUPPORTED)
