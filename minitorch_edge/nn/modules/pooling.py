"""``torch.nn.modules.pooling``'s module path: re-exports the classes from where they live
(nn/layers/pooling.py)."""
from ..layers.pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d,  # noqa: F401
                              AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
                              AvgPool2d, MaxPool1d, MaxPool2d, _AdaptiveAvgPoolNd,
                              _AdaptiveMaxPoolNd, _MaxPoolNd)

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]
