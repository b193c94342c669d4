"""A model's config.json as an object: Hugging Face's keys as attributes, over each
architecture's defaults (what `transformers` assumes for a key the file leaves out).

``Config.from_file(path)`` reads strict JSON (a bad file is named); ``config.to_dict()`` is what
``save_pretrained`` writes back. Unknown keys are kept and written back unchanged, so a config
from `transformers` survives the round trip.
"""
import json
import os

__all__ = ["Config", "read_config"]


class Config:
    """Attribute access over a dict of config keys: ``config.hidden_size``; ``config.get(key,
    default)``; ``num_labels`` follows ``id2label`` as in `transformers`."""

    def __init__(self, values, defaults=None):
        merged = dict(defaults or {})
        merged.update(values)
        if "id2label" in merged and merged["id2label"]:
            merged["id2label"] = {int(k): v for k, v in merged["id2label"].items()}
            merged["num_labels"] = len(merged["id2label"])
        n = int(merged.get("num_labels", 2))
        if n < 1:
            raise ValueError(f"Config: num_labels must be at least 1, got {n}")
        merged["num_labels"] = n
        if len(merged.get("id2label") or {}) != n:
            merged["id2label"] = {i: f"LABEL_{i}" for i in range(n)}
        merged["label2id"] = {v: k for k, v in merged["id2label"].items()}
        self.__dict__["_values"] = merged

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"Config has no key {name!r}") from None

    def __setattr__(self, name, value):
        self._values[name] = value

    def get(self, name, default=None):
        return self._values.get(name, default)

    def to_dict(self):
        out = dict(self._values)
        out["id2label"] = {str(k): v for k, v in out["id2label"].items()}
        return out

    def __repr__(self):
        return f"Config({json.dumps(self.to_dict(), sort_keys=True)})"


def read_config(folder):
    """config.json of `folder` as a dict (strict JSON: a truncated or hand-broken file is named
    with the position of the error)."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"from_pretrained: {folder} has no config.json (a Hugging Face "
                                f"model folder holds config.json and model.safetensors)")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"from_pretrained: {path} is not valid JSON: {e}") from None
    if not isinstance(values, dict):
        raise ValueError(f"from_pretrained: {path} must hold a JSON object, got "
                         f"{type(values).__name__}")
    return values
