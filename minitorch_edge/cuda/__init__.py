"""``minitorch_edge.cuda``: what ``torch.cuda`` answers on a CPU-only PyTorch build.

minitorch_edge runs on the CPU only, so scripts written for GPUs meet the same answers a
CPU-only PyTorch gives them: ``is_available()`` is False and ``device_count()`` 0, so the usual
``device = "cuda" if torch.cuda.is_available() else "cpu"`` picks the CPU; seeding is a no-op;
the memory counters read 0; and whatever needs a real device (``current_device()``,
``get_device_name()``, ``synchronize()``, a tensor's ``.cuda()``) raises PyTorch's
``AssertionError: Torch not compiled with CUDA enabled``. ``cuda.amp`` holds autocast and
GradScaler, which disable themselves with PyTorch's warnings.
"""
from collections import OrderedDict

from . import amp  # noqa: F401

__all__ = ["is_available", "device_count", "is_initialized", "init", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "get_rng_state_all", "set_rng_state", "set_rng_state_all", "is_bf16_supported",
           "is_tf32_supported", "synchronize", "empty_cache", "ipc_collect", "current_device",
           "set_device", "get_device_name", "get_device_properties", "get_device_capability",
           "get_arch_list", "mem_get_info", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "memory_stats", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "current_stream", "device", "amp"]

NOT_COMPILED = ("Torch not compiled with CUDA enabled (minitorch_edge runs on the CPU only: "
                "CUDA devices are not available)")


def _no_cuda(*args, **kwargs):
    raise AssertionError(NOT_COMPILED)


def is_available():
    """False: minitorch_edge has no CUDA backend."""
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def is_tf32_supported():
    return False


def get_arch_list():
    return []


# seeding: PyTorch's CPU build accepts these and does nothing (there is no CUDA generator)
def manual_seed(seed):
    int(seed)


def manual_seed_all(seed):
    int(seed)


def seed():
    return None


def seed_all():
    return None


def get_rng_state_all():
    return []


def set_rng_state(new_state, device="cuda"):
    return None


def set_rng_state_all(new_states):
    return None


# memory: nothing is ever allocated on a CUDA device
def empty_cache():
    return None


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def memory_stats(device=None):
    return OrderedDict()


# everything that needs a real device raises, as on a CPU-only PyTorch build
init = synchronize = ipc_collect = current_device = set_device = _no_cuda
get_device_name = get_device_properties = get_device_capability = mem_get_info = _no_cuda
initial_seed = get_rng_state = current_stream = _no_cuda
reset_peak_memory_stats = reset_max_memory_allocated = _no_cuda


class device:
    """``with cuda.device(i):`` — constructing it works, entering raises (no CUDA)."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        raise RuntimeError("PyTorch was compiled without CUDA support (minitorch_edge runs on "
                           "the CPU only)")

    def __exit__(self, *exc):
        return False
