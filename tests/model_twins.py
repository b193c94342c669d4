"""PyTorch twins of the model zoo, written by hand from the published architectures with torch.nn
(torchvision is not used): the reference that tests/test_models.py compares our models with.
Their state_dict keys must equal ours."""
from harness import import_torch

torch = import_torch()
tnn = torch.nn


class TorchMLP(tnn.Module):
    def __init__(self, in_features=784, hidden=(256,), out_features=10, dropout=0.0):
        super().__init__()
        layers, widths = [], [in_features, *hidden]
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [tnn.Linear(a, b), tnn.ReLU()] + ([tnn.Dropout(dropout)] if dropout else [])
        self.layers = tnn.Sequential(*layers, tnn.Linear(widths[-1], out_features))

    def forward(self, x):
        return self.layers(x.flatten(1))


class TorchSmallCNN(tnn.Module):
    def __init__(self, in_channels=1, num_classes=10, flat=800, padding=0):
        super().__init__()
        self.features = tnn.Sequential(
            tnn.Conv2d(in_channels, 16, 3, padding=padding), tnn.ReLU(), tnn.MaxPool2d(2),
            tnn.Conv2d(16, 32, 3, padding=padding), tnn.ReLU(), tnn.MaxPool2d(2))
        self.fc = tnn.Linear(flat, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class TorchBasicBlock(tnn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.relu = tnn.ReLU(inplace=True)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False),
                                             tnn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        return self.relu(self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x))))) + idt)


class TorchResNet18(tnn.Module):
    def __init__(self, num_classes, in_channels=3, small_input=False):
        super().__init__()
        if small_input:
            self.conv1 = tnn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        else:
            self.conv1 = tnn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        self.bn1 = tnn.BatchNorm2d(64)
        self.relu = tnn.ReLU(inplace=True)
        self.maxpool = tnn.Identity() if small_input else tnn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, (c, s) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)]):
            setattr(self, f"layer{i + 1}", tnn.Sequential(TorchBasicBlock(cin, c, s),
                                                          TorchBasicBlock(c, c, 1)))
            cin = c
        self.avgpool = tnn.AdaptiveAvgPool2d(1)
        self.fc = tnn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def torch_cbr(cin, cout, k=3, stride=1, groups=1, act=True, eps=1e-5, momentum=0.1):
    layers = [tnn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
              tnn.BatchNorm2d(cout, eps=eps, momentum=momentum)]
    return tnn.Sequential(*layers, *([tnn.ReLU6(inplace=True)] if act else []))


