"""`eager.utils`: data loading (`eager.utils.data`) and activation checkpointing
(`eager.utils.checkpoint`), as torch.utils."""
from __future__ import annotations

from . import checkpoint, data  # noqa: F401
