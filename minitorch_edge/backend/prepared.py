"""Prepared weights: a kernel's preprocessed form of a weight array, computed once and reused.

Some kernels start by rewriting their weights into another form: Winograd convolution turns
each 3x3 filter into a 6x6 (or 4x4) transformed tile ``U = G w G^T``. For a 256->256 conv on a
14x14 image that transform is a quarter of the call. Weights change only when something writes
them (an optimizer step, ``load_state_dict``, ``nn.init``, an in-place op), so the prepared form
can be kept between calls and dropped on the next write:

    u = prepared.get(w_array, ("winograd", 4), make=lambda w: transform(w, 4))

Entries are keyed by the *root* array that owns the memory (views, ``.data`` and ``detach()``
all share it) and by the exact view (address, shape, strides, dtype), so replacing a Tensor's
array (``p.data = other``) gives a different key. The library's writers of tensor memory call
``wrote(array)``, which drops every prepared form of that root; it costs one dict lookup, and
nothing at all while nothing is cached (training keeps the per-call kernels).

The one write this cannot see: writing through a numpy array obtained from ``t.numpy()`` (or
any array the user keeps). After such a write call ``clear()``, or disable caching with
``set_enabled(False)`` / ``MTE_PREPARED_WEIGHTS=0``. An entry lives as long as its root array:
a weakref callback removes it when the array is freed.
"""
import os
import weakref

import numpy as np

__all__ = ["get", "wrote", "clear", "set_enabled", "enabled", "stats"]

_entries = {}      # id(root) -> (weakref to root, {(key, view stamp): prepared array})
_MISSING = object()
_state = {"enabled": os.environ.get("MTE_PREPARED_WEIGHTS", "1") != "0", "hits": 0, "misses": 0}


def _root(array):
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _stamp(array):
    """Which view of its root `array` is. A root owns its memory, which never moves, so its
    shape and strides say it all (the common case: cheap); a view adds its address."""
    if array.base is None:
        return (array.shape, array.strides, array.dtype.str)
    return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)


def get(array, key, make):
    """make(array), computed once per (root memory, view, key) and reused until a write.

    An array result is made read-only: it is shared by every later call. (None, "nothing to
    prepare", is kept too.)"""
    if not _state["enabled"]:
        return make(array)
    root = _root(array)
    entry = _entries.get(id(root))
    if entry is None or entry[0]() is not root:          # new, or the id of a dead array
        ident = id(root)

        def drop(ref, ident=ident):
            current = _entries.get(ident)
            if current is not None and current[0] is ref:
                del _entries[ident]
        entry = _entries[ident] = (weakref.ref(root, drop), {})
    full_key = (key, _stamp(array))
    value = entry[1].get(full_key, _MISSING)
    if value is not _MISSING:
        _state["hits"] += 1
        return value
    _state["misses"] += 1
    value = make(array)
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    entry[1][full_key] = value
    return value


def wrote(array):
    """Forget every prepared form of the memory `array` belongs to (call after writing it)."""
    if _entries:
        root = _root(array)
        entry = _entries.get(id(root))
        if entry is not None and entry[0]() is root:
            entry[1].clear()


def clear():
    """Forget every prepared weight (e.g. after writing weights through numpy directly)."""
    _entries.clear()


def set_enabled(flag):
    """Turn caching on or off (off: every call prepares its weights again)."""
    _state["enabled"] = bool(flag)
    if not flag:
        clear()


def enabled():
    return _state["enabled"]


def stats():
    """{"entries": roots with prepared forms, "hits": ..., "misses": ...} since start."""
    return {"entries": len(_entries), "hits": _state["hits"], "misses": _state["misses"]}
