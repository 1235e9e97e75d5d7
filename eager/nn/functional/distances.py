"""Distances of `eager.nn.functional`: cosine similarity, pairwise and condensed pairwise distance."""
from __future__ import annotations

import numpy as np

from ... import _functional as _F
from ..._grad_mode import no_grad
from ..._tensor import Tensor
from ._utils import _index_tensor


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along `dim` (norms clamped below by eps).

    Mirrors torch.nn.functional.cosine_similarity."""
    # PyTorch's order (each input divided by its norm first, then the product summed: a
    # result within [-1, 1], cos of ones = 0.99999994 in float32); the norms are clamped
    # under no_grad, so the gradient is the unclamped formula's at the clamped value
    shape = _F.broadcast_shape(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = _F.broadcast_to(x1, shape), _F.broadcast_to(x2, shape)
    n1 = _F.norm(x1, 2, dim, True).clone()
    n2 = _F.norm(x2, 2, dim, True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return _F.sum((x1 / n1) * (x2 / n2), dim)


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
