"""torch.nn._reduction: the reduction helpers code imports as `_Reduction` (get_enum,
legacy_get_string, legacy_get_enum), the same functions eager's losses use."""
from __future__ import annotations

from .loss import _Reduction

get_enum = _Reduction.get_enum
legacy_get_string = _Reduction.legacy_get_string
legacy_get_enum = _Reduction.legacy_get_enum

__all__ = ["get_enum", "legacy_get_enum", "legacy_get_string"]
