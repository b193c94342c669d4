"""Saving and loading: ``save(obj, path)`` / ``load(path)`` in a safetensors-compatible file.

The file has the safetensors layout (https://huggingface.co/docs/safetensors):

    8 bytes   N, the length of the header, unsigned little-endian
    N bytes   the header: UTF-8 JSON, padded with spaces to a multiple of 8 bytes
    the rest  the tensors' raw little-endian bytes, back to back, without gaps

    {"__metadata__": {"str": "str", ...},
     "fc.weight": {"dtype": "F32", "shape": [4, 3], "data_offsets": [0, 48]}, ...}

Offsets count from the start of the data section. Buffers are laid out largest item size first,
then by name (as safetensors does), so each is aligned to its item size. No pickle: a file holds
numbers and JSON, so loading one can never run code.

What can be saved: a Tensor, a state dict, or a checkpoint: nested dict / OrderedDict / list /
tuple of Tensors (Parameters too), numpy arrays and scalars, int, float (nan, inf too), str,
bool, None. Dict keys may be str, int, float, bool or None.

Each tensor is stored under its path, keys and indices joined with "." (``{"optim": {"state":
{0: {"exp_avg": m}}}}`` stores ``optim.state.0.exp_avg``), with ``#2``, ``#3``, ... appended on a
clash. So a flat state dict (str -> Tensor) stores each tensor under its own key, and any
safetensors reader sees that very dict. Names alone are ambiguous (was "0" a str key, an int key
or a list index?), so the exact structure goes into ``__metadata__["minitorch_edge.structure"]``,
a JSON skeleton:

    None, true/false, ints, strings, finite floats   themselves
    [node, ...]                                       a list
    {"tuple": [node, ...]}                            a tuple
    {"dict": [[key, node], ...]}                      a dict, keys in order, each key a scalar
    {"ordered_dict": [[key, node], ...]}              an OrderedDict
    {"float": "nan" | "inf" | "-inf"}                 a float JSON cannot write
    {"tensor": name}                                  a Tensor; optional "requires_grad": true,
                                                      "parameter": true (an nn.Parameter)
    {"ndarray": name}, {"numpy_scalar": name}         a numpy array / numpy scalar

so ``load(save(x))`` gives back the same structure: key order, int keys (optimizer states),
tuples, dtypes, shapes (0-d and zero-sized too) and bit-exact values. A file without that entry
(from safetensors, say) loads as a flat dict name -> Tensor, sorted by name. A tensor that appears
twice is saved twice (the copies are not shared after loading).

Writing is atomic: a temp file in the target's folder is written, fsynced and renamed over the
target; on any error the temp file is removed and the old file stays intact.

Loading trusts nothing. The header length, the JSON (strict: no duplicate keys, no NaN), every
entry's dtype (a closed list), shape and offsets (checked arithmetic; sorted, contiguous, no gap,
no overlap, ending exactly at the end of the file) and the skeleton are validated before any
tensor memory is allocated. Every rejection raises one ``ModelFormatError`` (a ValueError) that
names the file, the tensor and the rule.
"""
import contextlib
import io
import json
import math
import os
import tempfile
from collections import OrderedDict

import numpy as np

from ..tensor import Tensor

__all__ = ["save", "load", "ModelFormatError"]

MAX_HEADER_BYTES = 100_000_000                 # safetensors' cap
_MAX_NUMEL = 2 ** 63 - 1                       # a shape's element count must fit in int64
_MAX_NDIM = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
_STRUCTURE_KEY = "minitorch_edge.structure"
_VERSION_KEY = "minitorch_edge.format_version"
_VERSION = "1"

# safetensors' dtype codes. Tensors hold the first nine; numpy arrays in a checkpoint may also be
# U16/U32/U64 (numpy's legacy RNG state is a uint32 array).
_CODES = {"BOOL": "|b1", "U8": "|u1", "I8": "|i1", "I16": "<i2", "I32": "<i4", "I64": "<i8",
          "F16": "<f2", "F32": "<f4", "F64": "<f8", "U16": "<u2", "U32": "<u4", "U64": "<u8"}
_TENSOR_CODES = ("BOOL", "U8", "I8", "I16", "I32", "I64", "F16", "F32", "F64")
_BY_KIND = {(np.dtype(v).kind, np.dtype(v).itemsize): k for k, v in _CODES.items()}
_FOREIGN = {"BF16": "bfloat16", "F8_E4M3": "float8", "F8_E5M2": "float8", "F8_E8M0": "float8",
            "F4": "float4", "F6_E2M3": "float6", "F6_E3M2": "float6", "C64": "complex64",
            "C128": "complex128"}


