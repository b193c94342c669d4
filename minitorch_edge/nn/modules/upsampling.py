"""``torch.nn.modules.upsampling``'s module path: re-exports the classes from where they live
(nn/layers/upsampling.py)."""
from ..layers.upsampling import (Upsample, UpsamplingBilinear2d,  # noqa: F401
                                 UpsamplingNearest2d)

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