class TorchInvertedResidual(tnn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hid = int(round(cin * t))
        self.res = stride == 1 and cin == cout
        layers = [torch_cbr(cin, hid, 1)] if t != 1 else []
        layers += [torch_cbr(hid, hid, 3, stride, groups=hid),
                   tnn.Conv2d(hid, cout, 1, bias=False), tnn.BatchNorm2d(cout)]
        self.conv = tnn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


def _divisible(v, d=8):
    new = max(d, int(v + d / 2) // d * d)
    return new + d if new < 0.9 * v else new


class TorchMobileNetV2(tnn.Module):
    SETTING = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, num_classes, width_mult=1.0, dropout=0.2, setting=None):
        super().__init__()
        cin, last = _divisible(32 * width_mult), _divisible(1280 * max(1.0, width_mult))
        feats = [torch_cbr(3, cin, 3, 2)]
        for t, c, n, s in setting or self.SETTING:
            cout = _divisible(c * width_mult)
            for i in range(n):
                feats.append(TorchInvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        feats.append(torch_cbr(cin, last, 1))
        self.features = tnn.Sequential(*feats)
        self.classifier = tnn.Sequential(tnn.Dropout(dropout), tnn.Linear(last, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


def _tf_bn(c):
    return tnn.BatchNorm2d(c, eps=1e-3, momentum=0.01)


class TorchLiteBlock(tnn.Module):
    """EfficientNet-Lite block (timm names): expand (e > 1), depthwise, project; no SE."""

    def __init__(self, cin, cout, k, s, e):
        super().__init__()
        self.e, self.skip = e, s == 1 and cin == cout
        mid = cin * e
        if e == 1:
            self.conv_dw = tnn.Conv2d(cin, cin, k, s, k // 2, groups=cin, bias=False)
            self.bn1 = _tf_bn(cin)
            self.conv_pw = tnn.Conv2d(cin, cout, 1, bias=False)
            self.bn2 = _tf_bn(cout)
        else:
            self.conv_pw = tnn.Conv2d(cin, mid, 1, bias=False)
            self.bn1 = _tf_bn(mid)
            self.conv_dw = tnn.Conv2d(mid, mid, k, s, k // 2, groups=mid, bias=False)
            self.bn2 = _tf_bn(mid)
            self.conv_pwl = tnn.Conv2d(mid, cout, 1, bias=False)
            self.bn3 = _tf_bn(cout)

    def forward(self, x):
        r6 = torch.nn.functional.relu6
        if self.e == 1:
            out = self.bn2(self.conv_pw(r6(self.bn1(self.conv_dw(x)))))
        else:
            out = r6(self.bn2(self.conv_dw(r6(self.bn1(self.conv_pw(x))))))
            out = self.bn3(self.conv_pwl(out))
        return x + out if self.skip else out


class TorchEfficientNetLite0(tnn.Module):
    STAGES = [(1, 3, 1, 1, 16), (6, 3, 2, 2, 24), (6, 5, 2, 2, 40), (6, 3, 2, 3, 80),
              (6, 5, 1, 3, 112), (6, 5, 2, 4, 192), (6, 3, 1, 1, 320)]

    def __init__(self, num_classes, dropout=0.2):
        super().__init__()
        self.conv_stem = tnn.Conv2d(3, 32, 3, 2, 1, bias=False)
        self.bn1 = _tf_bn(32)
        cin, stages = 32, []
        for e, k, s, n, c in self.STAGES:
            stages.append(tnn.Sequential(*[TorchLiteBlock(cin if i == 0 else c, c, k,
                                                          s if i == 0 else 1, e)
                                           for i in range(n)]))
            cin = c
        self.blocks = tnn.Sequential(*stages)
        self.conv_head = tnn.Conv2d(320, 1280, 1, bias=False)
        self.bn2 = _tf_bn(1280)
        self.dropout = tnn.Dropout(dropout)
        self.classifier = tnn.Linear(1280, num_classes)

    def forward(self, x):
        r6 = torch.nn.functional.relu6
        x = r6(self.bn1(self.conv_stem(x)))
        x = r6(self.bn2(self.conv_head(self.blocks(x))))
        return self.classifier(self.dropout(x.mean((2, 3))))


class TorchTransformerClassifier(tnn.Module):
    def __init__(self, vocab, classes, d_model=32, nhead=4, num_layers=2, ff=64, max_len=16,
                 dropout=0.0, pooling="mean", pad_idx=None):
        super().__init__()
        self.pooling, self.pad_idx = pooling, pad_idx
        self.embed = tnn.Embedding(vocab, d_model, padding_idx=pad_idx)
        self.pos_embed = tnn.Parameter(torch.randn(1, max_len + (pooling == "cls"), d_model))
        if pooling == "cls":
            self.cls_token = tnn.Parameter(torch.randn(1, 1, d_model))
        self.dropout = tnn.Dropout(dropout)
        layer = tnn.TransformerEncoderLayer(d_model, nhead, ff, dropout, batch_first=True,
                                            norm_first=True)
        self.encoder = tnn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.norm = tnn.LayerNorm(d_model)
        self.head = tnn.Linear(d_model, classes)

    def forward(self, tokens):
        mask = None if self.pad_idx is None else tokens == self.pad_idx
        x = self.embed(tokens)
        if self.pooling == "cls":
            x = torch.cat([self.cls_token.expand(x.shape[0], 1, -1), x], 1)
            if mask is not None:
                mask = torch.cat([torch.zeros_like(mask[:, :1]), mask], 1)
        x = self.dropout(x + self.pos_embed[:, :x.shape[1]])
        x = self.norm(self.encoder(x, src_key_padding_mask=mask))
        if self.pooling == "cls":
            return self.head(x[:, 0])
        if mask is None:
            return self.head(x.mean(1))
        keep = (~mask).unsqueeze(-1).float()
        return self.head((x * keep).sum(1) / keep.sum(1).clamp(min=1))
