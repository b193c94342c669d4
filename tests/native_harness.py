"""Shared by the native kernel tests: the extension (required when MTE_REQUIRE_NATIVE=1,
else the test file is skipped when it is missing), float32 inputs, and a loop over every ISA
this CPU runs."""
import os

import numpy as np
import pytest


def require_native(binding, what):
    """minitorch_edge._C, skipping the calling test module when it (or `binding`) is missing."""
    if os.environ.get("MTE_REQUIRE_NATIVE") == "1":
        from minitorch_edge import _C
    else:
        _C = pytest.importorskip("minitorch_edge._C")
    if not hasattr(_C, binding):
        pytest.skip(f"this build of _C has no {what} kernels", allow_module_level=True)
    return _C


def rand(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def on_every_isa(_C, fn):
    """Run fn(isa) once per ISA this machine supports, then go back to auto."""
    try:
        for isa in _C.available_isas():
            _C.set_isa(isa)
            fn(isa)
    finally:
        _C.set_isa("auto")
