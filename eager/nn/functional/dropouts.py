"""Dropout and its feature-wise and alpha variants, as `torch.nn.functional` spells them."""
from __future__ import annotations

import warnings

from ..._factories import rand_like
from ..._tensor import Tensor
from .. import _fused_dropout


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if inplace:  # input's own buffer, as PyTorch (a leaf requiring grad raises there)
        if p == 1.0:
            return input.mul_(0.0)
        return input.mul_((rand_like(input) >= p).to(input.dtype) * (1.0 / (1.0 - p)))
    if p == 1.0:
        return input * 0.0
    fused = _fused_dropout.dropout(input, p)  # one native pass and node where it can run
    if fused is not None:  # (the same draws, mask, values and generator state as below)
        return fused
    keep = (rand_like(input) >= p).to(input.dtype)
    return input * (keep * (1.0 / (1.0 - p)))


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool = False) -> Tensor:
    """PyTorch's feature_dropout: one draw per (dim 0, dim 1) pair, broadcast over the rest,
    so a 2-D input drops single elements. Identity when not training or p == 0."""
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    if p == 1.0:
        mask = input.new_zeros(shape)
    else:
        mask = (rand_like(input.new_zeros(shape)) >= p).to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def _unbatched_feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """feature dropout of input with a batch dimension of 1 added (its dim 0 is the channel)."""
    out = _feature_dropout(input.unsqueeze(0), p, training)
    out = out.squeeze(0)
    return input.copy_(out) if inplace and out is not input else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, L) or (C, L) input with probability p, scaling the rest by 1/(1-p).

    Other ranks raise RuntimeError, as PyTorch. Identity when not training.
    Mirrors torch.nn.functional.dropout1d."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


def _warn_rank(n: int, ndim: int) -> None:
    """PyTorch's deprecation warning for dropout{n}d given an input of neither n + 1 nor n + 2
    dims (it still runs), word for word, pointing at the caller of dropout{n}d."""
    warnings.warn(f"dropout{n}d: Received a {ndim}-D input to dropout{n}d, which is deprecated and will result "
                  "in an error in a future release. To retain the behavior and silence this warning, please use "
                  f"dropout instead. Note that dropout{n}d exists to provide channel-wise dropout on inputs with {n} "
                  "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                  f"{n + 1}D or {n + 2}D inputs).", UserWarning, stacklevel=3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, H, W) input with probability p, scaling the rest by 1/(1-p).

    PyTorch's rank rules: other ranks warn (deprecated) and still drop over dims (0, 1), so
    a 2-D input drops single elements; a 3-D input warns and is read as (N, C, L).
    Identity when not training. Mirrors torch.nn.functional.dropout2d."""
    _check_p(p)
    if input.ndim not in (3, 4):
        _warn_rank(2, input.ndim)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This "
                      "behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", UserWarning, stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input with probability p, scaling the rest.

    PyTorch's rank rules: other ranks warn (deprecated) and are taken as unbatched (dim 0 the
    channel). Identity when not training. Mirrors torch.nn.functional.dropout3d."""
    _check_p(p)
    if input.ndim not in (4, 5):
        _warn_rank(3, input.ndim)
    if input.ndim != 5:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalizing mean and variance."""
    if not training or p == 0.0:
        return input
    alpha_p = -1.7580993408473766
    keep = (rand_like(input) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    return (input * keep + alpha_p * (1.0 - keep)) * a + b


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout with one draw per (sample, channel), broadcast over the rest.
    Mirrors torch.nn.functional.feature_alpha_dropout."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    alpha_p = -1.7580993408473766
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = (rand_like(input.new_zeros(shape)) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1.0 - keep)) * a + b
    return input.copy_(out) if inplace else out
