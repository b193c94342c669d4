"""Mutation fuzzing of the whole C runtime (loader, graph rules, every op's prepare, the run)
through mte-run: valid files of the digits CNN (float32 and int8) and a small int8
MobileNetV2, mutated two ways,

* bytes: random bytes overwritten anywhere in the file (the container, the JSON, the data);
* graph: the graph document edited and the file rewritten with a valid container, so that
  the mutation reaches the graph rules and the ops' preparation: a dimension, an attribute
  value or list, an op name, a node's input, a value's dtype, a constant's shape changed,

must each end in a clean success or a clean refusal (exit status 0 or 1 with a `mte-run: `
message), never a signal, a sanitizer report or a hang. The AddressSanitizer +
UndefinedBehaviorSanitizer build (`make -C native asan`, native/build/asan/mte-run) is used
when it exists, the plain build otherwise.
"""
import json
import os
import random
import struct
import subprocess

import numpy as np
import pytest

from minitorch_edge import graph, models, quant

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASAN = os.path.join(ROOT, "native", "build", "asan", "mte-run")
PLAIN = os.path.join(ROOT, "native", "build", "mte-run")
ENV = dict(os.environ, ASAN_OPTIONS="exitcode=99:detect_leaks=1:allocator_may_return_null=1",
           UBSAN_OPTIONS="exitcode=98:halt_on_error=1:print_stacktrace=1")
MUTANTS = int(os.environ.get("MTE_FUZZ_MUTANTS", "120"))


def _exe():
    if os.path.exists(ASAN):
        return ASAN
    if not os.path.exists(PLAIN):
        subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "native"), "mte-run"],
                       check=True, stdout=subprocess.DEVNULL)
    return PLAIN


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    rng = np.random.default_rng(0)
    out = []
    digits = models.SmallCNN(in_channels=1, num_classes=10, input_size=8)
    mnv2 = models.mobilenet_v2(num_classes=10)
    for name, m, shape, kinds in (("digits", digits, (1, 1, 8, 8), ("float32", "int8")),
                                  ("mnv2", mnv2, (1, 3, 32, 32), ("int8",))):
        m.eval()
        x = rng.standard_normal(shape).astype(np.float32)
        xp = str(d / f"{name}.x.npy")
        np.save(xp, x)
        for kind in kinds:
            g = graph.trace(m, x).optimize() if kind == "float32" else quant.quantize(m, [x])
            path = str(d / f"{name}.{kind}.mte")
            g.save(path)
            with open(path, "rb") as f:
                out.append((f"{name}.{kind}", f.read(), xp))
    return d, out


def _run(exe, model, xp, out):
    try:
        done = subprocess.run([exe, model, "--input", xp, "--output", out, "--threads", "1"],
                              capture_output=True, timeout=60, env=ENV)
        # (messages quote names from the file, cut at 200 bytes: maybe inside a UTF-8 character)
        done.stderr = done.stderr.decode("utf-8", "backslashreplace")
    except subprocess.TimeoutExpired:
        pytest.fail(f"mte-run hung on {model}")
    return done


def _check(done, what):
    assert done.returncode in (0, 1), (
        f"{what}: exit status {done.returncode}\n{done.stderr[-3000:]}")
    if done.returncode == 1:
        assert "mte-run: " in done.stderr, (what, done.stderr[-500:])


def _split(data):
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def _join(header, payload):
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + payload


