"""``minitorch_edge.amp``: automatic mixed precision, as ``torch.amp``.

``autocast("cpu", dtype=bfloat16)`` runs the matrix products and convolutions of a region in
bfloat16 (or float16) and keeps the losses and other precision-sensitive ops in float32, by
PyTorch's CPU op lists (the mechanism: ../_autocast.py); ``GradScaler("cpu")`` scales the loss
so that float16 gradients do not underflow, and skips the steps whose gradients overflow.
"""
from .autocast_mode import (  # noqa: F401
    autocast,
    clear_autocast_cache,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available",
           "is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled",
           "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache"]
