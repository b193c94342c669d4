"""ResNet with basic blocks (He et al., "Deep Residual Learning for Image Recognition", 2015),
laid out and named as torchvision builds it, so torchvision checkpoints load unchanged.

    stem    conv1 (7x7, stride 2, 64) -> bn1 -> relu -> maxpool (3x3, stride 2)
    layer1  BasicBlock x n1, 64 channels,  stride 1
    layer2  BasicBlock x n2, 128 channels, stride 2 in the first block
    layer3  BasicBlock x n3, 256 channels, stride 2
    layer4  BasicBlock x n4, 512 channels, stride 2
    head    avgpool (adaptive, 1x1) -> flatten -> fc (512 -> num_classes)

A BasicBlock computes ``relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))`` with two 3x3 convs
(no bias: BatchNorm follows). The shortcut is the identity, or ``downsample`` = 1x1 conv with the
block's stride + BatchNorm (keys ``downsample.0.weight``, ``downsample.1.*``) where the shape
changes. ResNet-18 has (2, 2, 2, 2) blocks (11.7M parameters at 1000 classes), ResNet-34
(3, 4, 6, 3).

``small_input=True`` is the CIFAR-style stem for 32x32 images: conv1 is 3x3 with stride 1 and
there is no max-pool (``maxpool`` is an Identity), so layer4 still sees 4x4 maps.

Initialisation as torchvision: convs ``kaiming_normal_(mode="fan_out", nonlinearity="relu")``,
BatchNorm weight 1 and bias 0, fc PyTorch's Linear default; ``zero_init_residual=True`` starts
each block's last BatchNorm at weight 0 (every block then begins as the identity).
"""
from .. import nn

__all__ = ["BasicBlock", "ResNet", "resnet18", "resnet34"]


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, 3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN pairs and a residual connection (see the file header)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """ResNet from a block type and the number of blocks per stage, e.g.
    ``ResNet(BasicBlock, [2, 2, 2, 2])`` is ResNet-18."""

    def __init__(self, block, layers, num_classes=1000, in_channels=3, small_input=False,
                 zero_init_residual=False):
        super().__init__()
        if len(layers) != 4:
            raise ValueError(f"ResNet: layers must give 4 stage depths, got {list(layers)}")
        self.inplanes = 64
        if small_input:
            self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        else:
            self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.Identity() if small_input else nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def resnet18(num_classes=1000, in_channels=3, small_input=False, **kwargs):
    """ResNet-18: BasicBlocks (2, 2, 2, 2). ``small_input=True`` for 32x32 images."""
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes, in_channels, small_input, **kwargs)


def resnet34(num_classes=1000, in_channels=3, small_input=False, **kwargs):
    """ResNet-34: BasicBlocks (3, 4, 6, 3)."""
    return ResNet(BasicBlock, [3, 4, 6, 3], num_classes, in_channels, small_input, **kwargs)
