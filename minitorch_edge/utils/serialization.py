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

Each tensor's stored bytes get a sha256 digest, in ``__metadata__["minitorch_edge.sha256"]`` (a
JSON string: {name: hex}); `load` checks them (``verify=False`` skips it) and names the tensor
whose bytes changed, so a file damaged after saving is refused instead of loading as garbage or
NaN. sha256 is the standard digest (any tool can recompute one); where the CPU has SHA
instructions it runs at about 1.8 GB/s, as fast as numpy copies the bytes (crc32 would be 2x
faster, the check is a small part of a load either way). Files from other tools carry no digests
and load unchecked.

A file that is no safetensors container at all (empty, text, random bytes, a pickle) is named as
such: "X is not a model file (safetensors container): what it looks like".

Writing is atomic: a temp file in the target's folder is written, fsynced and renamed over the
target; on any error the temp file is removed and the old file stays intact.

Loading trusts nothing. The header length, the JSON (strict: no duplicate keys, no NaN), every
entry's dtype (a closed list), shape and offsets (checked arithmetic; sorted, contiguous, no gap,
no overlap, ending exactly at the end of the file) and the skeleton are validated before any
tensor memory is allocated. Every rejection raises one ``ModelFormatError`` (a ValueError) that
names the file, the tensor and the rule. BF16 (bfloat16) entries need the optional ml_dtypes
package (``pip install "minitorch-edge[bf16]"``); without it loading one says so.

The code: this file writes, reads and checks the file; ``_format.py`` holds the vocabulary both
sides share (dtype codes, limits, the error, strict JSON); ``_structure.py`` turns objects into
the skeleton and back.
"""
import contextlib
import io
import json
import os
import tempfile

import numpy as np

from ..tensor import Tensor
from ._format import (_CODES, _DIGEST_KEY, _FOREIGN, _MAX_NDIM, _MAX_NUMEL, _STRUCTURE_KEY,
                      _VERSION, _VERSION_KEY, MAX_HEADER_BYTES, ModelFormatError,
                      NotAModelFileError, _q, _short, _strict_json, code_dtype, code_itemsize,
                      digest)
from ._structure import check_structure, decode, flatten, make_leaf

__all__ = ["save", "load", "ModelFormatError"]


# ================================================ save ===========================================

def save(obj, f, metadata=None):
    """Write `obj` to `f` (a path, written atomically, or a binary file object).

    As ``torch.save`` but in a safetensors-compatible file, without pickle (see the module
    docstring for what `obj` may hold). Raises TypeError, naming the place, for anything else;
    an nn.Module is refused with the fix (save its ``state_dict()``). `metadata` (str -> str)
    goes into the header's ``__metadata__`` beside our own entries (Hugging Face readers want
    ``{"format": "pt"}`` there)."""
    _refuse_modules(obj, "obj", 0)
    skeleton, arrays = flatten(obj)
    header = _header(skeleton, arrays, _extra_metadata(metadata))
    if isinstance(f, (str, bytes, os.PathLike)):
        _atomic_write(os.fsdecode(f), header, arrays)
    elif hasattr(f, "write"):
        _write_payload(f, header, arrays)
    else:
        raise TypeError(f"save: expected a path or a binary file object, got "
                        f"{type(f).__name__}")


def _refuse_modules(obj, where, depth):
    """A whole nn.Module (or one inside the dicts/lists being saved) cannot be written: that
    needs pickle. Say what to save instead."""
    from ..nn.module import Module
    if isinstance(obj, Module):
        raise TypeError(f"save: {where} is an nn.Module ({type(obj).__name__}); a whole module "
                        f"can only be saved with pickle, which minitorch_edge never uses (it can "
                        f"run code when loaded). Save its weights instead: "
                        f"save(model.state_dict(), path), and restore them with "
                        f"model.load_state_dict(load(path))")
    if depth < 8:
        if isinstance(obj, dict):
            for key, value in obj.items():
                _refuse_modules(value, f"{where}[{key!r}]", depth + 1)
        elif isinstance(obj, (list, tuple)):
            for i, value in enumerate(obj):
                _refuse_modules(value, f"{where}[{i}]", depth + 1)


def _extra_metadata(metadata):
    """`metadata` checked: a dict of str -> str that leaves our own keys alone."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError(f"save: metadata must be a dict of str -> str (safetensors' "
                        f"__metadata__), got {metadata!r}")
    ours = sorted(k for k in metadata if k.startswith("minitorch_edge."))
    if ours:
        raise ValueError(f"save: metadata keys {ours} are reserved for the format itself; "
                         f"use another prefix")
    return dict(metadata)