def _mutate_graph(doc, rnd):
    """One edit of the graph document (a dict), in place; returns what was done."""
    kind = rnd.choice(["dim", "attr", "op", "input", "dtype", "output_name", "attr_list"])
    nodes, values = doc["nodes"], doc["values"]
    node = rnd.choice(nodes)
    if kind == "dim":
        v = rnd.choice(values)
        if v[1]:
            v[1][rnd.randrange(len(v[1]))] = rnd.choice([0, 1, 2, 3, 7, 1 << 20, 1 << 40])
        return f"dim of {v[0]}"
    if kind == "attr" and node["attrs"]:
        key = rnd.choice(sorted(node["attrs"]))
        node["attrs"][key] = rnd.choice([-1, 0, 1, 2, 3, 255, 1 << 31, 1 << 62, -128, "relu",
                                         "bogus", 1.5, [], [0], [1, 1], [0, 0, 0, 0], True])
        return f"attr {key} of {node['name']}"
    if kind == "attr_list" and node["attrs"]:
        key = rnd.choice(sorted(node["attrs"]))
        node["attrs"][key] = [rnd.choice([-5, -1, 0, 1, 2, 3, 1 << 30, 1 << 33])
                              for _ in range(rnd.randrange(0, 6))]
        return f"attr list {key} of {node['name']}"
    if kind == "op":
        node["op"] = rnd.choice(["Conv", "mte.QLinearConv", "Gemm", "MaxPool", "Reshape", "Add",
                                 "mte.QLinearAdd", "Relu", "Transpose", "Softmax", "Gather",
                                 "QuantizeLinear", "DequantizeLinear", "mte.QLinearGemm",
                                 "Concat", "Slice", "Pad"])
        return f"op of {node['name']} -> {node['op']}"
    if kind == "input" and node["inputs"]:
        i = rnd.randrange(len(node["inputs"]))
        node["inputs"][i] = rnd.choice(values)[0] if rnd.random() < 0.8 else ""
        return f"input {i} of {node['name']}"
    if kind == "dtype":
        v = rnd.choice(values)
        v[2] = rnd.choice(["float32", "int8", "int32", "int64", "uint8", "bool", "float16"])
        return f"dtype of {v[0]}"
    if kind == "output_name":
        node["outputs"] = node["outputs"][:0] if rnd.random() < 0.3 else node["outputs"] * 2
        return f"outputs of {node['name']}"
    return "nothing"


def test_byte_mutations(corpus, tmp_path):
    _, files = corpus
    exe, rnd = _exe(), random.Random(1)
    for name, data, xp in files:
        for k in range(MUTANTS // 2):
            b = bytearray(data)
            for _ in range(rnd.choice([1, 2, 8])):
                at = rnd.randrange(len(b)) if rnd.random() < 0.5 else rnd.randrange(
                    min(len(b), 8 + struct.unpack("<Q", data[:8])[0]))
                b[at] = rnd.randrange(256)
            path = str(tmp_path / f"{name}.{k}.mte")
            with open(path, "wb") as f:
                f.write(b)
            _check(_run(exe, path, xp, str(tmp_path / "y.npy")), f"{name} byte mutant {k}")


def test_graph_mutations(corpus, tmp_path):
    _, files = corpus
    exe, rnd = _exe(), random.Random(2)
    refused = 0
    for name, data, xp in files:
        header, payload = _split(data)
        for k in range(MUTANTS):
            h = json.loads(json.dumps(header))
            doc = json.loads(h["__metadata__"]["minitorch_edge.graph"])
            what = [_mutate_graph(doc, rnd) for _ in range(rnd.choice([1, 1, 2]))]
            h["__metadata__"]["minitorch_edge.graph"] = json.dumps(doc)
            path = str(tmp_path / f"{name}.g{k}.mte")
            with open(path, "wb") as f:
                f.write(_join(h, payload))
            done = _run(exe, path, xp, str(tmp_path / "y.npy"))
            _check(done, f"{name} graph mutant {k}: {what}")
            refused += done.returncode == 1
    assert refused > 0      # the mutations do reach the checks


def test_constant_shape_mutations(corpus, tmp_path):
    """A weight's declared shape changed consistently in the container and the graph (the
    bytes still add up): the ops' preparation must catch what the container cannot."""
    _, files = corpus
    exe, rnd = _exe(), random.Random(3)
    for name, data, xp in files:
        header, payload = _split(data)
        tensors = [k for k, v in header.items() if k != "__metadata__" and len(v["shape"]) >= 2]
        for k in range(MUTANTS // 4):
            h = json.loads(json.dumps(header))
            t = rnd.choice(tensors)
            shape = h[t]["shape"]
            n = int(np.prod(shape))
            factors = [d for d in range(1, n + 1) if n % d == 0]
            first = rnd.choice(factors)
            new = [first, n // first] + [1] * rnd.randrange(0, 3)
            h[t]["shape"] = new
            doc = json.loads(h["__metadata__"]["minitorch_edge.graph"])
            for v in doc["values"]:
                if v[0] == t:
                    v[1] = new
            h["__metadata__"]["minitorch_edge.graph"] = json.dumps(doc)
            path = str(tmp_path / f"{name}.s{k}.mte")
            with open(path, "wb") as f:
                f.write(_join(h, payload))
            _check(_run(exe, path, xp, str(tmp_path / "y.npy")), f"{name}: {t} as {new}")
