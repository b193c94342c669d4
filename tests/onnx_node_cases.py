"""The ONNX package's backend node tests (onnx.backend.test.case.node.collect_testcases(): each
case a one-op model, or an op's function body "expanded", with input and expected output
arrays) run through our importer and the Python engine of our executor. Shared by
tests/test_onnx_conformance.py and bench/onnx_import.py (the per-operator report).

Each case is classified:

* pass: imported, and every output equal to ONNX's expected one (the case's rtol / atol;
  the same dtype and shape). A graph input that decides a shape (a Reshape's shape, Slice's
  starts, ...: onnx/_convert.STATIC_INPUTS) is frozen to the case's value
  (load(constant_inputs=...)): our graphs have static shapes;
* unsupported: the importer raised OnnxUnsupportedError (an operator or feature we lack: its
  `op_types` name it), or the case feeds non-tensor values (sequences, optionals);
* fail: anything else (an import error on a supported op, an exception while running, or a
  wrong result).

A case is filed under its operator: the op of a one-node model, else the model's op whose
snake_case name is the longest one in the case's name (test_softmax_axis_0_expanded ->
Softmax... its body's ops are listed as the case's ops).
"""
import re
import warnings
from functools import lru_cache

import numpy as np

from minitorch_edge.graph.executor import Executor
from minitorch_edge.onnx import OnnxUnsupportedError, load


@lru_cache(maxsize=1)
def all_cases():
    """Every node test case of the installed onnx package, sorted by name."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(sorted(collect_testcases(), key=lambda c: c.name))


def _snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def op_types(case):
    return sorted({n.op_type for n in case.model.graph.node})


def operator_of(case):
    """The operator a case tests (see the module docstring)."""
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    name = case.name[len("test_"):].split("_expanded")[0] + "_"
    hits = [op for op in op_types(case)
            if name.startswith((_snake(op) + "_", op.lower() + "_"))]
    if not hits:    # an expanded function body: the ONNX operator the case is named after
        hits = [op for op in _schema_names() if name.startswith((_snake(op) + "_",
                                                                 op.lower() + "_"))]
    if hits:
        return max(hits, key=lambda op: len(_snake(op)))
    return name[:-1]


@lru_cache(maxsize=1)
def _schema_names():
    import onnx.defs
    return sorted({s.name for s in onnx.defs.get_all_schemas_with_history()})


def _array(v):
    """A case's value as a numpy array (TensorProto and numpy scalars too), None for a
    sequence, map or optional."""
    from onnx import TensorProto, numpy_helper
    if isinstance(v, TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, (np.ndarray, np.generic)):
        return np.asarray(v)
    return None


def _shape_inputs(case):
    """Graph inputs that feed an input deciding a shape (a Reshape's shape, Slice's starts,
    ...: STATIC_INPUTS): frozen to the case's values, as our graphs have static shapes."""
    from minitorch_edge.onnx._convert import STATIC_INPUTS
    graph = case.model.graph
    names = {i.name for i in graph.input}
    return sorted({n.input[k] for n in graph.node for k in STATIC_INPUTS.get(n.op_type, ())
                   if k < len(n.input) and n.input[k] in names})


def run_case(case):
    """(status, detail): status "pass", "unsupported" or "fail"; detail says why. When the
    importer says an input computed at run time must be constant, the case runs once more with
    every integer or bool graph input frozen (an op's own static-shape rule, e.g. Trilu's k)."""
    status, detail = _run_case(case, freeze_all=False)
    if status == "unsupported" and "dynamic" in detail:
        status2, detail2 = _run_case(case, freeze_all=True)
        if status2 != "unsupported":
            return status2, detail2
    return status, detail


def _run_case(case, freeze_all):
    graph = case.model.graph
    inits = {t.name for t in graph.initializer}
    names = [i.name for i in graph.input if i.name not in inits]
    try:
        for inputs, expected in case.data_sets:
            inputs, expected = [_array(a) for a in inputs], [_array(a) for a in expected]
            if any(a is None or a.dtype.kind not in "biuf" for a in inputs + expected):
                return "unsupported", "non-tensor or non-numeric values"
            fed = dict(zip(names, inputs))
            frozen = {n: fed[n] for n in _shape_inputs(case) if n in fed}
            if freeze_all:
                frozen.update({n: a for n, a in fed.items() if a.dtype.kind in "biu"})
            g = load(case.model, input_shapes={n: a.shape for n, a in fed.items()},
                     constant_inputs=frozen)
            with np.errstate(all="ignore"):
                got = Executor(g, engine="python", prepare=False)(
                    *[fed[n] for n in g.inputs])
            got = got if isinstance(got, tuple) else (got,)
            if len(got) != len(expected):
                return "fail", f"{len(got)} outputs, expected {len(expected)}"
            for k, (y, ref) in enumerate(zip(got, expected)):
                y = np.asarray(y)
                if y.dtype != ref.dtype or y.shape != ref.shape:
                    return "fail", (f"output {k}: {y.dtype}{list(y.shape)}, expected "
                                    f"{ref.dtype}{list(ref.shape)}")
                if ref.dtype.kind in "fc":
                    ok = np.allclose(y, ref, rtol=case.rtol, atol=case.atol, equal_nan=True)
                else:
                    ok = np.array_equal(y, ref)
                if not ok:
                    err = (float(np.nanmax(np.abs(y.astype(np.float64) - ref)))
                           if y.size else 0.0)
                    return "fail", f"output {k} differs (max abs error {err:.3g})"
    except OnnxUnsupportedError as e:
        return "unsupported", ", ".join(e.op_types) or str(e)
    except Exception as e:          # noqa: BLE001 (a failing case, whatever the cause)
        return "fail", f"{type(e).__name__}: {str(e)[:300]}"
    return "pass", ""


def run_all(cases=None):
    """[(case name, operator, status, detail)] for `cases` (default: all)."""
    return [(c.name, operator_of(c)) + run_case(c) for c in (cases or all_cases())]


def per_operator(results):
    """{operator: {"pass": n, "unsupported": n, "fail": n}}"""
    table = {}
    for _, op, status, _ in results:
        row = table.setdefault(op, {"pass": 0, "unsupported": 0, "fail": 0})
        row[status] += 1
    return dict(sorted(table.items()))
