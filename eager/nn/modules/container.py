"""torch.nn.modules.container: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.container.<Class> find eager's class)."""
from __future__ import annotations

from ..containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
