"""save/load: exact round trips, safetensors interop, atomic writes and a malformed-file corpus."""
import functools
import io
import json
import math
import os
import random
import re
import struct
import tracemalloc
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minitorch_edge as mte
from minitorch_edge.nn.parameter import Parameter
from minitorch_edge.utils import ModelFormatError, load, save
from minitorch_edge.utils import serialization as ser

DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64]


def _array(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    if dtype is np.bool_:
        raw = raw % 2
    return raw.view(dtype).reshape(shape)          # random bits: NaN payloads, -0.0, subnormals


def _same(a, b, where="obj"):
    """Exact equality: same types all the way down, bit-exact arrays."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, mte.Tensor):
        assert a.requires_grad == b.requires_grad, where
        _same(a._data, b._data, where)
    elif isinstance(a, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape}"
        assert a.tobytes() == b.tobytes(), f"{where}: values differ"
    elif isinstance(a, dict):
        assert list(a) == list(b) and [type(k) for k in a] == [type(k) for k in b], where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b and repr(a) == repr(b), f"{where}: {a!r} != {b!r}"


def _roundtrip(obj, tmp_path):
    path = tmp_path / "obj.mte"
    save(obj, path)
    out = load(path)
    _same(obj, out)
    return out, path


# ---- round trips --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5,), (2, 3, 4)], ids=str)
def test_roundtrip_every_dtype_and_shape(tmp_path, dtype, shape):
    t = mte.Tensor._make(_array(dtype, shape))
    out, _ = _roundtrip(t, tmp_path)
    assert out._data.flags.writeable and out._data.flags.c_contiguous
    out._data[...] = 0                             # a writable copy, not a view of the file
    assert load(tmp_path / "obj.mte")._data.tobytes() == t._data.tobytes()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_non_contiguous_tensors_are_written_contiguously(tmp_path, dtype):
    base = _array(dtype, (4, 6, 5), seed=1)
    views = {"t": base.transpose(2, 0, 1), "step": base[::2, 1::3, ::-1],
             "bcast": np.broadcast_to(base[0, 0], (3, 5)),
             "big_endian": base.astype(base.dtype.newbyteorder(">"))}
    sd = {k: mte.Tensor._make(v) for k, v in views.items()}
    out = load(_roundtrip_path(sd, tmp_path))
    for k, v in views.items():
        assert out[k]._data.dtype == np.dtype(dtype) and out[k]._data.shape == v.shape
        assert out[k]._data.tobytes() == np.ascontiguousarray(v).astype(dtype).tobytes(), k


def _roundtrip_path(obj, tmp_path, name="obj.mte"):
    path = tmp_path / name
    save(obj, path)
    return path


def _checkpoint():
    mte.manual_seed(0)
    model = mte.nn.Sequential(mte.nn.Linear(3, 4), mte.nn.ReLU(), mte.nn.Linear(4, 2))
    opt = mte.optim.Adam(model.parameters(), lr=0.01, betas=(0.9, 0.99))
    sched = mte.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    model(mte.randn(5, 3)).sum().backward()
    opt.step()
    sched.step()
    return {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "rng": {"mte": mte.get_rng_state(), "numpy": np.random.get_state(),
                "python": random.getstate()},
        "epoch": 3, "step": 2 ** 70, "loss": 0.125, "best": math.inf, "worst": -math.inf,
        "nan": math.nan, "neg_zero": -0.0, "name": "run/ü.1", "none": None, "flag": False,
        "history": [[1, 2.5, "a"], (), [], {}, {1: "one", "1": "str one", 2.5: None, None: 0,
                                               True: "bool key"}],
        "np_scalars": [np.float32(1.5), np.int64(-3), np.bool_(True)],
        "param": Parameter(mte.ones(2)), "leaf": mte.zeros(3, requires_grad=True),
    }


def test_nested_checkpoint_roundtrips_exactly(tmp_path):
    ck = _checkpoint()
    assert any(isinstance(k, int) for k in ck["optimizer"]["state"])
    out, path = _roundtrip(ck, tmp_path)
    assert isinstance(out["param"], Parameter) and out["param"].requires_grad
    # the state loads back into fresh objects
    model = mte.nn.Sequential(mte.nn.Linear(3, 4), mte.nn.ReLU(), mte.nn.Linear(4, 2))
    model.load_state_dict(out["model"])
    opt = mte.optim.Adam(model.parameters(), lr=0.5)
    opt.load_state_dict(out["optimizer"])
    assert opt.param_groups[0]["lr"] == ck["optimizer"]["param_groups"][0]["lr"]
    g = mte.Generator()
    g.set_state(out["rng"]["mte"])
    mte.set_rng_state(ck["rng"]["mte"])
    assert np.array_equal(mte.randn(4, generator=g)._data, mte.randn(4)._data)


def test_key_clashes_get_distinct_names(tmp_path):
    obj = {"a.b": mte.ones(1), "a": {"b": mte.zeros(1)}, 0: [mte.ones(2)], "0": {0: mte.zeros(2)},
           "__metadata__": mte.ones(3)}
    _, path = _roundtrip(obj, tmp_path)
    names = [k for k in _read_header(path) if k != "__metadata__"]
    assert len(names) == len(set(names)) == 5


def test_flat_state_dict_keeps_order_and_names(tmp_path):
    sd = OrderedDict((k, mte.randn(2)) for k in ["z", "a", "m.weight", "b"])
    out, path = _roundtrip(sd, tmp_path)
    assert list(out) == ["z", "a", "m.weight", "b"] and type(out) is OrderedDict
    assert set(_read_header(path)) == {"__metadata__", "z", "a", "m.weight", "b"}


def test_file_objects(tmp_path):
    buf = io.BytesIO()
    ck = _checkpoint()
    save(ck, buf)
    buf.seek(0)
    _same(ck, load(buf))


def test_layout_is_padded_and_aligned(tmp_path):
    sd = {"u": mte.Tensor._make(np.arange(3, dtype=np.uint8)), "d": mte.randn(3).double(),
          "h": mte.randn(5).half()}
    path = _roundtrip_path(sd, tmp_path)
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    assert n % 8 == 0 and raw[8 + n - 1:8 + n] in (b" ", b"}")
    for info in (v for k, v in _read_header(path).items() if k != "__metadata__"):
        size = np.dtype(ser._CODES[info["dtype"]]).itemsize
        assert (8 + n + info["data_offsets"][0]) % size == 0


def test_map_location_and_weights_only(tmp_path):
    path = _roundtrip_path(mte.ones(2), tmp_path)
    for loc in (None, "cpu", mte.device("cpu")):
        assert load(path, map_location=loc, weights_only=False).shape == (2,)
    for loc in ("cuda", "cuda:0", {"cuda:0": "cpu"}, lambda s, l: s):
        with pytest.raises(ValueError, match="map_location"):
            load(path, map_location=loc)


def test_unsupported_objects_raise_before_writing(tmp_path):
    path = _roundtrip_path({"ok": 1}, tmp_path)
    before = path.read_bytes()
    bad = [{"f": len}, {"s": {1, 2}}, {(1, 2): 3}, {"c": 1j}, {"a": np.zeros(2, complex)},
           {"t": mte.Tensor._make(np.zeros(2, np.uint32))}]
    for obj in bad:
        with pytest.raises(TypeError, match=r"save: obj"):
            save(obj, path)
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        save({"loop": loop}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["obj.mte"]


def test_oversized_header_is_refused_at_save(tmp_path, monkeypatch):
    monkeypatch.setattr(ser, "MAX_HEADER_BYTES", 1000)
    with pytest.raises(ValueError, match="store long number lists as Tensors"):
        save({"history": list(range(1000))}, tmp_path / "h.st")
    assert os.listdir(tmp_path) == []


def test_module_uses_no_pickle():
    source = open(ser.__file__).read()
    assert not re.search(r"^\s*(import|from)\s+(c?pickle|dill|marshal|shelve)", source, re.M)


# ---- safetensors interop ------------------------------------------------------------------------

def test_safetensors_reads_our_state_dict(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    sd = {f"layer.{np.dtype(d).name}": mte.Tensor._make(_array(d, (2, 3), seed=i))
          for i, d in enumerate(DTYPES)}
    sd["scalar"], sd["empty"] = mte.tensor(2.5), mte.zeros(0, 4)
    theirs = sn.load_file(str(_roundtrip_path(sd, tmp_path)))
    assert set(theirs) == set(sd)
    for k, t in sd.items():
        assert theirs[k].dtype == t._data.dtype and theirs[k].shape == t._data.shape
        assert theirs[k].tobytes() == t._data.tobytes(), k


def test_we_read_safetensors_numpy_files(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    arrays = {f"w.{np.dtype(d).name}": _array(d, (3, 2), seed=i) for i, d in enumerate(DTYPES)}
    arrays["s"], arrays["e"] = np.array(7, np.int64), np.zeros((2, 0), np.float32)
    sn.save_file(arrays, str(tmp_path / "np.safetensors"), metadata={"format": "np"})
    ours = load(tmp_path / "np.safetensors")
    assert list(ours) == sorted(arrays)
    for k, a in arrays.items():
        assert isinstance(ours[k], mte.Tensor) and ours[k]._data.dtype == a.dtype
        assert ours[k]._data.shape == a.shape and ours[k]._data.tobytes() == a.tobytes(), k


def test_we_read_safetensors_torch_files(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    g = torch.Generator().manual_seed(0)
    tensors = {"fc.weight": torch.randn(4, 3, generator=g), "fc.bias": torch.randn(4, generator=g),
               "bn.num_batches_tracked": torch.tensor(5), "half": torch.randn(2, 2).half(),
               "mask": torch.rand(3, generator=g) > 0.5, "ids": torch.arange(6, dtype=torch.int32),
               "t": torch.randn(3, 5, generator=g).t().contiguous()}
    st_torch.save_file(tensors, str(tmp_path / "pt.safetensors"))
    ours = load(tmp_path / "pt.safetensors")
    assert list(ours) == sorted(tensors)
    for k, t in tensors.items():
        assert np.array_equal(ours[k]._data, t.numpy()) and ours[k]._data.dtype == t.numpy().dtype
    model = mte.nn.Linear(3, 4)
    model.load_state_dict({"weight": ours["fc.weight"], "bias": ours["fc.bias"]})
    bf = torch.tensor([1.5, -2.25, 3.1e5], dtype=torch.bfloat16)     # BF16 loads (ml_dtypes)
    st_torch.save_file({"b": bf}, str(tmp_path / "bf.st"))
    got = load(tmp_path / "bf.st")["b"]
    assert got.dtype == mte.bfloat16 and got.float().tolist() == bf.float().tolist()


def test_torch_pickle_files_are_refused(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(2)}, tmp_path / "ck.pt")
    with pytest.raises(ModelFormatError, match="pickle"):
        load(tmp_path / "ck.pt")


def test_uint32_loads_as_ndarray_but_not_as_tensor(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    sn.save_file({"k": np.arange(4, dtype=np.uint32)}, str(tmp_path / "u.st"))
    with pytest.raises(ModelFormatError, match='tensor "k": dtype U32 has no minitorch_edge'):
        load(tmp_path / "u.st")
    _roundtrip({"k": np.arange(4, dtype=np.uint32)}, tmp_path)


# ---- atomic writes ------------------------------------------------------------------------------

def _fail_after_half(monkeypatch, exc):
    real = ser._write_array

    def half_then_fail(f, array):
        f.write(b"\x00" * max(1, array.nbytes // 2))
        raise exc
    monkeypatch.setattr(ser, "_write_array", half_then_fail)
    return real


@pytest.mark.parametrize("failure", ["write", "fsync", "replace", "interrupt"])
def test_failed_save_leaves_old_file_and_no_temp(tmp_path, monkeypatch, failure):
    path = _roundtrip_path({"w": mte.ones(1000)}, tmp_path, "model.safetensors")
    before = path.read_bytes()
    os.chmod(path, 0o640)
    if failure == "write":
        _fail_after_half(monkeypatch, OSError("disk full"))
    elif failure == "interrupt":
        _fail_after_half(monkeypatch, KeyboardInterrupt())
    else:
        def broken(*args):
            raise OSError(f"{failure} failed")
        monkeypatch.setattr(ser.os, failure, broken)
    with pytest.raises((OSError, KeyboardInterrupt)):
        save({"w": mte.zeros(1000), "x": mte.ones(5)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.safetensors"]
    save({"w": mte.zeros(3)}, path)                 # a later save works and keeps the mode
    assert np.array_equal(load(path)["w"]._data, np.zeros(3, np.float32))
    assert os.stat(path).st_mode & 0o777 == 0o640 and os.listdir(tmp_path) == ["model.safetensors"]


def test_failed_first_save_leaves_nothing(tmp_path, monkeypatch):
    _fail_after_half(monkeypatch, OSError("disk full"))
    with pytest.raises(OSError):
        save({"w": mte.ones(10)}, tmp_path / "new.st")
    assert os.listdir(tmp_path) == []


def test_save_through_symlink_keeps_the_link(tmp_path):
    target = _roundtrip_path(mte.ones(2), tmp_path, "real.st")
    (tmp_path / "link.st").symlink_to(target)
    save(mte.zeros(3), tmp_path / "link.st")
    assert (tmp_path / "link.st").is_symlink() and load(target).shape == (3,)


# ---- malformed files ----------------------------------------------------------------------------

def _read_header(path):
    raw = open(path, "rb").read()
    return json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])


def _file(header, data=b"", length=None):
    """A file from a header (dict or raw text/bytes) and a data section."""
    if isinstance(header, dict):
        header = json.dumps(header)
    if isinstance(header, str):
        header = header.encode()
    n = len(header) if length is None else length
    return struct.pack("<Q", n) + header + data


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def _valid_bytes():
    buf = io.BytesIO()
    save({"a": mte.ones(2, 3), "b": mte.tensor([1, 2], dtype=mte.int64)}, buf)
    return buf.getvalue()


def _skeleton(structure, **entries):
    meta = {ser._VERSION_KEY: "1", ser._STRUCTURE_KEY: json.dumps(structure)}
    return {"__metadata__": meta, **entries}


F8 = b"\x00" * 8
CORPUS = {
    "empty": (b"", "has 0 bytes"),
    "truncated length": (b"\x10\x00\x00", "has 3 bytes"),
    "truncated data": (_valid_bytes()[:-5], "truncated file"),
    "header past end": (_file({}, length=100), "header length 100 runs past the end"),
    "huge header length": (_file({}, length=2 ** 60), "over the cap"),
    "non-json": (_file("{not json"), "header is not valid JSON"),
    "non-utf8": (_file(b'{"a\xff": 1}'), "not valid UTF-8"),
    "not an object": (_file("[1, 2]"), "header is a JSON list, not an object"),
    "deep nesting": (_file("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    "duplicate keys": (_file('{"a": %s, "a": %s}' % (json.dumps(_entry()), json.dumps(_entry())),
                             F8), 'key "a" twice'),
    "nan constant": (_file('{"__metadata__": {"x": NaN}}'), "contains NaN"),
    "unknown dtype": (_file({"w": _entry(dtype="F128")}, F8), "unknown dtype 'F128'"),
    "float8": (_file({"w": _entry(dtype="F8_E4M3", offsets=(0, 2))}, F8[:2]), "float8"),
    "bf16 length": (_file({"w": _entry(dtype="BF16")}, F8), "of BF16 needs 4"),
    "length mismatch": (_file({"fc.weight": _entry("F32", (2, 4), (0, 24))}, b"\x00" * 24),
                        'tensor "fc.weight": data_offsets [0, 24] hold 24 bytes but shape '
                        '[2, 4] of F32 needs 32'),
    "overlap": (_file({"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(4, 12))}, F8 + F8[:4]),
                'overlap tensor "a"'),
    "gap": (_file({"a": _entry(offsets=(0, 8)), "b": _entry(offsets=(12, 20))}, b"\x00" * 20),
            "gap of 4 bytes"),
    "not starting at 0": (_file({"a": _entry(offsets=(4, 12))}, b"\x00" * 12), "gap of 4 bytes"),
    "trailing bytes": (_file({"a": _entry()}, F8 + b"xyz"), "3 trailing bytes"),
    "end past data": (_file({"a": _entry(shape=(4,), offsets=(0, 16))}, F8), "end past the data"),
    "negative dim": (_file({"a": _entry(shape=(-1, 2))}, F8), "negative dim"),
    "overflowing dims": (_file({"a": _entry(shape=(2 ** 40, 2 ** 40), offsets=(0, 2 ** 82))}, F8),
                         "overflows"),
    "huge claim": (_file({"a": _entry(shape=(2 ** 30, 2 ** 10), offsets=(0, 2 ** 42))}, F8),
                   "end past the data section"),
    "too many dims": (_file({"a": _entry(shape=[1] * 100, offsets=(0, 4))}, F8[:4]), "dims"),
    "dtype not str": (_file({"a": _entry(dtype=5)}, F8), "dtype must be a string"),
    "shape not list": (_file({"a": {**_entry(), "shape": "2"}}, F8), "shape must be a list"),
    "float dim": (_file({"a": {**_entry(), "shape": [2.0]}}, F8), "shape must be a list of ints"),
    "bool dim": (_file({"a": {**_entry(), "shape": [True, 2]}}, F8), "list of ints"),
    "one offset": (_file({"a": {**_entry(), "data_offsets": [0]}}, F8), "two ints"),
    "float offset": (_file({"a": _entry(offsets=(0, 8.0))}, F8), "two ints"),
    "reversed offsets": (_file({"a": _entry(shape=(0,), offsets=(8, 0))}, F8), "begin <= end"),
    "entry is a list": (_file({"a": [1, 2]}, F8), "entry is a JSON list"),
    "extra key": (_file({"a": {**_entry(), "strides": [1]}}, F8), "needs exactly"),
    "missing key": (_file({"a": {"dtype": "F32", "shape": [2]}}, F8), "needs exactly"),
    "metadata not dict": (_file({"__metadata__": [1]}), "__metadata__ must be an object"),
    "metadata value int": (_file({"__metadata__": {"k": 1}}), "mapping strings to strings"),
    "bool byte 2": (_file({"m": _entry("BOOL", (2,), (0, 2))}, b"\x01\x02"), "0 or 1"),
    "torch zip": (b"PK\x03\x04" + b"\x00" * 60, "pickle"),
    "skeleton missing tensor": (_file(_skeleton({"tensor": "zz"}, a=_entry()), F8), '"zz"'),
    "skeleton unused tensor": (_file(_skeleton([], a=_entry()), F8), "not in the structure"),
    "skeleton twice": (_file(_skeleton([{"tensor": "a"}, {"tensor": "a"}], a=_entry()), F8),
                       "twice"),
    "skeleton bad node": (_file(_skeleton({"set": [1]})), "unknown node"),
    "skeleton bad json": (_file({"__metadata__": {ser._VERSION_KEY: "1",
                                                  ser._STRUCTURE_KEY: "{"}}), "not valid JSON"),
    "skeleton duplicate key": (_file(_skeleton({"dict": [[1, 2], [1, 3]]})), "appears twice"),
    "skeleton bad float": (_file(_skeleton({"float": "1e999"})), "not nan/inf"),
    "skeleton float list": (_file(_skeleton({"float": [1]})), "not nan/inf"),
    "skeleton bad flag": (_file(_skeleton({"tensor": "a", "parameter": 1}, a=_entry()), F8),
                          "true/false"),
    "skeleton grad on int": (_file(_skeleton({"tensor": "a", "requires_grad": True},
                                             a=_entry("I32")), F8), "only floating-point"),
    "skeleton scalar shape": (_file(_skeleton({"numpy_scalar": "a"}, a=_entry()), F8),
                              "must have shape []"),
    "newer version": (_file({"__metadata__": {ser._VERSION_KEY: "2", ser._STRUCTURE_KEY: "[]"}}),
                      "newer version"),
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_malformed_file_raises_model_format_error(tmp_path, case):
    raw, message = CORPUS[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError) as info:
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message in str(info.value), str(info.value)
    assert str(info.value).startswith(str(path)), "the message names the file"
    assert peak < 2 * len(raw) + 2_000_000, f"peak {peak} bytes while rejecting"


def test_every_single_byte_flip_and_truncation_is_handled():
    raw = _valid_bytes()
    for pos in range(len(raw)):
        for mask in (0x01, 0x80, 0xFF):
            _load_mutated(raw[:pos] + bytes([raw[pos] ^ mask]) + raw[pos + 1:])
        _load_mutated(raw[:pos])


def _load_mutated(raw):
    try:
        out = load(io.BytesIO(raw))
    except ModelFormatError:
        return None
    return out


MUTATION = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10 ** 6), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 10 ** 6), st.integers(0, 255)),
    st.tuples(st.just("delete"), st.integers(0, 10 ** 6), st.integers(1, 16)),
    st.tuples(st.just("truncate"), st.integers(0, 10 ** 6), st.just(0)))


@functools.lru_cache(maxsize=None)
def _valid_files():
    buf1, buf2 = io.BytesIO(), io.BytesIO()
    save(_checkpoint(), buf1)
    save({"mask": mte.tensor([True, False]), "x": mte.zeros(0), "s": mte.tensor(1.5)}, buf2)
    return [buf1.getvalue(), buf2.getvalue(), _valid_bytes()]


@settings(max_examples=max(300, settings.default.max_examples))
@given(which=st.integers(0, 2), mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_mutated_files_load_or_raise_model_format_error(which, mutations):
    raw = bytearray(_valid_files()[which])
    for op, pos, value in mutations:
        pos %= len(raw) + 1
        if op == "flip" and pos < len(raw):
            raw[pos] ^= value
        elif op == "insert":
            raw[pos:pos] = bytes([value])
        elif op == "delete":
            del raw[pos:pos + value]
        else:
            del raw[pos:]
    _load_mutated(bytes(raw))


SKELETON_WORDS = ["tensor", "ndarray", "numpy_scalar", "tuple", "dict", "ordered_dict", "float",
                  "requires_grad", "parameter", "a", "b", "nan", "x"]
SKELETONS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(SKELETON_WORDS)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(SKELETON_WORDS), inner, max_size=3),
    max_leaves=20)


@settings(max_examples=max(300, settings.default.max_examples))
@given(skeleton=SKELETONS)
def test_random_skeletons_load_or_raise_model_format_error(skeleton):
    raw = _file(_skeleton(skeleton, a=_entry(offsets=(0, 8)), b=_entry("I64", (), (8, 16))),
                b"\x00" * 16)
    _load_mutated(raw)
