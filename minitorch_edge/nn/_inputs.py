"""Inputs that are not Tensors, caught at the layer entry points with one rule instead of a
check in every layer.

A numpy array, a list or a Python number handed to a Module (or to an ``nn.functional`` form)
where a Tensor is required used to fail deep inside the op as ``AttributeError: 'numpy.ndarray'
object has no attribute 'dim'``. PyTorch raises a TypeError there; so do we, naming the module
or function, the argument and the fix (``minitorch_edge.tensor(x)`` or ``from_numpy(x)``):

- ``Module.__call__`` refuses a numpy array among the top-level arguments before ``forward``
  runs (a module that takes arrays sets ``_takes_arrays = True``; the quantization observers
  do), so the message names the module the user called, not a layer deep inside it;
- any other non-Tensor (a list, a number) is caught where it fails: an AttributeError raised
  on one of the call's own arguments becomes that TypeError. Nothing is checked on the
  success path beyond one isinstance per argument.
"""
import functools
import inspect

import numpy as np

from ..tensor import Tensor


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"a numpy.ndarray ({value.dtype}, shape {value.shape})"
    if isinstance(value, np.generic):
        return f"a numpy scalar ({type(value).__name__})"
    return f"a {type(value).__name__}"


def _fix(value):
    if isinstance(value, np.ndarray):
        return ("wrap it with minitorch_edge.tensor(x) (a copy) or minitorch_edge.from_numpy(x) "
                "(shares its memory)")
    return "wrap it with minitorch_edge.tensor(x)"


def _which(value, args, kwargs, names=None):
    """How the call got `value`: "argument 'input' (position 1)" (or "input 1" without
    `names`), or None if it is not one of the call's own arguments."""
    for i, a in enumerate(args):
        if a is value:
            if names is None:
                return f"input {i + 1}"
            name = f"'{names[i]}' " if i < len(names) else ""
            return f"argument {name}(position {i + 1})"
    for key, a in kwargs.items():
        if a is value:
            return f"argument '{key}'"
    return None


def _first_array(args, kwargs):
    return next((a for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray)), None)


def not_a_tensor_error(callee, value, where):
    """The TypeError for `value` (not a Tensor) passed to `callee` as `where`."""
    return TypeError(f"{callee}: {where} is {_describe(value)}, not a Tensor; {_fix(value)}")


def check_no_arrays(module, args, kwargs):
    """Refuse numpy arrays among a module call's top-level arguments (called by
    Module.__call__ before forward)."""
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            raise not_a_tensor_error(type(module).__name__, a, f"input {i + 1}")
    for key, a in kwargs.items():
        if isinstance(a, np.ndarray):
            raise not_a_tensor_error(type(module).__name__, a, f"argument '{key}'")


def from_attribute_error(callee, error, args, kwargs, names=None):
    """The TypeError to raise instead of `error` (an AttributeError) when it was raised on one
    of the call's own arguments that is not a Tensor (or on something numpy computed from a
    numpy array argument, as ``-x`` does); else None (a real bug: let it through)."""
    value = getattr(error, "obj", None)          # Python >= 3.10 records the object
    if isinstance(value, Tensor):
        return None
    where = None if value is None else _which(value, args, kwargs, names)
    if where is None and (value is None or isinstance(value, np.ndarray)):
        value = _first_array(args, kwargs)
        where = None if value is None else _which(value, args, kwargs, names)
    return None if where is None else not_a_tensor_error(callee, value, where)


def tensor_entry_point(fn):
    """`fn` (an nn.functional form) with the AttributeError a non-Tensor argument causes turned
    into a TypeError naming ``F.<name>()`` and the argument."""
    try:
        names = tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = None

    @functools.wraps(fn)
    def entry(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as e:
            better = from_attribute_error(f"F.{fn.__name__}()", e, args, kwargs, names)
            if better is None:
                raise
            raise better from None
    return entry
