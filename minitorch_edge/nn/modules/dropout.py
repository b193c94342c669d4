"""``torch.nn.modules.dropout``'s module path: re-exports the classes from where they live
(nn/layers/dropout.py)."""
from ..layers.dropout import (AlphaDropout, Dropout, Dropout1d, Dropout2d,  # noqa: F401
                              Dropout3d, FeatureAlphaDropout, _DropoutNd)

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
