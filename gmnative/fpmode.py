"""The floating-point mode of the threads the native kernels run on (csrc/eager_fpmode.cpp):
eager.set_flush_denormal's switch, torch.set_flush_denormal's counterpart. Why a mode at all:
subnormal numbers (gradients and optimizer buffers of a model trained long on small updates)
take a slow path on x86 cores."""
from __future__ import annotations

import ctypes

from .kernels import kernels


def flush_denormal(on: bool, threads: int) -> bool:
    """Flush subnormal float results to zero and read subnormal operands as zero (on) or not,
    in the calling thread and in each OpenMP worker of a team of `threads` (csrc/eager_fpmode.cpp);
    False where that cannot be done here (no native kernels, not x86)."""
    k = kernels()
    address = None if k is None else k.address("gm_eager_fpmode_flush_denormal")
    if address is None:
        return False
    return bool(ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int)(address)(int(bool(on)), int(threads)))


def flushing() -> bool | None:
    """Whether the calling thread flushes subnormal numbers now (None: cannot say)."""
    k = kernels()
    address = None if k is None else k.address("gm_eager_fpmode_flushing")
    if address is None:
        return None
    found = ctypes.CFUNCTYPE(ctypes.c_int)(address)()
    return None if found < 0 else bool(found)
