"""Quantization-aware training: layers that compute in float but round their weights and
activations to the int8 grid on the way (fake quantization), so the network learns to live with
the error, and `prepare_qat`, which swaps them into a model.

What runs where, for a QATConvBn2d (conv + BatchNorm [+ ReLU/ReLU6]):

    training       x -> fq_in -> conv(., fq_w(W * g)) / g + b -> BN(batch stats; updates the
                   running ones) [-> act] -> fq_out          g = gamma / sqrt(running_var + eps)
    eval, or       x -> fq_in -> conv(., fq_w(W * g), beta + (b - running_mean) * g) [-> act]
    after freeze_bn                                                               -> fq_out

The training form is torch.ao.nn.intrinsic.qat.ConvBn2d's: the weight the integer kernel will
hold (BN folded in with the running statistics) is what gets quantized, while BN still
normalizes with batch statistics. In eval the fold is exact, so the forward is the int8 graph's
computation in float. QATConv2d / QATLinear are the same without BN. Every fq is a
FakeQuantize (or, with qconfig "lsq", a LearnableFakeQuantize): weights symmetric per output
channel in [-127, 127] (moving-average per-channel min/max, torch's QAT weight default);
activations asymmetric per tensor in [-128, 127] (moving-average min/max). The observers run in
training only; in eval the scales are frozen. A weight quantizer that has seen nothing observes
the weight itself on first use (weights need no calibration data).

quant.convert (quant/ptq.py) traces the eval-mode model: the tracer records each
FakeQuantizeAffine as an mte.FakeQuantize node (QuantizeLinear -> DequantizeLinear), whose
scales and zero points become the int8 graph's parameters (weights: the folded W * g, int8 per
channel). The int8 graph quantizes values the QAT model keeps in float (a residual branch
reads the block input unquantized), so the two agree when the observed ranges cover the eval
activations: freeze_bn a while before the end of training (then train mode computes what eval
does, and the observers see it) rather than converting straight after BN-updating batches.

prepare_qat's fusion rules (conv/bn pairing by registration order, ReLU fusion only inside a
plain nn.Sequential, where each child runs once in order) are in its docstring.
"""
import copy
from collections import namedtuple

from .. import nn
from ..nn import functional as F
from ..ops.rearrange import pad as _pad
from .fake_quant import FakeQuantize, LearnableFakeQuantize

__all__ = [
    "QATConv2d",
    "QATConvBn2d",
    "QATLinear",
    "QConfig",
    "disable_fake_quant",
    "enable_fake_quant",
    "enable_observers",
    "freeze_bn",
    "freeze_observers",
    "get_qconfig",
    "prepare_qat",
    "qat_modules",
]

QConfig = namedtuple("QConfig", ["activation", "weight"])
QConfig.__doc__ = """Factories of fake quantizers: activation() for per-tensor values,
weight(channels) for a layer's weight (per channel along axis 0)."""


def _default_activation():
    return FakeQuantize("moving_average", quant_min=-128, quant_max=127)


def _default_weight(channels):
    return FakeQuantize("moving_average", quant_min=-127, quant_max=127, ch_axis=0,
                        symmetric=True, channels=channels)


def _lsq_activation():
    return LearnableFakeQuantize("minmax", quant_min=-128, quant_max=127)


def _lsq_weight(channels):
    return LearnableFakeQuantize("minmax", quant_min=-127, quant_max=127, ch_axis=0,
                                 symmetric=True, channels=channels)


QCONFIGS = {"default": QConfig(_default_activation, _default_weight),
            "lsq": QConfig(_lsq_activation, _lsq_weight)}


def get_qconfig(qconfig=None):
    """A QConfig from None / "default" (observed scales) / "lsq" (learned scales) / a QConfig."""
    if qconfig is None:
        qconfig = "default"
    if isinstance(qconfig, QConfig):
        return qconfig
    if isinstance(qconfig, str) and qconfig in QCONFIGS:
        return QCONFIGS[qconfig]
    raise ValueError(f"prepare_qat: unknown qconfig {qconfig!r}; expected one of "
                     f"{sorted(QCONFIGS)} or a QConfig(activation, weight)")


_ACTIVATIONS = (nn.ReLU, nn.ReLU6)


def _fresh_activation(act):
    """A non-inplace copy of a ReLU / ReLU6 module (or None)."""
    if act is None:
        return None
    return nn.ReLU6() if isinstance(act, nn.ReLU6) else nn.ReLU()


# ---- the modules ----------------------------------------------------------------------------
class _QATBase(nn.Module):
    """input fq -> op with a fake-quantized weight -> [activation] -> output fq."""

    def _init_quantizers(self, weight_fake_quant, input_fake_quant, output_fake_quant,
                         activation):
        self.input_fake_quant = input_fake_quant
        self.weight_fake_quant = weight_fake_quant
        self.activation = _fresh_activation(activation)
        self.output_fake_quant = output_fake_quant

    def _quantized_weight(self, w):
        fq = self.weight_fake_quant
        if fq is None:
            return w
        if not fq.calibrated:
            fq.observe(w.detach())
        return fq(w)

    def _finish(self, y):
        if self.activation is not None:
            y = self.activation(y)
        return y if self.output_fake_quant is None else self.output_fake_quant(y)

    def _input(self, x):
        return x if self.input_fake_quant is None else self.input_fake_quant(x)


