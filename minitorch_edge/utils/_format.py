"""The vocabulary shared by the writer and the reader of the saved-file format
(serialization.py): safetensors' dtype codes, the limits a reader enforces, the metadata keys
of the structure skeleton and of the tensors' digests, the one error type, and strict JSON
parsing."""
import hashlib
import json

import numpy as np

from .. import dtypes as _dt

MAX_HEADER_BYTES = 100_000_000                 # safetensors' cap
_MAX_NUMEL = 2 ** 63 - 1                       # a shape's element count must fit in int64
_MAX_NDIM = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
_STRUCTURE_KEY = "minitorch_edge.structure"
_VERSION_KEY = "minitorch_edge.format_version"
_VERSION = "1"
# {"tensor name": sha256 hex of its bytes as stored, ...} as a JSON string: what `load` checks
# the data section against (a file without it, from another tool, loads unchecked).
_DIGEST_KEY = "minitorch_edge.sha256"

# safetensors' dtype codes. Tensors hold the first ten; numpy arrays in a checkpoint may also be
# U16/U32/U64 (numpy's legacy RNG state is a uint32 array). BF16 (2 bytes, little-endian) is
# held through the optional ml_dtypes package: use `code_dtype`, never np.dtype(_CODES[code]).
_CODES = {"BOOL": "|b1", "U8": "|u1", "I8": "|i1", "I16": "<i2", "I32": "<i4", "I64": "<i8",
          "F16": "<f2", "F32": "<f4", "F64": "<f8", "BF16": "bfloat16", "U16": "<u2",
          "U32": "<u4", "U64": "<u8"}
_TENSOR_CODES = ("BOOL", "U8", "I8", "I16", "I32", "I64", "F16", "F32", "F64", "BF16")
_FLOAT_CODES = ("F16", "F32", "F64", "BF16")
_BY_KIND = {(np.dtype(v).kind, np.dtype(v).itemsize): k for k, v in _CODES.items()
            if k != "BF16"}
_FOREIGN = {"F8_E4M3": "float8", "F8_E5M2": "float8", "F8_E8M0": "float8",
            "F4": "float4", "F6_E2M3": "float6", "F6_E3M2": "float6", "C64": "complex64",
            "C128": "complex128"}
BF16_NEEDS = ('dtype BF16 (bfloat16) needs the ml_dtypes package, which is not installed: '
              'pip install "minitorch-edge[bf16]" (or pip install ml_dtypes)')


class ModelFormatError(ValueError):
    """A file that is not a valid minitorch_edge / safetensors file (or holds what we cannot)."""


class NotAModelFileError(ModelFormatError):
    """The bytes are not a safetensors container at all (a text file, random bytes, an empty
    file): the reader says so instead of quoting the header rule that failed first."""


def digest(array):
    """sha256 hex of a C-contiguous array's bytes (as they are, so: as the file stores them)."""
    return hashlib.sha256(array.reshape(-1).view(np.uint8)).hexdigest()


def code_of(np_dtype):
    """The safetensors code of a numpy dtype, or None if the format has none."""
    if np_dtype.kind == "V":
        return "BF16" if _dt.is_bf16(np_dtype) else None
    return _BY_KIND.get((np_dtype.kind, np_dtype.itemsize))


def code_itemsize(code):
    """Bytes per element of a (known) code; BF16 is 2 with or without ml_dtypes."""
    return 2 if code == "BF16" else np.dtype(_CODES[code]).itemsize


def code_dtype(code):
    """The numpy dtype to read a (known) code into; BF16 without ml_dtypes raises
    ModelFormatError naming the extra to install."""
    if code == "BF16":
        if _dt.bfloat16._np is None:
            raise ModelFormatError(BF16_NEEDS)
        return _dt.bfloat16._np
    return np.dtype(_CODES[code])


def _q(name):
    return json.dumps(name, ensure_ascii=False)


def _short(values, limit=8):
    """``[2, 3]`` for short lists, ``[2, 3, ... (100 items)]`` for long ones."""
    if len(values) <= limit:
        return "[" + ", ".join(str(v) for v in values) + "]"
    return "[" + ", ".join(str(v) for v in values[:limit]) + f", ... ({len(values)} items)]"


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
