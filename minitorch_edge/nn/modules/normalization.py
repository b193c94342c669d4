"""``torch.nn.modules.normalization``'s module path: re-exports the classes from where they live
(nn/layers/normalization.py)."""
from ..layers.normalization import (GroupNorm, LayerNorm, LocalResponseNorm,  # noqa: F401
                                    RMSNorm)

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]
