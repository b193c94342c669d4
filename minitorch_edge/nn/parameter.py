"""Parameter: a Tensor that a Module registers as one of its learnable weights.

Assigning a Parameter to a module attribute (``self.weight = Parameter(...)``) registers it, so
``module.parameters()`` finds it and optimizers can update it. It requires grad by default.
"""
import numpy as np

from ..tensor import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = np.empty((0,), np.float32)
        array = data._data if isinstance(data, Tensor) else np.asarray(data)
        self._data = array                      # shares memory with `data`, as in PyTorch
        self._grad = self._fn = self._hooks = self._retains = self._base = None
        self._nr = 0
        self._vc = [0, None]
        self._rg = False
        self.requires_grad = requires_grad

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (Parameter, (Tensor._make(self._data), self._rg))

    def __deepcopy__(self, memo):
        result = Parameter(Tensor._make(self._data.copy()), self._rg)
        memo[id(self)] = result
        return result


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a module attribute
    (``self.running_mean = Buffer(zeros(3))``); ``persistent=False`` keeps it out of state_dict."""
    __slots__ = ("persistent",)

    def __init__(self, data, persistent=True):
        array = data._data if isinstance(data, Tensor) else np.asarray(data)
        self._data = array
        self._grad = self._fn = self._hooks = self._retains = self._base = None
        self._nr = 0
        self._vc = [0, None]
        self._rg = False
        self.persistent = persistent
