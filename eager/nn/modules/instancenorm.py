"""torch.nn.modules.instancenorm: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.instancenorm.<Class> find eager's class)."""
from __future__ import annotations

from ..normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
from ..normalization import (
    _InstanceNorm,  # noqa: E402,F401
    _NormBase,  # noqa: E402,F401
)
