"""Learning-rate schedulers: change each parameter group's ``lr`` as training goes on.

A scheduler wraps an optimizer. Building it records every group's starting rate as
``group["initial_lr"]`` (kept in ``base_lrs``) and sets epoch 0's rate; each ``step()`` (call it
after ``optimizer.step()``) advances ``last_epoch`` by one and writes the new rates into the
groups. ``get_last_lr()`` returns them.

Most schedulers here compute the new rate from the *current* one (the "chainable" form PyTorch
uses, so that several schedulers can act on one optimizer, see ChainedScheduler), and also have a
closed form from ``base_lrs`` used when ``step(epoch)`` is given an epoch. Both follow PyTorch's
formulas exactly so the sequences agree to the last bit.

Files: _base.py holds the base class, the simple schedules (Lambda, Multiplicative, Step,
MultiStep, Constant, Linear, Exponential, Polynomial, CosineAnnealing) and the combinators
(SequentialLR, ChainedScheduler); cyclic.py the schedules that cycle or restart (CyclicLR,
OneCycleLR, CosineAnnealingWarmRestarts); plateau.py ReduceLROnPlateau, which reacts to a
metric. cyclic.py and plateau.py import the base from _base.py, and nothing imports back;
every scheduler is importable from here, as from ``torch.optim.lr_scheduler``.
"""
from ._base import (LRScheduler, _LRScheduler, LambdaLR, MultiplicativeLR, StepLR,  # noqa: F401
                    MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR,
                    CosineAnnealingLR, SequentialLR, ChainedScheduler, EPOCH_DEPRECATION_WARNING)
from .cyclic import CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts  # noqa: F401
from .plateau import ReduceLROnPlateau  # noqa: F401

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "SequentialLR",
           "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "OneCycleLR",
           "CosineAnnealingWarmRestarts"]
