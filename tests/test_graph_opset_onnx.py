"""The ONNX import ops of graph/opset_onnx_tensor.py, opset_onnx_reduce.py and
opset_onnx_index.py (and the variadic Max/Min) against onnx.reference.ReferenceEvaluator, one
node each, over several shapes and attributes; torch where it has the op (TopK, CumSum);
their infer rules' errors; and that the C runtime refuses graphs holding these Python-only
ops so that engine="auto" falls back to the Python engine."""
import numpy as np
import pytest
from harness import import_torch
from onnx_op_harness import check, ours

from minitorch_edge.graph import Graph, GraphError, opset

RNG = np.random.default_rng(0)


def f32(*shape, lo=None, hi=None):
    if lo is not None:
        return RNG.uniform(lo, hi, shape).astype(np.float32)
    return RNG.standard_normal(shape).astype(np.float32)


def ints(*shape, lo=-5, hi=5, dtype=np.int64):
    return RNG.integers(lo, hi, shape).astype(dtype)


# (op, inputs, attrs, indices of constant inputs)
ELEMENTWISE = [
    ("Tan", [f32(3, 4, lo=-1.2, hi=1.2)], {}, ()),
    ("Asin", [f32(3, 4, lo=-0.99, hi=0.99)], {}, ()),
    ("Acos", [f32(5, lo=-0.99, hi=0.99)], {}, ()),
    ("Atan", [f32(2, 3, 4)], {}, ()),
    ("Sinh", [f32(7)], {}, ()),
    ("Cosh", [f32(2, 7)], {}, ()),
    ("Asinh", [f32(6)], {}, ()),
    ("Acosh", [f32(6, lo=1.0, hi=9.0)], {}, ()),
    ("Atanh", [f32(6, lo=-0.99, hi=0.99)], {}, ()),
    ("Selu", [f32(3, 5)], {}, ()),
    ("Selu", [f32(3, 5)], {"alpha": 2.0, "gamma": 3.0}, ()),
    ("Celu", [f32(4, 4)], {}, ()),
    ("Celu", [f32(4, 4)], {"alpha": 2.5}, ()),
    ("ThresholdedRelu", [f32(10)], {}, ()),
    ("ThresholdedRelu", [f32(10)], {"alpha": 0.3}, ()),
    ("Softsign", [f32(3, 3)], {}, ()),
    ("Mish", [f32(3, 30) * 10], {}, ()),
    ("Sign", [f32(8)], {}, ()),
    ("Sign", [ints(8)], {}, ()),
    ("Round", [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.2, -3.7], np.float32)], {}, ()),
    ("IsNaN", [np.array([1.0, np.nan, -np.inf, np.inf, 0], np.float32)], {}, ()),
    ("IsInf", [np.array([1.0, np.nan, -np.inf, np.inf, 0], np.float32)], {}, ()),
    ("IsInf", [np.array([1.0, np.nan, -np.inf, np.inf], np.float32)],
     {"detect_negative": 0}, ()),
    ("IsInf", [np.array([1.0, np.nan, -np.inf, np.inf], np.float32)],
     {"detect_positive": 0}, ()),
    ("Mod", [ints(3, 4, lo=-9, hi=9), ints(4, lo=1, hi=4) * np.array([1, -1, 1, -1])], {}, ()),
    ("Mod", [f32(3, 4) * 5, f32(3, 1, lo=0.5, hi=2)], {"fmod": 1}, ()),
    ("Mod", [ints(5, lo=-9, hi=9, dtype=np.int32), ints(5, lo=1, hi=4, dtype=np.int32)],
     {"fmod": 1}, ()),
    ("PRelu", [f32(2, 3, 4, 4), f32(3, 1, 1)], {}, ()),
    ("PRelu", [f32(2, 5), f32(5)], {}, ()),
    ("Sum", [f32(2, 3)], {}, ()),
    ("Sum", [f32(2, 3), f32(3), f32(1, 1)], {}, ()),
    ("Mean", [f32(2, 3), f32(2, 1), f32(3), f32(2, 3)], {}, ()),
    ("Max", [f32(2, 3)], {}, ()),
    ("Max", [f32(2, 3), f32(3), f32(4, 1, 1)], {}, ()),
    ("Min", [ints(2, 3), ints(3), ints(2, 1)], {}, ()),
    ("Equal", [ints(3, 4), ints(4)], {}, ()),
    ("Less", [f32(3, 4), f32(3, 1)], {}, ()),
    ("GreaterOrEqual", [ints(2, 3), ints(2, 3)], {}, ()),
    ("Xor", [RNG.random((3, 4)) > 0.5, RNG.random(4) > 0.5], {}, ()),
    ("Range", [np.array(1, np.int64), np.array(10, np.int64), np.array(3, np.int64)], {},
     (0, 1, 2)),
    ("Range", [np.array(3.0, np.float32), np.array(-1.0, np.float32),
               np.array(-0.7, np.float32)], {}, (0, 1, 2)),
    ("Range", [np.array(5, np.int32), np.array(2, np.int32), np.array(1, np.int32)], {},
     (0, 1, 2)),
    ("ConstantOfShape", [np.array([2, 3], np.int64)], {}, (0,)),
    ("ConstantOfShape", [np.array([4, 1, 2], np.int64)], {"value": np.array([7], np.int32)},
     (0,)),
    ("Tile", [f32(2, 3), np.array([2, 3], np.int64)], {}, (1,)),
    ("Tile", [ints(1, 2, 2), np.array([3, 1, 2], np.int64)], {}, (1,)),
    ("Gelu", [f32(4, 6) * 3], {}, ()),
    ("Gelu", [f32(4, 6) * 3], {"approximate": "tanh"}, ()),
    ("Shrink", [f32(20)], {}, ()),
    ("Shrink", [f32(20)], {"lambd": 0.2, "bias": 0.1}, ()),
    ("BitwiseAnd", [ints(3, 4, lo=-99, hi=99), ints(4, lo=-99, hi=99)], {}, ()),
    ("BitwiseOr", [ints(3, 4, lo=0, hi=99, dtype=np.uint8), ints(3, 1, lo=0, hi=99,
                                                                  dtype=np.uint8)], {}, ()),
    ("BitwiseXor", [ints(5, dtype=np.int32), ints(5, dtype=np.int32)], {}, ()),
    ("BitwiseNot", [ints(2, 5, lo=-9, hi=9, dtype=np.int16)], {}, ()),
    ("BitShift", [ints(6, lo=0, hi=200, dtype=np.uint8), np.arange(6).astype(np.uint8)],
     {"direction": "LEFT"}, ()),
    ("BitShift", [ints(6, lo=0, hi=9999, dtype=np.uint32), ints(1, lo=0, hi=5,
                                                               dtype=np.uint32)],
     {"direction": "RIGHT"}, ()),
    ("CastLike", [f32(2, 3) * 9, ints(1, dtype=np.int32)], {}, ()),
    ("CastLike", [ints(4), np.zeros(2, np.float16)], {}, ()),
    ("Size", [f32(2, 3, 4)], {}, ()),
    ("Det", [f32(3, 3)], {}, ()),
    ("Det", [f32(2, 4, 4)], {}, ()),
    ("ReverseSequence", [f32(5, 3, 2), np.array([5, 2, 0], np.int64)], {}, ()),
    ("ReverseSequence", [f32(3, 4), np.array([1, 2, 3], np.int64)],
     {"batch_axis": 0, "time_axis": 1}, ()),
]

