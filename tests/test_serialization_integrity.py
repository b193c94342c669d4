"""The files a user trusts: every tensor's sha256 digest is recorded at save and checked at load
(checkpoints and .mte model files), files from other tools still load, and a file that is no
safetensors container at all is named as such."""
import hashlib
import json
import struct

import numpy as np
import pytest

import minitorch_edge as mte
from minitorch_edge import graph, models
from minitorch_edge.utils import ModelFormatError, load, save
from minitorch_edge.utils import serialization as ser

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def _metadata(path):
    raw = open(path, "rb").read()
    return json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])["__metadata__"]


def _overwrite_tail(path, n=100, byte=0xFF):
    """What the issue did: the last `n` bytes of the file set to `byte`."""
    raw = bytearray(open(path, "rb").read())
    raw[-n:] = bytes([byte]) * n
    open(path, "wb").write(bytes(raw))


def _model_state():
    mte.manual_seed(0)
    return models.SmallCNN(in_channels=1, num_classes=10, input_size=8).state_dict()


def test_save_records_the_sha256_of_each_tensors_stored_bytes(tmp_path):
    state = {"w": mte.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
             "b": mte.tensor(np.array([1, -2], dtype=np.int64)), "e": mte.zeros(0)}
    path = tmp_path / "s.safetensors"
    save(state, path)
    digests = json.loads(_metadata(path)[ser._DIGEST_KEY])
    assert set(digests) == {"w", "b", "e"}
    assert digests["w"] == hashlib.sha256(np.arange(6, dtype="<f4").tobytes()).hexdigest()
    assert digests["b"] == hashlib.sha256(np.array([1, -2], dtype="<i8").tobytes()).hexdigest()
    assert digests["e"] == hashlib.sha256(b"").hexdigest()


def test_safetensors_reads_a_file_with_digests(tmp_path):
    state = _model_state()
    path = str(tmp_path / "m.safetensors")
    save(state, path)
    theirs = safetensors_numpy.load_file(path)
    assert sorted(theirs) == sorted(state)
    for name, t in state.items():
        assert np.array_equal(theirs[name], t.numpy()), name


def test_tail_overwritten_with_0xff_is_refused_naming_the_tensor(tmp_path):
    state = _model_state()
    path = str(tmp_path / "ckpt.safetensors")
    save({"model": state, "epoch": 3}, path)
    header = json.loads(open(path, "rb").read()[8:8 + struct.unpack(
        "<Q", open(path, "rb").read(8))[0]])
    last = max((k for k in header if k != "__metadata__"),
               key=lambda k: header[k]["data_offsets"][1])
    _overwrite_tail(path)
    with pytest.raises(ModelFormatError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(path) and f'tensor "{last}"' in message, message
    assert "do not match the sha256 digest" in message and "verify=False" in message, message
    out = load(path, verify=False)                 # the user can still look at it
    assert out["epoch"] == 3
    assert np.isnan(out["model"][last[len("model."):]].numpy()).any()


@pytest.mark.parametrize("position", ["first byte", "middle", "last byte"])
def test_one_flipped_data_bit_is_refused(tmp_path, position):
    state = {"a": mte.ones(64), "b": mte.zeros(3, 5)}
    path = str(tmp_path / "s.safetensors")
    save(state, path)
    raw = bytearray(open(path, "rb").read())
    data_start = 8 + struct.unpack("<Q", raw[:8])[0]
    pos = {"first byte": data_start, "middle": (data_start + len(raw)) // 2,
           "last byte": len(raw) - 1}[position]
    raw[pos] ^= 0x04
    open(path, "wb").write(bytes(raw))
    with pytest.raises(ModelFormatError, match=r'tensor "[ab]" .*sha256'):
        load(path)


def test_files_of_other_tools_without_digests_load(tmp_path):
    path = str(tmp_path / "theirs.safetensors")
    arrays = {"x": np.arange(5, dtype=np.float32), "y": np.ones((2, 2), dtype=np.int32)}
    safetensors_numpy.save_file(arrays, path, metadata={"format": "np"})
    out = load(path)
    assert sorted(out) == ["x", "y"]
    assert np.array_equal(out["x"].numpy(), arrays["x"])
    assert np.array_equal(out["y"].numpy(), arrays["y"])


def _with_metadata(path, **changes):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header["__metadata__"].update(changes)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])


