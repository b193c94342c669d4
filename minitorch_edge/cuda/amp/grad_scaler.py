"""``cuda.amp.GradScaler``: always disabled, since there is no CUDA device.

A disabled scaler (PyTorch's behaviour on a CPU-only build) leaves the training loop as it
would be without it: ``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`` is
``loss.backward(); opt.step()``.
"""
import warnings

__all__ = ["GradScaler"]


class GradScaler:
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`minitorch_edge.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`minitorch_edge.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)   # as torch 2.13's
        if enabled:
            warnings.warn("minitorch_edge.cuda.amp.GradScaler is enabled, but CUDA is not "
                          "available.  Disabling.", UserWarning, stacklevel=2)
        self._enabled = False
        self._device = "cuda"
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        """Returns `outputs` unchanged (a tensor, or any iterable of them)."""
        return outputs

    def unscale_(self, optimizer):
        return None

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)``, returning what it returns."""
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        return None

    def get_scale(self):
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def state_dict(self):
        """Empty, as a disabled PyTorch scaler's (so checkpoints from either load here)."""
        return {}

    def load_state_dict(self, state_dict):
        return None
