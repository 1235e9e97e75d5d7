"""torch.nn.modules.conv: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.conv.<Class> find eager's class)."""
from __future__ import annotations

from ..conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d  # noqa: F401

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]
from ..conv import ConvTranspose3d  # noqa: E402,F401

__all__ += ["ConvTranspose3d"]
# torch's conv.py defines the lazy convolutions too
from ..lazy import LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d  # noqa: E402,F401

__all__ += ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
            "LazyConvTranspose3d"]
# the bases isinstance checks and subclasses name
from ..conv import _ConvNd, _ConvTransposeNd  # noqa: E402,F401
from ..lazy import _LazyConvXdMixin  # noqa: E402,F401
