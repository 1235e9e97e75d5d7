"""Normalization layers: LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d and
LocalResponseNorm, with PyTorch's optional affine parameters and running statistics."""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .. import _dispatch
from .._dynamo import is_compiling as _is_compiling
from .._factories import ones, tensor, zeros
from .._grad_mode import no_grad
from .._tensor import Tensor
from . import functional as F
from .module import Module
from .parameter import Parameter


def _scale_and_shift(module: Module, shape: tuple, scale: bool, shift: bool, device: Any, dtype: Any) -> None:
    """A normalization layer's learned per-element scale `weight` (ones) and shift `bias`
    (zeros) of `shape`; each left out is registered as None, so that it reads as None and
    state_dict keeps PyTorch's names."""
    if scale:
        module.weight = Parameter(ones(*shape, device=device, dtype=dtype))
    else:
        module.register_parameter("weight", None)
    if shift:
        module.bias = Parameter(zeros(*shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def _running_stats(module: Module, num_features: int, track: bool, device: Any, dtype: Any) -> None:
    """The `running_mean`, `running_var` and `num_batches_tracked` buffers of a batch or instance
    norm (registered as None when `track` is off, as PyTorch's)."""
    if track:
        module.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
        module.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
        module.register_buffer("num_batches_tracked", tensor(0, dtype=_dtypes.int64, device=device))
    else:
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            module.register_buffer(name, None)


class _NormBase(Module):
    """What batch and instance norms share (PyTorch's _NormBase): the per-channel affine
    parameters and the running statistics, and resetting them."""

    def __init__(self, num_features: int, eps: float, momentum: float | None, affine: bool,
                 track_running_stats: bool, device: Any, dtype: Any, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _scale_and_shift(self, (num_features,), affine, affine and bias, device, dtype)
        _running_stats(self, num_features, track_running_stats, device, dtype)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()



class _InstanceNorm(_NormBase):
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


class LayerNorm(Module):
    """Normalize over the trailing normalized_shape dims, then an elementwise affine map."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _scale_and_shift(self, self.normalized_shape, elementwise_affine, elementwise_affine and bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _scale_and_shift(self, (num_channels,), affine, affine and bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _BatchNorm(_NormBase):
    """Per-channel normalization with batch statistics in training and running ones in eval;
    running_var is updated with the unbiased batch variance, as PyTorch's."""

    _dims: tuple = (2, 3)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._dims)} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:
            raise RuntimeError(f"running_mean should contain {input.shape[1]} elements not {self.num_features}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            count = self.num_batches_tracked
            compiling = _is_compiling()
            if not compiling and type(count) is Tensor and type(count._data) is np.ndarray \
                    and not count._requires_grad and not _dispatch._n_modes_pushed:
                # a plain eager buffer: the count moved on its array (add_ under no_grad
                # through the in-place machinery cost a fifth of a small batch norm's call)
                count._data += 1
                count._vc[0] += 1
            else:
                with no_grad():
                    count.add_(1)
            if self.momentum is None:  # a cumulative moving average
                # while compiled, the count is the graph's (updated in place just above): the factor
                # stays a tensor, read when the graph runs, not the count seen while tracing
                momentum = (1.0 / count.double() if compiling else 1.0 / float(count.item()))
        use_batch_stats = self.training or self.running_mean is None
        return F.batch_norm(input, self.running_mean if not self.training or self.track_running_stats else None,
                            self.running_var if not self.training or self.track_running_stats else None,
                            self.weight, self.bias, use_batch_stats, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    _dims = (5,)


class LocalResponseNorm(Module):
    """Normalization over neighbouring channels (AlexNet's). Mirrors torch.nn.LocalResponseNorm."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


_RunningStatsNorm = _NormBase  # (the name this base had before)
