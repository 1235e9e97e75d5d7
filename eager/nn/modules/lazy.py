"""torch.nn.modules.lazy: LazyModuleMixin, defined once in eager.nn.lazy and re-exported here
(so `from torch.nn.modules.lazy import LazyModuleMixin` and isinstance checks find eager's)."""
from __future__ import annotations

from ..lazy import LazyModuleMixin  # noqa: F401

__all__ = ["LazyModuleMixin"]
