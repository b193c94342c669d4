"""Distance layers: CosineSimilarity and PairwiseDistance, Modules over the functions of the same
name in nn/functional/distance.py (where the math is). No parameters; like PyTorch they store
their options (``dim``, ``eps``; ``norm``, ``eps``, ``keepdim``) and print no extra repr.
"""
from ..functional import distance as _D
from ..module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine of the angle between x1 and x2 along `dim`:

        cos = sum(x1 * x2) / max(||x1||_2 ||x2||_2, eps)

    Args:
        dim: the dim along which the vectors lie (default 1).
        eps: the smallest denominator, against division by zero (default 1e-8).

    Shape:
        - Input1, Input2: (*1, D, *2), broadcastable to one shape.
        - Output: (*1, *2), that dim removed.
    """

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return _D.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm distance between the rows of x1 and x2:

        dist(x1, x2) = ||x1 - x2 + eps||_p   over the last dim

    Args:
        p: the norm's degree (default 2).
        eps: added to the difference, against a zero norm's infinite gradient (default 1e-6).
        keepdim: keep the reduced last dim (as size 1).

    Shape:
        - Input1, Input2: (N, D) or (D,), broadcastable.
        - Output: (N,) or () ((N, 1) with keepdim).
    """

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return _D.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
