"""``minitorch_edge.cuda.amp``: autocast and GradScaler as a CPU-only PyTorch build has them.

With no CUDA device both disable themselves, warning as PyTorch does when asked to be enabled:
``autocast()`` is a context manager (and decorator) that changes nothing, and a disabled
``GradScaler`` passes everything through: ``scale(loss)`` returns ``loss``, ``step(optimizer)``
calls ``optimizer.step()``, ``update()`` does nothing, ``get_scale()`` is 1.0 and
``state_dict()`` is empty. So a mixed-precision training loop runs unchanged, in full precision.
Mixed precision on the CPU is ``minitorch_edge.amp.autocast("cpu")`` and
``amp.GradScaler("cpu")`` (minitorch_edge/amp/), as in PyTorch.
"""
from .autocast_mode import autocast, custom_bwd, custom_fwd  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
