"""RAdam: Adam whose adaptive step is switched on only once the variance of that step can be
trusted (Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond").

Early in training, v (the running mean of g^2) has seen only a few gradients, so the adaptive
factor 1/sqrt(v) has a large variance. RAdam tracks the length rho_t of the simple moving average
that v approximates; while it is short (rho_t <= 5) the step is plain momentum SGD with the
bias-corrected mean, afterwards it is Adam's step scaled by a rectification factor r_t that tends
to 1. PyTorch's formulation (t is the step count after incrementing)::

    g <- -g if maximize
    g <- g + wd p  (L2)     or     p <- p (1 - lr wd)  (decoupled_weight_decay)
    m <- beta1 m + (1 - beta1) g          v <- beta2 v + (1 - beta2) g^2
    m_hat = m / (1 - beta1^t)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
    if rho_t > 5:
        r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        p <- p - m_hat lr sqrt(1 - beta2^t) / (sqrt(v) + eps) r_t
    else:
        p <- p - m_hat lr

State per parameter: ``step`` (a 0-d tensor), ``exp_avg`` (m), ``exp_avg_sq`` (v), as PyTorch.
"""
import numpy as np

from .adam import _betas, _check_betas
from .optimizer import Optimizer, _scalar
from .sgd import _check_common, _check_unsupported

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Rectified Adam. Args: params, lr (1e-3), betas ((0.9, 0.999)), eps (1e-8),
    weight_decay (0; L2 added to the gradient unless ``decoupled_weight_decay``),
    decoupled_weight_decay (False; True decays the weights as AdamW), maximize (False).
    ``foreach`` and ``capturable`` are accepted and ignored."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        _check_unsupported(differentiable)
        defaults = dict(lr=lr, betas=_betas(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr, wd, eps = _scalar(group["lr"]), group["weight_decay"], group["eps"]
            beta1, beta2 = _betas(group["betas"])
            decoupled = group.get("decoupled_weight_decay", False)
            rho_inf = 2 / (1 - beta2) - 1
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = self._scalar_zero()
                    state["exp_avg"] = self._zeros(p)
                    state["exp_avg_sq"] = self._zeros(p)
                x, g = p._data, self._grad(p, group)
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                state["step"]._data += 1
                t = float(state["step"]._data)
                if wd != 0:
                    if decoupled:
                        x *= 1 - lr * wd
                    else:
                        g = g + wd * x
                self._lerp_(m, g, 1 - beta1)
                v *= beta2
                v += (1 - beta2) * (g * g)
                bias_correction1 = 1 - beta1 ** t
                bias_correction2 = 1 - beta2 ** t
                m_hat = m / bias_correction1
                rho_t = rho_inf - 2 * t * (beta2 ** t) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive = (bias_correction2 ** 0.5) / (np.sqrt(v) + eps)
                    x -= m_hat * lr * adaptive * rect
                else:
                    x -= m_hat * lr
                self._bump(p)
        return loss
