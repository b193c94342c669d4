"""RMSprop: divide each gradient by a running root-mean-square of recent gradients.

For each parameter (PyTorch's formulation)::

    g <- -g if maximize;   g <- g + weight_decay p
    s <- alpha s + (1 - alpha) g^2                       (square_avg)
    centered:  a <- alpha a + (1 - alpha) g;  d = sqrt(s - a^2) + eps   (grad_avg; variance)
    otherwise: d = sqrt(s) + eps
    momentum > 0:  b <- momentum b + g / d;  p <- p - lr b
    otherwise:     p <- p - lr g / d
"""
import numpy as np

from .optimizer import Optimizer, _scalar
from .sgd import _check_common, _check_unsupported

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton). Args: params, lr (1e-2), alpha (0.99), eps (1e-8), weight_decay (0),
    momentum (0), centered (False), maximize (False). ``capturable``/``foreach`` are ignored."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_common(lr, weight_decay, eps)
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_unsupported(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, wd, eps = _scalar(group["lr"]), group["weight_decay"], group["eps"]
            alpha, momentum = group["alpha"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = self._scalar_zero()
                    state["square_avg"] = self._zeros(p)
                    if momentum > 0:
                        state["momentum_buffer"] = self._zeros(p)
                    if group["centered"]:
                        state["grad_avg"] = self._zeros(p)
                x, g = p._data, self._grad(p, group)
                state["step"]._data += 1
                if wd != 0:
                    g = g + wd * x
                s = state["square_avg"]._data
                s *= alpha
                s += (1 - alpha) * (g * g)
                if group["centered"]:
                    a = state["grad_avg"]._data
                    self._lerp_(a, g, 1 - alpha)
                    d = np.sqrt(s - a * a)
                else:
                    d = np.sqrt(s)
                d += eps
                if momentum > 0:
                    b = state["momentum_buffer"]._data
                    b *= momentum
                    b += g / d
                    x -= lr * b
                else:
                    x -= lr * g / d
                self._bump(p)
        return loss
