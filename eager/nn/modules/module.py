"""torch.nn.modules.module: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.module.<Class> find eager's class)."""
from __future__ import annotations

from ..module import Module  # noqa: F401

__all__ = ["Module"]
