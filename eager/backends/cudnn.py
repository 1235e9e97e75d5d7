"""torch.backends.cudnn: the flags scripts set for cuDNN. Recorded only: no op here calls
cuDNN (CUDA tensors run on CuPy), so `is_available()` is False and `version()` None."""
from __future__ import annotations

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: eager's CUDA tensors run on CuPy, never through cuDNN."""
    return False


def version() -> None:
    """None, as PyTorch answers where cuDNN is not available."""
    return None


def is_acceptable(tensor: object) -> bool:
    """False: no tensor is computed by cuDNN here."""
    return False
