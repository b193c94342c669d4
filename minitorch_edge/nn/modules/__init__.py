"""``torch.nn.modules``: PyTorch's module paths for the layer classes
(``nn.modules.activation.MultiheadAttention``, ``nn.modules.loss._Loss``,
``nn.modules.module.Module``, ...). Each file here maps one PyTorch module to where the class
lives in minitorch_edge (nn/layers/*.py, nn/module.py, nn/containers.py) and re-exports it: the
classes are the very same objects as ``nn.<Name>``. Every public name is also here, as in
``torch.nn.modules.Linear``.
"""
from . import (activation, batchnorm, container, conv, distance, dropout,  # noqa: F401
               flatten, instancenorm, linear, loss, module, normalization, padding,
               pixelshuffle, pooling, rnn, sparse, transformer, upsampling)
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
