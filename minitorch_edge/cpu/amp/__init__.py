"""``minitorch_edge.cpu.amp``: ``torch.cpu.amp``'s spellings, ``amp.autocast`` with
device_type="cpu" and ``amp.GradScaler`` with device="cpu". As in PyTorch 2.13 they work and
warn (FutureWarning) that ``amp.autocast("cpu")`` / ``amp.GradScaler("cpu")`` replace them."""
import warnings

from ...amp import GradScaler as _GradScaler
from ...amp import autocast as _autocast
from ... import dtypes as _dt

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """``torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)``."""

    def __init__(self, enabled=True, dtype=_dt.bfloat16, cache_enabled=True):
        warnings.warn("`minitorch_edge.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`minitorch_edge.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cpu.amp.GradScaler``: ``amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`minitorch_edge.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`minitorch_edge.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
