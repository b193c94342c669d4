"""nn.functional: the stateless form of every layer and loss (``F.conv2d(x, w)``,
``F.cross_entropy(logits, target)``), plus the activations from ops/activation.py.

Each file here keeps an ``__all__``; everything listed is re-exported as ``nn.functional.<name>``.
"""
import importlib

from ...ops.activation import *  # noqa: F401,F403
from ...ops.softmax import softmax, log_softmax  # noqa: F401
from ...ops.rearrange import pad  # noqa: F401

_MODULES = ["linear", "conv", "pooling", "normalization", "dropout", "sparse", "upsampling",
            "attention", "loss"]
for _name in _MODULES:
    _mod = importlib.import_module(f".{_name}", __name__)
    for _fn in _mod.__all__:
        globals()[_fn] = getattr(_mod, _fn)

from ..layers.activation import prelu, softmin  # noqa: E402,F401
