"""``torch.nn.modules.module``'s module path: re-exports the classes from where they live
(nn/module.py)."""
from ..module import Module, _IncompatibleKeys  # noqa: F401

__all__ = ["Module"]
