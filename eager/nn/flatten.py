"""Flatten and Unflatten: merge a range of dims into one, split one dim into several."""
from __future__ import annotations

from .._tensor import Tensor
from .module import Module


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim into unflattened_size: (N, 12) -> (N, 3, 4)."""

    def __init__(self, dim: int, unflattened_size: tuple) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        d = self.dim % input.ndim
        return input.reshape(*input.shape[:d], *self.unflattened_size, *input.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
