"""Running one op both ways for the opset_onnx tests: as a one-node minitorch_edge Graph and as
a one-node ONNX model on onnx.reference.ReferenceEvaluator (the oracle)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from minitorch_edge.graph import Graph


def _onnx_attr(v):
    return numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v


def one_node_model(op_type, inputs, attrs, n_out=1, opset=17):
    """(a ModelProto of the one node, its feeds)."""
    names = [f"in{k}" if x is not None else "" for k, x in enumerate(inputs)]
    outs = [f"out{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs,
                            **{k: _onnx_attr(v) for k, v in attrs.items()})
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype),
                                                  x.shape)
                    for n, x in zip(names, inputs) if x is not None]
    graph_outputs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs]
    model = helper.make_model(helper.make_graph([node], "one", graph_inputs, graph_outputs),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9                                  # what onnxruntime reads
    return model, {n: x for n, x in zip(names, inputs) if x is not None}


def reference(op_type, inputs, attrs, n_out=1, opset=17):
    """The op's outputs on ONNX's reference evaluator (None inputs are left out)."""
    model, feeds = one_node_model(op_type, inputs, attrs, n_out, opset)
    return ReferenceEvaluator(model).run(None, feeds)


def onnxruntime(op_type, inputs, attrs, n_out=1, opset=17):
    """The op's outputs on onnxruntime (the second oracle, where the reference has no kernel
    or departs from the ONNX spec). It needs the outputs' dtypes: input 0's here."""
    ort = pytest.importorskip("onnxruntime")
    model, feeds = one_node_model(op_type, inputs, attrs, n_out, opset)
    for out in model.graph.output:
        out.type.tensor_type.elem_type = model.graph.input[0].type.tensor_type.elem_type
    return ort.InferenceSession(model.SerializeToString()).run(None, feeds)


def ours(op_type, inputs, attrs, n_out=1, constant=(), engine="auto"):
    """The op's outputs on our Executor; inputs whose index is in `constant` are constants."""
    g = Graph(op_type)
    names, feeds = [], []
    for k, x in enumerate(inputs):
        if x is None:
            names.append("")
        elif k in constant:
            names.append(g.add_constant(f"in{k}", x))
        else:
            names.append(g.add_input(f"in{k}", x.shape, x.dtype))
            feeds.append(x)
    outs = [f"out{k}" for k in range(n_out)]
    g.add_node(op_type, names, outs, name="n", **attrs)
    g.set_outputs(outs)
    if not feeds:
        got = g.run()
    else:
        got = g.compile(engine=engine, prepare=False)(*feeds)
    return list(got) if isinstance(got, tuple) else [got]


def check(op_type, inputs, attrs=None, n_out=1, constant=(), opset=17, ref_attrs=None,
          rtol=1e-5, atol=1e-6, oracle=reference):
    """Our outputs equal the oracle's (ONNX's reference evaluator unless told): dtype, shape
    and values."""
    attrs = attrs or {}
    want = oracle(op_type, inputs, attrs if ref_attrs is None else ref_attrs, n_out, opset)
    got = ours(op_type, inputs, attrs, n_out, constant)
    for k, (y, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert y.dtype == w.dtype, f"{op_type} output {k}: dtype {y.dtype} != {w.dtype}"
        assert y.shape == w.shape, f"{op_type} output {k}: shape {y.shape} != {w.shape}"
        np.testing.assert_allclose(y, w, rtol=rtol, atol=atol, err_msg=f"{op_type} output {k}")
    return got
