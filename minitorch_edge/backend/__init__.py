"""The backend: every kernel the ops call, and which implementation runs it.

An op never computes on arrays itself: it calls a kernel of this module, e.g.
``backend.conv2d(x, w, bias, stride, padding, dilation, groups)``. Each kernel has two
implementations with the same name, signature and result (to float32 rounding):

* the numpy twin in ``numpy_backend.py``: the readable reference, always present;
* a native one in ``native_gemm.py``, ``native_conv.py``, ``native_pool.py``,
  ``native_optim.py``, ``native_transformer.py`` or ``native_int8.py`` over libmte
  (``minitorch_edge._C``), where the extension was built with that kernel set. It handles the
  cases its C kernel covers and hands every other case (other dtypes, odd layouts) to the
  numpy twin, so behaviour never differs between backends.

The table below is the whole dispatch: one row per kernel, naming the native module that
holds its native version (a function of the kernel's name, as in numpy_backend), the libmte
kernel set that version needs (as ``_C.kernels()`` lists them), and the C family whose
per-ISA kernels do its work (a column of libmte's ISA table, native/src/cpu.c).
``use("numpy" | "native" | "auto")`` binds every kernel name of this module to one of its
two implementations (the environment variable ``MTE_BACKEND`` gives the first choice;
default ``auto``: native where built). A kernel set that was not built is simply absent from
``_C.kernels()``, and its rows run their numpy twin: that is the one convention for "not
built". ``table()`` (printed by ``minitorch-edge info``) says for each kernel what runs it:
``numpy`` or ``native[ISA]``.

When the extension is missing, ``info()["native_error"]`` says why: the error of importing
``_C``, or the build's own error, which setup.py keeps in ``_native_build_error.txt`` next to
the package when the build fails or is skipped. Asking for ``MTE_BACKEND=native`` without it
warns once, with that reason.

Kernels that have an inference-only fast path (Winograd, prepacked weights) take an
``inference`` argument from their caller; the rule for when to take it lives in the native
module, next to the kernel. ``max_pool2d_inference`` is max_pool2d without the indices (which
only the backward needs).

The inference kernels (conv2d, linear, gemm_epilogue, max_pool2d, max_pool2d_inference,
avg_pool2d) take ``out=``: an array (C-contiguous, exactly the result's shape and dtype, not
overlapping the inputs) that the result is written into and that is returned, so that a graph
executor can place every value in its memory arena; the native versions write it directly,
allocating no result (rules: epilogue.py).
"""
import importlib
import os
import warnings
from typing import NamedTuple, Optional

from . import numpy_backend

__all__ = ["KERNELS", "active", "get_num_threads", "info", "native_error", "set_num_threads",
           "table", "use"]


class Kernel(NamedTuple):
    name: str               # backend.<name>; numpy_backend.<name> is its numpy twin
    native: Optional[str]   # the module under backend/ whose <name> is the native version
    needs: Optional[str]    # the libmte kernel set that version needs (listed by _C.kernels())
    isa_family: Optional[str]  # the C family whose per-ISA kernels do its work (cpu.c's table)

    @property
    def numpy(self):
        return getattr(numpy_backend, self.name)


KERNELS = {}


def _kernel(name, native=None, needs=None, isa_family=None):
    """Add one row to the table; the name is bound to the numpy twin until use() runs."""
    KERNELS[name] = Kernel(name, native, needs, isa_family)
    return getattr(numpy_backend, name)


