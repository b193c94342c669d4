"""The switches' values, shared by the backends modules."""

_STATE = {"matmul_precision": "highest", "deterministic": False, "warn_only": False}
_PRECISIONS = ("highest", "high", "medium")


def check_bool(setter, value):
    if value.__class__ is not bool:
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
    return value
