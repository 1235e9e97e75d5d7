"""`eager.backends`: torch.backends' modules and flags, importable as PyTorch scripts import
them (`import torch.backends.cudnn as cudnn; cudnn.benchmark = True`).

The flags are recorded, not acted on: no op here calls cuDNN, MPS or oneDNN, and products
run in the tensors' own dtype whatever `allow_tf32` says. What each answers is what a
machine without those libraries answers (`is_available()` False)."""
from __future__ import annotations

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp"]
