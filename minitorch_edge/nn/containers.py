"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

They hold modules (or parameters) under the names "0", "1", ... or given keys, so that the
parent module's parameters(), state_dict() and to() reach everything inside.

Sequential fuses pairs: where a module is an exact nn.Linear or nn.Conv2d and the next one an
exact activation with a fused form (ReLU, ReLU6; GELU after Linear), and neither has forward
hooks, forward runs the pair through ``functional.fused.pair_forward``: one backend call that
applies the activation to each output tile while it is in cache, with the same result as the
two modules one after the other (Linear + ReLU/ReLU6 always, as one autograd node; GELU and
Conv2d pairs when nothing is recorded; otherwise the two modules run as usual). The modules,
their names and the state_dict do not change. The rules, and the switch that turns fusion off
(``MTE_FUSE=0``), are in nn/functional/fused.py.
"""
import operator
from collections import OrderedDict

from .functional import fused
from .module import Module
from .parameter import Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(idx, n, kind):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {kind} of length {n}")
    return idx % n


class _ModuleSequence:
    """What Sequential and ModuleList share: modules kept under "0", "1", ... in order."""

    def _renumber(self, items):
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        del items[idx if isinstance(idx, slice) else _index(idx, len(items), type(self).__name__)]
        self._renumber(items)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)
        return self


class Sequential(_ModuleSequence, Module):
    """Runs its modules in order: ``Sequential(Linear(4, 8), ReLU(), Linear(8, 2))``; also takes
    an OrderedDict of name -> module."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        modules = list(self._modules.values())
        i = 0
        while i < len(modules):
            if i + 1 < len(modules) and fused.can_fuse(modules[i], modules[i + 1]):
                input = fused.pair_forward(modules[i], modules[i + 1], input)  # e.g. Linear+ReLU
                i += 2
            else:
                input = modules[i](input)
                i += 1
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self), "Sequential")]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)


class ModuleList(_ModuleSequence, Module):
    """A list of modules, registered so the parent sees their parameters."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def forward(self, *args):
        raise NotImplementedError("ModuleList has no forward(); iterate over it instead")


class _MappingMixin:
    """dict-like access to one of the module's tables (`_table` names it)."""
    _table = "_modules"

    def _entries(self):
        return self.__dict__[self._table]

    def __delitem__(self, key):
        del self._entries()[key]

    def __len__(self):
        return len(self._entries())

    def __iter__(self):
        return iter(self._entries())

    def __contains__(self, key):
        return key in self._entries()

    def keys(self):
        return self._entries().keys()

    def items(self):
        return self._entries().items()

    def values(self):
        return self._entries().values()

    def pop(self, key):
        return self._entries().pop(key)

    def update(self, entries):
        for k, v in (entries.items() if hasattr(entries, "items") else entries):
            self[k] = v


class ModuleDict(_MappingMixin, Module):
    """An ordered dict of modules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def clear(self):
        self._modules.clear()


class ParameterList(Module):
    """A list of Parameters (plain tensors are wrapped into Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def _wrap(self, v):
        return v if isinstance(v, Parameter) or v is None else Parameter(v)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_index(idx, len(self), "ParameterList")), self._wrap(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        self.register_parameter(str(len(self)), self._wrap(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for k, p in self._parameters.items())


class ParameterDict(_MappingMixin, Module):
    """An ordered dict of Parameters."""
    _table = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, value if isinstance(value, Parameter) or value is None
                                else Parameter(value))

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}]"
                         for k, p in self._parameters.items())
