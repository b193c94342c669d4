"""The full PyTorch-like API of minitorch_edge, loaded on demand by the package's lazy
__init__.py (the first attribute access, ``from minitorch_edge import X``, or the first import
of tensor.py). Its names are copied into the package, so ``minitorch_edge.X`` is what it was.
"""
# what a CPU-only PyTorch build answers about accelerators (no CUDA, cuDNN or MPS here)
from . import (  # noqa: F401  (the Layers and Optimizer tiers)  # noqa: F401  (the Trainer and Utils tiers)  # noqa: F401
                     accelerator,
                     amp,
                     autograd,
                     backend,
                     backends,
                     cpu,
                     cuda,
                     data,
                     linalg,
                     models,
                     nn,
                     ops,
                     optim,
                     train,
)
from ._format import set_printoptions  # noqa: F401
from .amp import (  # noqa: F401  (torch.autocast and its state functions)
                     autocast,
                     clear_autocast_cache,
                     get_autocast_dtype,
                     is_autocast_cache_enabled,
                     is_autocast_enabled,
                     set_autocast_cache_enabled,
                     set_autocast_dtype,
                     set_autocast_enabled,
)
from .amp.autocast_mode import (  # noqa: F401  (torch's deprecated device-named spellings)
                     get_autocast_cpu_dtype,
                     get_autocast_gpu_dtype,
                     is_autocast_cpu_enabled,
                     set_autocast_cpu_dtype,
                     set_autocast_cpu_enabled,
)
from .autograd.grad_mode import (  # noqa: F401
                     enable_grad,
                     inference_mode,
                     is_grad_enabled,
                     is_inference_mode_enabled,
                     no_grad,
                     set_grad_enabled,
)
from .backend import get_num_threads, set_num_threads  # noqa: F401
from .backends import (  # noqa: F401
                     are_deterministic_algorithms_enabled,
                     get_float32_matmul_precision,
                     is_deterministic_algorithms_warn_only_enabled,
                     set_float32_matmul_precision,
                     use_deterministic_algorithms,
)
from .creation import *
from .dtypes import (  # noqa: F401
                     bfloat16,
                     double,
                     dtype,
                     float,
                     float16,
                     float32,
                     float64,
                     get_default_dtype,
                     half,
                     int,
                     int8,
                     int16,
                     int32,
                     int64,
                     long,
                     promote_types,
                     result_type,
                     set_default_dtype,
                     short,
                     uint8,
)
from .dtypes import bool_ as bool  # noqa: F401
from .nn.functional.distance import cdist, cosine_similarity, pairwise_distance, pdist  # noqa: F401
from .ops import *
from .random import (  # noqa: F401
                     Generator,
                     default_generator,
                     get_rng_state,
                     initial_seed,
                     manual_seed,
                     seed,
                     set_rng_state,
)
from .sampling import *
from .sampling import install_sampling_methods as _install
from .tensor import (  # noqa: F401
                     Size,
                     Tensor,
                     channels_last,
                     channels_last_3d,
                     contiguous_format,
                     device,
                     memory_format,
                     preserve_format,
)
from .utils import data as _utils_data
from .utils.serialization import ModelFormatError, load, save  # noqa: F401

_install()  # the checked random fills (normal_, bernoulli_, ...) replace ops/inplace.py's
del _utils_data, _install

