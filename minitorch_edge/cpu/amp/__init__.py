"""``minitorch_edge.cpu.amp``: ``torch.cpu.amp``'s spellings, ``amp.autocast`` with
device_type="cpu" and ``amp.GradScaler`` with device="cpu"."""
from ...amp import GradScaler as _GradScaler
from ...amp import autocast as _autocast
from ... import dtypes as _dt

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """``torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)``."""

    def __init__(self, enabled=True, dtype=_dt.bfloat16, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cpu.amp.GradScaler``: ``amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
