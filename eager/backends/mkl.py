"""torch.backends.mkl: whether Intel MKL backs the CPU ops (here NumPy's BLAS does)."""
from __future__ import annotations


def is_available() -> bool:
    """False: eager does not link MKL itself (NumPy's BLAS may be any)."""
    return False
