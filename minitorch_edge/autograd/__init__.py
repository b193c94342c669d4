"""Reverse-mode automatic differentiation: Function/Node (function.py), the engine that replays
the graph (engine.py), grad mode switches (grad_mode.py), tape recording and anomaly detection
(tape.py), and numerical gradient checks (gradcheck.py)."""
from .function import Function, Node  # noqa: F401
from .engine import backward, grad  # noqa: F401
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                        is_grad_enabled, is_inference_mode_enabled)
from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401,E402
from .tape import record_tape, Tape, detect_anomaly, set_detect_anomaly, is_anomaly_enabled  # noqa
from .dot import to_dot  # noqa: F401,E402
