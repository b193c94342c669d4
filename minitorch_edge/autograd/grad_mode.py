"""Grad mode: a global switch that says whether ops record themselves for backward.

`no_grad`, `enable_grad`, `set_grad_enabled` and `inference_mode` are context managers and
decorators that flip the switch and restore it on exit. (PyTorch keeps the switch per thread; we
keep one per process, which is what DataLoader workers, being processes, need.)
"""
import functools

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _State:
    enabled = True
    inference = False


def is_grad_enabled():
    return _State.enabled


def is_inference_mode_enabled():
    return _State.inference


class _GradModeContext:
    """Base: sets grad mode to `self._mode` on enter and restores the previous mode on exit.
    Used as a decorator, each call of the wrapped function runs in that mode."""
    _mode = True
    _inference = False

    def __enter__(self):
        self._prev = (_State.enabled, _State.inference)
        _State.enabled, _State.inference = self._mode, self._inference
        return self

    def __exit__(self, *exc):
        _State.enabled, _State.inference = self._prev
        return False

    def __call__(self, func):
        mode, inference = self._mode, self._inference

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            prev = (_State.enabled, _State.inference)
            _State.enabled, _State.inference = mode, inference
            try:
                return func(*args, **kwargs)
            finally:
                _State.enabled, _State.inference = prev
        return wrapper


class _BareDecorator(_GradModeContext):
    """Allows ``with no_grad():``, ``@no_grad()`` and bare ``@no_grad``."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        return self(orig_func) if orig_func is not None else self

    def __init__(self, orig_func=None):
        pass


class no_grad(_BareDecorator):
    """Ops inside do not record: results have requires_grad=False."""
    _mode = False


class enable_grad(_BareDecorator):
    """Turn recording back on inside a no_grad region."""
    _mode = True


class set_grad_enabled(_GradModeContext):
    """``set_grad_enabled(False)`` switches as soon as it is called; in a ``with`` block the
    previous mode comes back at the end (as in PyTorch)."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = (_State.enabled, _State.inference)
        self._inference = _State.inference
        _State.enabled = self._mode

    def __enter__(self):
        return self

    def __call__(self, func):
        _State.enabled, _State.inference = self._prev  # as a decorator it switches nothing now
        return super().__call__(func)


class inference_mode(_GradModeContext):
    """Like no_grad (we have no separate inference tensors, so it is no_grad plus a flag that
    `is_inference_mode_enabled()` reports)."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):  # bare @inference_mode
            self._mode, self._inference = False, True
            return self(mode)
        return self

    def __init__(self, mode=True):
        if not callable(mode):
            self._mode, self._inference = not mode, bool(mode)
