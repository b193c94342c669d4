"""nn.functional: the stateless form of every layer and loss (``F.conv2d(x, w)``,
``F.cross_entropy(logits, target)``), plus the activations from ops/activation.py and the
aliases PyTorch keeps here for ops that live elsewhere (``F.tanh``, ``F.sigmoid``, the
``*_with_indices`` pooling forms).

Each file here keeps an ``__all__``; everything listed is re-exported as ``nn.functional.<name>``.
The forms defined under nn/ are re-exported through ``_inputs.tensor_entry_point``: a numpy
array, list or number where a Tensor is needed is a TypeError naming the function and the fix
(the ops' own forms check their inputs themselves).
"""
import importlib
import inspect

from .. import _inputs

from ...ops.activation import *  # noqa: F401,F403
from ...ops.softmax import softmax, log_softmax  # noqa: F401
from ...ops.rearrange import pad  # noqa: F401

_MODULES = ["linear", "conv", "pooling", "normalization", "dropout", "sparse", "upsampling",
            "attention", "loss", "distance", "padding"]   # padding.pad replaces ops' pad
for _name in _MODULES:
    _mod = importlib.import_module(f".{_name}", __name__)
    for _fn in _mod.__all__:
        globals()[_fn] = getattr(_mod, _fn)

from ..layers.activation import glu, prelu, softmin  # noqa: E402,F401
from ...ops.unary import sigmoid, tanh  # noqa: E402,F401  (torch.nn.functional keeps these too)


# PyTorch's *_with_indices forms: the pooling functions that always return (output, indices)
_pooling = importlib.import_module(".pooling", __name__)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _pooling.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                               return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _pooling.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode,
                               return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _pooling.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _pooling.adaptive_max_pool2d(input, output_size, return_indices=True)


def _guard_entry_points(namespace):
    """Wrap every public function defined under nn/ (not the ops re-exported here, which check
    their inputs and keep their identity: ``F.tanh is minitorch_edge.tanh``)."""
    for name, fn in list(namespace.items()):
        if (not name.startswith("_") and inspect.isfunction(fn)
                and fn.__module__.startswith("minitorch_edge.nn.")):
            namespace[name] = _inputs.tensor_entry_point(fn)


_guard_entry_points(globals())
