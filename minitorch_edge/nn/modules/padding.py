"""``torch.nn.modules.padding``'s module path: re-exports the padding layers from where they
live (nn/layers/padding.py)."""
from ..layers.padding import *  # noqa: F401,F403
from ..layers.padding import __all__  # noqa: F401