# ---- the dispatch table: kernel = numpy_backend.<kernel> or <native module>.<kernel> ----------
_T = ("native_transformer", "transformer")  # the Transformer kernels' module and kernel set
#                                             native module   needs     ISA family (cpu.c)
matmul                 = _kernel("matmul",                 "native_gemm",  "sgemm",  "sgemm")
linear                 = _kernel("linear",                 "native_gemm",  "sgemm",  "sgemm")
gemm_epilogue          = _kernel("gemm_epilogue",          "native_gemm",  "sgemm",  "sgemm")
conv2d                 = _kernel("conv2d",                 "native_conv",  "conv2d", "sgemm")
conv2d_prepare         = _kernel("conv2d_prepare",         "native_conv",  "conv2d", "sgemm")
conv2d_backward_input  = _kernel("conv2d_backward_input",  "native_conv",  "conv2d", "sgemm")
conv2d_backward_weight = _kernel("conv2d_backward_weight", "native_conv",  "conv2d", "sgemm")
max_pool2d             = _kernel("max_pool2d",             "native_pool",  "pool2d", "pool")
max_pool2d_inference   = _kernel("max_pool2d_inference",   "native_pool",  "pool2d", "pool")
max_pool2d_backward    = _kernel("max_pool2d_backward",    "native_pool",  "pool2d", "pool")
adaptive_max_pool2d    = _kernel("adaptive_max_pool2d")    # numpy only
avg_pool2d             = _kernel("avg_pool2d",             "native_pool",  "pool2d", "pool")
avg_pool2d_backward    = _kernel("avg_pool2d_backward",    "native_pool",  "pool2d", "pool")
sgd_step               = _kernel("sgd_step",               "native_optim", "optim")  # portable C
adam_step              = _kernel("adam_step",              "native_optim", "optim")  # portable C
softmax                = _kernel("softmax",                *_T, "rowwise")
softmax_backward       = _kernel("softmax_backward",       *_T, "rowwise")
layer_norm             = _kernel("layer_norm",             *_T, "rowwise")
layer_norm_backward    = _kernel("layer_norm_backward",    *_T, "rowwise")
gelu                   = _kernel("gelu",                   *_T, "rowwise")
gelu_backward          = _kernel("gelu_backward",          *_T, "rowwise")
attention              = _kernel("attention",              *_T, "attention")
attention_backward     = _kernel("attention_backward",     *_T, "attention")
_Q = ("native_int8", "int8")  # the int8 kernels' module and kernel set (TFLite's scheme)
qconv2d                = _kernel("qconv2d",                *_Q, "qgemm")
qconv2d_prepare        = _kernel("qconv2d_prepare",        *_Q, "qgemm")
qlinear                = _kernel("qlinear",                *_Q, "qgemm")
qlinear_prepare        = _kernel("qlinear_prepare",        *_Q, "qgemm")
qavg_pool2d            = _kernel("qavg_pool2d",            *_Q, "int8")
qmax_pool2d            = _kernel("qmax_pool2d",            *_Q, "int8")
qadd                   = _kernel("qadd",                   *_Q, "int8")
qadd_prepare           = _kernel("qadd_prepare",           *_Q, "int8")
quantize               = _kernel("quantize",               *_Q, "int8")
dequantize             = _kernel("dequantize",             *_Q, "int8")
requantize             = _kernel("requantize",             *_Q, "int8")
# bfloat16 / float16 (matmul, linear and conv2d route those dtypes here natively too)
half_gemm              = _kernel("half_gemm",              "native_gemm", "bf16", "bf16")
half_conv2d            = _kernel("half_conv2d",            "native_conv", "bf16", "bf16")
cast                   = _kernel("cast",                   "native_gemm", "bf16", "bf16")
# ----------------------------------------------------------------------------------------------
__all__ += list(KERNELS)

_C = None             # the extension module once loaded, or None
_active = "numpy"
_num_threads = [os.cpu_count() or 1]
_import_error = None  # why `from minitorch_edge import _C` failed, when it was there to import
_warned_missing = False
# written by setup.py when the extension's build fails or is skipped; removed when it succeeds
# ($MTE_BUILD_ERROR_FILE points elsewhere, for tests)
BUILD_ERROR_FILE = os.environ.get("MTE_BUILD_ERROR_FILE") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_native_build_error.txt")


def _load_extension():
    """minitorch_edge._C, or None when it was not built (or does not import: `_import_error`
    keeps why)."""
    global _import_error
    try:
        from .. import _C as ext
    except ImportError as e:
        missing = (isinstance(e, ModuleNotFoundError)
                   and e.name == __name__.rpartition(".")[0] + "._C")
        _import_error = None if missing else f"{type(e).__name__}: {e}"
        return None
    return ext


