"""minitorch_edge: a deep-learning framework written from scratch on NumPy and C.

The PyTorch-like surface lives here: ``import minitorch_edge as torch`` and most scripts run.
"""
from ._version import __version__  # noqa: F401
from . import dtypes
from .dtypes import (float32, float64, float16, int8, int16, int32, int64, uint8,  # noqa: F401
                     float, double, half, long, int, short, get_default_dtype, set_default_dtype,
                     promote_types, result_type)
from .dtypes import bool_ as bool  # noqa: F401
from .dtypes import dtype  # noqa: F401
from .tensor import Tensor, Size, device  # noqa: F401
from .random import (Generator, manual_seed, seed, initial_seed, get_rng_state,  # noqa: F401
                     set_rng_state, default_generator)
from .creation import *  # noqa: F401,F403
from . import autograd  # noqa: F401
from .autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled,  # noqa: F401
                                 inference_mode, is_grad_enabled, is_inference_mode_enabled)
from . import ops  # noqa: F401  (attaches the op methods to Tensor)
from .ops import *  # noqa: F401,F403
from . import backend  # noqa: F401
from .backend import set_num_threads, get_num_threads  # noqa: F401
from ._format import set_printoptions  # noqa: F401
from . import nn, optim  # noqa: E402,F401  (the Layers and Optimizer tiers)
from . import models  # noqa: E402,F401  (the model zoo)
from .utils.serialization import save, load, ModelFormatError  # noqa: E402,F401
from . import data, train  # noqa: E402,F401  (the Trainer and Utils tiers)
