"""Neural-network building blocks: Module and Parameter, containers, layers, losses,
initialisation (`nn.init`), functional forms (`nn.functional`) and utilities (`nn.utils`).

Each file under layers/ keeps an ``__all__``; everything listed there is re-exported here, so
``nn.Conv2d`` and ``nn.CrossEntropyLoss`` are found where PyTorch users expect them.
"""
import importlib

from .parameter import Parameter, Buffer  # noqa: F401
from .module import Module  # noqa: F401
from .containers import (Sequential, ModuleList, ModuleDict, ParameterList,  # noqa: F401
                         ParameterDict)
from . import functional, init, utils  # noqa: F401,E402
from . import modules, parallel  # noqa: F401,E402  (torch.nn.modules / nn.parallel paths)
from .parallel import DataParallel  # noqa: F401,E402

_LAYER_MODULES = ["linear", "activation", "conv", "pooling", "normalization", "dropout",
                  "sparse", "upsampling", "attention", "transformer", "loss", "rnn", "padding",
                  "distance"]
for _name in _LAYER_MODULES:
    _mod = importlib.import_module(f".layers.{_name}", __name__)
    for _cls in _mod.__all__:
        globals()[_cls] = getattr(_mod, _cls)