class ModelFormatError(ValueError):
    """A file that is not a valid minitorch_edge / safetensors file (or holds what we cannot)."""


def _q(name):
    return json.dumps(name, ensure_ascii=False)


def _short(values, limit=8):
    """``[2, 3]`` for short lists, ``[2, 3, ... (100 items)]`` for long ones."""
    if len(values) <= limit:
        return "[" + ", ".join(str(v) for v in values) + "]"
    return "[" + ", ".join(str(v) for v in values[:limit]) + f", ... ({len(values)} items)]"


# ================================================ save ===========================================

def save(obj, f):
    """Write `obj` to `f` (a path, written atomically, or a binary file object).

    As ``torch.save`` but in a safetensors-compatible file, without pickle (see the module
    docstring for what `obj` may hold). Raises TypeError, naming the place, for anything else."""
    skeleton, arrays = _flatten(obj)
    header = _header(skeleton, arrays)
    if isinstance(f, (str, bytes, os.PathLike)):
        _atomic_write(os.fsdecode(f), header, arrays)
    elif hasattr(f, "write"):
        _write_payload(f, header, arrays)
    else:
        raise TypeError(f"save: expected a path or a binary file object, got "
                        f"{type(f).__name__}")


def _flatten(obj):
    """(skeleton, [(name, code, array), ...]): the JSON skeleton and the arrays it refers to."""
    from ..nn.parameter import Parameter
    taken = {"__metadata__"}
    arrays = []
    open_containers = set()

    def leaf(kind, array, parts, where):
        code = _BY_KIND.get((array.dtype.kind, array.dtype.itemsize))
        allowed = _TENSOR_CODES if kind == "tensor" else _CODES
        if code not in allowed:
            raise TypeError(f"save: {where} is a {kind} of dtype {array.dtype}, which the format "
                            f"cannot hold; convert it to one of bool, uint8, int8, int16, int32, "
                            f"int64, float16, float32, float64")
        base = ".".join(parts) if parts else kind
        base = base.encode("utf-8", "backslashreplace").decode("utf-8")
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}#{k}"
        taken.add(name)
        arrays.append((name, code, array))
        return name

    def walk(x, parts, where):
        t = type(x)
        if x is None or t is bool or t is int or t is str:
            return x
        if t is float:
            return x if math.isfinite(x) else {"float": repr(x)}
        if isinstance(x, Tensor):
            node = {"tensor": leaf("tensor", x._data, parts, where)}
            if x.requires_grad:
                node["requires_grad"] = True
            if isinstance(x, Parameter):
                node["parameter"] = True
            return node
        if t is np.ndarray:
            return {"ndarray": leaf("ndarray", x, parts, where)}
        if isinstance(x, np.generic):
            return {"numpy_scalar": leaf("numpy scalar", np.asarray(x), parts, where)}
        if t in (dict, OrderedDict, list, tuple):
            if id(x) in open_containers:
                raise ValueError(f"save: {where} contains itself; the format holds trees only")
            open_containers.add(id(x))
            if t in (list, tuple):
                items = [walk(v, parts + [str(i)], f"{where}[{i}]") for i, v in enumerate(x)]
                node = items if t is list else {"tuple": items}
            else:
                pairs = []
                for key, v in x.items():
                    if key is not None and type(key) not in (str, int, bool, float):
                        raise TypeError(f"save: {where} has a key of type {type(key).__name__} "
                                        f"({key!r}); keys must be str, int, float, bool or None")
                    pairs.append([walk(key, [], where), walk(v, parts + [str(key)],
                                                             f"{where}[{key!r}]")])
                node = {"dict" if t is dict else "ordered_dict": pairs}
            open_containers.discard(id(x))
            return node
        raise TypeError(f"save: {where} is a {t.__name__}, which the format cannot hold; it holds "
                        f"Tensors, numpy arrays, dict/OrderedDict/list/tuple, int, float, str, "
                        f"bool and None (convert it, e.g. to a dict or a Tensor)")

    return walk(obj, [], "obj"), arrays


def _header(skeleton, arrays):
    """The header bytes, padded to a multiple of 8; orders `arrays` as they will be written."""
    arrays.sort(key=lambda e: (-np.dtype(_CODES[e[1]]).itemsize, e[0]))
    header = {"__metadata__": {_VERSION_KEY: _VERSION,
                               _STRUCTURE_KEY: json.dumps(skeleton, separators=(",", ":"))}}
    offset = 0
    for name, code, array in arrays:
        end = offset + array.size * array.dtype.itemsize
        header[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, end]}
        offset = end
    raw = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(raw) > MAX_HEADER_BYTES:
        raise ValueError(f"save: the header would take {len(raw)} bytes, over the "
                         f"{MAX_HEADER_BYTES} readers accept; store long number lists as Tensors")
    return raw + b" " * (-len(raw) % 8)