REDUCTIONS = ["ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
              "ReduceLogSumExp", "ReduceSumSquare"]
REDUCE = [(op, [f32(3, 4, 5, lo=0.5, hi=1.5)], attrs, ())
          for op in REDUCTIONS
          for attrs in ({}, {"axes": [1]}, {"axes": [0, 2], "keepdims": 0},
                        {"axes": [-1], "keepdims": 1})]
REDUCE += [("ReduceMin", [ints(3, 4)], {"axes": [1], "keepdims": 0}, ()),
           ("ReduceProd", [ints(3, 4, lo=1, hi=3)], {"axes": [0]}, ()),
           ("ReduceLogSumExp", [f32(3, 4) * 50], {"axes": [1]}, ())]

TIES = np.array([[3, 1, 3, 2], [0, 0, -1, 0], [5, 6, 6, 1]], np.float32)
ORDER = [
    ("ArgMax", [TIES], {}, ()),
    ("ArgMax", [TIES], {"axis": 1, "keepdims": 0}, ()),
    ("ArgMax", [TIES], {"axis": -1, "select_last_index": 1}, ()),
    ("ArgMin", [TIES], {"axis": 1}, ()),
    ("ArgMin", [TIES], {"axis": 0, "select_last_index": 1, "keepdims": 0}, ()),
    ("ArgMax", [f32(2, 3, 4)], {"axis": 2}, ()),
    ("CumSum", [f32(3, 4), np.array(1, np.int64)], {}, (1,)),
    ("CumSum", [f32(3, 4), np.array(0, np.int32)], {"exclusive": 1}, (1,)),
    ("CumSum", [ints(2, 5), np.array(-1, np.int64)], {"reverse": 1}, (1,)),
    ("CumSum", [f32(2, 5), np.array(1, np.int64)], {"reverse": 1, "exclusive": 1}, (1,)),
    ("Hardmax", [TIES], {}, ()),
    ("Hardmax", [TIES], {"axis": 0}, ()),
    ("Hardmax", [f32(2, 3, 4)], {"axis": 1}, ()),
]

