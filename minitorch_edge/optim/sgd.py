"""SGD: stochastic gradient descent, with optional momentum (heavy-ball or Nesterov).

For each parameter p with gradient g (PyTorch's formulation)::

    g <- -g                          if maximize
    g <- g + weight_decay * p        if weight_decay != 0
    if momentum != 0:
        b <- g                                   (first step)
        b <- momentum * b + (1 - dampening) * g  (later steps)
        g <- g + momentum * b   if nesterov   else   g <- b
    p <- p - lr * g
"""
from .. import backend
from .optimizer import Optimizer, _scalar

__all__ = ["SGD"]


def _check_common(lr, weight_decay=0.0, eps=0.0):
    if _scalar(lr) < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps < 0.0:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if weight_decay < 0.0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _check_unsupported(differentiable):
    if differentiable:
        raise NotImplementedError("differentiable=True (gradients through the optimizer step) "
                                  "is not supported by minitorch_edge optimizers")


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum).

    Args: params, lr (default 1e-3), momentum (0), dampening (0), weight_decay (0),
    nesterov (False; needs momentum > 0 and dampening 0), maximize (False).
    ``foreach`` and ``fused`` are accepted for compatibility and ignored: each tensor's update
    is always one ``backend.sgd_step`` call (a fused native pass for float32 C-contiguous
    tensors, the numpy twin otherwise).
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        _check_common(lr, weight_decay)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        _check_unsupported(differentiable)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = self._eval_closure(closure)
        update = backend.sgd_step          # one fused pass per tensor (native), or numpy
        for group in self.param_groups:
            lr, wd = _scalar(group["lr"]), group["weight_decay"]
            momentum, dampening = group["momentum"], group["dampening"]
            nesterov, maximize = group["nesterov"], group.get("maximize", False)
            state = self.state
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                buf, first = None, False
                if momentum != 0:
                    s = state[p]
                    b = s.get("momentum_buffer")
                    if b is None:
                        b = s["momentum_buffer"] = self._zeros(p)
                        first = True
                    buf = b._data
                update(p._data, grad._data, buf, lr, momentum, dampening, wd, nesterov,
                       maximize, first)
                self._bump(p)
        return loss
