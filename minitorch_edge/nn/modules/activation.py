"""``torch.nn.modules.activation``'s module path: re-exports the classes from where they live
(nn/layers/activation.py, nn/layers/attention.py)."""
from ..layers.activation import (CELU, ELU, GELU, Hardsigmoid, Hardswish, Hardtanh,  # noqa: F401
                                 LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU,
                                 ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax,
                                 Softmin, Softplus, Softsign, Tanh, Tanhshrink,
                                 Threshold)
from ..layers.attention import MultiheadAttention  # noqa: F401

__all__ = ["CELU", "ELU", "GELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU", "ReLU6", "SELU", "SiLU",
           "Sigmoid", "Softmax", "Softmin", "Softplus", "Softsign", "Tanh", "Tanhshrink",
           "Threshold", "MultiheadAttention"]
