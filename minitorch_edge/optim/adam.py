"""The Adam family: Adam, AdamW, Adamax and NAdam — adaptive steps from running moments.

All keep, per parameter, a running mean of the gradient ``m`` (first moment) and a running
scale of it (``v``, the mean of g^2, or Adamax's infinity norm ``u``), and divide one by the
other, so every coordinate moves by about ``lr`` whatever its gradient's magnitude. ``step``
counts the updates, for the bias corrections ``1 - beta^t`` that undo the zero start of m and v.

Adam (PyTorch's formulation; t is the step count after incrementing)::

    g <- -g if maximize;   g <- g + wd p  (L2, Adam)   or   p <- p (1 - lr wd)  (decoupled, AdamW)
    m <- beta1 m + (1 - beta1) g          v <- beta2 v + (1 - beta2) g^2
    v_max <- max(v_max, v)  and use v_max for v       (amsgrad)
    p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

Adamax: u <- max(beta2 u, |g| + eps);  p <- p - lr / (1 - beta1^t) * m / u.

NAdam (Nesterov momentum in Adam, with a momentum schedule mu_t)::

    mu_t = beta1 (1 - 0.5 * 0.96^(t psi)),  mu_{t+1} likewise,  prod_t = mu_1 ... mu_t
    p <- p - lr (1 - mu_t) / (1 - prod_t) * g / d  -  lr mu_{t+1} / (1 - prod_t mu_{t+1}) * m / d
    with d = sqrt(v / (1 - beta2^t)) + eps and psi = momentum_decay.
"""
import numpy as np

from .. import backend
from .optimizer import Optimizer, _scalar
from .sgd import _check_common, _check_unsupported

__all__ = ["Adam", "AdamW", "Adamax", "NAdam"]


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _betas(betas):
    """Betas as a tuple of floats (one-element Tensors are read as numbers)."""
    return tuple(_scalar(b) for b in betas)


class Adam(Optimizer):
    """Adam (Kingma & Ba). Args: params, lr (1e-3), betas ((0.9, 0.999)), eps (1e-8),
    weight_decay (0; L2 added to the gradient unless ``decoupled_weight_decay``), amsgrad (False),
    maximize (False), decoupled_weight_decay (False; True gives AdamW).
    ``foreach``, ``capturable`` and ``fused`` are accepted and ignored."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        _check_unsupported(differentiable)
        defaults = dict(lr=lr, betas=_betas(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        update = backend.adam_step         # one fused pass per tensor (native), or numpy
        for group in self.param_groups:
            lr, wd, eps = _scalar(group["lr"]), group["weight_decay"], group["eps"]
            beta1, beta2 = _betas(group["betas"])
            amsgrad, maximize = group["amsgrad"], group.get("maximize", False)
            decoupled = group["decoupled_weight_decay"]
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = self._scalar_zero()
                    state["exp_avg"] = self._zeros(p)
                    state["exp_avg_sq"] = self._zeros(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = self._zeros(p)
                state["step"]._data += 1
                update(p._data, grad._data, state["exp_avg"]._data, state["exp_avg_sq"]._data,
                       state["max_exp_avg_sq"]._data if amsgrad else None,
                       float(state["step"]._data), lr, beta1, beta2, eps, wd, decoupled,
                       maximize)
                self._bump(p)
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p <- p (1 - lr wd)`` before the
    Adam step instead of adding ``wd p`` to the gradient. weight_decay defaults to 1e-2."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True)


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm. Args: params, lr (2e-3), betas ((0.9, 0.999)),
    eps (1e-8), weight_decay (0), maximize (False)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        _check_unsupported(differentiable)
        defaults = dict(lr=lr, betas=_betas(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, wd, eps = _scalar(group["lr"]), group["weight_decay"], group["eps"]
            beta1, beta2 = _betas(group["betas"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = self._scalar_zero()
                    state["exp_avg"] = self._zeros(p)
                    state["exp_inf"] = self._zeros(p)
                x, g = p._data, self._grad(p, group)
                m, u = state["exp_avg"]._data, state["exp_inf"]._data
                state["step"]._data += 1
                t = float(state["step"]._data)
                if wd != 0:
                    g = g + wd * x
                self._lerp_(m, g, 1 - beta1)
                u *= beta2
                np.maximum(u, np.abs(g) + eps, out=u)
                clr = lr / (1 - beta1 ** t)
                x -= clr * m / u
                self._bump(p)
        return loss


class NAdam(Optimizer):
    """NAdam: Adam with Nesterov momentum (Dozat). Args: params, lr (2e-3),
    betas ((0.9, 0.999)), eps (1e-8), weight_decay (0), momentum_decay (4e-3),
    decoupled_weight_decay (False; True decays as AdamW), maximize (False).

    State: step, mu_product (the running product of the momentum schedule; a 0-d tensor
    multiplied in its own dtype, as PyTorch does, so results match), exp_avg, exp_avg_sq."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_unsupported(differentiable)
        defaults = dict(lr=lr, betas=_betas(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, wd, eps = _scalar(group["lr"]), group["weight_decay"], group["eps"]
            beta1, beta2 = _betas(group["betas"])
            psi = group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = self._scalar_zero()
                    state["mu_product"] = self._scalar_zero()
                    state["mu_product"]._data += 1
                    state["exp_avg"] = self._zeros(p)
                    state["exp_avg_sq"] = self._zeros(p)
                x, g = p._data, self._grad(p, group)
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                mu_product = state["mu_product"]._data
                state["step"]._data += 1
                t = float(state["step"]._data)
                bias_correction2 = 1 - beta2 ** t
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        x *= 1 - lr * wd
                    else:
                        g = g + wd * x
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * psi))
                mu_product *= mu                      # in the scalar's dtype, as PyTorch
                prod = float(mu_product)
                self._lerp_(m, g, 1 - beta1)
                v *= beta2
                v += (1 - beta2) * (g * g)
                denom = np.sqrt(v / bias_correction2)
                denom += eps
                x += (-lr * (1.0 - mu) / (1.0 - prod)) * g / denom
                x += (-lr * mu_next / (1.0 - prod * mu_next)) * m / denom
                self._bump(p)
        return loss
