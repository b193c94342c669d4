"""EfficientNet-Lite0: the TFLite-friendly EfficientNet-B0 (Tan & Le, 2019; "Lite" variants
released by the TensorFlow team in 2020), laid out and named as timm's ``efficientnet_lite0``.

The Lite variants drop what is slow or hard to quantise on phones and micro-controllers:
no squeeze-and-excitation, ReLU6 instead of swish, and a stem (32 channels) and head (1280)
that stay fixed when the model is scaled. What is left is a MobileNetV2-style stack of MBConv
blocks (expand 1x1 -> depthwise kxk -> linear project 1x1, residual where shapes allow)::

    conv_stem 3x3 stride 2 -> 32, bn1, act1 (ReLU6)
    blocks.S.B    stage S (expand e, kernel k, stride of the first block s, repeats n, out c):
        S:  e k s n   c
        0:  1 3 1 1  16      DepthwiseSeparable: conv_dw, bn1, act1, conv_pw, bn2
        1:  6 3 2 2  24      MBConv: conv_pw (expand), bn1, act1, conv_dw, bn2, act2,
        2:  6 5 2 2  40              conv_pwl (project), bn3
        3:  6 3 2 3  80
        4:  6 5 1 3 112
        5:  6 5 2 4 192
        6:  6 3 1 1 320
    conv_head 1x1 -> 1280, bn2, act2 (ReLU6)
    global average pool -> flatten -> Dropout(dropout) -> classifier Linear(1280, num_classes)

So keys read ``conv_stem.weight``, ``bn1.running_mean``, ``blocks.0.0.conv_dw.weight``,
``blocks.3.2.conv_pwl.weight``, ``conv_head.weight``, ``bn2.*``, ``classifier.weight``
(4.65M parameters at 1000 classes). Convs have no bias; padding is symmetric, (k-1)//2 (TF's
"SAME" padding is asymmetric at stride 2: weights ported from TF, timm's
``tf_efficientnet_lite0``, give slightly different activations with this layout).
BatchNorm uses eps 1e-3 and momentum 0.01 as the TF reference does (TF's decay 0.99 is PyTorch's
momentum 0.01).

Initialisation as the TF reference: conv weights N(0, 2 / fan_out) with fan_out = k*k*c_out /
groups; BatchNorm 1 / 0; classifier U(-1/sqrt(num_classes), 1/sqrt(num_classes)), bias 0.
``drop_path_rate`` (stochastic depth, 0.2 in the TF training recipe; 0 here by default so that
training is deterministic) drops a residual branch per sample with probability growing
linearly over the blocks from 0 to drop_path_rate.
"""
import math

from .. import nn
from .. import creation
from ..autograd.grad_mode import no_grad
from ..nn import functional as F
from .mobilenet import _make_divisible

__all__ = ["EfficientNetLite", "efficientnet_lite0", "DropPath"]

# (expand ratio, kernel, stride, repeats, out channels) of EfficientNet-B0 / Lite0
LITE0_STAGES = [(1, 3, 1, 1, 16), (6, 3, 2, 2, 24), (6, 5, 2, 2, 40), (6, 3, 2, 3, 80),
                (6, 5, 1, 3, 112), (6, 5, 2, 4, 192), (6, 3, 1, 1, 320)]
BN_EPS, BN_MOMENTUM = 1e-3, 0.01


def _bn(c):
    return nn.BatchNorm2d(c, eps=BN_EPS, momentum=BN_MOMENTUM)


def _conv(cin, cout, k, stride=1, groups=1):
    return nn.Conv2d(cin, cout, k, stride=stride, padding=(k - 1) // 2, groups=groups,
                     bias=False)


class DropPath(nn.Module):
    """Stochastic depth: in training, zero the whole input of a sample with probability p and
    scale the survivors by 1/(1-p); the identity in eval mode or when p == 0."""

    def __init__(self, p=0.0):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = 1.0 - self.p
        mask = creation.rand(x.shape[0], *([1] * (x.dim() - 1)), dtype=x.dtype) < keep
        return x * mask.to(x.dtype) * (1.0 / keep)

    def extra_repr(self):
        return f"p={self.p}"


