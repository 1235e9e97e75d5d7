"""torch.nn.modules.linear: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.linear.<Class> find eager's class)."""
from __future__ import annotations

from ..linear import Bilinear, Identity, Linear, NonDynamicallyQuantizableLinear  # noqa: F401

__all__ = ["Bilinear", "Identity", "Linear"]  # (NonDynamicallyQuantizableLinear, as torch's, only by this path)
from ..lazy import LazyLinear  # noqa: E402,F401  (torch defines LazyLinear in linear.py too)

__all__ += ["LazyLinear"]