def native_error(limit=600):
    """One line saying why the native extension is missing (None when it is there or the
    reason is unknown): its import error, or the build's error that setup.py kept."""
    if _C is not None:
        return None
    if _import_error is not None:
        return f"minitorch_edge._C is there but does not import ({_import_error})"
    try:
        with open(BUILD_ERROR_FILE, encoding="utf-8", errors="replace") as f:
            text = " ".join(f.read().split())
    except OSError:
        return None
    if len(text) > limit:
        text = text[:limit] + " ..."
    return f"{text} (the whole message: {BUILD_ERROR_FILE})"


def _warn_missing():
    global _warned_missing
    if _warned_missing:
        return
    _warned_missing = True
    why = native_error() or ("minitorch_edge._C is not built (no build record: installed "
                             "from a wheel without it, or built with MTE_NO_EXTENSION=1?)")
    warnings.warn(f"MTE_BACKEND=native was asked for, but the native extension is missing, so "
                  f"minitorch_edge runs on its numpy backend (correct, slower). Why: {why}. To "
                  f"build it, install a C compiler and pybind11, then reinstall minitorch_edge "
                  f"(pip install -v . shows the build); `minitorch-edge info` shows the "
                  f"reason again.", RuntimeWarning, stacklevel=3)


def _native_function(kernel, ext):
    """The native implementation of `kernel`, or None if this build lacks its family."""
    if kernel.native is None or ext is None or kernel.needs not in ext.kernels():
        return None
    return getattr(importlib.import_module(f".{kernel.native}", __name__), kernel.name)


def use(name):
    """Bind every kernel to its numpy twin ("numpy") or, where built, its native version
    ("native", "auto"); "native" warns when the extension is missing."""
    global _C, _active
    if name not in ("numpy", "native", "auto"):
        raise ValueError(f"MTE_BACKEND must be one of numpy, native, auto (got {name!r})")
    ext = None if name == "numpy" else _load_extension()
    _C, _active = ext, ("native" if ext is not None else "numpy")
    if name == "native" and ext is None:
        _warn_missing()
    for kernel in KERNELS.values():
        globals()[kernel.name] = _native_function(kernel, ext) or kernel.numpy


def active():
    """"native" or "numpy": the backend in use."""
    return _active


def table():
    """{kernel: what runs it}: "numpy", or "native[ISA]" with the ISA whose kernels its C
    family runs now (libmte's ISA table, native/src/cpu.c), "native[portable]" for C code
    compiled without ISA flags."""
    isa_of = _C.dispatch_table() if _C is not None else {}
    out = {}
    for kernel in KERNELS.values():
        if globals()[kernel.name] is kernel.numpy:
            out[kernel.name] = "numpy"
        else:
            out[kernel.name] = f"native[{isa_of.get(kernel.isa_family, 'portable')}]"
    return out


def info():
    """What `minitorch-edge info` prints about the backend."""
    out = {"backend": _active, "requested": os.environ.get("MTE_BACKEND", "auto")}
    ext = _C or _load_extension()
    if ext is not None:
        out.update({"version": ext.version(), "isa": ext.active_isa(),
                    "cpu_features": list(ext.cpu_features()), "kernels": list(ext.kernels()),
                    "num_threads": ext.get_num_threads()})
    else:
        out["native"] = "not built (numpy backend only)"
        why = native_error()
        if why is not None:
            out["native_error"] = why
    out["dispatch"] = table()
    if ext is not None:
        out["isa_table"] = ext.dispatch_table()
        # the microkernels chosen at run time inside a family (AMX, VNNI, BF16 dot products)
        if hasattr(ext, "qgemm_path"):
            short, long = ext.qgemm_path(16), ext.qgemm_path(4096)
            out["int8 GEMM"] = short if short == long else f"{short} (short k), {long} (long k)"
        if hasattr(ext, "half_gemm_path"):
            try:
                import ml_dtypes
                out["bf16 GEMM"] = ext.half_gemm_path(ml_dtypes.bfloat16)
            except ImportError:
                pass
            import numpy
            out["fp16 GEMM"] = ext.half_gemm_path(numpy.float16)
    return out


def set_num_threads(n):
    """Threads used by native kernels (OpenMP; 1 when built without it)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"set_num_threads: expected a positive number of threads, got {n}")
    _num_threads[0] = n
    if _C is not None:
        _C.set_num_threads(n)


def get_num_threads():
    return _C.get_num_threads() if _C is not None else _num_threads[0]


use(os.environ.get("MTE_BACKEND", "auto"))
