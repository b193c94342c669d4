"""Optimizer: the base class that holds parameters, their per-parameter state, and the options.

An optimizer keeps
  * ``param_groups``: a list of dicts, each with a ``"params"`` list and that group's options
    (``lr``, ``weight_decay``, ...; options a group leaves out come from ``defaults``);
  * ``state``: a dict ``parameter -> dict`` (momentum buffers, step counts, ...), filled lazily
    by ``step``;
and updates the parameters in ``step()`` from their ``.grad``.

Updates run under ``no_grad`` and write into the parameters' numpy arrays in place (one numpy
expression per tensor, no per-element Python), bumping each parameter's version counter as an
in-place op would, so a graph that saved the old value notices.

``state_dict()`` uses PyTorch's layout: parameters are replaced by integers (their position
counting through the groups in order), so the dict holds only plain values (numbers, strings,
lists, dicts, None) and Tensors, and can be written without pickle::

    {"state": {0: {"step": tensor(3.), "exp_avg": tensor([...])}, 1: {...}},
     "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), ..., "params": [0, 1]}]}
"""
import copy
import functools
from collections import OrderedDict, defaultdict
from itertools import chain

import numpy as np

from .. import dtypes as _dt
from ..autograd.function import _Recording
from ..autograd.grad_mode import enable_grad, no_grad
from ..backend.prepared import wrote as _wrote
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks an option that every parameter group must give (no default)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class _RemovableHandle:
    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)


def _wrap_step(step):
    """Wrap a subclass's ``step``: run it under no_grad, call the step hooks around it, and note
    that the optimizer has stepped (the LR schedulers check this to warn about call order)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self._in_step:                       # a subclass calling super().step()
            return step(self, *args, **kwargs)
        if _Recording.profile is not None:      # a profiler records: torch's range name
            name = type(self).__name__
            return _Recording.profile.call(f"Optimizer.step#{name}.step", "user_annotation",
                                           run, self, args, kwargs)
        return run(self, args, kwargs)

    def run(self, args, kwargs):
        self._in_step = True
        try:
            for hook in list(self._step_pre_hooks.values()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"optimizer step pre-hook must return None or a "
                                           f"tuple of (new_args, new_kwargs), but got {result}")
                    args, kwargs = result
            with no_grad():
                out = step(self, *args, **kwargs)
            self._opt_called = True
            for hook in list(self._step_post_hooks.values()):
                hook(self, args, kwargs)
            return out
        finally:
            self._in_step = False
    return wrapper


def _scalar(x):
    """A Python float from a number or a one-element Tensor (``lr`` may be either)."""
    return float(x._data) if isinstance(x, Tensor) else x


def _typename(x):
    return "minitorch_edge.Tensor" if isinstance(x, Tensor) else type(x).__name__


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts (parameter
            groups: ``{"params": [...], "lr": 0.1, ...}``) with per-group options.
        defaults: the options (and their default values) a group gets when it leaves them out.
    """
    _in_step = False
    _opt_called = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _wrap_step(cls.__dict__["step"])

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()
        self._next_hook_id = 0
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __repr__(self):
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ---- parameter groups -----------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group (a dict with ``"params"`` and optional options) to ``param_groups``, e.g.
        to start training layers that were frozen."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        group = dict(param_group)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            group["param_names"] = names
        group["params"] = params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error", stacklevel=3)
        seen = set()
        for other in self.param_groups:
            seen.update(id(p) for p in other["params"])
            if ("param_names" in other) != ("param_names" in group):
                kind = "with names" if "param_names" in group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # ---- gradients and steps --------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Reset the gradients: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g._data[...] = 0
                    g._vc[0] += 1

    def step(self, closure=None):
        """Update the parameters once. ``closure`` (optional for most optimizers) re-evaluates
        the model and returns the loss; it runs with grad enabled and its loss is returned."""
        raise NotImplementedError

    @staticmethod
    def _eval_closure(closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before each step; it may return a new
        ``(args, kwargs)``. Returns a handle with ``remove()``."""
        return self._add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after each step."""
        return self._add_hook(self._step_post_hooks, hook)

    def _add_hook(self, hooks, hook):
        key = self._next_hook_id
        self._next_hook_id += 1
        hooks[key] = hook
        return _RemovableHandle(hooks, key)

    # ---- helpers for the subclasses' step() -----------------------------------------------------
    @staticmethod
    def _grad(p, group):
        """The gradient array of ``p`` (negated when the group maximizes). Never written to."""
        g = p.grad._data
        return np.negative(g) if group.get("maximize", False) else g

    @staticmethod
    def _scalar_zero():
        """A fresh 0-d step counter, a Tensor as in PyTorch (float32, or float64 when that is
        the default dtype)."""
        dtype = np.float64 if _dt.get_default_dtype().np == np.float64 else np.float32
        return Tensor._make(np.zeros((), dtype))

    @staticmethod
    def _zeros(p, value=0):
        return Tensor._make(np.full(p._data.shape, value, dtype=p._data.dtype))

    @staticmethod
    def _bump(p):
        """Record that ``p`` was written in place (its version counter, as ``add_`` would)."""
        p._vc[0] += 1
        p._vc[1] = "add"
        _wrote(p._data)

    @staticmethod
    def _lerp_(a, b, w):
        """``a <- a + w (b - a)`` in place, rounded as PyTorch's lerp_ (the form depends on w)."""
        if w < 0.5:
            a += w * (b - a)
        else:
            np.subtract(b, (b - a) * (1 - w), out=a)

    # ---- state_dict -----------------------------------------------------------------------------
    def state_dict(self):
        """The optimizer's state as ``{"state": {index: {...}}, "param_groups": [...]}``, with
        parameters replaced by their index (counting through the groups in order). The tensors
        in it are the optimizer's own (copy them if the optimizer keeps stepping)."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a state from :meth:`state_dict`. The groups must have the same sizes; tensors are
        copied (floating ones cast to their parameter's dtype, except step counters). Nothing
        changes when the dict does not fit."""
        if not isinstance(state_dict, dict) or "state" not in state_dict \
                or "param_groups" not in state_dict:
            raise ValueError("load_state_dict: expected a dict with 'state' and 'param_groups' "
                             "(as returned by Optimizer.state_dict())")
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, np.ndarray):
                value = Tensor._make(value)
            if isinstance(value, Tensor):
                data = value._data
                if key != "step" and _dt.is_float_dtype(data.dtype) and \
                        _dt.is_float_dtype(param._data.dtype):
                    data = data.astype(param._data.dtype)
                return Tensor._make(np.array(data, copy=True))
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            key = int(k) if isinstance(k, str) and k.isdigit() else k   # JSON turns keys to str
            if key in id_map:
                state[id_map[key]] = cast(id_map[key], v)
            else:
                state[key] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            for name, default in self.defaults.items():
                saved.setdefault(name, default)
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.state = state
        self.param_groups = new_groups
