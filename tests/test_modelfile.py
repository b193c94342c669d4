"""The model file (graph/modelfile.py): round trips of float and int8 zoo graphs, the one-call
export, atomic writes, and a corpus of malformed files plus byte mutations, each of which must
give a ModelFormatError and nothing else."""
import json
import os

import numpy as np
import pytest
from harness import randomize_bn

import minitorch_edge as mte
from minitorch_edge import graph, models
from minitorch_edge.graph import modelfile
from minitorch_edge.graph.modelfile import GRAPH_KEY, ModelFormatError


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def _small(seed=0):
    mte.manual_seed(seed)
    model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8).eval()
    x = np.random.default_rng(seed).random((2, 1, 8, 8), dtype=np.float32)
    return model, x


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("name,make,shape", [
    ("SmallCNN", lambda: models.SmallCNN(in_channels=1, num_classes=10, input_size=8),
     (2, 1, 8, 8)),
    ("ResNet-18", lambda: models.resnet18(num_classes=10), (1, 3, 32, 32)),
    ("MobileNetV2", lambda: models.mobilenet_v2(num_classes=10), (1, 3, 32, 32)),
    ("TransformerClassifier", lambda: models.TransformerClassifier(
        vocab_size=50, d_model=16, nhead=2, num_layers=1, num_classes=3, max_len=8), None),
], ids=lambda v: v if isinstance(v, str) else "")
def test_round_trip(tmp_path, name, make, shape, int8):
    mte.manual_seed(0)
    rng = np.random.default_rng(0)
    model = randomize_bn(make(), rng).eval()
    x = (rng.integers(0, 50, (2, 8)) if shape is None
         else rng.normal(0, 1, shape).astype(np.float32))
    path = str(tmp_path / "m.mte")
    g = mte.export_model(model, x, path, calibration_data=[x] if int8 else None)
    back = graph.load(path)
    assert [n.op for n in back.nodes] == [n.op for n in g.nodes]
    assert np.array_equal(back.run(x), g.run(x))
    ref = g.run(x)
    if int8:                    # integer kernels: every engine gives the same bits
        assert np.array_equal(back.compile()(x), ref)
    else:                       # the C engine may pick another float kernel (a GEMV, ...)
        np.testing.assert_allclose(back.compile()(x), ref, rtol=1e-5,
                                   atol=1e-5 * float(np.abs(ref).max()))
    assert str(back) == str(g)


def test_the_file_is_safetensors_with_the_graph_in_metadata(tmp_path):
    model, x = _small()
    path = str(tmp_path / "m.mte")
    g = mte.export_model(model, x, path)
    raw = _bytes(path)
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    doc = json.loads(header["__metadata__"][GRAPH_KEY])
    assert doc["version"] == 1 and doc["inputs"] == g.inputs
    assert set(header) - {"__metadata__"} == set(g.constants)
    weights = mte.load(path)                  # any safetensors reader sees the weights
    assert set(weights) == set(g.constants)


def _header_and_data(raw):
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def test_the_data_section_has_one_digest_and_a_changed_byte_is_refused(tmp_path):
    import hashlib
    model, x = _small()
    path = str(tmp_path / "m.mte")
    mte.export_model(model, x, path)
    raw = bytearray(_bytes(path))
    header, data = _header_and_data(bytes(raw))
    meta = header["__metadata__"]
    assert meta[modelfile.DATA_DIGEST_KEY] == hashlib.sha256(data).hexdigest()
    assert "minitorch_edge.sha256" not in meta    # no per-constant digests in a model file
    raw[-3] ^= 0x01                               # one bit of the last constant
    bad = str(tmp_path / "bad.mte")
    with open(bad, "wb") as f:
        f.write(bytes(raw))
    with pytest.raises(ModelFormatError, match="data section .* does not match the sha256"):
        graph.load(bad)
    assert graph.load(bad, verify=False) is not None
    # a digest that is not 64 hex digits is a format error, not a crash
    meta[modelfile.DATA_DIGEST_KEY] = "xyz"
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(bad, "wb") as f:
        f.write(len(head).to_bytes(8, "little") + head + data)
    with pytest.raises(ModelFormatError, match="must be a sha256 hex digest"):
        graph.load(bad)


def test_files_with_per_constant_digests_still_load_and_are_checked(tmp_path):
    """Model files written before the data-section digest carry the weights files' per-tensor
    map (``minitorch_edge.sha256``); they load, and a changed byte names its tensor."""
    model, x = _small()
    path = str(tmp_path / "m.mte")
    g = mte.export_model(model, x, path)
    header, data = _header_and_data(_bytes(path))
    meta = header["__metadata__"]
    del meta[modelfile.DATA_DIGEST_KEY]
    from minitorch_edge.utils._format import digest
    meta["minitorch_edge.sha256"] = json.dumps({k: digest(a) for k, a in g.constants.items()})
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    old = str(tmp_path / "old.mte")
    with open(old, "wb") as f:
        f.write(len(head).to_bytes(8, "little") + head + data)
    assert np.array_equal(graph.load(old).run(x), g.run(x))
    damaged = bytearray(data)
    damaged[-1] ^= 0x80
    with open(old, "wb") as f:
        f.write(len(head).to_bytes(8, "little") + head + bytes(damaged))
    with pytest.raises(ModelFormatError, match="tensor .* do not match the sha256"):
        graph.load(old)


