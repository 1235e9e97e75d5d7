"""torch.utils.data._utils: the DataLoader's helpers (collation, worker information)."""
from __future__ import annotations

from . import collate, worker  # noqa: F401
