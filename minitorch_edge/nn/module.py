"""Module: the base class of every layer and model.

A Module owns three ordered dicts — parameters (learnable tensors), buffers (state such as
BatchNorm's running mean) and sub-modules — filled automatically by attribute assignment:
``self.fc = Linear(4, 2)`` registers a child, ``self.w = Parameter(...)`` a parameter. Everything
else (``parameters()``, ``state_dict()``, ``to()``, ``train()``) walks that tree.
Calling a module runs forward pre-hooks, ``forward``, then forward hooks; an input that is not
a Tensor (a numpy array, a list) is a TypeError naming the module and the fix (nn/_inputs.py).
"""
from collections import OrderedDict, namedtuple

import numpy as np

from .. import dtypes as _dt
from ..backend.prepared import wrote as _wrote
from ..tensor import Tensor
from . import _inputs
from .parameter import Buffer, Parameter

__all__ = ["Module"]

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _RemovableHandle:
    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)


class Module:
    """Base class for layers and models: subclass it, create sub-layers and parameters in
    ``__init__``, compute in ``forward``."""
    _next_hook_id = 0

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # ---- calling --------------------------------------------------------------------------------
    _takes_arrays = False     # True: forward accepts numpy arrays (see nn/_inputs.py)

    def __call__(self, *args, **kwargs):
        for a in args:                # a numpy array: TypeError naming this module
            if isinstance(a, np.ndarray) and not self._takes_arrays:
                _inputs.check_no_arrays(self, args, kwargs)
        if kwargs and not self._takes_arrays:
            _inputs.check_no_arrays(self, (), kwargs)
        if self._forward_pre_hooks:   # (tested first: most modules have no hooks)
            for hook in list(self._forward_pre_hooks.values()):
                new = hook(self, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        try:
            out = self.forward(*args, **kwargs)
        except AttributeError as e:   # a list or number where a Tensor is needed
            better = _inputs.from_attribute_error(type(self).__name__, e, args, kwargs)
            if better is None:
                raise
            raise better from None
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                new = hook(self, args, out)
                if new is not None:
                    out = new
        return out

    def _add_hook(self, table, hook):
        Module._next_hook_id += 1
        table[Module._next_hook_id] = hook
        return _RemovableHandle(table, Module._next_hook_id)

    def register_forward_pre_hook(self, hook):
        """hook(module, args) -> new args or None, before forward."""
        return self._add_hook(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """hook(module, args, output) -> new output or None, after forward."""
        return self._add_hook(self._forward_hooks, hook)

    # ---- registration -------------------------------------------------------------------------
    def _check_name(self, name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'{kind} name can\'t contain "." and can\'t be empty, got {name!r}')

    def register_parameter(self, name, param):
        self._check_name(name, "parameter")
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._check_name(name, "buffer")
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = Tensor._make(tensor._data)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        params, buffers, modules = d.get("_parameters"), d.get("_buffers"), d.get("_modules")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (nn.Module or None expected)")
            modules[name] = None
        elif isinstance(value, Buffer):
            self._forget(name)
            self.register_buffer(name, value)
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            self.__dict__[table].pop(name, None)
        self.__dict__.pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            entries = d.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, ()):
                del self.__dict__[table][name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) |
                      set(self._modules))

    # ---- walking the tree -----------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def get_parameter(self, target):
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return module._parameters[name]

    # ---- modes and conversions ------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0
                    p.grad._fn = None

    def apply(self, fn):
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _apply_arrays(self, convert):
        """Replace every parameter's and buffer's array by convert(array), keeping the
        Parameter objects (so optimizers holding them stay valid)."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None:
                    p._data = convert(p._data)
                    if p.grad is not None:
                        p.grad = Tensor._make(convert(p.grad._data))
            for name, b in m._buffers.items():
                if b is not None:
                    b._data = convert(b._data)
        return self

    def to(self, *args, **kwargs):
        """Cast floating parameters and buffers (and their grads) in place; returns self.

        Accepts what PyTorch's Module.to does: ``to(device=None, dtype=None,
        non_blocking=False)``, ``to(dtype, non_blocking=False)``, ``to(tensor,
        non_blocking=False)``, and keyword ``memory_format``. The device may be "cpu" (or
        ``device("cpu")``); cuda and the others raise as a CPU-only PyTorch build does."""
        from ..tensor import parse_to
        _, target, _, copy, _ = parse_to(args, kwargs)
        if copy is not None:
            raise RuntimeError(".to() does not accept copy argument")
        if target is None:
            return self
        if not target.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={target}")
        np_dtype = target.np
        return self._apply_arrays(lambda a: a.astype(np_dtype) if _dt.is_float_array(a) else a)

    def float(self):
        return self.to(_dt.float32)

    def double(self):
        return self.to(_dt.float64)

    def half(self):
        return self.to(_dt.float16)

    def bfloat16(self):
        return self.to(_dt.bfloat16)

    def cpu(self):
        return self

    def cuda(self, device=None):
        """Always raises, as a CPU-only PyTorch build does: there is no CUDA device."""
        from ..tensor import check_device
        check_device(device if isinstance(device, str) else "cuda")

    def xpu(self, device=None):
        from ..tensor import check_device
        check_device("xpu")

    def type(self, dst_type):
        return self.to(dst_type)

    # ---- state_dict ------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """name -> tensor for every parameter and persistent buffer (sharing memory)."""
        out = OrderedDict() if destination is None else destination
        for mod_prefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            base = mod_prefix + "." if mod_prefix else ""
            for name, p in m._parameters.items():
                if p is not None:
                    out[base + name] = p if keep_vars else p.detach()
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent:
                    out[base + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values from `state_dict` into this module's parameters and buffers. Every key and
        shape is checked first; on any error nothing is changed. Returns (missing, unexpected)."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            arr = value._data if isinstance(value, Tensor) else np.asarray(value)
            if arr.shape != target._data.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{list(arr.shape)} from checkpoint, the shape in current model is "
                              f"{list(target._data.shape)}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " +
                              ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" +
                               "\n\t".join(errors))
        for key, target in own.items():
            if key in state_dict:
                value = state_dict[key]
                arr = value._data if isinstance(value, Tensor) else np.asarray(value)
                np.copyto(target._data, arr, casting="unsafe")
                target._vc[0] += 1
                _wrote(target._data)
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing --------------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            text = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


from . import _backward_hooks  # noqa: E402,F401  (Module.register_full_backward_hook / _pre_hook)
