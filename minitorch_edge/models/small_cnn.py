"""SmallCNN: the classic two-stage convolutional net for small grey images (MNIST, digits).

    x (N, C, S, S)
      -> Conv2d(C, 16, 3) -> ReLU -> MaxPool2d(2)        features.0 / .1 / .2
      -> Conv2d(16, 32, 3) -> ReLU -> MaxPool2d(2)       features.3 / .4 / .5
      -> flatten -> Linear(32 * s * s, num_classes)       fc

For 28x28 inputs without padding the sizes go 28 -> 26 -> 13 -> 11 -> 5, so the head sees
32*5*5 = 800 features. The flatten size is computed from ``input_size``: the unpadded layout
would shrink an 8x8 digit to nothing (8 -> 6 -> 3 -> 1 -> 0), so ``padding=None`` picks 1 ("same"
convolutions, 8 -> 8 -> 4 -> 4 -> 2, 128 features) when 0 is too small. MACs for one 28x28 image:
3*3*1*16*26*26 + 3*3*16*32*11*11 + 800*10 = 662,912.
"""
from .. import nn

__all__ = ["SmallCNN"]


def _side(size, padding):
    """Side length after conv3x3(padding) + maxpool(2)."""
    return (size + 2 * padding - 2) // 2


class SmallCNN(nn.Module):
    """conv 3x3 (16) - ReLU - maxpool 2 - conv 3x3 (32) - ReLU - maxpool 2 - linear.

    Args: ``in_channels``, ``num_classes``, ``input_size`` (side of the square input images:
    28 for MNIST, 8 for the sklearn digits), ``padding`` of both convolutions (None: 0 unless
    the input is too small for it, then 1; see the file header).
    """

    def __init__(self, in_channels=1, num_classes=10, input_size=28, padding=None):
        super().__init__()
        if padding is None:
            padding = 0 if _side(_side(input_size, 0), 0) >= 1 else 1
        side = _side(_side(input_size, padding), padding)
        if side < 1:
            raise ValueError(f"SmallCNN: input_size={input_size} with padding={padding} leaves no "
                             f"pixels after two conv+pool stages; use a larger input or padding")
        self.input_size, self.padding = input_size, padding
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 16, 3, padding=padding), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=padding), nn.ReLU(), nn.MaxPool2d(2))
        self.flat_features = 32 * side * side
        self.fc = nn.Linear(self.flat_features, num_classes)

    def forward(self, x):
        if x.dim() != 4 or x.shape[-1] != self.input_size or x.shape[-2] != self.input_size:
            raise ValueError(f"SmallCNN: expected input of shape (N, C, {self.input_size}, "
                             f"{self.input_size}) (built with input_size={self.input_size}), got "
                             f"{tuple(x.shape)}")
        return self.fc(self.features(x).flatten(1))
