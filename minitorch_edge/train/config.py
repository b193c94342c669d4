"""Train configs: the schema of ``minitorch-edge train --config file.json``, checked in full
before any work starts.

A config is one JSON object (``minitorch-edge train --print-config`` prints the default one)::

    {"model":     {"name": "small_cnn", ...the model's constructor arguments...},
     "dataset":   {"name": "digits", ...the dataset's arguments...},
     "optimizer": {"name": "Adam", ...the optimizer's arguments (not params)...},
     "scheduler": {"name": "CosineAnnealingLR", ...its arguments (not optimizer)...} or null,
     "epochs": 10, "batch_size": 32, "eval_batch_size": 256, "seed": 0, "num_workers": 0,
     "grad_clip_norm": null, "grad_accum_steps": 1, "out": null,
     "_doc": {...}}

Rules, each broken rule a ``ConfigError`` with one line saying what is wrong and how to fix it:

* a key that is not in the schema is an error naming it and the closest valid key (difflib);
* scalars have a type and a range (``epochs`` an int >= 1, ...); ``null`` only where stated;
* a section's ``name`` is matched ignoring case, ``_`` and ``-`` (``adam``, ``ADAM`` and
  ``Adam`` are one optimizer; ``SmallCNN`` and ``small_cnn`` one model); an unknown name lists
  the valid ones;
* a section's other keys are the keyword arguments of that component's constructor, read from
  its signature: an unknown argument names the closest one, a missing required one is named,
  and a value must have the type of the argument's default (a number for a number, a bool for a
  bool, a string for a string, a list for a tuple);
* ``_doc`` (top level only) is ignored: ``--print-config`` writes it, so its output loads back.

``apply_overrides`` puts ``--set a.b=value`` (value parsed as JSON, else taken as a string) into
the raw dict before the check, so overrides obey the same rules. ``TrainConfig`` is the checked
result (``to_dict()`` gives the complete JSON form, every argument's default filled in).
"""
import dataclasses
import difflib
import inspect
import json
import os
import textwrap
from typing import Optional

__all__ = ["ConfigError", "TrainConfig", "Component", "parse_config", "load_config",
           "apply_overrides", "default_config", "key_docs", "help_text", "factory", "MODELS",
           "DATASETS", "optimizers", "schedulers"]


class ConfigError(ValueError):
    """A config (or command-line) value that cannot run; the message says what and how to fix."""


# ---- the components a section may name ---------------------------------------------------------
def _norm(name):
    return str(name).lower().replace("_", "").replace("-", "")


def _models():
    from .. import models
    # name -> (factory, the class its **kwargs go to, parameters the factory fixes itself)
    return {"mlp": (models.MLP, None, ()),
            "small_cnn": (models.SmallCNN, None, ()),
            "resnet18": (models.resnet18, models.ResNet, ("block", "layers")),
            "resnet34": (models.resnet34, models.ResNet, ("block", "layers")),
            "mobilenet_v2": (models.mobilenet_v2, models.MobileNetV2, ()),
            "efficientnet_lite0": (models.efficientnet_lite0, models.EfficientNetLite,
                                   ("stages",))}


def _datasets():
    from ..data import datasets
    return {"digits": datasets.Digits, "mnist": datasets.MNIST,
            "fashion_mnist": datasets.FashionMNIST, "cifar10": datasets.CIFAR10}


def optimizers():
    """name -> class: every optimizer the Trainer can step (LBFGS needs a closure: not here)."""
    from .. import optim
    return {n: getattr(optim, n) for n in optim.__all__
            if n not in ("Optimizer", "LBFGS", "lr_scheduler")}


def schedulers():
    """name -> class: the schedulers configurable from JSON (those taking functions or other
    schedulers, LambdaLR, MultiplicativeLR, SequentialLR, ChainedScheduler, are not)."""
    from ..optim import lr_scheduler
    skip = {"LRScheduler", "LambdaLR", "MultiplicativeLR", "SequentialLR", "ChainedScheduler"}
    return {n: getattr(lr_scheduler, n) for n in lr_scheduler.__all__ if n not in skip}


MODELS = ("mlp", "small_cnn", "resnet18", "resnet34", "mobilenet_v2", "efficientnet_lite0")
DATASETS = ("digits", "mnist", "fashion_mnist", "cifar10")
# arguments the program passes itself, per section
_FIXED = {"model": (), "dataset": ("train", "transform", "target_transform"),
          "optimizer": ("params",), "scheduler": ("optimizer", "last_epoch", "verbose")}


