"""torch.nn.modules.normalization: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.normalization.<Class> find eager's class)."""
from __future__ import annotations

from ..normalization import GroupNorm, LayerNorm, RMSNorm  # noqa: F401

__all__ = ["GroupNorm", "LayerNorm", "RMSNorm"]
from ..normalization import LocalResponseNorm  # noqa: E402,F401

__all__ += ["LocalResponseNorm"]
