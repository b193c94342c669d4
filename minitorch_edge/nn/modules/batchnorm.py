"""``torch.nn.modules.batchnorm``'s module path: re-exports the classes from where they live
(nn/layers/normalization.py)."""
from ..layers.normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d,  # noqa: F401
                                    _BatchNorm, _NormBase)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
