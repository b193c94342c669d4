"""The full PyTorch-like API of minitorch_edge, loaded on demand by the package's lazy
__init__.py (the first attribute access, ``from minitorch_edge import X``, or the first import
of tensor.py). Its names are copied into the package, so ``minitorch_edge.X`` is what it was.
"""
from . import dtypes
from .dtypes import (float32, float64, float16, bfloat16, int8, int16, int32,  # noqa: F401
                     int64, uint8, float, double, half, long, int, short, get_default_dtype,
                     set_default_dtype, promote_types, result_type)
from .dtypes import bool_ as bool  # noqa: F401
from .dtypes import dtype  # noqa: F401
from .tensor import (Tensor, Size, device, memory_format, contiguous_format,  # noqa: F401
                     preserve_format, channels_last, channels_last_3d)
from .random import (Generator, manual_seed, seed, initial_seed, get_rng_state,  # noqa: F401
                     set_rng_state, default_generator)
from .creation import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from . import autograd  # noqa: F401
from .autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled,  # noqa: F401
                                 inference_mode, is_grad_enabled, is_inference_mode_enabled)
from . import ops  # noqa: F401  (attaches the op methods to Tensor)
from .ops import *  # noqa: F401,F403
from . import linalg  # noqa: E402,F401  (torch.linalg: norms, inv, det, solve, qr, svd, eigh, ...)
from .nn.functional.distance import cdist, pdist, cosine_similarity, pairwise_distance  # noqa: E402,F401
from . import backend  # noqa: F401
from .backend import set_num_threads, get_num_threads  # noqa: F401
from ._format import set_printoptions  # noqa: F401
from . import nn, optim  # noqa: E402,F401  (the Layers and Optimizer tiers)
from . import models  # noqa: E402,F401  (the model zoo)
from .utils.serialization import save, load, ModelFormatError  # noqa: E402,F401
from . import data, train  # noqa: E402,F401  (the Trainer and Utils tiers)
from .utils import data as _utils_data  # noqa: E402,F401  (torch.utils.data's module path)
# what a CPU-only PyTorch build answers about accelerators (no CUDA, cuDNN or MPS here)
from . import accelerator, backends, cuda  # noqa: E402,F401
from .backends import (set_float32_matmul_precision, get_float32_matmul_precision,  # noqa: E402,F401
                       use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                       is_deterministic_algorithms_warn_only_enabled)
from .sampling import install_sampling_methods as _install  # noqa: E402
_install()  # the checked random fills (normal_, bernoulli_, ...) replace ops/inplace.py's
del _utils_data, _install

