"""minitorch_edge.hub: Hugging Face model folders in and out, and transfer-learning helpers.

    model = hub.from_pretrained("path/to/folder")          # config.json + model.safetensors
    hub.save_pretrained(model, "path/to/out")               # transformers.from_pretrained reads it

A folder holds ``config.json`` and the weights: ``model.safetensors``, or shards with
``model.safetensors.index.json``. The class comes from config.json's ``architectures`` (as
``transformers.AutoModel*`` does), or from ``architecture=`` (a backbone checkpoint into a head
model for fine-tuning; a head checkpoint's backbone alone). Supported:

    BERT   BertModel, BertForMaskedLM, BertForSequenceClassification     (hub/bert.py)
    GPT-2  GPT2Model, GPT2LMHeadModel (+ generate, a key/value cache)     (hub/gpt2.py)
    ViT    ViTModel, ViTForImageClassification                            (hub/vit.py)

Our modules carry `transformers`' attribute names, so weights map by name (with GPT-2's
transposed Conv1D weights and the tied LM heads declared per class, hub/_layers.py). Loading is
strict by default: a missing, unexpected or mis-shaped key raises CheckpointMismatchError
naming them all; a damaged file (truncated, bad header) raises ModelFormatError naming the
file. No network: a directory in, a directory out. Nothing here imports `transformers`.

Transfer learning (hub/transfer.py): ``freeze``, ``unfreeze``, ``trainable_parameters``,
``param_groups`` (learning rates per module-name prefix).
"""
import os

from ..utils._format import ModelFormatError
from ._checkpoint import read_weights, write_weights
from ._config import Config, read_config
from ._layers import HubModel, weights_to_come
from ._weights import CheckpointMismatchError, LoadingInfo, load_checkpoint, to_checkpoint
from .bert import BaseModelOutput, BertForMaskedLM, BertForSequenceClassification, BertModel
from .gpt2 import DecoderOutput, GPT2LMHeadModel, GPT2Model
from .transfer import freeze, param_groups, trainable_parameters, unfreeze
from .vit import ViTForImageClassification, ViTModel

__all__ = ["from_pretrained", "save_pretrained", "config_for", "ARCHITECTURES", "Config",
           "HubModel",
           "CheckpointMismatchError", "ModelFormatError", "LoadingInfo", "BaseModelOutput",
           "DecoderOutput", "BertModel", "BertForMaskedLM", "BertForSequenceClassification",
           "GPT2Model", "GPT2LMHeadModel", "ViTModel", "ViTForImageClassification", "freeze",
           "unfreeze", "trainable_parameters", "param_groups"]

ARCHITECTURES = {cls.__name__: cls for cls in (
    BertModel, BertForMaskedLM, BertForSequenceClassification, GPT2Model, GPT2LMHeadModel,
    ViTModel, ViTForImageClassification)}
# config.json without "architectures": the backbone of its model_type
_BY_MODEL_TYPE = {"bert": BertModel, "gpt2": GPT2Model, "vit": ViTModel}


def _architecture(values, architecture, folder):
    if architecture is not None:
        name = architecture if isinstance(architecture, str) else architecture.__name__
    else:
        names = values.get("architectures") or []
        if not names:
            cls = _BY_MODEL_TYPE.get(values.get("model_type"))
            if cls is None:
                raise ValueError(f"from_pretrained: {folder}/config.json names no "
                                 f"architectures and model_type {values.get('model_type')!r} "
                                 f"is not one of {sorted(_BY_MODEL_TYPE)}; pass architecture=")
            return cls
        name = names[0]
    if name not in ARCHITECTURES:
        raise ValueError(f"from_pretrained: architecture {name!r} is not supported; supported: "
                         f"{sorted(ARCHITECTURES)}")
    cls = ARCHITECTURES[name]
    model_type = values.get("model_type")
    if model_type is not None and model_type != cls.model_type:
        raise ValueError(f"from_pretrained: {folder}/config.json has model_type "
                         f"{model_type!r}, but {name} is a {cls.model_type!r} model")
    return cls