IDX = ints(3, 4, lo=-3, hi=3)
INDEX = [
    ("GatherElements", [f32(3, 5), ints(3, 4, lo=-5, hi=5)], {"axis": 1}, ()),
    ("GatherElements", [f32(3, 4), IDX], {"axis": 0}, ()),
    ("ScatterElements", [f32(3, 5), np.array([[0, 2], [4, -1], [1, 3]]), f32(3, 2)],
     {"axis": 1}, ()),
    ("ScatterElements", [f32(4, 3), np.array([[0, 1, 2], [0, 1, 2], [3, 3, 0]]), f32(3, 3)],
     {"axis": 0, "reduction": "add"}, ()),
    ("ScatterElements", [f32(4, 3), np.array([[0, 1, 2], [0, 1, 2], [3, 3, 0]]), f32(3, 3)],
     {"axis": 0, "reduction": "mul"}, ()),
    ("ScatterElements", [f32(4, 3), np.array([[0, 1, 2], [0, 1, 2]]), f32(2, 3)],
     {"axis": 0, "reduction": "max"}, ()),
    ("ScatterElements", [f32(4, 3), np.array([[0, 1, 2], [0, 1, 2]]), f32(2, 3)],
     {"axis": 0, "reduction": "min"}, ()),
    ("GatherND", [f32(3, 4, 5), np.array([[0, 1], [2, -1]])], {}, ()),
    ("GatherND", [f32(3, 4, 5), np.array([[[1]], [[2]]])], {}, ()),
    ("GatherND", [f32(2, 4, 5), np.array([[1, 2], [3, 0]])], {"batch_dims": 1}, ()),
    ("ScatterND", [f32(4, 3), np.array([[1], [3]]), f32(2, 3)], {}, ()),
    ("ScatterND", [f32(4, 3, 2), np.array([[1, 2], [1, 2], [0, 0]]), f32(3, 2)],
     {"reduction": "add"}, ()),
    ("ScatterND", [f32(4, 3), np.array([[1, 2], [1, 2]]), f32(2)], {"reduction": "max"}, ()),
    ("OneHot", [np.array([[0, 3], [-1, 7]], np.int64), np.array(5, np.int64),
                np.array([0.0, 2.0], np.float32)], {}, (1,)),
    ("OneHot", [np.array([1, 0, 2], np.int32), np.array(3, np.int64),
                np.array([-1, 1], np.int64)], {"axis": 0}, (1,)),
    ("Trilu", [f32(4, 5)], {}, ()),
    ("Trilu", [f32(2, 4, 5), np.array(1, np.int64)], {"upper": 0}, (1,)),
    ("Trilu", [f32(5, 3), np.array(-2, np.int64)], {"upper": 1}, (1,)),
    ("Einsum", [f32(3, 4), f32(4, 5)], {"equation": "ij,jk->ik"}, ()),
    ("Einsum", [f32(2, 3, 4), f32(2, 4, 5)], {"equation": "bij,bjk->bik"}, ()),
    ("Einsum", [f32(4, 4)], {"equation": "ii->i"}, ()),
    ("Einsum", [f32(2, 3, 4, 5)], {"equation": "...ij->...ji"}, ()),
    ("Einsum", [f32(3, 4)], {"equation": "ij->"}, ()),
    ("Einsum", [f32(3), f32(4)], {"equation": "i,j"}, ()),
    ("Einsum", [f32(2, 3), f32(3, 2)], {"equation": "ij, jk"}, ()),
    ("Compress", [f32(3, 4), np.array([True, False, True])], {"axis": 0}, (1,)),
    ("Compress", [f32(3, 4), np.array([0, 1, 1, 0], np.bool_)], {"axis": -1}, (1,)),
    ("Compress", [f32(3, 4), np.array([1, 0, 0, 1, 1], np.bool_)], {}, (1,)),
]


