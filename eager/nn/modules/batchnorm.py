"""torch.nn.modules.batchnorm: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.batchnorm.<Class> find eager's class)."""
from __future__ import annotations

from ..normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
from ..lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: E402,F401  (as torch's batchnorm.py)

__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"]
# the bases isinstance checks name (a weight-decay filter's `isinstance(m, _BatchNorm)`)
from ..lazy import _LazyNormBase  # noqa: E402,F401
from ..normalization import _BatchNorm, _NormBase  # noqa: E402,F401
