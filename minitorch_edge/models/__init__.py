"""The model zoo: ready-made networks with PyTorch-compatible layouts, and `summary`.

Every model's ``state_dict`` keys equal those of its PyTorch twin (torchvision's names where
torchvision has the model, timm's for EfficientNet-Lite0), so weights exported from PyTorch as
safetensors load with ``model.load_state_dict(...)``.

==========================  ====================================================================
``MLP``                     fully connected net (784-256-10 by default: the MNIST benchmark)
``SmallCNN``                two conv+pool stages and a linear head (MNIST 28x28, digits 8x8)
``resnet18``, ``resnet34``  ResNet with BasicBlocks (He et al., 2015), torchvision layout
``mobilenet_v2``            MobileNetV2 (Sandler et al., 2018), torchvision layout
``efficientnet_lite0``      EfficientNet-Lite0 (no SE, ReLU6), timm layout
``TransformerClassifier``   token embedding + Transformer encoder + pooled linear head
``summary``                 per-layer table: output shapes, parameters, MACs (torchinfo-like)
==========================  ====================================================================
"""
from .mlp import *  # noqa: F401,F403
from .small_cnn import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .efficientnet import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .summary import summary, ModelSummary  # noqa: F401
