"""Conformance: the ONNX package's own backend node tests through our importer and executor
(tests/onnx_node_cases.py runs and classifies them: pass / unsupported / fail).

A case whose operators are all supported (the importer did not raise OnnxUnsupportedError)
must pass, except the few in KNOWN_FAILURES, each with its reason. Cases that need an
unsupported operator are counted, not hidden: bench/onnx_import.py --conformance writes the table per
operator and the list of unsupported ones. The cases are split into shards (one test each) so
that pytest-xdist can spread them.
"""
import pytest

pytest.importorskip("onnx")
import onnx_node_cases as cases

SHARDS = 4

KNOWN_FAILURES = {
    "test_attention_4d_causal_fp16_expanded":
        "float16 end to end: our float16 MatMul/Softmax round their intermediates differently "
        "(max abs error 4.9e-4 against the case's atol)",
}

# operators whose cases must not all be unsupported (what torch exports use)
CORE = ("Add", "Mul", "Sub", "Div", "Relu", "Sigmoid", "Conv", "Gemm", "MatMul", "MaxPool",
        "AveragePool", "GlobalAveragePool", "BatchNormalization", "Softmax", "Reshape",
        "Transpose", "Concat", "Gather", "Slice", "Squeeze", "Unsqueeze", "Flatten",
        "ReduceMean", "Clip", "Cast", "Pad", "LayerNormalization", "Where", "Expand",
        "QuantizeLinear", "DequantizeLinear", "Shape", "Constant")


def _shard(k):
    return [c for i, c in enumerate(cases.all_cases()) if i % SHARDS == k]


@pytest.mark.parametrize("shard", range(SHARDS))
def test_supported_cases_pass(shard):
    results = cases.run_all(_shard(shard))
    failed = [f"{name} [{op}]: {detail}" for name, op, status, detail in results
              if status == "fail" and name not in KNOWN_FAILURES]
    assert not failed, f"{len(failed)} supported cases fail:\n" + "\n".join(failed)
    fixed = [name for name, op, status, detail in results
             if status == "pass" and name in KNOWN_FAILURES]
    assert not fixed, f"these pass now: remove them from KNOWN_FAILURES: {fixed}"


def test_core_operators_have_passing_cases():
    core = [c for c in cases.all_cases() if cases.operator_of(c) in CORE]
    table = cases.per_operator(cases.run_all(core))
    missing = [op for op in CORE if table.get(op, {}).get("pass", 0) == 0]
    assert not missing, f"no passing node case for {missing}: {table}"
