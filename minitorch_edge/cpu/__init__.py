"""``minitorch_edge.cpu``: the CPU device module (``torch.cpu``): availability answers and
``cpu.amp``, whose autocast and GradScaler are ``amp``'s bound to the CPU."""
from . import amp  # noqa: F401

__all__ = ["is_available", "device_count", "current_device", "synchronize", "amp"]


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    return None
