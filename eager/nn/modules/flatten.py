"""torch.nn.modules.flatten: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.flatten.<Class> find eager's class)."""
from __future__ import annotations

from ..flatten import Flatten, Unflatten  # noqa: F401

__all__ = ["Flatten", "Unflatten"]
