"""``torch.nn.modules.distance``'s module path: re-exports the distance layers from where they
live (nn/layers/distance.py)."""
from ..layers.distance import *  # noqa: F401,F403
from ..layers.distance import __all__  # noqa: F401
