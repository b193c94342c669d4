"""``torch.nn.modules.rnn``'s module path: re-exports the recurrent layers from where they live
(nn/layers/rnn.py)."""
from ..layers.rnn import *  # noqa: F401,F403
from ..layers.rnn import __all__  # noqa: F401
