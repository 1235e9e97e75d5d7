"""torch.backends.mps: Apple's GPU backend, which eager has not (its devices are 'cpu' and 'cuda')."""
from __future__ import annotations


def is_available() -> bool:
    """False: eager has no MPS device; use device='cpu'."""
    return False


def is_built() -> bool:
    """False: eager is not built with MPS."""
    return False
