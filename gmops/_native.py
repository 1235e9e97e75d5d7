"""Eager's door to the native kernels (gmnative.kernels, the native layer below the ops):
looked up on the first call, which is when its toolchain is probed and its library built.
`kernels_module()` is None where the module cannot be imported; each kernel function itself
returns None where it cannot run
(no compiler, GRAPHMODE_EAGER_NATIVE=0, an unsupported dtype or layout), and the op then
runs its NumPy code."""
from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

_module: ModuleType | None = None
_tried = False


def kernels_module() -> ModuleType | None:
    global _module, _tried
    if not _tried:
        _tried = True
        try:
            import gmnative.kernels as found  # noqa: PLC0415
        except ImportError:  # a partial install without codegen: NumPy code only
            return None
        _module = found
    return _module


def try_native(xp, kernel: str, *args) -> Any:
    """gmnative.kernels.<kernel>(*args) when xp is NumPy, else None; None also where the
    kernel cannot run. Each op calls this first and runs its NumPy code on None."""
    if xp is not np:
        return None
    module = kernels_module()
    return None if module is None else getattr(module, kernel)(*args)
