"""Reverse-mode automatic differentiation: Function/Node (function.py), the engine that replays
the graph (engine.py), grad mode switches (grad_mode.py), tape recording and anomaly detection
(tape.py), numerical gradient checks (gradcheck.py), and torch.autograd.profiler's spellings
(profiler.py, loaded on first use: it imports the profiler package)."""
from .function import Function, Node  # noqa: F401
from .engine import backward, grad  # noqa: F401
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                        is_grad_enabled, is_inference_mode_enabled)
from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401,E402
from .tape import record_tape, Tape, detect_anomaly, set_detect_anomaly, is_anomaly_enabled  # noqa
from .dot import to_dot  # noqa: F401,E402


def __getattr__(name):
    if name == "profiler":                  # autograd.profiler without an explicit import
        import importlib
        return importlib.import_module(f"{__name__}.profiler")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
