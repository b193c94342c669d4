"""``cuda.amp.autocast``: disabled, since there is no CUDA device (see the package docstring)."""
import functools
import warnings

from ... import dtypes as _dt

__all__ = ["autocast", "custom_fwd", "custom_bwd"]


class autocast:
    """``with autocast():`` / ``@autocast()``: runs the code as it is. Asked to be enabled it
    warns, as PyTorch's CPU build does, and disables itself."""

    def __init__(self, enabled=True, dtype=_dt.float16, cache_enabled=True):
        if dtype is not None and dtype.__class__ is not _dt.dtype:
            raise TypeError(f"autocast: dtype must be a minitorch_edge dtype, got "
                            f"{type(dtype).__name__}")
        self.device = "cuda"
        self.fast_dtype = dtype
        self._cache_enabled = bool(cache_enabled)
        if enabled:
            warnings.warn("CUDA is not available (minitorch_edge runs on the CPU only). "
                          "Disabling autocast.", UserWarning, stacklevel=2)
        self._enabled = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorated


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Decorator for a custom Function's forward; with autocast disabled it changes nothing."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd):
    """Decorator for a custom Function's backward; with autocast disabled it changes nothing."""
    return bwd
