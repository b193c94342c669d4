"""The random number generators training draws from (minitorch_edge's default generator,
numpy's global one, Python's ``random``): seed them all, and take or restore their state as tensors
and JSON-able values, so a checkpoint can hold them and a resumed run draws the same numbers.
"""
import random

import numpy as np

__all__ = ["rng_state", "set_rng_state", "seed_everything"]


def rng_state():
    """The state of every RNG training may draw from, as tensors and JSON-able values."""
    from ..random import default_generator
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {"minitorch_edge": default_generator.get_state(),
            "numpy": {"bit_generator": kind, "key": [int(k) for k in keys], "pos": int(pos),
                      "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
            "python": {"version": int(version), "internal": [int(v) for v in internal],
                       "gauss_next": gauss_next}}


def set_rng_state(state):
    """Restore what ``rng_state()`` returned."""
    from ..random import default_generator
    default_generator.set_state(state["minitorch_edge"])
    n = state["numpy"]
    np.random.set_state((n["bit_generator"], np.asarray(n["key"], dtype=np.uint32), int(n["pos"]),
                         int(n["has_gauss"]), float(n["cached_gaussian"])))
    p = state["python"]
    random.setstate((int(p["version"]), tuple(int(v) for v in p["internal"]), p["gauss_next"]))


def seed_everything(seed):
    """Seed minitorch_edge's default generator, numpy's global RNG and Python's ``random``."""
    from ..random import manual_seed
    manual_seed(seed)
    random.seed(seed)
