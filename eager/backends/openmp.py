"""torch.backends.openmp: whether the CPU kernels use OpenMP (eager's native kernels use
their own thread team: eager.set_num_threads)."""
from __future__ import annotations


def is_available() -> bool:
    """False: the native kernels thread without OpenMP (see eager.set_num_threads)."""
    return False
