"""``torch.nn.modules.conv``'s module path: re-exports the classes from where they live
(nn/layers/conv.py)."""
from ..layers.conv import (Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d,  # noqa: F401
                           _ConvNd)

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]
