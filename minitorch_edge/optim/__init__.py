"""Optimizers (SGD, Adam, AdamW, Adamax, NAdam, RAdam, RMSprop, Adagrad, Adadelta, LBFGS) and
learning rate schedulers (``optim.lr_scheduler``), with PyTorch's names, defaults and update
formulas.

Read optimizer.py first (the base class: parameter groups, state, state_dict), then sgd.py and
adam.py; the lr_scheduler package for the schedules.
"""
from .optimizer import Optimizer, required  # noqa: F401
from .sgd import SGD  # noqa: F401
from .adam import Adam, AdamW, Adamax, NAdam  # noqa: F401
from .radam import RAdam  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from . import lr_scheduler  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad",
           "Adadelta", "LBFGS", "lr_scheduler"]
