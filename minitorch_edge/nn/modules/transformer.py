"""``torch.nn.modules.transformer``'s module path: re-exports the classes from where they live
(nn/layers/transformer.py)."""
from ..layers.transformer import (Transformer, TransformerDecoder,  # noqa: F401
                                  TransformerDecoderLayer, TransformerEncoder,
                                  TransformerEncoderLayer)

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]
