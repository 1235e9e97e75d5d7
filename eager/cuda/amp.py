"""torch.cuda.amp: the deprecated per-device spellings of autocast and GradScaler (each
warns as PyTorch's does, naming torch.amp's form, and makes the torch.amp object)."""
from __future__ import annotations

from ..amp import cuda_amp

autocast = cuda_amp.autocast
GradScaler = cuda_amp.GradScaler

__all__ = ["GradScaler", "autocast"]
