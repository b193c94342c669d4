"""``minitorch_edge.accelerator``: PyTorch's device-agnostic accelerator API, as a CPU-only
build answers it: no accelerator (``is_available()`` False, ``current_accelerator()`` None,
``device_count()`` 0), and whatever needs one raises "Cannot access accelerator device when
none is available." (a RuntimeError)."""
from .tensor import _NO_ACCELERATOR

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "synchronize",
           "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "get_memory_info", "reset_peak_memory_stats"]


def is_available():
    return False


def current_accelerator(check_available=False):
    return None


def device_count():
    return 0


def _none(*args, **kwargs):
    raise RuntimeError(_NO_ACCELERATOR)


current_device_index = current_device_idx = set_device_index = set_device_idx = _none
synchronize = empty_cache = memory_allocated = max_memory_allocated = _none
memory_reserved = max_memory_reserved = get_memory_info = reset_peak_memory_stats = _none
