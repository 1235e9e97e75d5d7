"""`eager.utils`: data loading (`eager.utils.data`), as torch.utils."""
from __future__ import annotations

from . import data  # noqa: F401
