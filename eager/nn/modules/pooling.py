"""torch.nn.modules.pooling: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.pooling.<Class> find eager's class)."""
from __future__ import annotations

from ..pooling import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
]
from ..pooling import (  # noqa: E402,F401
    AdaptiveMaxPool1d,
    AdaptiveMaxPool3d,
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)

__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d"]
__all__ += ["AdaptiveMaxPool1d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d",
            "MaxUnpool2d", "MaxUnpool3d"]
# PyTorch's bases, which isinstance checks name
from ..pooling import (  # noqa: E402,F401
    _AdaptiveAvgPoolNd,
    _AdaptiveMaxPoolNd,
    _AvgPoolNd,
    _FractionalMaxPoolNd,
    _LPPoolNd,
    _MaxPoolNd,
    _MaxUnpoolNd,
)
