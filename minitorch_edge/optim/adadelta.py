"""Adadelta: steps sized by the ratio of running RMS of past updates to running RMS of gradients,
so no learning rate is needed in principle (lr defaults to 1 and only scales the result).

For each parameter (PyTorch's formulation)::

    g <- -g if maximize;   g <- g + weight_decay p
    v <- rho v + (1 - rho) g^2                                  (square_avg)
    dx = sqrt(u + eps) / sqrt(v + eps) * g                      (u: acc_delta)
    u <- rho u + (1 - rho) dx^2
    p <- p - lr dx
"""
import numpy as np

from .optimizer import Optimizer, _scalar
from .sgd import _check_common, _check_unsupported

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler). Args: params, lr (1.0), rho (0.9), eps (1e-6), weight_decay (0),
    maximize (False)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_common(lr, weight_decay, eps)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_unsupported(differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, wd, eps, rho = _scalar(group["lr"]), group["weight_decay"], group["eps"], \
                group["rho"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = self._scalar_zero()
                    state["square_avg"] = self._zeros(p)
                    state["acc_delta"] = self._zeros(p)
                x, g = p._data, self._grad(p, group)
                state["step"]._data += 1
                if wd != 0:
                    g = g + wd * x
                v, u = state["square_avg"]._data, state["acc_delta"]._data
                v *= rho
                v += (1 - rho) * (g * g)
                std = np.sqrt(v + eps)
                delta = np.sqrt(u + eps)
                delta /= std
                delta *= g
                u *= rho
                u += (1 - rho) * (delta * delta)
                x -= lr * delta
                self._bump(p)
        return loss
