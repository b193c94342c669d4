"""The runtime's exceptions: a file it refuses (ModelFormatError, a ValueError) and a run that
fails (ModelRunError, a RuntimeError), each carrying the C status and the C message."""

STATUS_NAMES = {0: "MTE_OK", -1: "MTE_EINVAL", -2: "MTE_ENOMEM", -3: "MTE_EOVERFLOW",
                -4: "MTE_EUNSUPPORTED", -5: "MTE_EBUSY", -6: "MTE_ECORRUPT", -7: "MTE_EIO",
                -8: "MTE_EFORMAT"}


class _StatusError:
    """Mixin: `status` (the C status code), `status_name` and `message` (the C runtime's)."""

    def _set(self, status, message):
        self.status, self.message = status, message
        self.status_name = STATUS_NAMES.get(status, f"status {status}")


class ModelFormatError(_StatusError, ValueError):
    """The C runtime refused a model file: not a valid .mte (MTE_EFORMAT), unreadable
    (MTE_EIO), or holding an op this build has no kernel for (MTE_EUNSUPPORTED)."""

    def __init__(self, path, status, message):
        self._set(status, message)
        self.path = path
        super().__init__(f"{path}: {self.status_name}: {message}")


class ModelRunError(_StatusError, RuntimeError):
    """mte_model_run failed (a kernel's status and message)."""

    def __init__(self, model_name, status, message):
        self._set(status, message)
        super().__init__(f"running {model_name}: {self.status_name}: {message}")


class ModelClosedError(RuntimeError):
    """The model was used after close()."""


class LibraryNotFoundError(FileNotFoundError):
    """libmte_runtime.so is in none of the places the loader looks."""
