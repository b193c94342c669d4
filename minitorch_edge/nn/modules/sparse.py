"""``torch.nn.modules.sparse``'s module path: re-exports the classes from where they live
(nn/layers/sparse.py)."""
from ..layers.sparse import Embedding  # noqa: F401

__all__ = ["Embedding"]