def _header(skeleton, arrays, extra_metadata=None):
    """The header bytes, padded to a multiple of 8. Orders `arrays` as they will be written and
    replaces each array by its bytes as stored (C order, little-endian), whose sha256 digests go
    into ``__metadata__[_DIGEST_KEY]``."""
    arrays.sort(key=lambda e: (-code_itemsize(e[1]), e[0]))
    arrays[:] = [(name, code, _stored(array)) for name, code, array in arrays]
    digests = {name: digest(array) for name, _, array in arrays}
    header = {"__metadata__": {**(extra_metadata or {}), _VERSION_KEY: _VERSION,
                               _STRUCTURE_KEY: json.dumps(skeleton, separators=(",", ":")),
                               _DIGEST_KEY: json.dumps(digests, ensure_ascii=False,
                                                       separators=(",", ":"))}}
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


def _stored(array):
    """The array as the file stores it: C order, little-endian (no copy when it already is)."""
    return array.astype(array.dtype.newbyteorder("<"), order="C", copy=False)


def _write_array(f, array):
    """Write one array's bytes (already `_stored`)."""
    if array.size:
        f.write(array.reshape(-1).view(np.uint8))


def _write_payload(f, header, arrays):
    f.write(len(header).to_bytes(8, "little"))
    f.write(header)
    for _, _, array in arrays:
        _write_array(f, array)


def _atomic_write(path, header, arrays):
    atomic_write(path, lambda f: _write_payload(f, header, arrays))


def atomic_write(path, write):
    """Call `write(f)` on a temporary file beside `path`, then rename it into place: a reader
    sees the old file or the whole new one, never a part. The file keeps `path`'s permissions
    (or gets the umask's), and a symlink at `path` keeps pointing at the new file."""
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
            write(f)
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

def load(f, map_location=None, weights_only=True, verify=True):
    """Read what :func:`save` wrote (or any safetensors file) from a path or binary file object.

    `map_location` may be None or "cpu" (the only device); `weights_only` is accepted for
    PyTorch compatibility and changes nothing: the format holds no code, whatever its value.
    A malformed file raises :class:`ModelFormatError`. With `verify` (the default) every
    tensor's bytes are checked against the sha256 digest `save` recorded, and a mismatch
    raises ModelFormatError naming the tensor; files without digests (written by other
    safetensors tools) load unchecked, and ``verify=False`` skips the check."""
    if map_location is not None and str(map_location) != "cpu":
        raise ValueError(f"load: map_location={map_location!r} is not supported; minitorch_edge "
                         f"runs on 'cpu' only, so pass None or 'cpu'")
    if isinstance(f, (str, bytes, os.PathLike)):
        source = os.fsdecode(f)
        with open(source, "rb") as fh:
            return _load(fh, os.fstat(fh.fileno()).st_size, source, verify)
    if not (hasattr(f, "read") and hasattr(f, "seek")):
        raise TypeError(f"load: expected a path or a seekable binary file object, got "
                        f"{type(f).__name__}")
    start = f.tell()
    size = f.seek(0, io.SEEK_END) - start
    f.seek(start)
    return _load(f, size, getattr(f, "name", "<file object>"), verify)


def _load(f, size, source, verify):
    try:
        header, header_len = _read_header(f, size)
        entries, metadata = _check_entries(header, size - 8 - header_len)
        structure = check_structure(metadata, entries)
        digests = _digests(metadata, entries) if verify else {}
        arrays = {e[0]: _read_array(f, *e, digests.get(e[0])) for e in entries}
        if structure is None:
            return {name: Tensor._make(arrays[name]) for name in sorted(arrays)}
        return decode(structure, make_leaf(arrays), "obj")
    except ModelFormatError as e:
        raise located(e, source) from None


def located(error, source):
    """`error` with the file named first: "X is not a model file (safetensors container): why"
    when the bytes are no container at all, else "X: what is wrong"."""
    if isinstance(error, NotAModelFileError):
        return NotAModelFileError(f"{source} is not a model file (safetensors container): "
                                  f"{error}")
    return ModelFormatError(f"{source}: {error}")


def _not_a_container(head, n, size):
    """Why the first bytes are no safetensors container (its header length is absurd, or its
    header does not open with '{'): what the bytes look like instead."""
    if head[:4] == b"PK\x03\x04" or head[:1] == b"\x80":
        return ("it looks like a torch.save / pickle file, which minitorch_edge never loads "
                "(pickle can run code): in PyTorch, convert it with "
                "safetensors.torch.save_file(state_dict, path)")
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in "\t\r\n" for c in text):
        return (f"it starts with the text {text!r} (a text file?); a model file starts with an "
                f"8-byte header length, then a JSON header")
    problem = (f"over the cap of {MAX_HEADER_BYTES}" if n > MAX_HEADER_BYTES else
               "with no JSON header after them")
    return (f"its first 8 bytes ({head.hex(' ')}) read as a header length of {n} bytes, "
            f"{problem} (the file has {size} bytes)")


