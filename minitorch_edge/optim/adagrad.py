"""Adagrad: per-coordinate step sizes that shrink with the sum of all past squared gradients.

For each parameter (PyTorch's formulation; t is the step count after incrementing)::

    g <- -g if maximize;   g <- g + weight_decay p
    lr_t = lr / (1 + (t - 1) lr_decay)
    S <- S + g^2                        (state "sum", starts at initial_accumulator_value)
    p <- p - lr_t g / (sqrt(S) + eps)

As in PyTorch, the state of every parameter is created when the optimizer is built.
"""
import numpy as np

from .optimizer import Optimizer, _scalar
from .sgd import _check_common, _check_unsupported

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.). Args: params, lr (1e-2), lr_decay (0), weight_decay (0),
    initial_accumulator_value (0), eps (1e-10), maximize (False)."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_common(lr, weight_decay)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_unsupported(differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = self._scalar_zero()
        state["sum"] = self._zeros(p, group["initial_accumulator_value"])
        return state

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, wd, eps = _scalar(group["lr"]), group["weight_decay"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:                 # a group added after construction
                    state = self._init_state(p, group)
                x, g = p._data, self._grad(p, group)
                state["step"]._data += 1
                t = float(state["step"]._data)
                if wd != 0:
                    g = g + wd * x
                clr = lr / (1 + (t - 1) * group["lr_decay"])
                s = state["sum"]._data
                s += g * g
                std = np.sqrt(s)
                std += eps
                x -= clr * g / std
                self._bump(p)
        return loss