def config_for(architecture, **values):
    """A Config for `architecture` (a name or class) over its defaults: how to build a fresh
    model without a folder, e.g. ``BertModel(config_for("BertModel", hidden_size=32, ...))``."""
    cls = ARCHITECTURES[architecture] if isinstance(architecture, str) else architecture
    return Config(values, cls.defaults)


def from_pretrained(path, architecture=None, strict=True, dtype=None, output_loading_info=False,
                    **config_overrides):
    """Build the model a Hugging Face folder describes and load its weights; returns it in eval
    mode (``(model, LoadingInfo)`` with `output_loading_info`).

    `architecture`: a class name of ARCHITECTURES to use instead of config.json's (a head over
    a backbone checkpoint: its head stays as initialised, which needs ``strict=False``).
    `strict`: raise CheckpointMismatchError on missing / unexpected / mis-shaped keys.
    `dtype`: None keeps float32; a minitorch_edge dtype (float16, bfloat16, float64) or "auto"
    (the config's ``dtype``/``torch_dtype``) casts the model. `config_overrides` replace config
    keys (``num_labels=2``, ``hidden_dropout_prob=0.0``)."""
    folder = os.fspath(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"from_pretrained: {folder!r} is not a folder (a Hugging Face "
                                f"model folder with config.json and model.safetensors; there "
                                f"is no download)")
    values = read_config(folder)
    cls = _architecture(values, architecture, folder)
    if "num_labels" in config_overrides:
        values.pop("id2label", None)
        values.pop("label2id", None)
    values.update(config_overrides)
    config = Config(values, cls.defaults)
    with weights_to_come():
        model = cls(config)
    info = load_checkpoint(model, read_weights(folder), strict, folder)
    model._init_keys(info.missing_keys + [key for key, _, _ in info.mismatched_keys])
    model.eval()
    model = _cast(model, dtype, config)
    return (model, info) if output_loading_info else model


def _cast(model, dtype, config):
    from .. import dtypes
    if dtype is None:
        return model
    if dtype == "auto":
        name = config.get("dtype") or config.get("torch_dtype") or "float32"
        dtype = getattr(dtypes, str(name).replace("torch.", ""), None)
        if dtype is None:
            raise ValueError(f"from_pretrained: config dtype {name!r} is not a minitorch_edge "
                             f"dtype")
    if not isinstance(dtype, dtypes.dtype) or not dtype.is_floating_point:
        raise ValueError(f"from_pretrained: dtype must be a floating minitorch_edge dtype, "
                         f"'auto' or None, got {dtype!r}")
    return model.to(dtype)


def save_pretrained(module, path, max_shard_size=None):
    """Write `module` (a HubModel) as a Hugging Face folder: config.json (with
    ``architectures``) and model.safetensors, or shards of at most `max_shard_size` ("10MB", or
    bytes) with the index. Every file is written atomically; returns the file names."""
    if not isinstance(module, HubModel):
        raise TypeError(f"save_pretrained: expected a hub model ({', '.join(ARCHITECTURES)}), "
                        f"got {type(module).__name__}; for other modules use "
                        f"minitorch_edge.save(module.state_dict(), path)")
    import json
    from ..utils.serialization import atomic_write
    folder = os.fspath(path)
    os.makedirs(folder, exist_ok=True)
    state = to_checkpoint(module)
    config = module.config.to_dict()
    config["architectures"] = [type(module).__name__]
    config["model_type"] = module.model_type
    first = next(iter(state.values()), None)
    config["dtype"] = str(first.dtype).replace("minitorch_edge.", "") if first is not None \
        else "float32"
    written = write_weights(folder, state, max_shard_size)
    text = (json.dumps(config, indent=2, sort_keys=True) + "\n").encode("utf-8")
    atomic_write(os.path.join(folder, "config.json"), lambda f: f.write(text))
    return ["config.json"] + written