def _write_array(f, array):
    """Write one array's bytes: C order, little-endian."""
    if array.size:
        data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False)
        f.write(data.reshape(-1).view(np.uint8))


def _write_payload(f, header, arrays):
    f.write(len(header).to_bytes(8, "little"))
    f.write(header)
    for _, _, array in arrays:
        _write_array(f, array)


def _atomic_write(path, header, arrays):
    path = os.path.realpath(path)                 # a symlink keeps pointing at the new file
    folder, base = os.path.split(path)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            _write_payload(f, header, arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):            # make the rename itself durable (POSIX only)
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


# ================================================ load ===========================================

def load(f, map_location=None, weights_only=True):
    """Read what :func:`save` wrote (or any safetensors file) from a path or binary file object.

    `map_location` may be None or "cpu" (the only device); `weights_only` is accepted for
    PyTorch compatibility and changes nothing: the format holds no code, whatever its value.
    A malformed file raises :class:`ModelFormatError`."""
    if map_location is not None and str(map_location) != "cpu":
        raise ValueError(f"load: map_location={map_location!r} is not supported; minitorch_edge "
                         f"runs on 'cpu' only, so pass None or 'cpu'")
    if isinstance(f, (str, bytes, os.PathLike)):
        source = os.fsdecode(f)
        with open(source, "rb") as fh:
            return _load(fh, os.fstat(fh.fileno()).st_size, source)
    if not (hasattr(f, "read") and hasattr(f, "seek")):
        raise TypeError(f"load: expected a path or a seekable binary file object, got "
                        f"{type(f).__name__}")
    start = f.tell()
    size = f.seek(0, io.SEEK_END) - start
    f.seek(start)
    return _load(f, size, getattr(f, "name", "<file object>"))


def _load(f, size, source):
    try:
        header, header_len = _read_header(f, size)
        entries, metadata = _check_entries(header, size - 8 - header_len)
        structure = _check_structure(metadata, entries)
        arrays = {e[0]: _read_array(f, *e) for e in entries}
        if structure is None:
            return {name: Tensor._make(arrays[name]) for name in sorted(arrays)}
        return _decode(structure, _make_leaf(arrays), "obj")
    except ModelFormatError as e:
        raise ModelFormatError(f"{source}: {e}") from None


def _reject_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ModelFormatError(f"header JSON has the key {_q(key)} twice")
        out[key] = value
    return out


def _reject_constant(name):
    raise ModelFormatError(f"header JSON contains {name}, which is not JSON")


def _strict_json(text, what):
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates,
                          parse_constant=_reject_constant)
    except ModelFormatError:
        raise
    except RecursionError:
        raise ModelFormatError(f"{what} is nested too deeply") from None
    except ValueError as e:
        raise ModelFormatError(f"{what} is not valid JSON ({e})") from None