def test_save_is_atomic(tmp_path, monkeypatch):
    model, x = _small()
    path = str(tmp_path / "m.mte")
    g = mte.export_model(model, x, path)
    before = _bytes(path)
    monkeypatch.setattr(modelfile._ser, "_write_array", lambda f, a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        g.save(path)
    assert _bytes(path) == before
    assert os.listdir(tmp_path) == ["m.mte"]


def test_a_weights_file_is_not_a_model(tmp_path):
    path = str(tmp_path / "w.safetensors")
    mte.save({"w": mte.ones(3)}, path)
    with pytest.raises(ModelFormatError, match="not a model file"):
        graph.load(path)


# ---- malformed files --------------------------------------------------------------------------
def _parts(tmp_path):
    model, x = _small()
    path = str(tmp_path / "good.mte")
    mte.export_model(model, x, path, calibration_data=[x])
    raw = _bytes(path)
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _write(tmp_path, header, data, name="bad.mte"):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data)
    return path


def _with_graph(header, edit):
    doc = json.loads(header["__metadata__"][GRAPH_KEY])
    edit(doc)
    header = dict(header)
    header["__metadata__"] = dict(header["__metadata__"], **{GRAPH_KEY: json.dumps(doc)})
    return header


def _first_node(doc):
    return doc["nodes"][1]


MALFORMED = {
    "graph JSON is not JSON": lambda h: dict(h, __metadata__=dict(h["__metadata__"],
                                                                  **{GRAPH_KEY: "{nodes"})),
    "a key missing": lambda h: _with_graph(h, lambda d: d.pop("values")),
    "newer version": lambda h: _with_graph(h, lambda d: d.update(version=2)),
    "dangling reference": lambda h: _with_graph(
        h, lambda d: _first_node(d)["inputs"].__setitem__(0, "nowhere")),
    "cycle": lambda h: _with_graph(h, lambda d: d["nodes"].reverse()),
    "unknown op": lambda h: _with_graph(h, lambda d: _first_node(d).update(op="Frobnicate")),
    "duplicate value": lambda h: _with_graph(h, lambda d: d["values"].append(d["values"][0])),
    "bad dtype": lambda h: _with_graph(h, lambda d: d["values"][0].__setitem__(2, "complex64")),
    "negative dim": lambda h: _with_graph(h, lambda d: d["values"][0].__setitem__(1, [-1])),
    "shape mismatch with the ops": lambda h: _with_graph(
        h, lambda d: [v.__setitem__(1, [7, 7]) for v in d["values"] if v[0] == "output"]),
    "attribute of a bad type": lambda h: _with_graph(
        h, lambda d: _first_node(d)["attrs"].update(strides={"a": 1})),
    "wrong attribute value": lambda h: _with_graph(
        h, lambda d: _first_node(d)["attrs"].update(act_min=300)),
    "nested lists": lambda h: _with_graph(
        h, lambda d: _first_node(d)["attrs"].update(pads=[[1]])),
    "a tensor that is no value": lambda h: dict(h, extra=dict(h[next(
        k for k in h if k != "__metadata__")])),
    "tensor shape disagrees": lambda h: _with_graph(
        h, lambda d: [v.__setitem__(1, v[1] + [1]) for v in d["values"]
                      if v[0] in h and v[1]][:1]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_graphs_give_model_format_errors(tmp_path, case):
    header, data = _parts(tmp_path)
    path = _write(tmp_path, MALFORMED[case](header), data)
    with pytest.raises(ModelFormatError):
        graph.load(path)


def test_truncated_and_padded_files(tmp_path):
    header, data = _parts(tmp_path)
    for cut in (0, 4, 100, len(data) - 1):
        path = _write(tmp_path, header, data[:cut] if cut else b"")
        with pytest.raises(ModelFormatError):
            graph.load(path)
    with pytest.raises(ModelFormatError):
        graph.load(_write(tmp_path, header, data + b"\0" * 8))


def test_byte_mutations_never_raise_anything_else(tmp_path):
    """Deterministic fuzzing: 300 files, each with a few bytes flipped, inserted or cut."""
    model, x = _small()
    good = str(tmp_path / "good.mte")
    mte.export_model(model, x, good, calibration_data=[x])
    raw = bytearray(_bytes(good))
    n = int.from_bytes(raw[:8], "little")
    rng = np.random.default_rng(1)
    path = str(tmp_path / "mut.mte")
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        b = bytearray(raw)
        for _ in range(rng.integers(1, 4)):
            # mostly inside the header (where the structure is), sometimes in the data
            pos = int(rng.integers(0, 8 + n if rng.random() < 0.9 else len(b)))
            kind = rng.integers(0, 3)
            if kind == 0:
                b[pos] = int(rng.integers(0, 256))
            elif kind == 1:
                b[pos:pos] = bytes([int(rng.integers(0, 256))])
            else:
                del b[pos]
        with open(path, "wb") as f:
            f.write(bytes(b))
        try:
            graph.load(path)
            outcomes["ok"] += 1
        except ModelFormatError:
            outcomes["error"] += 1
    assert outcomes["error"] > 200
