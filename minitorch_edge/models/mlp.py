"""MLP: a stack of fully connected layers, the first model to train on MNIST.

    x (N, in_features)  [images (N, C, H, W) are flattened first]
      -> Linear -> activation [-> Dropout]      once per entry of ``hidden``
      -> Linear(out_features)                   logits, no activation

The layers live in one Sequential called ``layers``, so with ``hidden=(256,)`` and no dropout
the state_dict keys are ``layers.0.weight, layers.0.bias, layers.2.weight, layers.2.bias``
(index 1 is the activation; with dropout > 0 a Dropout follows each activation and shifts the
indices), exactly as the same Sequential built with ``torch.nn``.
"""
from .. import nn

__all__ = ["MLP"]

_ACTIVATIONS = {"relu": "ReLU", "gelu": "GELU", "tanh": "Tanh", "sigmoid": "Sigmoid",
                "silu": "SiLU", "leaky_relu": "LeakyReLU", "elu": "ELU", "relu6": "ReLU6"}


def make_activation(activation, where):
    """A fresh activation Module from a name ("relu", "gelu", ...) or a Module class."""
    if isinstance(activation, str):
        name = _ACTIVATIONS.get(activation.lower())
        if name is None:
            raise ValueError(f"{where}: unknown activation {activation!r}; expected one of "
                             f"{sorted(_ACTIVATIONS)} or an nn.Module class")
        return getattr(nn, name)()
    if isinstance(activation, type) and issubclass(activation, nn.Module):
        return activation()
    raise TypeError(f"{where}: activation must be a name or an nn.Module class, got "
                    f"{type(activation).__name__}")


class MLP(nn.Module):
    """Multi-layer perceptron ``in_features -> hidden[0] -> ... -> out_features``.

    Args: ``hidden`` the hidden widths (``()`` gives plain logistic regression), ``activation``
    a name ("relu", "gelu", "tanh", ...) or an nn.Module class, ``dropout`` the probability
    of the Dropout after each hidden activation (none when 0). Linear layers keep PyTorch's
    default initialisation. Inputs with more than two dims are flattened from dim 1.
    """

    def __init__(self, in_features=784, hidden=(256,), out_features=10, activation="relu",
                 dropout=0.0):
        super().__init__()
        if isinstance(hidden, int):
            hidden = (hidden,)
        widths = [in_features, *hidden]
        if any(not isinstance(w, int) or w <= 0 for w in widths + [out_features]):
            raise ValueError(f"MLP: layer widths must be positive ints, got in_features="
                             f"{in_features}, hidden={tuple(hidden)}, out_features={out_features}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"MLP: dropout must be in [0, 1), got {dropout}")
        self.in_features, self.out_features = in_features, out_features
        layers = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(a, b), make_activation(activation, "MLP")]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
        layers.append(nn.Linear(widths[-1], out_features))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        if x.dim() > 2:
            x = x.flatten(1)
        if x.shape[-1] != self.in_features:
            raise ValueError(f"MLP: expected input with {self.in_features} features, got input "
                             f"of shape {tuple(x.shape)}")
        return self.layers(x)