def _read_header(f, size):
    """The parsed header and its length in bytes."""
    if size < 8:
        raise NotAModelFileError(f"the file has {size} bytes; it must start with an 8-byte "
                                 f"header length (truncated or empty file?)")
    head = f.read(8)
    if len(head) != 8:
        raise ModelFormatError("the file ended inside the 8-byte header length")
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER_BYTES:
        raise NotAModelFileError(_not_a_container(head, n, size))
    raw = f.read(min(n, size - 8))
    json_like = raw.lstrip()[:1] in (b"{", b"[")      # a safetensors header opens with "{"
    if n > size - 8:
        if not json_like:
            raise NotAModelFileError(_not_a_container(head, n, size))
        raise ModelFormatError(f"header length {n} runs past the end of the file ({size} bytes; "
                               f"truncated file?)")
    if len(raw) != n:
        raise ModelFormatError("the file ended inside the header (it changed while reading?)")
    try:
        return _strict_json(raw.decode("utf-8"), "header"), n
    except UnicodeDecodeError as e:
        if not json_like:
            raise NotAModelFileError(_not_a_container(head, n, size)) from None
        raise ModelFormatError(f"header is not valid UTF-8 ({e})") from None
    except ModelFormatError:
        if not json_like:
            raise NotAModelFileError(_not_a_container(head, n, size)) from None
        raise


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
    need = numel * code_itemsize(code)
    if end - begin != need:
        raise ModelFormatError(f"{where}: data_offsets [{begin}, {end}] hold {end - begin} bytes "
                               f"but shape {_short(shape)} of {code} needs {need}")
    if code == "BF16":
        try:
            code_dtype(code)               # ml_dtypes is there (else: which extra to install)
        except ModelFormatError as e:
            raise ModelFormatError(f"{where}: {e}") from None
    return name, code, shape, begin, end


def _digests(metadata, entries):
    """The recorded digests (name -> sha256 hex), checked to name exactly the file's tensors;
    {} for a file without them (written by another safetensors tool)."""
    if _DIGEST_KEY not in metadata:
        return {}
    digests = _strict_json(metadata[_DIGEST_KEY], f"__metadata__[{_q(_DIGEST_KEY)}]")
    where = f"__metadata__[{_q(_DIGEST_KEY)}]"
    if not isinstance(digests, dict) or not all(
            isinstance(d, str) and len(d) == 64 and d == d.lower()
            and all(c in "0123456789abcdef" for c in d) for d in digests.values()):
        raise ModelFormatError(f"{where} must map tensor names to sha256 hex digests "
                               f"(64 lower-case hex digits)")
    names = {e[0] for e in entries}
    if set(digests) != names:
        extra, missing = sorted(set(digests) - names), sorted(names - set(digests))
        raise ModelFormatError(f"{where} does not list the file's tensors"
                               + (f"; names missing tensors {_short(extra)}" if extra else "")
                               + (f"; has no digest for {_short(missing)}" if missing else "")
                               + " (the header was edited?); load(..., verify=False) skips the "
                               "check")
    return digests


def _read_array(f, name, code, shape, begin, end, expected=None):
    """A fresh, writable, native-order array read from the data section (already validated),
    its bytes checked against the sha256 hex digest `expected` (if not None)."""
    array = np.empty(shape, dtype=code_dtype(code))
    if end > begin:
        got = f.readinto(array.reshape(-1).view(np.uint8))
        if got != end - begin:
            raise ModelFormatError(f"tensor {_q(name)}: the file ended inside its data (it "
                                   f"changed while reading?)")
    if expected is not None and digest(array) != expected:
        raise ModelFormatError(f"tensor {_q(name)} ({code}{_short(shape)}, bytes {begin} to "
                               f"{end} of the data section): its bytes do not match the sha256 "
                               f"digest recorded when the file was saved, so the file was "
                               f"corrupted or changed since; restore it from a good copy or "
                               f"save it again (load(..., verify=False) reads it unchecked)")
    if code == "BOOL" and array.view(np.uint8).max(initial=0) > 1:
        raise ModelFormatError(f"tensor {_q(name)}: BOOL bytes must be 0 or 1")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array
