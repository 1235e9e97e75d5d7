"""torch.nn.modules.padding: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.padding.<Class> find eager's class)."""
from __future__ import annotations

from ..padding import (  # noqa: F401
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
    _CircularPadNd,
    _ConstantPadNd,
    _ReflectionPadNd,
    _ReplicationPadNd,
)

__all__ = [
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]
