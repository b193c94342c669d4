"""Between a module's state_dict and a checkpoint's keys: the rules each HubModel declares
(hub/_layers.py: transposed, tied, ignored keys, the backbone prefix), and the strict check
that names every missing, unexpected and mismatched key before anything is copied.
"""
from collections import namedtuple

import numpy as np

from ..backend.prepared import wrote
from ..tensor import Tensor

__all__ = ["LoadingInfo", "CheckpointMismatchError", "to_checkpoint", "load_checkpoint"]

LoadingInfo = namedtuple("LoadingInfo", ["missing_keys", "unexpected_keys", "mismatched_keys",
                                         "unused_keys"])
LoadingInfo.__doc__ = ("What from_pretrained found: model keys the checkpoint lacked (left as "
                       "initialised), checkpoint keys the model lacks, keys whose shapes differ "
                       "(key, checkpoint shape, model shape), and a head checkpoint's keys "
                       "dropped when loading its backbone alone.")


class CheckpointMismatchError(RuntimeError):
    """The checkpoint's keys or shapes do not fit the architecture (strict loading)."""


def _endswith_any(key, suffixes):
    return any(key == s or key.endswith("." + s.lstrip(".")) for s in suffixes)


def to_checkpoint(module):
    """The module's weights under the checkpoint's names and layouts: tied keys left out,
    transposed keys transposed back (numpy arrays, C order)."""
    out = {}
    for key, tensor in module.state_dict().items():
        if key in module._hf_tied:
            continue
        array = tensor._data
        if _endswith_any(key, module._hf_transposed):
            array = array.T
        out[key] = Tensor._make(np.ascontiguousarray(array))
    return out


def _align_prefix(module, state):
    """Checkpoint keys renamed to the module's: a backbone checkpoint into a head model gets the
    prefix; a head checkpoint into the backbone loses it (its head keys are unused)."""
    prefix = module.base_model_prefix
    own = module.state_dict(keep_vars=True)
    if not prefix:
        return state, []
    dotted = prefix + "."
    module_has = any(k.startswith(dotted) for k in own)
    file_has = any(k.startswith(dotted) for k in state)
    if module_has and not file_has:
        return {(k if (k in own) else dotted + k): v for k, v in state.items()}, []
    if file_has and not module_has:
        kept = {k[len(dotted):]: v for k, v in state.items() if k.startswith(dotted)}
        return kept, sorted(k for k in state if not k.startswith(dotted))
    return state, []


def load_checkpoint(module, state, strict, source):
    """Copy `state` (checkpoint name -> Tensor) into `module`; returns LoadingInfo. With
    `strict` any missing, unexpected or mismatched key raises CheckpointMismatchError naming
    them all (nothing is copied then)."""
    state = {k: v for k, v in state.items() if not _endswith_any(k, module._hf_ignored)}
    state, unused = _align_prefix(module, state)
    own = module.state_dict(keep_vars=True)
    tied = set(module._hf_tied)
    arrays = {}
    for key, value in state.items():
        array = value._data if isinstance(value, Tensor) else np.asarray(value)
        arrays[key] = array.T if _endswith_any(key, module._hf_transposed) else array
    missing = [k for k in own if k not in arrays and k not in tied]
    unexpected = [k for k in arrays if k not in own]
    mismatched = [(k, list(arrays[k].shape), list(own[k].shape)) for k in own
                  if k in arrays and arrays[k].shape != tuple(own[k].shape)]
    info = LoadingInfo(missing, unexpected, mismatched, unused)
    if strict and (missing or unexpected or mismatched):
        raise CheckpointMismatchError(_mismatch_message(type(module).__name__, info, source))
    for key, target in own.items():
        if key in arrays and not any(key == m[0] for m in mismatched):
            np.copyto(target._data, arrays[key], casting="unsafe")
            target._vc[0] += 1
            wrote(target._data)           # drop any weights packed from the old values
    return info


def _mismatch_message(arch, info, source):
    lines = [f"from_pretrained({source}): the checkpoint does not fit {arch}:"]

    def listed(keys, limit=12):
        more = f" ... and {len(keys) - limit} more" if len(keys) > limit else ""
        return ", ".join(keys[:limit]) + more
    if info.missing_keys:
        lines.append(f"  missing keys (in the model, not in the checkpoint): "
                     f"{listed(info.missing_keys)}")
    if info.unexpected_keys:
        lines.append(f"  unexpected keys (in the checkpoint, not in the model): "
                     f"{listed(info.unexpected_keys)}")
    for key, file_shape, model_shape in info.mismatched_keys:
        lines.append(f"  shape mismatch for {key}: checkpoint {file_shape}, model {model_shape}")
    lines.append("  Fix: check config.json against the weights (or pass architecture=...); "
                 "strict=False loads the keys that fit and leaves the rest as initialised "
                 "(output_loading_info=True returns the lists).")
    return "\n".join(lines)