OPSET = {"Mish": 18, "Gelu": 20, "BitwiseAnd": 18, "BitwiseOr": 18, "BitwiseXor": 18,
         "BitwiseNot": 18}     # the opsets that added these ops


def _id(row):
    op_type, inputs, attrs, _ = row
    shapes = "x".join(str(list(x.shape)) for x in inputs)
    return f"{op_type}-{shapes}-{','.join(f'{k}={v}' for k, v in attrs.items())}"


@pytest.mark.parametrize("row", ELEMENTWISE + REDUCE + ORDER + INDEX,
                         ids=[_id(r) for r in ELEMENTWISE + REDUCE + ORDER + INDEX])
def test_against_onnx_reference(row):
    op_type, inputs, attrs, constant = row
    check(op_type, inputs, attrs, constant=constant, opset=OPSET.get(op_type, 17), rtol=2e-5,
          atol=2e-6)


def test_gather_elements_takes_smaller_indices_as_torch():
    torch = import_torch()
    data, idx = f32(3, 5), ints(2, 4, lo=0, hi=3)
    y = ours("GatherElements", [data, idx], {"axis": 0})[0]
    np.testing.assert_array_equal(y, torch.gather(torch.from_numpy(data), 0,
                                                  torch.from_numpy(idx)).numpy())


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis", [-1, 0])
def test_topk_against_reference_and_torch(largest, axis):
    torch = import_torch()
    x = np.round(f32(6, 7) * 2) / 2                    # ties, to check their order
    k = np.array([3], np.int64)
    values, indices = check("TopK", [x, k], {"axis": axis, "largest": largest}, n_out=2,
                            constant=(1,))
    tv = torch.topk(torch.from_numpy(x), 3, dim=axis, largest=bool(largest), sorted=True)[0]
    np.testing.assert_array_equal(values, tv.numpy())
    np.testing.assert_array_equal(np.take_along_axis(x, indices, axis), values)