def _read_header(f, size):
    """The parsed header and its length in bytes."""
    if size < 8:
        raise ModelFormatError(f"the file has {size} bytes; it must start with an 8-byte header "
                               f"length (truncated or empty file?)")
    head = f.read(8)
    if len(head) != 8:
        raise ModelFormatError("the file ended inside the 8-byte header length")
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER_BYTES or n > size - 8:
        problem = (f"is over the cap of {MAX_HEADER_BYTES} bytes" if n > MAX_HEADER_BYTES else
                   f"runs past the end of the file ({size} bytes; truncated file?)")
        if head[:4] == b"PK\x03\x04" or head[:1] == b"\x80":
            problem += ("; this looks like a torch.save / pickle file, which minitorch_edge never "
                        "loads (pickle can run code): in PyTorch, convert it with "
                        "safetensors.torch.save_file(state_dict, path)")
        raise ModelFormatError(f"header length {n} {problem}")
    raw = f.read(n)
    if len(raw) != n:
        raise ModelFormatError("the file ended inside the header (it changed while reading?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelFormatError(f"header is not valid UTF-8 ({e})") from None
    return _strict_json(text, "header"), n


def _check_entries(header, data_len):
    """Validate every entry; return ([(name, code, shape, begin, end)] in file order, metadata)."""
    if not isinstance(header, dict):
        raise ModelFormatError(f"header is a JSON {type(header).__name__}, not an object")
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise ModelFormatError("__metadata__ must be an object mapping strings to strings")
    entries = []
    for name, info in header.items():
        if name != "__metadata__":
            entries.append(_check_entry(f"tensor {_q(name)}", name, info, data_len))
    entries.sort(key=lambda e: (e[3], e[4]))
    position, previous = 0, None
    for name, _, _, begin, end in entries:
        where = f"tensor {_q(name)}: data_offsets [{begin}, {end}]"
        if begin > position:
            gap = "the data section" if previous is None else f"tensor {_q(previous)}"
            raise ModelFormatError(f"{where} leave a gap of {begin - position} bytes after "
                                   f"{gap}; buffers must start at 0 and be contiguous")
        if begin < position:
            raise ModelFormatError(f"{where} overlap tensor {_q(previous)}, which ends at "
                                   f"{position}")
        position, previous = end, name
    if position != data_len:
        raise ModelFormatError(f"the data section has {data_len} bytes but the tensors use "
                               f"{position}: {data_len - position} trailing bytes")
    return entries, metadata


def _check_entry(where, name, info, data_len):
    if not isinstance(info, dict):
        raise ModelFormatError(f"{where}: entry is a JSON {type(info).__name__}, not an object")
    if set(info) != {"dtype", "shape", "data_offsets"}:
        raise ModelFormatError(f"{where}: entry has keys {sorted(info)}; it needs exactly "
                               f"['data_offsets', 'dtype', 'shape']")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(code, str):
        raise ModelFormatError(f"{where}: dtype must be a string, got {code!r}")
    if code not in _CODES:
        if code in _FOREIGN:
            raise ModelFormatError(f"{where}: dtype {code} ({_FOREIGN[code]}) is a safetensors "
                                   f"dtype that minitorch_edge cannot hold; convert the tensor "
                                   f"(e.g. to float32) before saving the file")
        raise ModelFormatError(f"{where}: unknown dtype {code!r}; expected one of "
                               f"{', '.join(_CODES)}")
    if not isinstance(shape, list) or not all(type(d) is int for d in shape):
        raise ModelFormatError(f"{where}: shape must be a list of ints, got "
                               f"{_short(shape) if isinstance(shape, list) else repr(shape)}")
    if len(shape) > _MAX_NDIM:
        raise ModelFormatError(f"{where}: shape has {len(shape)} dims; at most {_MAX_NDIM}")
    numel = 1
    for d in shape:
        if d < 0:
            raise ModelFormatError(f"{where}: shape {_short(shape)} has a negative dim")
        numel *= d
        if numel > _MAX_NUMEL:
            raise ModelFormatError(f"{where}: shape {_short(shape)} overflows: more than 2**63 - 1 "
                                   f"elements")
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(type(o) is int for o in offsets)):
        raise ModelFormatError(f"{where}: data_offsets must be a list of two ints, got "
                               f"{_short(offsets) if isinstance(offsets, list) else offsets!r}")
    begin, end = offsets
    if not 0 <= begin <= end:
        raise ModelFormatError(f"{where}: data_offsets [{begin}, {end}] must satisfy "
                               f"0 <= begin <= end")
    if end > data_len:
        raise ModelFormatError(f"{where}: data_offsets [{begin}, {end}] end past the data section "
                               f"({data_len} bytes; truncated file?)")
    need = numel * np.dtype(_CODES[code]).itemsize
    if end - begin != need:
        raise ModelFormatError(f"{where}: data_offsets [{begin}, {end}] hold {end - begin} bytes "
                               f"but shape {_short(shape)} of {code} needs {need}")
    return name, code, shape, begin, end


def _read_array(f, name, code, shape, begin, end):
    """A fresh, writable, native-order array read from the data section (already validated)."""
    array = np.empty(shape, dtype=_CODES[code])
    if end > begin:
        got = f.readinto(array.reshape(-1).view(np.uint8))
        if got != end - begin:
            raise ModelFormatError(f"tensor {_q(name)}: the file ended inside its data (it "
                                   f"changed while reading?)")
    if code == "BOOL" and array.view(np.uint8).max(initial=0) > 1:
        raise ModelFormatError(f"tensor {_q(name)}: BOOL bytes must be 0 or 1")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array


# ---- the structure skeleton ---------------------------------------------------------------------

