"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", 2018),
laid out and named as torchvision builds it.

The building block is the *inverted residual*: a cheap 1x1 conv widens the input t times
(``expand``), a 3x3 *depthwise* conv (groups = channels: one filter per channel) filters each
channel spatially, and a 1x1 conv projects back down with no activation (the *linear
bottleneck*). Where stride is 1 and the widths match, the input is added back::

    conv.0  ConvBNReLU6 1x1  c_in -> t*c_in          (absent when t == 1)
    conv.1  ConvBNReLU6 3x3  depthwise, stride s
    conv.2  Conv2d 1x1       t*c_in -> c_out, no bias
    conv.3  BatchNorm2d      (for t == 1 the indices are one lower)

The network (t = expansion, c = channels, n = repeats, s = stride of the first repeat)::

    features.0      ConvBNReLU6 3x3, stride 2, 32 channels
    features.1-17   t,c,n,s = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1)
                              (6,160,3,2) (6,320,1,1)
    features.18     ConvBNReLU6 1x1 -> 1280
    pool (adaptive avg 1x1) -> flatten -> classifier.0 Dropout -> classifier.1 Linear

Channels are multiplied by ``width_mult`` and rounded by `_make_divisible` to multiples of
``round_nearest`` (hardware likes multiples of 8). A ConvBNReLU6 is a Sequential
(0: Conv2d without bias, 1: BatchNorm2d, 2: ReLU6), so keys read ``features.2.conv.1.0.weight``.
Initialisation as torchvision: convs kaiming_normal_ (fan_out), BN 1/0, Linear N(0, 0.01).
3.5M parameters at 1000 classes.
"""
from .. import nn
from ..nn import functional as F

__all__ = ["MobileNetV2", "mobilenet_v2", "InvertedResidual", "ConvBNActivation",
           "_make_divisible"]


def _make_divisible(v, divisor, min_value=None):
    """Round `v` to the nearest multiple of `divisor` (at least `min_value`, default divisor),
    going one step up if rounding down would lose more than 10%."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNActivation(nn.Sequential):
    """Conv2d (no bias, 'same' padding) -> BatchNorm2d -> activation (ReLU6 by default; None
    for no activation): torchvision's Conv2dNormActivation."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1,
                 activation=nn.ReLU6, bn_eps=1e-5, bn_momentum=0.1):
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                            padding=(kernel_size - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(out_channels, eps=bn_eps, momentum=bn_momentum)]
        if activation is not None:
            layers.append(activation(inplace=True))
        super().__init__(*layers)
        self.out_channels = out_channels


class InvertedResidual(nn.Module):
    """expand 1x1 -> depthwise 3x3 -> linear project 1x1, plus the input when shapes allow."""

    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"InvertedResidual: stride should be 1 or 2, got {stride}")
        hidden_dim = int(round(inp * expand_ratio))
        self.stride = stride
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNActivation(inp, hidden_dim, kernel_size=1))
        layers += [ConvBNActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
                   nn.Conv2d(hidden_dim, oup, 1, bias=False),
                   nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup

    def forward(self, x):
        out = self.conv(x)
        return x + out if self.use_res_connect else out


class MobileNetV2(nn.Module):
    """MobileNetV2; see the file header for the layout."""

    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None,
                 round_nearest=8, dropout=0.2, in_channels=3):
        super().__init__()
        input_channel, last_channel = 32, 1280
        if inverted_residual_setting is None:
            inverted_residual_setting = [
                # t, c, n, s
                [1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2],
                [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]
        if not inverted_residual_setting or any(len(r) != 4 for r in inverted_residual_setting):
            raise ValueError(f"MobileNetV2: inverted_residual_setting should be a non-empty list "
                             f"of 4-element lists (t, c, n, s), got {inverted_residual_setting}")
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [ConvBNActivation(in_channels, input_channel, stride=2)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel,
                                                 s if i == 0 else 1, expand_ratio=t))
                input_channel = output_channel
        features.append(ConvBNActivation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout),
                                        nn.Linear(self.last_channel, num_classes))

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1)).flatten(1)
        return self.classifier(x)


def mobilenet_v2(num_classes=1000, width_mult=1.0, round_nearest=8, dropout=0.2, **kwargs):
    """MobileNetV2 (torchvision layout). ``width_mult`` scales every width (0.35 ... 1.4)."""
    return MobileNetV2(num_classes=num_classes, width_mult=width_mult,
                       round_nearest=round_nearest, dropout=dropout, **kwargs)