def test_cumsum_against_torch():
    torch = import_torch()
    x = f32(3, 5, 2)
    for axis in range(3):
        y = ours("CumSum", [x, np.array(axis, np.int64)], {}, constant=(1,))[0]
        np.testing.assert_allclose(y, torch.cumsum(torch.from_numpy(x), axis).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_reductions_pass_through_with_noop_and_reduce_empty_sets():
    x = f32(2, 3)
    for op_type in REDUCTIONS:
        y = ours(op_type, [x], {"noop_with_empty_axes": 1})[0]
        np.testing.assert_array_equal(y, x)
    empty = np.zeros((2, 0), np.float32)
    want = {"ReduceMin": np.inf, "ReduceProd": 1, "ReduceL1": 0, "ReduceL2": 0,
            "ReduceSumSquare": 0, "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf}
    for op_type, value in want.items():
        y = ours(op_type, [empty], {"axes": [1], "keepdims": 0}, constant=(0,))[0]
        np.testing.assert_array_equal(y, np.full(2, value, np.float32), err_msg=op_type)


@pytest.mark.parametrize("op_type", ["Max", "Min"])
def test_variadic_max_min_with_planned_memory(op_type):
    """The planner may give the output the memory of any dying same-shaped input (here the
    third: the first two are graph outputs, so they stay): the fold must still read every
    input before it writes."""
    g = Graph("fold")
    x = g.add_input("x", (3, 4))
    parts = [g.add_node(op, [x]).outputs[0] for op in ("Relu", "Neg", "Exp")]
    y = g.add_node(op_type, parts).outputs[0]
    g.set_outputs([y] + parts[:2])
    assert g.plan_memory().offsets[y] == g.plan_memory().offsets[parts[2]]
    v = f32(3, 4)
    fn = np.maximum if op_type == "Max" else np.minimum
    want = fn(fn(np.maximum(v, 0), -v), np.exp(v))
    for engine in ("python", "auto"):
        np.testing.assert_allclose(g.compile(engine=engine)(v)[0], want, rtol=1e-6)


# ---- infer errors ---------------------------------------------------------------------------
BAD = [
    ("PRelu", [f32(2, 3), f32(4)], {}, (), "PRelu: slope \\[4\\] does not broadcast"),
    ("Tan", [ints(3)], {}, (), "Tan takes a float tensor, got int64"),
    ("Range", [np.array(0, np.int64), np.array(5, np.int64), np.array(0, np.int64)], {},
     (0, 1, 2), "delta must not be 0"),
    ("Range", [np.array(0, np.int64), np.array(5, np.int64), np.array(1, np.int64)], {},
     (), "Range start must be a constant"),
    ("Tile", [f32(2, 3), np.array([2], np.int64)], {}, (1,), "Tile: repeats has 1 entries"),
    ("ConstantOfShape", [np.array([2, -1], np.int64)], {}, (0,), "negative dim"),
    ("ReduceL2", [f32(2, 3)], {"axes": [2]}, (), "ReduceL2 axis 2 is out of range"),
    ("ReduceMin", [f32(2, 3)], {"axes": [1, -1]}, (), "name a dim twice"),
    ("ArgMax", [f32(2, 0)], {"axis": 1}, (0,), "dim 1 of \\[2, 0\\] is empty"),
    ("TopK", [f32(2, 3), np.array([4], np.int64)], {}, (1,), "K=4 is out of range"),
    ("TopK", [f32(2, 3), np.array([2], np.int64)], {}, (), "K must be a constant"),
    ("CumSum", [f32(2, 3), np.array(2, np.int64)], {}, (1,), "CumSum axis 2 is out of range"),
    ("GatherElements", [f32(2, 3), ints(3)], {}, (), "must have data's rank 2"),
    ("ScatterElements", [f32(2, 3), ints(2, 2, lo=0, hi=2), f32(2, 3)], {}, (),
     "updates \\[2, 3\\] must have indices' shape"),
    ("ScatterElements", [f32(2, 3), ints(2, 2, lo=0, hi=2), f32(2, 2)],
     {"reduction": "avg"}, (), "reduction must be none"),
    ("GatherND", [f32(2, 3), np.array([[0, 1, 2]])], {}, (), "with 3 coordinates"),
    ("GatherND", [f32(2, 3), f32(1, 2)], {}, (), "indices must be an integer tensor"),
    ("ScatterND", [f32(4, 3), np.array([[1], [3]]), f32(2, 2)], {}, (),
     "updates must have shape \\[2, 3\\]"),
    ("OneHot", [ints(3), np.array(0, np.int64), np.array([0, 1], np.float32)], {}, (1,),
     "depth must be positive"),
    ("OneHot", [ints(3), np.array(4, np.int64), np.array([0, 1], np.float32)], {}, (),
     "depth must be a constant"),
    ("Trilu", [f32(3)], {}, (), "rank >= 2"),
    ("Einsum", [f32(3, 4), f32(5, 6)], {"equation": "ij,jk->ik"}, (),
     "label 'j' has sizes 4 and 5"),
    ("Einsum", [f32(3, 4)], {"equation": "ij,jk->ik"}, (), "has 2 operands, given 1"),
    ("Compress", [f32(3, 4), np.array([True, False])], {"axis": 0}, (),
     "condition must be a constant"),
    ("Compress", [f32(3, 4), np.array([True] * 5)], {"axis": 0}, (1,), "is longer than dim 0"),
    ("Sum", [], {}, (), "Sum takes one or more inputs"),
    ("BitwiseAnd", [f32(3), f32(3)], {}, (), "takes integer tensors, got float32"),
    ("BitShift", [ints(3, lo=0, hi=3, dtype=np.uint8)] * 2, {"direction": "UP"}, (),
     "direction must be LEFT or RIGHT"),
    ("Det", [f32(2, 3)], {}, (), "Det takes square matrices"),
    ("ReverseSequence", [f32(4, 3), np.array([1, 2], np.int64)], {}, (),
     "sequence_lens must have shape \\[3\\]"),
    ("Gelu", [ints(3)], {}, (), "Gelu takes a float tensor"),
]


@pytest.mark.parametrize("row", BAD, ids=[r[0] + "-" + r[4][:30] for r in BAD])
def test_bad_inputs_raise_naming_op_and_shapes(row):
    op_type, inputs, attrs, constant, message = row
    with pytest.raises(GraphError, match=message) as info:
        ours(op_type, inputs, attrs, constant=constant)
    text = str(info.value)
    assert f"({op_type})" in text and "(inputs: " in text, text


# ---- the C runtime and the Python-only ops --------------------------------------------------
def test_python_only_ops_are_flagged():
    new = {"Tile", "TopK", "Resize", "Einsum", "ReduceMin", "GatherND"}
    assert new <= set(opset.names()) - set(opset.names(c_runtime_only=True))
    assert {"Conv", "ConvTranspose", "Max", "Min", "Equal", "Where"} <= \
        set(opset.names(c_runtime_only=True))
    for name in new:
        assert not opset.OPS[name].c_runtime and opset.OPS[name].doc


def _tile_graph():
    g = Graph("tiled")
    x = g.add_input("x", (2, 3))
    r = g.add_node("Relu", [x]).outputs[0]
    reps = g.add_constant("reps", np.array([1, 2], np.int64))
    y = g.add_node("Tile", [r, reps]).outputs[0]
    g.set_outputs([y])
    return g


def _native_runtime():
    try:
        from minitorch_edge import _C
    except ImportError:
        return False
    return hasattr(_C, "RuntimeModel")


needs_runtime = pytest.mark.skipif(not _native_runtime(),
                                   reason="minitorch_edge._C with the C runtime is not built")


@needs_runtime
def test_auto_engine_falls_back_for_python_only_ops():
    g = _tile_graph()
    run = g.compile(backend="native")
    assert run.engine == "python"
    assert "no kernel for Tile" in run.runtime_refusal
    x = f32(2, 3)
    np.testing.assert_array_equal(run(x), np.tile(np.maximum(x, 0), (1, 2)))
    with pytest.raises(ValueError, match=r"engine='c'.*no kernel for Tile"):
        g.compile(backend="native", engine="c")


@needs_runtime
def test_c_runtime_runs_binary_max_and_refuses_three_inputs():
    x, y, z = f32(2, 3), f32(2, 3), f32(2, 3)
    for inputs, engine in (((x, y), "c"), ((x, y, z), "python")):
        g = Graph("max")
        names = [g.add_input(f"x{k}", a.shape) for k, a in enumerate(inputs)]
        g.set_outputs([g.add_node("Max", names).outputs[0]])
        run = g.compile(backend="native")
        assert run.engine == engine, run.runtime_refusal
        np.testing.assert_array_equal(run(*inputs), np.maximum.reduce(inputs))
