"""Native optimizer updates: the numpy twins' sgd_step and adam_step as one fused pass each,
computed by libmte (native/src/optim.c) through ``_C``.

Same names, signatures and results (the same float32 operation order, so the updates agree
with the twins bit for bit). The native kernel takes float32 C-contiguous arrays of one shape
that share no memory; anything else (float64 parameters, views, a gradient that aliases the
parameter, which the binding refuses before writing anything) goes to the numpy twin, so
behaviour never differs.

The dispatch table in backend/__init__.py binds them where libmte's "optim" kernels are
built.
"""
import numpy as np

from . import numpy_backend as _np_backend

from .. import _C  # ImportError when the extension is not built

__all__ = ["sgd_step", "adam_step"]
_F32 = np.dtype(np.float32)


def _plain(written, read):
    """True when every array (None skipped) is an exact float32 C-contiguous aligned ndarray
    of the first one's shape and the `written` ones are writeable: what the native kernels
    take. (Memory shared between arrays is checked by the binding, which then raises
    ValueError before writing anything; the callers fall back to the twin.)"""
    shape = written[0].shape
    for a in written + read:
        if a is not None and (type(a) is not np.ndarray or a.dtype != _F32 or a.shape != shape
                              or not a.flags.c_contiguous or not a.flags.aligned):
            return False
    for a in written:
        if a is not None and not a.flags.writeable:
            return False
    return True


def sgd_step(param, grad, buf, lr, momentum, dampening, weight_decay, nesterov, maximize,
             first_step):
    """numpy_backend.sgd_step, fused (one pass over param, grad and buf)."""
    if (buf is not None or momentum == 0) and _plain((param, buf), (grad,)):
        try:
            _C.sgd_step(param, grad, buf, float(lr), float(momentum), float(dampening),
                        float(weight_decay), bool(nesterov), bool(maximize), bool(first_step))
            return
        except ValueError:   # arrays sharing memory: nothing was written, the twin handles it
            pass
    _np_backend.sgd_step(param, grad, buf, lr, momentum, dampening, weight_decay, nesterov,
                         maximize, first_step)


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
              weight_decay, decoupled_weight_decay, maximize):
    """numpy_backend.adam_step, fused (one pass over param, grad and the moments)."""
    if step >= 1 and _plain((param, exp_avg, exp_avg_sq, max_exp_avg_sq), (grad,)):
        try:
            _C.adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, float(step),
                         float(lr), float(beta1), float(beta2), float(eps), float(weight_decay),
                         bool(decoupled_weight_decay), bool(maximize))
            return
        except ValueError:   # arrays sharing memory: nothing was written, the twin handles it
            pass
    _np_backend.adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1,
                          beta2, eps, weight_decay, decoupled_weight_decay, maximize)
