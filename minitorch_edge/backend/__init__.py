"""Backend selection: which implementation the kernels (matmul, later conv, pooling) come from.

``MTE_BACKEND=numpy`` forces the numpy reference; ``native`` asks for libmte (warning once and
falling back to numpy when the extension was not built); ``auto`` (the default) uses native
where it is built and has the kernel. Ops call the functions of this module, e.g.
``backend.matmul(a, b)``; they are numpy_backend's unless native_backend overrides them.
"""
import os
import warnings

from . import numpy_backend

__all__ = ["matmul", "linear", "gemm_epilogue", "sgd_step", "adam_step", "active", "info",
           "set_num_threads", "get_num_threads", "use"]

KERNELS = ("matmul", "linear", "gemm_epilogue", "conv2d", "conv2d_backward_input",
           "conv2d_backward_weight", "max_pool2d", "max_pool2d_backward", "adaptive_max_pool2d",
           "avg_pool2d", "avg_pool2d_backward", "sgd_step", "adam_step")
_native = None
_num_threads = [os.cpu_count() or 1]


def _load_native():
    try:
        from . import native_backend
        return native_backend
    except ImportError:
        return None


def use(name):
    """Switch backend at run time: "numpy", "native" or "auto"."""
    global _native, _active
    if name not in ("numpy", "native", "auto"):
        raise ValueError(f"MTE_BACKEND must be one of numpy, native, auto (got {name!r})")
    native = None if name == "numpy" else _load_native()
    if name == "native" and native is None:
        warnings.warn("MTE_BACKEND=native but minitorch_edge._C is not built; using the numpy "
                      "backend", RuntimeWarning, stacklevel=2)
    _native = native
    _active = "native" if native is not None else "numpy"
    available = getattr(native, "AVAILABLE_KERNELS", ()) if native is not None else ()
    for kernel in KERNELS:
        impl = getattr(native, kernel) if kernel in available else None
        globals()[kernel] = impl if impl is not None else getattr(numpy_backend, kernel)


def active():
    """"native" or "numpy": the backend in use."""
    return _active


def info():
    """What `minitorch-edge info` prints about the backend."""
    out = {"backend": _active, "requested": os.environ.get("MTE_BACKEND", "auto")}
    native = _native or _load_native()
    if native is not None:
        out.update(native.info())
    else:
        out["native"] = "not built (numpy backend only)"
    return out


def set_num_threads(n):
    """Threads used by native kernels (OpenMP)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive number of threads, got {n}")
    _num_threads[0] = n
    if _native is not None:
        _native.set_num_threads(n)


def get_num_threads():
    if _native is not None:
        return _native.get_num_threads()
    return _num_threads[0]


use(os.environ.get("MTE_BACKEND", "auto"))
