"""Instance normalization layers: each sample's channels normalized over their own spatial
dims, with PyTorch's optional affine parameters and running statistics."""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .conv import _RunningStatsNorm


class _InstanceNorm(_RunningStatsNorm):
    """Shared by InstanceNorm1d/2d/3d, which differ only in the input ranks they take
    (`_batched`: the rank with a batch dimension; one less is an unbatched sample)."""

    _batched = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self._batched - 1, self._batched):
            raise ValueError(f"expected {self._batched - 1}D or {self._batched}D input (got {input.ndim}D input)")
        feature_dim = input.ndim - (self._batched - 1)
        if input.shape[feature_dim] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                             f"({self.num_features}), but got: {input.shape[feature_dim]}.")
        unbatched = input.ndim == self._batched - 1
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out



class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or an unbatched (C, L). Mirrors torch.nn.InstanceNorm1d."""

    _batched = 3


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or an unbatched (C, H, W). Mirrors torch.nn.InstanceNorm2d."""

    _batched = 4


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or an unbatched (C, D, H, W). Mirrors torch.nn.InstanceNorm3d."""

    _batched = 5
