"""Distances of `eager.nn.functional`: cosine similarity, pairwise and condensed pairwise distance."""
from __future__ import annotations

import numpy as np

from ... import _functional as _F
from ..._tensor import Tensor
from ._utils import _index_tensor


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along `dim` (norms clamped below by eps).

    Mirrors torch.nn.functional.cosine_similarity."""
    dot = _F.sum(x1 * x2, dim)
    n1 = _F.clamp_min(_F.norm(x1, 2, dim), eps)
    n2 = _F.clamp_min(_F.norm(x2, 2, dim), eps)
    return _F._renamed(dot / (n1 * n2), "SumBackward1")  # PyTorch sums the normalized product last


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dimension. Mirrors torch.nn.functional.pairwise_distance."""
    return _F.norm(x1 - x2 + eps, p, -1, keepdim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between every pair of rows i < j of a (N, M) input, in row-major
    pair order (the upper triangle). Mirrors torch.nn.functional.pdist."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    a, b = input[_index_tensor(i.astype(np.int64), input)], input[_index_tensor(j.astype(np.int64), input)]
    return _F.norm(a - b, p, -1)  # norm's gradient at a zero difference is 0, as PyTorch's pdist
