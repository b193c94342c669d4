"""``torch.nn.modules.loss``'s module path: re-exports the classes from where they live
(nn/layers/loss.py)."""
from ..layers.loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss,  # noqa: F401
                           CrossEntropyLoss, GaussianNLLLoss, HingeEmbeddingLoss,
                           HuberLoss, KLDivLoss, L1Loss, MSELoss,
                           MarginRankingLoss, MultiLabelMarginLoss,
                           MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss,
                           PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                           TripletMarginLoss, TripletMarginWithDistanceLoss, _Loss,
                           _WeightedLoss)

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss", "MultiMarginLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss"]