@pytest.mark.parametrize("digests,message", [
    ('{"a": "00"}', "64 lower-case hex digits"),
    ('["a"]', "must map tensor names"),
    ('{"a": "%s"}' % ("0" * 64), 'has no digest for [b]'),
    ('{"a": "%s", "b": "%s", "c": "%s"}' % (("0" * 64,) * 3), "names missing tensors [c]"),
    ("{", "is not valid JSON"),
])
def test_an_edited_digest_table_is_refused(tmp_path, digests, message):
    path = str(tmp_path / "s.safetensors")
    save({"a": mte.ones(2), "b": mte.ones(3)}, path)
    _with_metadata(path, **{ser._DIGEST_KEY: digests})
    with pytest.raises(ModelFormatError) as info:
        load(path)
    assert message in str(info.value), str(info.value)
    assert len(load(path, verify=False)) == 2


def test_a_wrong_digest_is_refused(tmp_path):
    path = str(tmp_path / "s.safetensors")
    save({"a": mte.ones(2)}, path)
    _with_metadata(path, **{ser._DIGEST_KEY: json.dumps({"a": "f" * 64})})
    with pytest.raises(ModelFormatError, match='tensor "a"'):
        load(path)
    assert np.array_equal(load(path, verify=False)["a"].numpy(), np.ones(2, np.float32))


NOT_MODEL_FILES = {
    "empty": (b"", "the file has 0 bytes"),
    "text": (b"epochs: 10\nlr: 0.01\n" * 3, "it starts with the text 'epochs: '"),
    "json text": (b'{"epochs": 10}\n', "it starts with the text '{\"epochs'"),
    "lines of text": (b"a\nb\nc\nd\ne\nf\n", "it starts with the text 'a\\nb\\nc\\nd\\n'"),
    "random bytes": (np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
                     "read as a header length of"),
    "png": (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "read as a header length of"),
    "small length, binary": (struct.pack("<Q", 16) + b"\x00\x01" * 20, "no JSON header"),
    "small length past end, binary": (struct.pack("<Q", 4000) + b"\x07" * 20, "no JSON header"),
    "pickle": (b"\x80\x04\x95" + b"\x00" * 60, "pickle"),
}


@pytest.mark.parametrize("case", list(NOT_MODEL_FILES))
def test_a_file_that_is_no_container_is_named_as_such(tmp_path, case):
    raw, why = NOT_MODEL_FILES[case]
    path = str(tmp_path / "notes.txt")
    open(path, "wb").write(raw)
    with pytest.raises(ModelFormatError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"{path} is not a model file (safetensors container): "), message
    assert why in message, message
    with pytest.raises(ModelFormatError, match="is not a model file"):
        graph.load(path)


def test_a_truncated_model_file_is_still_called_truncated(tmp_path):
    path = str(tmp_path / "s.safetensors")
    save({"a": mte.ones(1000)}, path)
    raw = open(path, "rb").read()
    open(path, "wb").write(raw[:30])
    with pytest.raises(ModelFormatError) as info:
        load(path)
    assert "is not a model file" not in str(info.value)
    assert "truncated" in str(info.value)


# ---- the .mte model file ------------------------------------------------------------------------

def _exported(tmp_path):
    mte.manual_seed(0)
    model = models.SmallCNN(in_channels=1, num_classes=10, input_size=8).eval()
    x = np.random.default_rng(0).random((2, 1, 8, 8), dtype=np.float32)
    path = str(tmp_path / "m.mte")
    g = mte.export_model(model, x, path)
    return path, g, x


def test_model_files_carry_digests_and_the_loader_checks_them(tmp_path):
    path, g, x = _exported(tmp_path)
    from minitorch_edge.graph.modelfile import DATA_DIGEST_KEY
    meta = _metadata(path)
    assert ser._DIGEST_KEY not in meta and len(meta[DATA_DIGEST_KEY]) == 64  # one, for the data
    assert np.array_equal(graph.load(path).run(x), g.run(x))
    _overwrite_tail(path)
    with pytest.raises(ModelFormatError, match=r"sha256 digest") as info:
        graph.load(path)
    assert str(info.value).startswith(path)
    graph.load(path, verify=False)                 # still a well-formed graph


def test_the_c_runtime_accepts_the_digest_key(tmp_path):
    pytest.importorskip("cffi")
    from minitorch_edge import runtime
    path, g, x = _exported(tmp_path)
    try:
        model = runtime.load(path, threads=1)
    except runtime.LibraryNotFoundError:
        pytest.skip("the C runtime library is not built")
    with model:
        out = model(x)
    np.testing.assert_allclose(out, g.run(x), rtol=1e-5, atol=1e-5)
