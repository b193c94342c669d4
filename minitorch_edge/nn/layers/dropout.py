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
    """In training, each element is zeroed with probability p and the others are scaled
    by 1 / (1 - p), so the expected value is unchanged: y = x * m / (1 - p), m ~ Bernoulli(1 - p).
    In eval mode it is the identity.

    Args:
        p: the probability of zeroing (default 0.5; 0 <= p <= 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels: in training each channel of each sample is zeroed with probability
    p (all its L values at once) and the kept ones are scaled by 1 / (1 - p); in eval mode it is the
    identity. Useful when neighbouring values are strongly correlated (convolutions).

    Args:
        p: the probability of zeroing (default 0.5; 0 <= p <= 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (N, C, L) or (C, L); output the same shape.
    """
    _fn = staticmethod(dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels: in training each channel of each sample is zeroed with probability
    p (all its H x W values at once) and the kept ones are scaled by 1 / (1 - p); in eval mode
    it is the identity. Useful when neighbouring values are strongly correlated (convolutions).

    Args:
        p: the probability of zeroing (default 0.5; 0 <= p <= 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (N, C, H, W) (or (C, H, W)); output the same shape.
    """
    _fn = staticmethod(dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels: in training each channel of each sample is zeroed with probability
    p (all its D x H x W values at once) and the kept ones are scaled by 1 / (1 - p); in eval
    mode it is the identity. Useful when neighbouring values are strongly correlated (convolutions).

    Args:
        p: the probability of zeroing (default 0.5; 0 <= p <= 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (N, C, D, H, W) (or (C, D, H, W)); output the same shape.
    """
    _fn = staticmethod(dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: dropped elements are set to SELU's negative
    saturation value alpha' = -1.7581 (not 0), then an affine map a x + b restores zero mean and
    unit variance for a unit-normal input. In eval mode it is the identity.

    Args:
        p: the probability of zeroing (default 0.5; 0 <= p <= 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (*), any shape; output (*), the same shape.
    """
    _fn = staticmethod(alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels: each channel of each sample is set
    to alpha' = -1.7581 with probability p (then the same affine correction as AlphaDropout). In
    eval mode it is the identity.

    Args:
        p: the probability of zeroing (default 0.5; 0 <= p <= 1).
        inplace: write the result into the input's memory (default False).

    Shape: input (N, C, *) (or (C, *)); output the same shape.
    """
    _fn = staticmethod(feature_alpha_dropout)
