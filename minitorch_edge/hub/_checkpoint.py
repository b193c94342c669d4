"""The weight files of a Hugging Face model folder: ``model.safetensors``, or shards
``model-00001-of-0000N.safetensors`` listed by ``model.safetensors.index.json``
(``{"metadata": {"total_size": bytes}, "weight_map": {key: shard file}}``).

Reading goes through utils/serialization.load (every header, offset and dtype validated, a bad
file named); the index is checked against the shards (a key the index promises must be in its
shard, a shard file must sit in the folder). Writing goes through utils/serialization.save
(atomic per file, ``{"format": "pt"}`` metadata as `transformers` wants), the index last, and
stale weight files of an earlier save are removed afterwards.
"""
import json
import os
import re

from ..utils.serialization import atomic_write, load, save

__all__ = ["read_weights", "write_weights", "parse_size", "WEIGHTS", "INDEX"]

WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
_SHARD = re.compile(r"^model-\d{5}-of-\d{5}\.safetensors$")
_PICKLED = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5",
            "flax_model.msgpack")


def read_weights(folder):
    """name -> Tensor for every weight in `folder` (single file or sharded)."""
    single, index = os.path.join(folder, WEIGHTS), os.path.join(folder, INDEX)
    if os.path.isfile(single):
        return dict(load(single))
    if os.path.isfile(index):
        return _read_sharded(folder, index)
    found = [name for name in _PICKLED if os.path.exists(os.path.join(folder, name))]
    hint = (f"; it holds {found}, a pickle/other format minitorch_edge never loads: convert it "
            f"with transformers (model.save_pretrained(folder, safe_serialization=True))"
            if found else "")
    raise FileNotFoundError(f"from_pretrained: {folder} has neither {WEIGHTS} nor {INDEX}{hint}")


def _read_sharded(folder, index):
    try:
        with open(index, encoding="utf-8") as f:
            doc = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"from_pretrained: {index} is not valid JSON: {e}") from None
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str)
                                                   for v in weight_map.values()):
        raise ValueError(f"from_pretrained: {index} has no weight_map of key -> shard file")
    state = {}
    for shard in sorted(set(weight_map.values())):
        if os.path.basename(shard) != shard or shard in (".", ".."):
            raise ValueError(f"from_pretrained: {index} names the shard {shard!r}, which is "
                             f"not a file name inside the model folder")
        path = os.path.join(folder, shard)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"from_pretrained: {index} lists the shard {shard}, which "
                                    f"is not in {folder}")
        tensors = load(path)
        for key in (k for k, v in weight_map.items() if v == shard):
            if key not in tensors:
                raise ValueError(f"from_pretrained: {index} puts {key!r} in {shard}, which does "
                                 f"not hold it")
        for key, tensor in tensors.items():
            if key in state:
                raise ValueError(f"from_pretrained: {key!r} is in two shards ({shard} and "
                                 f"{weight_map.get(key)})")
            state[key] = tensor
    return state


def parse_size(size):
    """max_shard_size as bytes: an int, or "500KB" / "10MB" / "5GB" (powers of 1000 as in
    transformers; "MiB"/"GiB" for powers of 1024)."""
    if isinstance(size, int) and size > 0:
        return size
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?B)\s*", str(size), re.IGNORECASE)
    if not match:
        raise ValueError(f"save_pretrained: max_shard_size must be a positive int of bytes or "
                         f"a string such as '10MB', got {size!r}")
    unit = match.group(2).upper()
    base = 1024 if "I" in unit else 1000
    return int(float(match.group(1)) * base ** "KMG".index(unit[0]) * base)


def write_weights(folder, state, max_shard_size=None):
    """Write `state` (name -> Tensor) into `folder`: one file, or shards of at most
    `max_shard_size` bytes each (a tensor larger than that gets a shard of its own) with the
    index. Returns the file names written."""
    metadata = {"format": "pt"}
    limit = None if max_shard_size is None else parse_size(max_shard_size)
    sizes = {k: t.numel() * t.element_size() for k, t in state.items()}
    if limit is None or sum(sizes.values()) <= limit:
        save(state, os.path.join(folder, WEIGHTS), metadata=metadata)
        written = [WEIGHTS]
    else:
        shards, current, used = [], {}, 0
        for key, tensor in state.items():
            if current and used + sizes[key] > limit:
                shards.append(current)
                current, used = {}, 0
            current[key] = tensor
            used += sizes[key]
        shards.append(current)
        written, weight_map = [], {}
        for i, shard in enumerate(shards):
            name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            save(shard, os.path.join(folder, name), metadata=metadata)
            written.append(name)
            weight_map.update({key: name for key in shard})
        doc = {"metadata": {"total_size": sum(sizes.values())}, "weight_map": weight_map}
        text = json.dumps(doc, indent=2, sort_keys=True).encode("utf-8")
        atomic_write(os.path.join(folder, INDEX), lambda f: f.write(text))
        written.append(INDEX)
    for name in os.listdir(folder):                 # an earlier save's files would mislead
        if (name == WEIGHTS or name == INDEX or _SHARD.match(name)) and name not in written:
            os.remove(os.path.join(folder, name))
    return written
