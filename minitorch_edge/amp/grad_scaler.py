"""``GradScaler``: loss scaling for float16 training, step for step as ``torch.amp.GradScaler``.

float16's smallest normal is 6e-5: small gradients of a float16 computation flush to zero.
The scaler multiplies the loss by a large `scale` (2**16 to start) before backward, so the
gradients are computed scaled up; ``unscale_(optimizer)`` divides them back (in place, in
float32 arithmetic) and records whether any is inf/nan; ``step(optimizer)`` runs the optimizer
only when none was (its return value is the optimizer's, None when skipped); ``update()`` then
halves the scale after a skipped step (`backoff_factor`) and doubles it (`growth_factor`) after
`growth_interval` clean steps in a row. Gradient clipping goes between ``unscale_`` and
``step``. The scale is a float32 number and the growth tracker an int, updated exactly as
PyTorch's ``_amp_update_scale_`` does, so the two scalers agree on any sequence of steps.
A disabled scaler (``enabled=False``) passes everything through.

The one deliberate difference: ``GradScaler()`` with no device scales on the CPU. PyTorch's
default device is "cuda", which a CPU-only build disables with a warning; here every scaler
is a CPU scaler, so the default is "cpu". ``GradScaler("cuda")`` is disabled as in PyTorch.
"""
from collections import defaultdict

import numpy as np

from .. import dtypes as _dt

__all__ = ["GradScaler", "OptState"]


class OptState:
    READY, UNSCALED, STEPPED = 0, 1, 2


def _fresh_state():
    return {"stage": OptState.READY, "found_inf": None}


_NO_SCALE_FIX = ("This may indicate your script did not use scaler.scale(loss or outputs) "
                 "earlier in the iteration.")


class GradScaler:
    def __init__(self, device="cpu", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if not isinstance(device, str) or device.split(":")[0] not in ("cpu", "cuda"):
            raise ValueError(f"GradScaler: device must be 'cpu' (or 'cuda', disabled here), "
                             f"got {device!r}")
        self._device = device.split(":")[0]
        if enabled and self._device == "cuda":
            import warnings
            warnings.warn("GradScaler is enabled, but CUDA is not available (minitorch_edge "
                          "runs on the CPU only).  Disabling.", UserWarning, stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError(f"GradScaler: growth_factor should be > 1, got {growth_factor}")
            if not backoff_factor < 1.0:
                raise ValueError(f"GradScaler: backoff_factor should be < 1, got "
                                 f"{backoff_factor}")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale = None           # np.float32, made by the first scale()
        self._growth_tracker = None  # int
        self._per_optimizer_states = defaultdict(_fresh_state)

    def is_enabled(self):
        return self._enabled

    def _lazy_init(self):
        self._scale = np.float32(self._init_scale)
        self._growth_tracker = int(self._init_growth_tracker)

    def _check_scale(self, funcname):
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _NO_SCALE_FIX)

    # ---- the training-loop calls ----------------------------------------------------------
    def scale(self, outputs):
        """`outputs` (a Tensor, or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        from ..tensor import Tensor
        if self._scale is None:
            self._lazy_init()
        factor = Tensor._make(np.array(self._scale, dtype=np.float32))   # 0-dim: keeps dtype

        def apply(value):
            if isinstance(value, Tensor):
                return value * factor
            if isinstance(value, (list, tuple)):
                return type(value)(apply(v) for v in value)
            raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of "
                             f"Tensors, got {type(value).__name__}")
        return apply(outputs)

    def _unscale_grads(self, optimizer, inv_scale):
        """Divide every gradient by the scale in place; True when one holds inf or nan."""
        found_inf = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                data = grad._data
                if not _dt.is_float_dtype(data.dtype):
                    raise TypeError(f"GradScaler.unscale_: a gradient of dtype {data.dtype} "
                                    f"(shape {tuple(data.shape)}) is not floating point; "
                                    f"only floating parameters can be trained with a scaler")
                if data.dtype == np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                work = _dt.compute_array(data)
                if not np.isfinite(work).all():
                    found_inf = True
                if inv_scale != 1.0:
                    # float32 arithmetic for the narrow types, as PyTorch's kernel
                    scaled = work * inv_scale if work.dtype.itemsize >= 4 else \
                        work.astype(np.float32) * inv_scale
                    data[...] = scaled.astype(data.dtype)
                    grad._vc[0] += 1
        return found_inf

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place (once per step)."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = np.float32(np.float32(1.0 / np.float64(self._scale)))
        state["found_inf"] = self._unscale_grads(optimizer, inv_scale)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless the gradients hold inf/nan (then
        skipped: None). Unscales first unless ``unscale_`` already did."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] == OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == OptState.READY:
            self.unscale_(optimizer)
        retval = None
        if not state["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after `growth_interval` clean ones; or set the
        scale to `new_scale` (a float or a 1-element Tensor)."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            from ..tensor import Tensor
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError("new_scale should be a float or a 1-element Tensor "
                                         "with requires_grad=False.")
                new_scale = new_scale.item()
            self._scale = np.float32(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values()
                     if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(found))
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _update_scale(self, found_inf):
        """PyTorch's _amp_update_scale_, in float32."""
        if found_inf:
            self._scale = np.float32(self._scale * np.float32(self._backoff_factor))
            self._growth_tracker = 0
            return
        successful = self._growth_tracker + 1
        if successful == self._growth_interval:
            grown = np.float32(self._scale * np.float32(self._growth_factor))
            if np.isfinite(grown):
                self._scale = grown
            self._growth_tracker = 0
        else:
            self._growth_tracker = successful

    # ---- getters, setters, state -----------------------------------------------------------
    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else \
            self._growth_tracker

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker (PyTorch's
        keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = np.float32(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_per_optimizer_states"] = dict(state["_per_optimizer_states"])
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._per_optimizer_states = defaultdict(_fresh_state, state["_per_optimizer_states"])
