"""``torch.nn.modules.flatten``'s module path: re-exports the classes from where they live
(nn/layers/linear.py)."""
from ..layers.linear import Flatten, Unflatten  # noqa: F401

__all__ = ["Flatten", "Unflatten"]