class _QATConvBase(_QATBase):
    _COPIED = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
               "groups", "padding_mode", "_reversed_padding_repeated_twice")

    def _take_conv(self, conv):
        if not isinstance(conv, nn.Conv2d):
            raise TypeError(f"{type(self).__name__}: expected an nn.Conv2d, got "
                            f"{type(conv).__name__}")
        for name in self._COPIED:
            setattr(self, name, getattr(conv, name))
        self.weight = conv.weight
        if conv.bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = conv.bias

    def _conv(self, x, w, b):
        if self.padding_mode == "zeros":
            return F.conv2d(x, w, b, self.stride, self.padding, self.dilation, self.groups)
        x = _pad(x, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        return F.conv2d(x, w, b, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, groups={self.groups}, "
                f"bias={self.bias is not None}")


class QATConv2d(_QATConvBase):
    """y = fq_out(act(conv2d(fq_in(x), fq_w(W), b))); W and b are the conv's Parameters."""

    def __init__(self, conv, weight_fake_quant, input_fake_quant=None, output_fake_quant=None,
                 activation=None):
        super().__init__()
        self._take_conv(conv)
        self._init_quantizers(weight_fake_quant, input_fake_quant, output_fake_quant,
                              activation)

    @classmethod
    def from_float(cls, conv, qconfig=None, activation=None):
        qc = get_qconfig(qconfig)
        return cls(conv, qc.weight(conv.out_channels), qc.activation(), qc.activation(),
                   activation)

    def forward(self, x):
        w = self._quantized_weight(self.weight)
        return self._finish(self._conv(self._input(x), w, self.bias))


class QATConvBn2d(_QATConvBase):
    """Conv2d + BatchNorm2d [+ ReLU/ReLU6] with BN folded into the quantized weight; see the
    module docstring for the training and eval forms. ``freeze_bn()`` switches training to the
    eval form (running statistics, no updates), as torch's freeze_bn_stats. The training form
    divides by gamma / running_std, so a BN weight of exactly 0 is not supported there."""

    def __init__(self, conv, bn, weight_fake_quant, input_fake_quant=None,
                 output_fake_quant=None, activation=None):
        super().__init__()
        self._take_conv(conv)
        if not isinstance(bn, nn.BatchNorm2d) or bn.num_features != conv.out_channels:
            raise TypeError(f"QATConvBn2d: expected a BatchNorm2d({conv.out_channels}) after the "
                            f"conv, got {bn!r}")
        if bn.running_var is None:
            raise ValueError("QATConvBn2d: the BatchNorm2d must track running statistics")
        self.bn = bn
        self.bn_frozen = False
        self._init_quantizers(weight_fake_quant, input_fake_quant, output_fake_quant,
                              activation)

    @classmethod
    def from_float(cls, conv, bn, qconfig=None, activation=None):
        qc = get_qconfig(qconfig)
        return cls(conv, bn, qc.weight(conv.out_channels), qc.activation(), qc.activation(),
                   activation)

    def freeze_bn(self, frozen=True):
        self.bn_frozen = bool(frozen)
        return self

    def _bn_scale(self):
        """g = gamma / sqrt(running_var + eps), per output channel."""
        bn = self.bn
        std = (bn.running_var + bn.eps).sqrt()       # (as torch writes it: same rounding)
        return 1.0 / std if bn.weight is None else bn.weight / std

    def folded(self):
        """(W * g, beta + (b - running_mean) * g): the float conv the int8 kernel runs."""
        g = self._bn_scale()
        bn = self.bn
        shift = -bn.running_mean if self.bias is None else self.bias - bn.running_mean
        bias = shift * g if bn.bias is None else bn.bias + shift * g
        return self.weight * g.reshape((-1, 1, 1, 1)), bias

    def forward(self, x):
        x = self._input(x)
        if self.training and not self.bn_frozen:
            g = self._bn_scale()
            w = self._quantized_weight(self.weight * g.reshape((-1, 1, 1, 1)))
            y = self._conv(x, w, None) / g.reshape((1, -1, 1, 1))
            if self.bias is not None:
                y = y + self.bias.reshape((1, -1, 1, 1))
            y = self.bn(y)
        else:
            w, b = self.folded()
            y = self._conv(x, self._quantized_weight(w), b)
        return self._finish(y)


class QATLinear(_QATBase):
    """y = fq_out(act(linear(fq_in(x), fq_w(W), b))); W and b are the Linear's Parameters."""

    def __init__(self, linear, weight_fake_quant, input_fake_quant=None,
                 output_fake_quant=None, activation=None):
        super().__init__()
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"QATLinear: expected an nn.Linear, got {type(linear).__name__}")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        if linear.bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = linear.bias
        self._init_quantizers(weight_fake_quant, input_fake_quant, output_fake_quant,
                              activation)

    @classmethod
    def from_float(cls, linear, qconfig=None, activation=None):
        qc = get_qconfig(qconfig)
        return cls(linear, qc.weight(linear.out_features), qc.activation(), qc.activation(),
                   activation)

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise RuntimeError(f"QATLinear: expected input with last dimension "
                               f"{self.in_features} (in_features), got input of shape "
                               f"{tuple(x.shape)}")
        w = self._quantized_weight(self.weight)
        return self._finish(F.linear(self._input(x), w, self.bias))

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


