"""The fused epilogue's activations and the ``out=`` rule, shared by the numpy twins
(numpy_backend.py re-exports every name here) and the native modules.

What libmte does to each tile of a GEMM's (or conv's) result while it is still in cache:

    out = act(a @ b + bias + residual)

``epilogue_activation`` is the activation step, spelled out in numpy; the native twin does it
in one pass (native/src/epilogue_body.h, one body compiled per ISA).

``out=``: the inference kernels (conv2d, linear, gemm_epilogue, max_pool2d,
max_pool2d_inference, avg_pool2d) take an optional array to write their result into, e.g. a
view of a graph executor's memory arena. It must be an ndarray of exactly the result's shape
and dtype, C-contiguous and writeable; the kernel returns it. It must not overlap the inputs
(the native kernels write it while they read them): an `out` sharing memory with x is
refused, a partial overlap with another input is not detected.
"""
import math

import numpy as np

from .._special import erf

__all__ = ["ACTIVATIONS", "check_out", "epilogue_activation", "result_into"]

ACTIVATIONS = (None, "none", "relu", "relu6", "gelu", "gelu_tanh", "silu", "hardswish")


def epilogue_activation(y, act, op="gemm_epilogue"):
    """The epilogue's activations (y's dtype is kept; GELU and SiLU are evaluated in float64):

        relu       max(y, 0)
        relu6      min(max(y, 0), 6)
        gelu       0.5 y (1 + erf(y / sqrt 2))                         (exact, math.erf)
        gelu_tanh  0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3)))     (PyTorch's 'tanh')
        silu       y sigmoid(y) = y / (1 + exp(-y))                    (swish)
        hardswish  y relu6(y + 3) / 6                                  (in y's dtype, PyTorch's
                                                                        order of operations)
    """
    if act in (None, "none"):
        return y
    if act == "relu":
        return np.maximum(y, 0)
    if act == "relu6":
        return np.minimum(np.maximum(y, 0), 6)
    if act == "gelu":
        y64 = np.asarray(y, dtype=np.float64)
        return (0.5 * y64 * (1.0 + erf(y64 / math.sqrt(2.0)))).astype(y.dtype)
    if act == "gelu_tanh":
        y64 = np.asarray(y, dtype=np.float64)
        t = np.tanh(math.sqrt(2.0 / math.pi) * (y64 + 0.044715 * y64 ** 3))
        return (0.5 * y64 * (1.0 + t)).astype(y.dtype)
    if act == "silu":
        y64 = np.asarray(y, dtype=np.float64)
        with np.errstate(over="ignore"):    # exp(-y) = inf far left: y / inf = -0
            return (y64 / (1.0 + np.exp(-y64))).astype(y.dtype)
    if act == "hardswish":
        f = y.dtype.type
        return y * np.minimum(np.maximum(y + f(3), f(0)), f(6)) / f(6)
    raise ValueError(f"{op}: act must be one of None, 'none', 'relu', 'relu6', 'gelu', "
                     f"'gelu_tanh', 'silu', 'hardswish', got {act!r}")


def _describe(shape, dtype, contiguous):
    return (f"shape {tuple(shape)}, dtype {np.dtype(dtype)}"
            f"{', C-contiguous' if contiguous else ', not C-contiguous'}")


def check_out(op, out, shape, dtype, inputs=()):
    """`out` itself when it can take `op`'s result of this shape and dtype (see the module's
    docstring), else ValueError naming op, what was expected and what was given."""
    shape, dtype = tuple(int(d) for d in shape), np.dtype(dtype)
    if not isinstance(out, np.ndarray):  # ValueError, as for every other unusable out
        raise ValueError(f"{op}: out must be a numpy.ndarray with "  # noqa: TRY004
                         f"{_describe(shape, dtype, True)}, got {type(out).__name__}")
    contiguous = out.flags.c_contiguous
    if out.shape != shape or out.dtype != dtype or not contiguous:
        raise ValueError(f"{op}: out must have {_describe(shape, dtype, True)}; got "
                         f"{_describe(out.shape, out.dtype, contiguous)}")
    if not out.flags.writeable:
        raise ValueError(f"{op}: out is read-only")
    for a in inputs:
        if isinstance(a, np.ndarray) and out.size and np.may_share_memory(out, a):
            raise ValueError(f"{op}: out shares memory with an input; pass a separate array")
    return out


def result_into(op, y, out, inputs=()):
    """y when out is None, else y copied into out (checked by check_out) and out returned."""
    if out is None:
        return y
    check_out(op, out, y.shape, y.dtype, inputs)
    np.copyto(out, y)
    return out
