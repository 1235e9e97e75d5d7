"""torch.nn.modules.fold: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.fold.<Class> find eager's class)."""
from __future__ import annotations

from ..conv import Fold, Unfold  # noqa: F401

__all__ = ["Fold", "Unfold"]
