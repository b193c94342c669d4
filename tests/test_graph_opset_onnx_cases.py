"""ONNX's own node conformance cases (onnx.backend.test.case.node) for the ops of
graph/opset_onnx_*.py, the comparisons and the variadic Max/Min: each one-node case becomes a
one-node Graph (a tiny converter below: attributes to Python values, opset-18 ``axes`` inputs of
the reductions to the attribute our ops take) and runs on the Executor (engine "auto", which
falls back to the Python engine); its outputs must equal the case's expected outputs at the
case's tolerances, dtypes included.

The cases are parametrized by name. A case whose tensors have a dtype a Graph cannot hold
(bfloat16, the float8/int4/int2 types, strings) is skipped, saying which.
"""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper

from minitorch_edge.graph import Graph, GraphError, opset

OPS = sorted({n for n in opset.names() if not opset.OPS[n].c_runtime}
             | {"ConvTranspose", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                "And", "Or", "Xor", "Where"})
# ONNX 18 turned these reductions' axes attribute into an input; ours keep the attribute
AXES_INPUT = {"ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
              "ReduceLogSumExp", "ReduceSumSquare"}

GRAPH_DTYPES = {"float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64",
                "uint16", "uint32", "uint64", "bool"}


def _cases():
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    return sorted((c for c in cases if len(c.model.graph.node) == 1
                   and c.model.graph.node[0].op_type in OPS), key=lambda c: c.name)


CASES = _cases()


def _attr(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v


def to_graph(model, arrays, constant=lambda k, name: False):
    """A Graph of the model's one node; input k is a constant where constant(k, name)."""
    node = model.graph.node[0]
    attrs = {a.name: _attr(a) for a in node.attribute}
    g = Graph(node.op_type)
    names = list(node.input)
    feeds = []
    if node.op_type in AXES_INPUT and len(names) > 1:
        if names[1]:
            attrs["axes"] = [int(a) for a in arrays[1].reshape(-1)]
        names = names[:1]
    for k, name in enumerate(names):
        if not name:
            continue
        if constant(k, name):
            g.add_constant(name, arrays[k])
        else:
            g.add_input(name, arrays[k].shape, arrays[k].dtype)
            feeds.append(arrays[k])
    g.add_node(node.op_type, names, list(node.output), name="n", **attrs)
    g.set_outputs(list(node.output))
    return g, feeds


def build(model, arrays):
    """The graph with every input fed at run time, or, where the op needs them constant (a
    shape, K, an axis), the inputs after the first, or all of them, as constants."""
    tries = (lambda k, n: False, lambda k, n: k > 0, lambda k, n: True)
    error = None
    for constant in tries:
        try:
            return to_graph(model, arrays, constant)
        except GraphError as e:
            error = e
    raise error


def _array(a):
    return numpy_helper.to_array(a) if isinstance(a, onnx.TensorProto) else np.asarray(a)


def _inputs(case, data):
    names = [i.name for i in case.model.graph.input]
    by_name = dict(zip(names, data))
    return [by_name.get(n) for n in case.model.graph.node[0].input]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_node_case(case):
    for inputs, expected in case.data_sets:
        arrays = _inputs(case, [_array(a) for a in inputs])
        expected = [_array(a) for a in expected]
        odd = {a.dtype.name for a in arrays + list(expected) if a is not None} - GRAPH_DTYPES
        if odd:
            pytest.skip(f"dtype {', '.join(sorted(odd))} is not a graph dtype")
        g, feeds = build(case.model, arrays)
        run = g.compile(engine="auto", prepare=False) if feeds else None
        got = run(*feeds) if run is not None else g.run()
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(expected)
        for k, (y, want) in enumerate(zip(got, expected)):
            want = np.asarray(want)
            assert y.dtype == want.dtype, f"output {k}: {y.dtype} != {want.dtype}"
            assert y.shape == want.shape, f"output {k}: {y.shape} != {want.shape}"
            np.testing.assert_allclose(y, want, rtol=case.rtol, atol=case.atol,
                                       err_msg=f"output {k}")
        if run is not None:
            assert run.engine == "python" or not any(
                not opset.OPS[n.op].c_runtime for n in g.nodes)


def test_every_new_op_has_node_cases():
    """Which of our ops ONNX's suite covers (so a rename or a lost registration shows)."""
    covered = {c.model.graph.node[0].op_type for c in CASES}
    assert covered >= {"ConvTranspose", "Resize", "TopK", "GatherND", "ScatterElements",
                       "Einsum", "CumSum", "ReduceLogSumExp", "DepthToSpace", "Range"}
