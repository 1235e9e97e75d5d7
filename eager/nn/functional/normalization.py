"""Normalizations of `eager.nn.functional`: layer, RMS, batch, instance, group, local response
and `normalize`."""
from __future__ import annotations

import numpy as np

from gmops import conv as _conv
from gmops import normalization as _normalization

from ... import _functional as _F
from ..._tensor import Tensor
from .pooling import avg_pool2d, avg_pool3d
from .vision import pad


def _normalized_dims(name: str, input: Tensor, normalized_shape) -> tuple:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(f"{name}: Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size {list(input.shape)}")
    return tuple(range(input.ndim - len(shape), input.ndim))


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over the trailing normalized_shape dims, then * weight + bias."""
    dims = _normalized_dims("layer_norm", input, normalized_shape)
    normalized = list(input.shape[input.ndim - len(dims):])
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != normalized:
            raise RuntimeError(f"layer_norm: Expected {what} to be of same shape as normalized_shape, but got "
                               f"{what} of shape {list(t.shape)} and normalized_shape = {normalized}")
    if weight is not None and bias is not None:  # the common case: one fused op, one fused gradient
        from ... import _fused_layer_norm  # noqa: PLC0415  (one node each way: eager/_fused_layer_norm.py)

        fused = _fused_layer_norm.layer_norm(input, weight, bias, len(dims), float(eps))
        if fused is not None:
            return fused
        return _conv.LAYER_NORM(input, weight, bias, ndim=len(dims), eps=float(eps))
    out = _conv.NORMALIZE(input, dims=dims, eps=float(eps))
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """input / sqrt(mean(input ** 2) + eps) over the trailing `normalized_shape` dims, times `weight`.

    When `eps` is None it is float32's machine epsilon, whatever the dtype (PyTorch uses the input dtype's).
    Mirrors torch.nn.functional.rms_norm."""
    dims = _normalized_dims("rms_norm", input, normalized_shape)
    eps = 1.1920928955078125e-07 if eps is None else eps  # PyTorch: the dtype's eps when None
    out = input * _F.rsqrt(_F.mean(input * input, dims, True) + eps)
    return out if weight is None else out * weight


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    return t.reshape(1, -1, *([1] * (ndim - 2)))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) over the batch and spatial dims. Training uses the batch's
    statistics and moves the running ones toward them (unbiased variance, as PyTorch); eval
    uses the running statistics."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.ndim}D input)")
    dims = (0,) + tuple(range(2, input.ndim))
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
    return _normalize_channels(input, dims, training, running_mean, running_var, weight, bias, momentum, eps,
                               per_sample=False, missing_running="batch_norm: running_mean and running_var must "
                               "be given when training=False")


def _normalize_channels(input: Tensor, dims: tuple[int, ...], from_input: bool, running_mean: Tensor | None,
                        running_var: Tensor | None, weight: Tensor | None, bias: Tensor | None, momentum: float,
                        eps: float, per_sample: bool, missing_running: str) -> Tensor:
    """What batch_norm and instance_norm share once each has checked its input: normalize over
    `dims` by the input's own statistics (moving the running ones toward them) or, when not
    `from_input`, by the running statistics (an error saying `missing_running` if absent);
    then the per-channel weight and bias."""
    if from_input and not per_sample and weight is not None and bias is not None and isinstance(input, Tensor):
        # an eager tensor: statistics, normalization and affine part in one op, its three
        # gradients in another (gmops.normalization); a trace records the decomposition
        # below, which the code generators fuse
        from .._fused_batch_norm import batch_norm as _fused  # noqa: PLC0415  (one node, one kernel call)

        fused = _fused(input, running_mean, running_var, weight, bias, momentum, float(eps))
        if fused is not None:
            return fused
        _move_running(running_mean, running_var, input, dims, momentum, per_sample)
        return _normalization.BATCH_NORM(input, weight, bias, eps=float(eps))
    if from_input:
        out = _conv.NORMALIZE(input, dims=dims, eps=float(eps))
        _move_running(running_mean, running_var, input, dims, momentum, per_sample)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(missing_running)
        out = (input - _channel_view(running_mean, input.ndim)) * _channel_view(
            _F.rsqrt(running_var + eps), input.ndim)
    return _channel_affine(out, weight, bias)


def _move_running(running_mean: Tensor | None, running_var: Tensor | None, input: Tensor, dims: tuple[int, ...],
                  momentum: float, per_sample: bool) -> None:
    """Running statistics moved toward the batch's, in place and outside autograd (batch_norm
    and instance_norm); nothing happens unless both are given. The batch's are the mean and
    unbiased variance over `dims`, averaged over the samples when `per_sample` (instance norm
    keeps one per sample and channel)."""
    if running_mean is None or running_var is None:
        return
    from ..._grad_mode import no_grad  # noqa: PLC0415

    with no_grad():
        x = input.detach()
        moments = _channel_moments(x, dims) if not per_sample else None
        if moments is not None:  # one native pass over the batch (gmnative.kernels.channel_moments)
            _move(running_mean, moments[0], momentum)
            _move(running_var, moments[1], momentum)
            return
        mean = _F.mean(x, dims)
        var = _F.var(x, dims, correction=1)
        if per_sample:
            mean, var = _F.mean(mean, 0), _F.mean(var, 0)
        if isinstance(momentum, (int, float)):
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
            running_var.mul_(1 - momentum).add_(var.to(running_var.dtype), alpha=momentum)
        else:  # a 0-d tensor (a cumulative average's 1 / batches seen, traced): alpha takes numbers only
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
            running_var.mul_(1 - momentum).add_(var.to(running_var.dtype) * momentum)


def _channel_moments(x: Tensor, dims: tuple[int, ...]) -> tuple | None:
    """(mean, unbiased variance) per channel of an eager CPU float tensor in one native pass,
    as float64 arrays; None where the kernel cannot run (the ops run then)."""
    a = x._data if type(x) is Tensor else None
    if type(a) is not np.ndarray or a.dtype not in (np.float32, np.float64) or a.ndim < 3:
        return None
    from gmops._native import kernels_module  # noqa: PLC0415

    native = kernels_module()
    if native is None or not native.channel_dims(a.ndim, dims):
        return None
    found = native.channel_moments(a)
    if found is None:
        return None
    mean, m2 = found
    count = a.size // a.shape[1]
    return mean, m2 / max(count - 1, 1)


def _move(running: Tensor, batch: np.ndarray, momentum: float) -> None:
    """running.mul_(1 - momentum).add_(batch, alpha=momentum), the batch's statistic cast to
    the running buffer's dtype first (as the op path's .to(dtype))."""
    batch_t = Tensor._make(batch.astype(running._data.dtype))
    if isinstance(momentum, (int, float)):
        running.mul_(1 - momentum).add_(batch_t, alpha=momentum)
    else:  # a 0-d tensor momentum
        running.mul_(1 - momentum).add_(batch_t * momentum)


def _channel_affine(out: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """out * weight + bias, both per channel (dim 1); either may be None."""
    if weight is not None:
        out = out * _channel_view(weight, out.ndim)
    if bias is not None:
        out = out + _channel_view(bias, out.ndim)
    return out


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample over its spatial dims, then scale by weight and add bias.

    With `use_input_stats` (training, or no running statistics) the sample's own statistics
    normalize it, and given running_mean/running_var move toward the batch average of the
    per-sample mean and unbiased variance, as PyTorch; otherwise the running statistics
    normalize (eval with track_running_stats). Mirrors torch.nn.functional.instance_norm."""
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected at least 3D input (N, C, *), got input of shape "
                         f"{list(input.shape)}; add the batch dimension with unsqueeze(0)")
    dims = tuple(range(2, input.ndim))
    if use_input_stats:
        spatial = input.numel() // (input.shape[0] * input.shape[1]) if input.numel() else 0
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{list(input.shape)}")
    return _normalize_channels(input, dims, use_input_stats, running_mean, running_var, weight, bias, momentum, eps,
                               per_sample=True, missing_running="instance_norm: Expected running_mean and "
                               "running_var to be defined when use_input_stats is false")


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize each sample over groups of `num_groups` channels, then apply the per-channel weight and bias.

    Mirrors torch.nn.functional.group_norm."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    out = _conv.NORMALIZE(grouped, dims=(2,), eps=float(eps)).reshape(*input.shape)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """input / max(||input||_p along dim, eps)."""
    return input / _F.clamp_min(_F.norm(input, p, dim, True), eps)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalize each channel by the sum of squares over `size` neighbouring channels:
    x / (k + alpha / size * sum) ** beta, written as PyTorch's (an average pool over
    channels). Mirrors torch.nn.functional.local_response_norm."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(*sizes)
    div = (div * alpha + k) ** beta
    return input / div
