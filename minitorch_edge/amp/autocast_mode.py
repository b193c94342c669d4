"""``autocast``: the context manager (and decorator) that turns the op policy of
``minitorch_edge/_autocast.py`` on for a region, with PyTorch's ``torch.autocast`` signature.

``with autocast("cpu"):`` makes the listed ops compute in bfloat16 (``dtype=float16`` also,
as PyTorch 2.13 allows on CPU). Entering saves the previous state and exiting restores it, so
regions nest and ``autocast("cpu", enabled=False)`` inside one switches autocast off for a
sub-region. Leaving the outermost region drops the cache of casted parameters. Any other dtype
warns and disables autocast, as PyTorch does; a device other than "cpu" or "cuda" raises;
"cuda" is accepted and disabled with PyTorch's CPU-build warning (no CUDA here).
"""
import functools
import warnings

from .. import _autocast
from .. import dtypes as _dt
from .._autocast import State

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype",
           "set_autocast_enabled", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "custom_fwd", "custom_bwd"]

_DEVICES = ("cpu", "cuda")
_CPU_DTYPES = ("bfloat16", "float16")


def _configured_dtype():
    if State.dtype is None:
        State.dtype = _dt.bfloat16
    return State.dtype


def _device_name(device_type, who):
    if not isinstance(device_type, str):
        raise ValueError(f"{who}: expected `device_type` of type `str`, got: "
                         f"`{type(device_type).__name__}`")
    name = device_type.split(":")[0]
    if name not in _DEVICES:
        raise RuntimeError(f"{who}: device_type {device_type!r} is not supported: "
                           f"minitorch_edge autocasts on 'cpu' (and accepts 'cuda', disabled)")
    return name


def is_autocast_available(device_type):
    return _device_name(device_type, "is_autocast_available") == "cpu"


def is_autocast_enabled(device_type=None):
    """Whether ops autocast on `device_type` now. No argument asks about CUDA, as in PyTorch
    (always False here); ``is_autocast_enabled("cpu")`` asks about the CPU."""
    if device_type is None or _device_name(device_type, "is_autocast_enabled") == "cuda":
        return False
    return State.active is not None


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on `device_type` (bfloat16 for "cpu" unless set; float16 for
    "cuda", as in PyTorch)."""
    if _device_name(device_type, "get_autocast_dtype") == "cuda":
        return _dt.float16
    return _configured_dtype()


def set_autocast_enabled(device_type, enabled):
    if _device_name(device_type, "set_autocast_enabled") == "cpu":
        State.active = _configured_dtype() if enabled else None


def set_autocast_dtype(device_type, dtype):
    if _device_name(device_type, "set_autocast_dtype") == "cpu":
        _check_dtype_type(dtype, "set_autocast_dtype")
        State.dtype = dtype
        if State.active is not None:
            State.active = dtype


def is_autocast_cache_enabled():
    return State.cache_enabled


def set_autocast_cache_enabled(enabled):
    State.cache_enabled = bool(enabled)


def clear_autocast_cache():
    _autocast.clear_cache()


# The device-named spellings of older scripts (torch.is_autocast_cpu_enabled() and friends):
# top-level in minitorch_edge as in torch, deprecated there with this warning.
def _deprecated(old, new):
    warnings.warn(f"minitorch_edge.{old}() is deprecated. Please use minitorch_edge.{new} "
                  f"instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def _check_dtype_type(dtype, who):
    if dtype.__class__ is not _dt.dtype:
        raise TypeError(f"{who}: dtype must be a minitorch_edge dtype (minitorch_edge.bfloat16 "
                        f"or minitorch_edge.float16), got {type(dtype).__name__} {dtype!r}")


class autocast:
    """``with autocast("cpu", dtype=bfloat16):`` or ``@autocast("cpu")``: the listed ops in the
    region cast their inputs (see minitorch_edge/_autocast.py for the lists)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _device_name(device_type, "autocast")
        if self.device == "cuda":
            self.fast_dtype = _dt.float16 if dtype is None else dtype
            if enabled:
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available "
                              "(minitorch_edge runs on the CPU only). Disabling",
                              UserWarning, stacklevel=2)
            enabled = False
        else:
            self.fast_dtype = _configured_dtype() if dtype is None else dtype
        _check_dtype_type(self.fast_dtype, "autocast")
        if enabled and self.device == "cpu" and self.fast_dtype.name not in _CPU_DTYPES:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                          "autocast.\nCPU Autocast only supports dtypes of "
                          "minitorch_edge.bfloat16, minitorch_edge.float16 currently.",
                          UserWarning, stacklevel=2)
            enabled = False
        if enabled and self.fast_dtype is _dt.bfloat16 and not _dt.bf16_available():
            raise RuntimeError(f"autocast: dtype=bfloat16 needs {_dt.BF16_MISSING}")
        self._enabled = bool(enabled)
        self._cache_enabled = State.cache_enabled if cache_enabled is None else cache_enabled
        self._saved = []

    def __enter__(self):
        if self.device == "cuda":
            return self
        self._saved.append((State.active, State.dtype, State.cache_enabled))
        State.nesting += 1
        State.dtype = self.fast_dtype
        State.active = self.fast_dtype if self._enabled else None
        State.cache_enabled = bool(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.device == "cuda":
            return False
        State.active, State.dtype, State.cache_enabled = self._saved.pop()
        State.nesting -= 1
        if State.nesting == 0:           # left the outermost region: casts must not outlive it
            _autocast.clear_cache()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def custom_fwd(fwd=None, *, device_type="cpu", cast_inputs=None):
    """Decorator for a custom Function's forward (``torch.amp.custom_fwd``): with `cast_inputs`
    and autocast on, floating Tensor arguments are cast to it and forward runs with autocast
    off; without it forward runs in the autocast state of the caller."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(ctx, *args, **kwargs):
        ctx._fwd_used_autocast = State.active
        if cast_inputs is None or State.active is None:
            return fwd(ctx, *args, **kwargs)
        args, kwargs = _autocast._cast_all(args, kwargs, cast_inputs)
        lower, State.active = State.active, None
        try:
            return fwd(ctx, *args, **kwargs)
        finally:
            State.active = lower
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type="cpu"):
    """Decorator for a custom Function's backward: it runs in the autocast state its forward
    ran in (``torch.amp.custom_bwd``)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(ctx, *args, **kwargs):
        saved, State.active = State.active, getattr(ctx, "_fwd_used_autocast", None)
        try:
            return bwd(ctx, *args, **kwargs)
        finally:
            State.active = saved
    return decorate_bwd