class DepthwiseSeparable(nn.Module):
    """Expansion 1: depthwise kxk -> BN -> ReLU6 -> pointwise 1x1 -> BN (+ input)."""

    def __init__(self, cin, cout, k, stride, drop_path=0.0):
        super().__init__()
        self.has_skip = stride == 1 and cin == cout
        self.conv_dw = _conv(cin, cin, k, stride, groups=cin)
        self.bn1 = _bn(cin)
        self.act1 = nn.ReLU6(inplace=True)
        self.conv_pw = _conv(cin, cout, 1)
        self.bn2 = _bn(cout)
        self.drop_path = DropPath(drop_path) if self.has_skip and drop_path else nn.Identity()

    def forward(self, x):
        out = self.bn2(self.conv_pw(self.act1(self.bn1(self.conv_dw(x)))))
        return x + self.drop_path(out) if self.has_skip else out


class MBConv(nn.Module):
    """Inverted residual: expand 1x1 -> depthwise kxk -> project 1x1 (linear) (+ input)."""

    def __init__(self, cin, cout, k, stride, expand, drop_path=0.0):
        super().__init__()
        mid = _make_divisible(cin * expand, 8)
        self.has_skip = stride == 1 and cin == cout
        self.conv_pw = _conv(cin, mid, 1)
        self.bn1 = _bn(mid)
        self.act1 = nn.ReLU6(inplace=True)
        self.conv_dw = _conv(mid, mid, k, stride, groups=mid)
        self.bn2 = _bn(mid)
        self.act2 = nn.ReLU6(inplace=True)
        self.conv_pwl = _conv(mid, cout, 1)
        self.bn3 = _bn(cout)
        self.drop_path = DropPath(drop_path) if self.has_skip and drop_path else nn.Identity()

    def forward(self, x):
        out = self.act1(self.bn1(self.conv_pw(x)))
        out = self.act2(self.bn2(self.conv_dw(out)))
        out = self.bn3(self.conv_pwl(out))
        return x + self.drop_path(out) if self.has_skip else out


class EfficientNetLite(nn.Module):
    """EfficientNet-Lite from a stage table; see the file header for the layout."""

    def __init__(self, stages=LITE0_STAGES, num_classes=1000, dropout=0.2, in_channels=3,
                 stem_channels=32, head_channels=1280, drop_path_rate=0.0):
        super().__init__()
        self.conv_stem = _conv(in_channels, stem_channels, 3, stride=2)
        self.bn1 = _bn(stem_channels)
        self.act1 = nn.ReLU6(inplace=True)
        total = sum(s[3] for s in stages)
        cin, idx, blocks = stem_channels, 0, []
        for expand, k, stride, repeats, cout in stages:
            stage = []
            for i in range(repeats):
                s = stride if i == 0 else 1
                rate = drop_path_rate * idx / total
                stage.append(DepthwiseSeparable(cin, cout, k, s, rate) if expand == 1 else
                             MBConv(cin, cout, k, s, expand, rate))
                cin, idx = cout, idx + 1
            blocks.append(nn.Sequential(*stage))
        self.blocks = nn.Sequential(*blocks)
        self.conv_head = _conv(cin, head_channels, 1)
        self.bn2 = _bn(head_channels)
        self.act2 = nn.ReLU6(inplace=True)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(head_channels, num_classes)
        self._init_weights()

    def _init_weights(self):
        with no_grad():
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    k = m.kernel_size[0] * m.kernel_size[1]
                    m.weight.normal_(0.0, math.sqrt(2.0 / (k * m.out_channels // m.groups)))
                elif isinstance(m, nn.BatchNorm2d):
                    m.weight.fill_(1.0)
                    m.bias.zero_()
                elif isinstance(m, nn.Linear):
                    bound = 1.0 / math.sqrt(m.out_features)
                    m.weight.uniform_(-bound, bound)
                    m.bias.zero_()

    def forward(self, x):
        x = self.act1(self.bn1(self.conv_stem(x)))
        x = self.act2(self.bn2(self.conv_head(self.blocks(x))))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(self.dropout(x))


def efficientnet_lite0(num_classes=1000, dropout=0.2, **kwargs):
    """EfficientNet-Lite0 (timm layout, 224x224 inputs in the reference)."""
    return EfficientNetLite(LITE0_STAGES, num_classes=num_classes, dropout=dropout, **kwargs)
