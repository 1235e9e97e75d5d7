"""torch.nn.modules.sparse: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.sparse.<Class> find eager's class)."""
from __future__ import annotations

from ..conv import Embedding  # noqa: F401
from ..sparse import EmbeddingBag  # noqa: F401

__all__ = ["Embedding", "EmbeddingBag"]
