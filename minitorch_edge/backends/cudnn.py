"""``backends.cudnn``: settable switches (``benchmark``, ``deterministic``, ``allow_tf32``,
``enabled``) type-checked as PyTorch does; cuDNN itself is not available."""
import contextlib
import sys
import types

from ._state import check_bool

# (the switches enabled / benchmark / deterministic / allow_tf32 are attributes of the module)
__all__ = ["is_available", "version", "is_acceptable", "flags", "benchmark_limit"]

_FLAGS = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}
_SETTERS = {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
            "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cudnn"}


def is_available():
    """False: there is no cuDNN."""
    return False


def version():
    return None


def is_acceptable(tensor):
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the switches for a ``with`` block, restoring them after."""
    module = sys.modules[__name__]
    saved = dict(_FLAGS), module.benchmark_limit
    try:
        module.enabled, module.benchmark, module.deterministic = enabled, benchmark, deterministic
        module.allow_tf32, module.benchmark_limit = allow_tf32, benchmark_limit
        yield
    finally:
        _FLAGS.update(saved[0])
        module.benchmark_limit = saved[1]


class _CudnnModule(types.ModuleType):
    """The module's class, so that setting a switch checks its type (as torch's does)."""

    def __getattr__(self, name):
        if name in _FLAGS:
            return _FLAGS[name]
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in _FLAGS:
            _FLAGS[name] = check_bool(_SETTERS[name], value)
        else:
            super().__setattr__(name, value)


benchmark_limit = None    # (None without cuDNN, as in torch)
sys.modules[__name__].__class__ = _CudnnModule
