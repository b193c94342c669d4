"""Distance layers: CosineSimilarity and PairwiseDistance, Modules over the functions of the same
name in nn/functional/distance.py (where the math is). No parameters; like PyTorch they store
their options (``dim``, ``eps``; ``norm``, ``eps``, ``keepdim``) and print no extra repr.
"""
from ..functional import distance as _D
from ..module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """cos(x1, x2) along `dim` (see F.cosine_similarity): (*, D, *) -> (*, *)."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return _D.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """||x1 - x2 + eps||_p over the last dim (see F.pairwise_distance): (N, D) -> (N,)."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return _D.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