def _check_structure(metadata, entries):
    """The parsed skeleton after a dry-run decode (or None for a plain safetensors file)."""
    if _STRUCTURE_KEY not in metadata:
        for name, code, *_ in entries:
            _check_leaf("tensor", code, [], name)
        return None
    version = metadata.get(_VERSION_KEY)
    if version != _VERSION:
        raise ModelFormatError(f"{_VERSION_KEY} is {version!r}; this minitorch_edge reads "
                               f"version {_VERSION!r} (written by a newer version?)")
    structure = _strict_json(metadata[_STRUCTURE_KEY], f"__metadata__[{_q(_STRUCTURE_KEY)}]")
    codes = {e[0]: (e[1], e[2]) for e in entries}
    used = set()

    def check(kind, node, where):
        name = node[kind]
        if not isinstance(name, str) or name not in codes:
            shown = _q(name) if isinstance(name, str) else repr(name)
            raise ModelFormatError(f"structure at {where} refers to tensor {shown}, which is not "
                                   f"in the file")
        if name in used:
            raise ModelFormatError(f"structure refers to tensor {_q(name)} twice")
        used.add(name)
        _check_leaf(kind, *codes[name], name)
        if kind == "tensor" and node.get("requires_grad") and codes[name][0][0] != "F":
            raise ModelFormatError(f"tensor {_q(name)}: requires_grad on a {codes[name][0]} "
                                   f"tensor (only floating-point tensors can require grad)")

    try:
        _decode(structure, check, "obj")
    except RecursionError:
        raise ModelFormatError("structure is nested too deeply") from None
    missing = sorted(set(codes) - used)
    if missing:
        raise ModelFormatError(f"tensor {_q(missing[0])} is in the file but not in the structure")
    return structure


def _check_leaf(kind, code, shape, name):
    if kind == "tensor" and code not in _TENSOR_CODES:
        raise ModelFormatError(f"tensor {_q(name)}: dtype {code} has no minitorch_edge Tensor "
                               f"type; Tensors hold {', '.join(_TENSOR_CODES)}")
    if kind == "numpy_scalar" and shape:
        raise ModelFormatError(f"tensor {_q(name)}: a numpy scalar must have shape [], not "
                               f"{_short(shape)}")


def _make_leaf(arrays):
    from ..nn.parameter import Parameter

    def make(kind, node, where):
        array = arrays[node[kind]]
        if kind == "ndarray":
            return array
        if kind == "numpy_scalar":
            return array[()]
        if node.get("parameter"):
            return Parameter(Tensor._make(array), requires_grad=bool(node.get("requires_grad")))
        return Tensor._make(array, requires_grad=bool(node.get("requires_grad")))
    return make


_OPTIONS = {"tensor": {"requires_grad", "parameter"}, "ndarray": set(), "numpy_scalar": set(),
            "tuple": set(), "dict": set(), "ordered_dict": set(), "float": set()}
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _decode(node, leaf, where):
    """Rebuild the object a skeleton describes; `leaf(kind, node, where)` makes each tensor."""
    if node is None or type(node) in (bool, int, str, float):
        return node
    if isinstance(node, list):
        return [_decode(v, leaf, f"{where}[{i}]") for i, v in enumerate(node)]
    kinds = [k for k in node if k in _OPTIONS]
    if len(kinds) != 1 or not set(node) - {kinds[0]} <= _OPTIONS[kinds[0]]:
        raise ModelFormatError(f"structure at {where}: unknown node {_short(sorted(node))}")
    kind = kinds[0]
    value = node[kind]
    if kind in ("tensor", "ndarray", "numpy_scalar"):
        if any(type(node[k]) is not bool for k in _OPTIONS[kind] if k in node):
            raise ModelFormatError(f"structure at {where}: tensor flags must be true/false")
        return leaf(kind, node, where)
    if kind == "float":
        if not isinstance(value, str) or value not in _FLOATS:
            raise ModelFormatError(f"structure at {where}: float {value!r} is not nan/inf/-inf")
        return _FLOATS[value]
    if not isinstance(value, list):
        raise ModelFormatError(f"structure at {where}: {kind} needs a list")
    if kind == "tuple":
        return tuple(_decode(v, leaf, f"{where}[{i}]") for i, v in enumerate(value))
    out = {} if kind == "dict" else OrderedDict()
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise ModelFormatError(f"structure at {where}: {kind} items must be [key, value]")
        key = pair[0]
        if isinstance(key, dict) and set(key) == {"float"}:
            key = _decode(key, leaf, where)
        elif not (key is None or type(key) in (bool, int, str, float)):
            raise ModelFormatError(f"structure at {where}: key {key!r} is not a scalar")
        if key in out:
            raise ModelFormatError(f"structure at {where}: key {key!r} appears twice")
        out[key] = _decode(pair[1], leaf, f"{where}[{key!r}]")
    return out
