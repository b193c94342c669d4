"""``torch.nn.modules.instancenorm``'s module path: re-exports the classes from where they live
(nn/layers/normalization.py)."""
from ..layers.normalization import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,  # noqa: F401
                                    _InstanceNorm)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