QAT_TYPES = (QATConv2d, QATConvBn2d, QATLinear)


# ---- prepare_qat ------------------------------------------------------------------------------
def _runs_in_order(module):
    """A plain Sequential (its own forward): each child runs once, in registration order."""
    return isinstance(module, nn.Sequential) and type(module).forward is nn.Sequential.forward


def _fusable_bn(bn, conv):
    return (type(bn) is nn.BatchNorm2d and bn.num_features == conv.out_channels
            and bn.running_var is not None and bn.running_mean is not None)


def _swap_children(parent, qconfig, done):
    names = list(parent._modules)
    in_order = _runs_in_order(parent)
    i = 0
    while i < len(names):
        name, child = names[i], parent._modules[names[i]]
        following = [parent._modules[n] for n in names[i + 1:i + 3]]
        if child is None or isinstance(child, QAT_TYPES):
            i += 1
            continue
        if id(child) in done:                  # the same module registered twice
            parent._modules[name] = done[id(child)]
            i += 1
            continue
        if type(child) is nn.Conv2d or type(child) is nn.Linear:
            bn = None
            if type(child) is nn.Conv2d and following and _fusable_bn(following[0], child):
                bn, following = following[0], following[1:]
            act = None
            if in_order and following and type(following[0]) in _ACTIVATIONS:
                act = following[0]
            if bn is not None:
                new = QATConvBn2d.from_float(child, bn, qconfig, act)
            elif type(child) is nn.Conv2d:
                new = QATConv2d.from_float(child, qconfig, act)
            else:
                new = QATLinear.from_float(child, qconfig, act)
            parent._modules[name] = new       # (in place: a Sequential keeps its order)
            done[id(child)] = new
            skip = (bn is not None) + (act is not None)
            for n in names[i + 1:i + 1 + skip]:      # the fused BN / activation
                parent._modules[n] = nn.Identity()
            i += 1 + skip
            continue
        _swap_children(child, qconfig, done)
        i += 1


def prepare_qat(model, qconfig=None, inplace=False):
    """`model` ready for quantization-aware training (a deep copy unless inplace), in train mode.

    * a Conv2d whose next sibling (in its parent's registration order) is a BatchNorm2d of its
      channels becomes a QATConvBn2d; the BN's place holds an nn.Identity. This assumes the
      parent's forward applies the BN to the conv's output, as ResNet's conv1/bn1 and every
      conv-BN Sequential do;
    * inside a plain nn.Sequential (where each child runs once, in order) a ReLU or ReLU6 right
      after the conv (or conv + BN, or Linear) is fused too (its place: an Identity). Elsewhere
      activations stay (ResNet's BasicBlock uses self.relu twice);
    * every other Conv2d / Linear becomes a QATConv2d / QATLinear.

    Each QAT module fake-quantizes its input, its weight and its output (see the module
    docstring). qconfig: None / "default" (observed scales), "lsq" (learned scales), or a
    QConfig(activation, weight) of factories."""
    qconfig = get_qconfig(qconfig)
    if not isinstance(model, nn.Module):
        raise TypeError(f"prepare_qat: expected an nn.Module, got {type(model).__name__}")
    if not inplace:
        model = copy.deepcopy(model)
    if isinstance(model, (nn.Conv2d, nn.Linear)):
        raise TypeError("prepare_qat: the model itself is a single layer; wrap it in an "
                        "nn.Sequential")
    _swap_children(model, qconfig, {})
    return model.train()


# ---- recipe helpers -----------------------------------------------------------------------------
def qat_modules(model):
    """[(name, module)] of the QAT modules in `model`."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, QAT_TYPES)]


def _fake_quantizers(model):
    return [m for m in model.modules() if isinstance(m, FakeQuantize)]


def freeze_bn(model):
    """Stop updating BatchNorm statistics in every QATConvBn2d: training then uses the folded
    eval form (torch's freeze_bn_stats; typically a few epochs before the end)."""
    for m in model.modules():
        if isinstance(m, QATConvBn2d):
            m.freeze_bn()
    return model


def freeze_observers(model):
    """Freeze every fake quantizer's scale and zero point (torch's disable_observer)."""
    for m in _fake_quantizers(model):
        m.disable_observer()
    return model


def enable_observers(model):
    for m in _fake_quantizers(model):
        m.enable_observer()
    return model


def enable_fake_quant(model, enabled=True):
    for m in _fake_quantizers(model):
        m.enable_fake_quant(enabled)
    return model


def disable_fake_quant(model):
    """Every fake quantizer passes its input through (the observers still run in training)."""
    return enable_fake_quant(model, False)
