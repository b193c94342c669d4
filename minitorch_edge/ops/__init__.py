"""The differentiable op set. Importing this package attaches every op to Tensor as a method and
re-exports the functional forms (``minitorch_edge.exp``, ``minitorch_edge.cat``, ...)."""
import importlib

_MODULES = ["elementwise", "compare", "unary", "activation", "reduce", "shape", "join", "rearrange",
            "index", "sorting", "linalg", "einsum", "minmax", "cumulative", "softmax",
            "construct", "writes", "scatter_reduce", "searching", "decomp", "spectral"]
__all__ = []
for _name in _MODULES:
    _mod = importlib.import_module(f".{_name}", __name__)
    for _fn in _mod.__all__:
        globals()[_fn] = getattr(_mod, _fn)
    __all__ += _mod.__all__
from . import inplace  # noqa: E402,F401  (add_, mul_, x[i] = v, ...: after the ops they reuse)
from . import inplace_views  # noqa: E402,F401  (t_, squeeze_, resize_, ...)
