"""``torch.nn.modules.linear``'s module path: re-exports the classes from where they live
(nn/layers/linear.py, nn/layers/attention.py)."""
from ..layers.linear import Bilinear, Identity, Linear  # noqa: F401
from ..layers.attention import NonDynamicallyQuantizableLinear  # noqa: F401

__all__ = ["Identity", "Linear", "Bilinear", "NonDynamicallyQuantizableLinear"]
