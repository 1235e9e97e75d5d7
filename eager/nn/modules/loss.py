"""torch.nn.modules.loss: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.loss.<Class> find eager's class)."""
from __future__ import annotations

from ..loss import (  # noqa: F401
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelSoftMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "GaussianNLLLoss",
    "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
    "MultiLabelSoftMarginLoss", "NLLLoss", "PoissonNLLLoss", "SmoothL1Loss", "SoftMarginLoss", "TripletMarginLoss",
]
from ..loss import CTCLoss, MultiLabelMarginLoss, MultiMarginLoss, TripletMarginWithDistanceLoss  # noqa: E402,F401

__all__ += ["CTCLoss", "MultiLabelMarginLoss", "MultiMarginLoss", "TripletMarginWithDistanceLoss"]
# the bases a user's loss subclasses (torch.nn.modules.loss._Loss, _WeightedLoss)
from ..loss import _Loss, _Reduction, _WeightedLoss  # noqa: E402,F401
