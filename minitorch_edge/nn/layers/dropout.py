"""Dropout layers: in training mode zero each element (Dropout) or each whole channel
(Dropout1d/2d/3d) with probability p and scale the rest by 1/(1-p); in evaluation mode pass the
input through. AlphaDropout keeps a SELU network's zero mean and unit variance instead.
The masks come from the default Generator (see nn/functional/dropout.py).
"""
from ..functional.dropout import (alpha_dropout, dropout, dropout1d, dropout2d, dropout3d,
                                 feature_alpha_dropout)
from ..module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p (training), scaling the rest by 1/(1-p)."""
    _fn = staticmethod(dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) input."""
    _fn = staticmethod(dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input."""
    _fn = staticmethod(dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) input."""
    _fn = staticmethod(dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks (keeps zero mean and unit variance)."""
    _fn = staticmethod(alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels."""
    _fn = staticmethod(feature_alpha_dropout)
