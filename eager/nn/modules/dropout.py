"""torch.nn.modules.dropout: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.dropout.<Class> find eager's class)."""
from __future__ import annotations

from ..dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d"]
from ..dropout import FeatureAlphaDropout  # noqa: E402,F401

__all__ += ["FeatureAlphaDropout"]
from ..dropout import _DropoutNd  # noqa: E402,F401
