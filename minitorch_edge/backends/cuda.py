"""``backends.cuda``: ``matmul.allow_tf32`` and the other CUDA switches (CUDA is not built)."""
from ._state import _STATE, check_bool

__all__ = ["is_built", "matmul", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp"]


def is_built():
    """False: minitorch_edge is not built with CUDA."""
    return False


class _Matmul:
    """``backends.cuda.matmul``: allow_tf32 mirrors the float32 matmul precision (True for
    'high'/'medium', False for 'highest'), as in PyTorch; unknown names raise."""
    _FLAGS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
              "allow_fp16_accumulation")

    def __init__(self):
        object.__setattr__(self, "_values", {"allow_fp16_reduced_precision_reduction": True,
                                             "allow_bf16_reduced_precision_reduction": True,
                                             "allow_fp16_accumulation": False})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _STATE["matmul_precision"] != "highest"
        if name in self._FLAGS:
            return self._values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _STATE["matmul_precision"] = "high" if check_bool("set_allow_tf32_cublas", value) \
                else "highest"
        elif name in self._FLAGS:
            if value.__class__ is not bool:
                raise TypeError(f"{name} expects a bool, but got {type(value)}")
            self._values[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = _Matmul()
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled():
    return _SDP["flash"]


def enable_flash_sdp(enabled):
    _SDP["flash"] = check_bool("set_sdp_use_flash", enabled)


def mem_efficient_sdp_enabled():
    return _SDP["mem_efficient"]


def enable_mem_efficient_sdp(enabled):
    _SDP["mem_efficient"] = check_bool("set_sdp_use_mem_efficient", enabled)


def math_sdp_enabled():
    return _SDP["math"]


def enable_math_sdp(enabled):
    _SDP["math"] = check_bool("set_sdp_use_math", enabled)


def cudnn_sdp_enabled():
    return _SDP["cudnn"]


def enable_cudnn_sdp(enabled):
    _SDP["cudnn"] = check_bool("set_sdp_use_cudnn", enabled)