def _registry(section):
    if section == "model":
        return {n: f for n, (f, _, _) in _models().items()}
    if section == "dataset":
        return _datasets()
    return optimizers() if section == "optimizer" else schedulers()


def factory(section, name):
    """The constructor a checked section's name stands for (``models.SmallCNN``, ``optim.Adam``)."""
    return _registry(section)[name]


def _parameters(section, name):
    """The configurable parameters of a component: name -> inspect.Parameter, in order."""
    if section == "model":
        factory, target, fixed = _models()[name]
        params = dict(inspect.signature(factory).parameters)
        if target is not None:
            for p in inspect.signature(target.__init__).parameters.values():
                params.setdefault(p.name, p)
        skip = set(fixed) | {"self"}
    else:
        cls = _registry(section)[name]
        params = dict(inspect.signature(cls.__init__).parameters)
        skip = set(_FIXED[section]) | {"self"}
    return {k: p for k, p in params.items() if k not in skip
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _resolve(section, name):
    """The registry's spelling of ``name`` (case, '_' and '-' ignored) or a ConfigError."""
    if not isinstance(name, str):
        raise ConfigError(f"{section}.name must be a string, got {_show(name)}; e.g. "
                          f"\"name\": {json.dumps(DEFAULTS[section]['name'])}")
    valid = list(_registry(section))
    for v in valid:
        if _norm(v) == _norm(name):
            return v
    close = difflib.get_close_matches(_norm(name), [_norm(v) for v in valid], n=1, cutoff=0.6)
    hint = f"did you mean {valid[[_norm(v) for v in valid].index(close[0])]!r}? " if close else ""
    raise ConfigError(f"unknown {section} {name!r}; {hint}valid names: {', '.join(valid)}")


# ---- values --------------------------------------------------------------------------------------
def _show(value):
    kind = {str: "a string", bool: "a bool", int: "an int", float: "a number", list: "a list",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
    return f"{json.dumps(value)} ({kind})" if kind != type(value).__name__ else repr(value)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# top-level scalars: key -> (check, what it must be, default, explanation)
_SCALARS = {
    "epochs": (lambda v: _is_int(v) and v >= 1, "an int >= 1", 10,
               "epochs to train (a resumed run passes the same number: it is the final count)"),
    "batch_size": (lambda v: _is_int(v) and v >= 1, "an int >= 1", 32,
                   "training batch size (the training set is shuffled every epoch)"),
    "eval_batch_size": (lambda v: _is_int(v) and v >= 1, "an int >= 1", 256,
                        "batch size for the test-set evaluation after each epoch"),
    "seed": (lambda v: _is_int(v) and v >= 0, "an int >= 0", 0,
             "seeds minitorch_edge, numpy and random before the model is built"),
    "num_workers": (lambda v: _is_int(v) and v >= 0, "an int >= 0", 0,
                    "DataLoader worker processes (0: load in the main process; resume after "
                    "Ctrl-C replays the data order exactly with 0)"),
    "grad_clip_norm": (lambda v: v is None or (_is_number(v) and v > 0), "a number > 0 or null",
                       None, "clip the gradients' total 2-norm to this before each step; null: no "
                             "clipping"),
    "grad_accum_steps": (lambda v: _is_int(v) and v >= 1, "an int >= 1", 1,
                         "micro-batches per optimizer step (gradient accumulation)"),
    "out": (lambda v: v is None or (isinstance(v, str) and v != ""), "a path or null", None,
            "run directory (checkpoints, metrics.csv, steps.csv, config.json); null: runs/<model "
            "name>. An earlier run's directory is never reused: the next free name (out-1, "
            "out-2, ...) is taken unless --overwrite"),
}
_SECTIONS = {
    "model": ("the network: \"name\" is one of " + ", ".join(MODELS) + "; the other keys are its "
              "constructor's arguments"),
    "dataset": ("the data: \"name\" is one of " + ", ".join(DATASETS) + " (train and test splits); "
                "the other keys are its arguments (e.g. root, download)"),
    "optimizer": "\"name\" is an optimizer of minitorch_edge.optim; the other keys its arguments",
    "scheduler": ("\"name\" is a scheduler of minitorch_edge.optim.lr_scheduler, stepped once per "
                  "epoch (per step for OneCycleLR and CyclicLR); the other keys its arguments; "
                  "null: a constant learning rate"),
}
DEFAULTS = {"model": {"name": "small_cnn", "in_channels": 1, "num_classes": 10, "input_size": 8},
            "dataset": {"name": "digits"},
            "optimizer": {"name": "Adam", "lr": 0.003},
            "scheduler": {"name": "CosineAnnealingLR", "T_max": 10}}
TOP_KEYS = tuple(_SECTIONS) + tuple(_SCALARS)
_PUBLIC = {"model": "models.", "dataset": "data.datasets.", "optimizer": "optim.",
           "scheduler": "optim.lr_scheduler."}


def _json_default(value):
    """A parameter's default in JSON form, or raises TypeError where it has none."""
    if isinstance(value, tuple):
        value = [_json_default(v) for v in value]
    json.dumps(value, allow_nan=False)
    return value


def _check_arg(path, param, value):
    default = param.default
    if default is param.empty or default is None or _is_required(default):
        return value
    ok = (isinstance(value, bool) if isinstance(default, bool) else
          _is_number(value) if _is_number(default) else
          isinstance(value, str) if isinstance(default, str) else
          isinstance(value, list) if isinstance(default, (tuple, list)) else True)
    if not ok:
        want = {bool: "true or false", str: "a string"}.get(type(default)) or (
            "a number" if _is_number(default) else "a list")
        raise ConfigError(f"{path} must be {want}, got {_show(value)}; its default is "
                          f"{json.dumps(_json_default(default))}")
    return tuple(value) if isinstance(default, tuple) else value


def _is_required(default):
    return type(default).__name__ == "_RequiredParameter"      # optim.required (SGD's lr)


def _unknown(key, valid, where, what="key"):
    close = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return ConfigError(f"unknown {what} {key!r}{where}; {hint}valid: {', '.join(valid)}")


@dataclasses.dataclass
class Component:
    """One section: the registry name and its constructor's arguments (defaults filled in)."""
    name: str
    args: dict

    def to_dict(self):
        return {"name": self.name, **{k: _json_default(v) if isinstance(v, tuple) else v
                                      for k, v in self.args.items()}}


def _component(section, raw):
    if not isinstance(raw, dict):
        raise ConfigError(f"{section} must be an object with a \"name\", got {_show(raw)}; e.g. "
                          f"\"{section}\": {json.dumps(DEFAULTS[section])}")
    raw = dict(raw)
    if "name" not in raw:
        raise ConfigError(f"{section} needs a \"name\"; valid names: "
                          f"{', '.join(_registry(section))}")
    name = _resolve(section, raw.pop("name"))
    params = _parameters(section, name)
    owner = getattr(_registry(section)[name], "__name__", name)
    for key in raw:
        if key not in params:
            raise _unknown(key, params, f" for {section} {name}" + (
                f" ({owner})" if owner != name else ""),
                           what=f"{section} argument")
    args = {}
    for key, p in params.items():
        if key in raw:
            args[key] = _check_arg(f"{section}.{key}", p, raw[key])
        elif p.default is p.empty or _is_required(p.default):
            raise ConfigError(f"{section} {name} needs the argument {key!r}; add it, e.g. "
                              f"--set {section}.{key}=VALUE")
        else:
            try:
                args[key] = _json_default(p.default)
            except (TypeError, ValueError):
                continue                    # a default JSON cannot write: left to the code
            if isinstance(p.default, tuple):
                args[key] = p.default
    return Component(name, args)


@dataclasses.dataclass
class TrainConfig:
    """A checked config; see the file header for the keys."""
    model: Component
    dataset: Component
    optimizer: Component
    scheduler: Optional[Component]
    epochs: int = 10
    batch_size: int = 32
    eval_batch_size: int = 256
    seed: int = 0
    num_workers: int = 0
    grad_clip_norm: Optional[float] = None
    grad_accum_steps: int = 1
    out: Optional[str] = None

    @property
    def run_dir(self):
        return self.out if self.out is not None else os.path.join("runs", self.model.name)

    def to_dict(self, docs=False):
        d = {s: (None if getattr(self, s) is None else getattr(self, s).to_dict())
             for s in _SECTIONS}
        d.update({k: getattr(self, k) for k in _SCALARS})
        if docs:
            d["_doc"] = key_docs(self)
        return d


def parse_config(raw, where=""):
    """Check a config dict (missing keys take the defaults) and return a TrainConfig."""
    if not isinstance(raw, dict):
        raise ConfigError(f"a config must be a JSON object{where}, got {_show(raw)}; see "
                          f"minitorch-edge train --print-config")
    for key in raw:
        if key not in TOP_KEYS and key != "_doc":
            raise _unknown(key, TOP_KEYS, where)
    values = {}
    for key, (check, what, default, _) in _SCALARS.items():
        value = raw.get(key, default)
        if not check(value):
            raise ConfigError(f"{key} must be {what}, got {_show(value)}{where}; e.g. "
                              f"\"{key}\": {json.dumps(default if default is not None else 1)}")
        values[key] = value
    sections = {s: raw[s] if s in raw else _default_section(s, values) for s in _SECTIONS}
    scheduler = sections.pop("scheduler")
    return TrainConfig(**{s: _component(s, v) for s, v in sections.items()},
                       scheduler=None if scheduler is None else _component("scheduler", scheduler),
                       **values)


def load_config(path):
    """The raw dict of a JSON config file, or a ConfigError saying why it cannot be read."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read the config {path}: {e.strerror or e}; check the path "
                          f"(minitorch-edge train --print-config > {os.path.basename(path)} "
                          f"writes a default one)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path} is not valid JSON: {e.msg} at line {e.lineno} column "
                          f"{e.colno}; fix the file (train --print-config shows a valid one)") \
            from None


def apply_overrides(raw, sets):
    """``raw`` with each ``"a.b=value"`` of ``sets`` put in (value: JSON, else a string)."""
    raw = json.loads(json.dumps(raw))
    given = {}                  # section -> the keys --set gave it
    for item in sets:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts):
            raise ConfigError(f"--set expects KEY=VALUE with a dotted KEY (e.g. --set "
                              f"optimizer.lr=0.01), got {item!r}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        if parts[0] not in TOP_KEYS:
            raise _unknown(parts[0], TOP_KEYS, f" in --set {item}")
        if len(parts) > 2 or (len(parts) == 2 and parts[0] not in _SECTIONS):
            raise ConfigError(f"--set {item}: {parts[0]} has no sub-keys"
                              if parts[0] not in _SECTIONS else
                              f"--set {item}: {parts[0]} holds only one level of keys; e.g. "
                              f"--set {parts[0]}.{parts[1]}=VALUE")
        if len(parts) == 1:
            raw[parts[0]] = value
            continue
        section, sub = parts
        current = raw[section] if section in raw else _default_section(section, raw)
        current = dict(current) if isinstance(current, dict) else {}
        if sub == "name" and _norm(current.get("name", "")) != _norm(value):
            current = dict(given.get(section, {}))  # another component: drop the old arguments
        current[sub] = value
        given.setdefault(section, {})[sub] = value
        raw[section] = current
    return raw


def _default_section(section, raw):
    """A section's default; the default scheduler anneals over the run's epochs."""
    if section == "scheduler":
        return {**DEFAULTS["scheduler"], "T_max": raw.get("epochs", _SCALARS["epochs"][2])}
    return DEFAULTS[section]


def default_config():
    """The default TrainConfig (SmallCNN on the bundled digits)."""
    return parse_config({})


def key_docs(config=None):
    """Dotted key -> explanation, for every key of ``config`` (default: the default config)."""
    config = config or default_config()
    docs = {"_doc": "these explanations; ignored when the config is read"}
    for section, text in _SECTIONS.items():
        docs[section] = text
        comp = getattr(config, section)
        if comp is None:
            continue
        docs[f"{section}.name"] = (f"one of {', '.join(_registry(section))} (case, '_' and '-' "
                                   f"ignored)")
        owner_name = _PUBLIC[section] + _registry(section)[comp.name].__name__
        params = _parameters(section, comp.name)
        for key in comp.args:
            p = params[key]
            default = "required" if p.default is p.empty or _is_required(p.default) else \
                f"default {json.dumps(_json_default(p.default))}"
            docs[f"{section}.{key}"] = f"argument {key} of {owner_name} ({default})"
    for key, (_, what, _, text) in _SCALARS.items():
        docs[key] = f"{what}: {text}"
    return docs


def help_text():
    """The key listing shown by ``minitorch-edge train --help``."""
    def entry(key, text):
        return textwrap.fill(text, width=100, initial_indent=f"  {key:<17}",
                             subsequent_indent=" " * 19)
    lines = ["config keys (a JSON object; --print-config prints all of them with their values):"]
    for section, text in _SECTIONS.items():
        lines.append(entry(section, f"{text}. Default: {json.dumps(DEFAULTS[section])}" +
                           (" (T_max: the epochs)" if section == "scheduler" else "")))
    for key, (_, what, default, text) in _SCALARS.items():
        lines.append(entry(key, f"{what}, default {json.dumps(default)}: {text}"))
    lines.append("")
    for kind, names in (("models", MODELS), ("datasets", DATASETS), ("optimizers", optimizers()),
                        ("schedulers", schedulers())):
        lines.append(textwrap.fill(f"{kind}: {', '.join(names)}", width=100,
                                   subsequent_indent="  "))
    lines.append("Names match ignoring case, '_' and '-'; an unknown key is an error.")
    return "\n".join(lines)
