"""Comparisons, logic and predicates: ==, <, &, |, ^, ~, isnan, isclose, ...

They compare operands promoted to a common dtype (as the arithmetic ops do, see
`_util.operands`) and return bool tensors. Nothing here is differentiable: a bool result has no
gradient, so these Functions define no backward.
"""
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._util import is_float, operands, promote, tensor_method

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
           "logical_not", "isnan", "isinf", "isfinite", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "isclose", "allclose", "equal"]

class _Compare(Function):
    """Comparisons and logic: bool results, not differentiable."""
    _builtin = True
    _np = None

    @classmethod
    def forward(cls, ctx, a, b):
        x, y, _ = promote(a, b, cls.__name__.lower())
        return np.asarray(cls._np(x, y))


def _compare(name, fn):
    return type(name, (_Compare,), {"_np": staticmethod(fn), "__doc__": f"{name}: bool result."})


Eq, Ne = _compare("eq", np.equal), _compare("ne", np.not_equal)
Lt, Le = _compare("lt", np.less), _compare("le", np.less_equal)
Gt, Ge = _compare("gt", np.greater), _compare("ge", np.greater_equal)
LogicalAnd, LogicalOr = _compare("logical_and", np.logical_and), _compare("logical_or",
                                                                          np.logical_or)
LogicalXor = _compare("logical_xor", np.logical_xor)


class _Bitwise(_Compare):
    @classmethod
    def forward(cls, ctx, a, b):
        x, y, t = promote(a, b, cls.__name__)
        if is_float(t):
            raise TypeError(f"{cls.__name__}: not implemented for floating-point tensors; "
                            f"use integer or bool tensors")
        return np.asarray(cls._np(x, y))


BitwiseAnd = type("bitwise_and", (_Bitwise,), {"_np": staticmethod(np.bitwise_and)})
BitwiseOr = type("bitwise_or", (_Bitwise,), {"_np": staticmethod(np.bitwise_or)})
BitwiseXor = type("bitwise_xor", (_Bitwise,), {"_np": staticmethod(np.bitwise_xor)})


class _Predicate(Function):
    _builtin = True
    _np = None

    @classmethod
    def forward(cls, ctx, a):
        return np.asarray(cls._np(a._data))


LogicalNot = type("logical_not", (_Predicate,), {"_np": staticmethod(np.logical_not)})
IsNan = type("isnan", (_Predicate,), {"_np": staticmethod(np.isnan)})
IsInf = type("isinf", (_Predicate,), {"_np": staticmethod(np.isinf)})
IsFinite = type("isfinite", (_Predicate,), {"_np": staticmethod(np.isfinite)})


class BitwiseNot(_Predicate):
    @staticmethod
    def forward(ctx, a):
        if is_float(a._data.dtype):
            raise TypeError("bitwise_not: not implemented for floating-point tensors")
        return np.invert(a._data)


def eq(a, b):
    return Eq.apply(a, b)


def ne(a, b):
    return Ne.apply(a, b)


def lt(a, b):
    return Lt.apply(a, b)


def le(a, b):
    return Le.apply(a, b)


def gt(a, b):
    return Gt.apply(a, b)


def ge(a, b):
    return Ge.apply(a, b)


def logical_and(a, b):
    return LogicalAnd.apply(a, b)


def logical_or(a, b):
    return LogicalOr.apply(a, b)


def logical_xor(a, b):
    return LogicalXor.apply(a, b)


def logical_not(a):
    return LogicalNot.apply(a)


def bitwise_and(a, b):
    return BitwiseAnd.apply(a, b)


def bitwise_or(a, b):
    return BitwiseOr.apply(a, b)


def bitwise_xor(a, b):
    return BitwiseXor.apply(a, b)


def bitwise_not(a):
    return BitwiseNot.apply(a)


def isnan(a):
    return IsNan.apply(a)


def isinf(a):
    return IsInf.apply(a)


def isfinite(a):
    return IsFinite.apply(a)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    x, y = operands(a, b, "isclose")
    return Tensor._make(np.asarray(np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(a, b, rtol, atol, equal_nan)._data.all())


def equal(a, b):
    """True if both have the same shape and the same values."""
    return a._data.shape == b._data.shape and bool(np.array_equal(a._data, b._data))

for _name, _fn in [("eq", eq), ("ne", ne), ("lt", lt), ("le", le), ("gt", gt), ("ge", ge),
                   ("greater", gt), ("less", lt), ("logical_and", logical_and),
                   ("logical_or", logical_or), ("logical_xor", logical_xor),
                   ("logical_not", logical_not), ("bitwise_and", bitwise_and),
                   ("bitwise_or", bitwise_or), ("bitwise_xor", bitwise_xor),
                   ("bitwise_not", bitwise_not), ("isnan", isnan), ("isinf", isinf),
                   ("isfinite", isfinite), ("isclose", isclose), ("allclose", allclose),
                   ("equal", equal)]:
    tensor_method(_name)(_fn)


# ---- Python operators -------------------------------------------------------------------------
Tensor.__eq__ = lambda self, other: Eq.apply(self, other)
Tensor.__ne__ = lambda self, other: Ne.apply(self, other)
Tensor.__lt__ = lambda self, other: Lt.apply(self, other)
Tensor.__le__ = lambda self, other: Le.apply(self, other)
Tensor.__gt__ = lambda self, other: Gt.apply(self, other)
Tensor.__ge__ = lambda self, other: Ge.apply(self, other)
# & | ^ are the bitwise ops for every dtype (on bool operands they are the logical ones; a bool
# tensor with an integer one promotes to the integer dtype: [True, False] | [2, 3] -> [3, 3])
Tensor.__and__ = lambda self, other: BitwiseAnd.apply(self, other)
Tensor.__or__ = lambda self, other: BitwiseOr.apply(self, other)
Tensor.__xor__ = lambda self, other: BitwiseXor.apply(self, other)
Tensor.__rand__ = lambda self, other: BitwiseAnd.apply(other, self)
Tensor.__ror__ = lambda self, other: BitwiseOr.apply(other, self)
Tensor.__rxor__ = lambda self, other: BitwiseXor.apply(other, self)
Tensor.__invert__ = lambda self: (LogicalNot if self._data.dtype == np.bool_ else
                                  BitwiseNot).apply(self)
