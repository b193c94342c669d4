"""``minitorch_edge.backends``: the switches of ``torch.backends`` as a CPU-only build has them.

``backends.cudnn.benchmark = True``, ``backends.cuda.matmul.allow_tf32 = True`` and friends are
settable (and type-checked) so scripts that set them run; minitorch_edge has no cuDNN, CUDA or
MPS backend (``cudnn.is_available()``, ``mps.is_available()`` are False), so they change
nothing it computes. Also here: the global switches PyTorch keeps at top level,
``set_float32_matmul_precision`` and ``use_deterministic_algorithms`` (re-exported by the
package; minitorch_edge's float32 matmul is always full precision, so these are recorded and
read back, not acted on).
"""
import warnings

__all__ = ["cuda", "cudnn", "mps", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled"]

from ._state import _PRECISIONS, _STATE  # noqa: E402


def set_float32_matmul_precision(precision):
    """'highest' | 'high' | 'medium', as torch; another value warns and changes nothing."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _STATE["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _STATE["matmul_precision"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    if mode.__class__ is not bool:
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if warn_only.__class__ is not bool:
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _STATE["deterministic"], _STATE["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _STATE["warn_only"]


from . import cuda, cudnn, mps  # noqa: E402,F401
