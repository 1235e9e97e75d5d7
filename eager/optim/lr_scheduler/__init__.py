"""`eager.optim.lr_scheduler`: learning-rate schedules that set `group["lr"]` of an
optimizer's parameter groups at every `step()`, as torch.optim.lr_scheduler.

The schedules are PyTorch's *chainable* form: each `get_lr()` computes the next lr from the
group's CURRENT lr (one factor per step), not from `base_lr` in closed form. That is what
lets two schedulers stepped together compose (their factors multiply), keeps an lr set by
hand between steps, and makes a scheduler resumed with `last_epoch` start from the lr the
optimizer holds instead of one factor ahead. The closed form lives only in
`_get_closed_form_lr`, used when `step(epoch)` is given an explicit epoch, as in PyTorch.

Every write goes through `group["lr"]` (and `group["momentum"]` / `group["betas"]` for the
momentum-cycling schedules): a compiled training step reads those at each call.

One module per kind: `base` (LRScheduler), `schedules` (the epoch formulas), `composite`
(SequentialLR, ChainedScheduler), `plateau` (ReduceLROnPlateau) and `cyclic` (CyclicLR,
CosineAnnealingWarmRestarts, OneCycleLR)."""
from .base import EPOCH_DEPRECATION_WARNING, LRScheduler, _LRScheduler  # noqa: F401  (_LRScheduler: the old name, as torch keeps it)
from .composite import ChainedScheduler, SequentialLR  # noqa: F401
from .cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR  # noqa: F401
from .plateau import ReduceLROnPlateau  # noqa: F401
from .schedules import (  # noqa: F401
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
           "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler"]
