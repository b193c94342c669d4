"""``torch.nn.modules.pixelshuffle``'s module path: re-exports the classes from where they live
(nn/layers/upsampling.py)."""
from ..layers.upsampling import PixelShuffle, PixelUnshuffle  # noqa: F401

__all__ = ["PixelShuffle", "PixelUnshuffle"]
