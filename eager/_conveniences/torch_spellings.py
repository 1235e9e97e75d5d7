"""The `torch.*` spellings of eager's functional ops and Tensor methods that PyTorch scripts
call directly (torch.conv2d, torch.dropout(x, p, train), torch.layer_norm, torch.kl_div with
an integer reduction, torch.abs_(t), torch.is_nonzero(t), ...).

Each is one call of the eager function or method that already does the work, so gradients,
errors and static tracing come from there. Where ATen's signature differs from
torch.nn.functional's (positional `train`, `embedding(weight, indices)`, the reduction given as
the integer enum 0/1/2) it is translated here, as PyTorch's own Python layer does.
"""
from __future__ import annotations

import warnings
from typing import Any

from ..nn import functional as _NF

# ATen's reduction enum (at::Reduction): None = 0, Mean = 1, Sum = 2.
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op: str, reduction: Any) -> str:
    """The string form torch.nn.functional takes for ATen's integer reduction."""
    if isinstance(reduction, str):
        return reduction
    if isinstance(reduction, bool) or reduction not in _REDUCTIONS:
        raise RuntimeError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return _REDUCTIONS[reduction]


# -- same signature as torch.nn.functional: the function itself --------------------------------------
conv1d = _NF.conv1d
conv2d = _NF.conv2d
conv3d = _NF.conv3d
conv_transpose1d = _NF.conv_transpose1d
conv_transpose2d = _NF.conv_transpose2d
conv_transpose3d = _NF.conv_transpose3d
bilinear = _NF.bilinear
cosine_similarity = _NF.cosine_similarity
pixel_shuffle = _NF.pixel_shuffle
pixel_unshuffle = _NF.pixel_unshuffle
channel_shuffle = _NF.channel_shuffle
native_channel_shuffle = _NF.native_channel_shuffle
pairwise_distance = _NF.pairwise_distance
pdist = _NF.pdist


def max_pool1d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Any:
    """torch.max_pool1d: F.max_pool1d without return_indices (ATen's empty stride = the kernel)."""
    return _NF.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Any:
    """torch.max_pool2d: F.max_pool2d without return_indices."""
    return _NF.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False) -> Any:
    """torch.max_pool3d: F.max_pool3d without return_indices."""
    return _NF.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False) -> Any:
    """torch.max_pool1d_with_indices: (values, indices)."""
    return _NF.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Any:
    """torch.avg_pool1d."""
    return _NF.avg_pool1d(input, kernel_size, stride or None, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Any:
    """torch.adaptive_avg_pool1d."""
    return _NF.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Any, output_size: Any) -> Any:
    """torch.adaptive_max_pool1d: always (values, indices), as ATen's op."""
    return _NF.adaptive_max_pool1d(input, output_size, return_indices=True)


# -- ATen's positional `train` ------------------------------------------------------------------------
def dropout(input: Any, p: float, train: bool) -> Any:
    """torch.dropout(input, p, train)."""
    return _NF.dropout(input, p, train)


def dropout_(input: Any, p: float, train: bool) -> Any:
    """torch.dropout_: dropout written into input."""
    return _NF.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Any, p: float, train: bool) -> Any:
    """torch.alpha_dropout(input, p, train)."""
    return _NF.alpha_dropout(input, p, train)


def alpha_dropout_(input: Any, p: float, train: bool) -> Any:
    """torch.alpha_dropout_."""
    return _NF.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Any, p: float, train: bool) -> Any:
    """torch.feature_alpha_dropout(input, p, train)."""
    return _NF.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Any, p: float, train: bool) -> Any:
    """torch.feature_alpha_dropout_."""
    return _NF.feature_alpha_dropout(input, p, train, inplace=True)


def rrelu(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator: Any = None) -> Any:
    """torch.rrelu (training defaults to False, as ATen's)."""
    return _NF.rrelu(input, lower, upper, training)


def rrelu_(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator: Any = None) -> Any:
    """torch.rrelu_."""
    return _NF.rrelu(input, lower, upper, training, inplace=True)


# -- normalizations: ATen's argument order ------------------------------------------------------------
def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Any:
    """torch.layer_norm (cudnn_enable is accepted and has no effect on the host)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _NF.layer_norm(input, tuple(normalized_shape), weight, bias, eps)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Any:
    """torch.group_norm."""
    return _NF.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Any:
    """torch.batch_norm: ATen's order (weight and bias before the running statistics)."""
    return _NF.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                  use_input_stats: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Any:
    """torch.instance_norm: ATen's order."""
    return _NF.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def embedding(weight: Any, indices: Any, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Any:
    """torch.embedding(weight, indices): ATen's order, padding_idx -1 meaning none."""
    return _NF.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                         scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


# -- losses: ATen's integer reduction ---------------------------------------------------------------
def kl_div(input: Any, target: Any, reduction: Any = 1, *, log_target: bool = False) -> Any:
    """torch.kl_div (reduction 1 = mean over every element, as ATen's; not batchmean, and without
    torch.nn.functional's warning about it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _NF.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None, pos_weight: Any = None,
                                     reduction: Any = 1) -> Any:
    """torch.binary_cross_entropy_with_logits."""
    return _NF.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight=pos_weight)


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: Any = 1) -> Any:
    """torch.cosine_embedding_loss."""
    return _NF.cosine_embedding_loss(input1, input2, target, margin,
                                     reduction=_reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0, reduction: Any = 1) -> Any:
    """torch.hinge_embedding_loss."""
    return _NF.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: Any = 1) -> Any:
    """torch.margin_ranking_loss."""
    return _NF.margin_ranking_loss(input1, input2, target, margin,
                                   reduction=_reduction("margin_ranking_loss", reduction))


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: Any = 1) -> Any:
    """torch.triplet_margin_loss."""
    return _NF.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                   reduction=_reduction("triplet_margin_loss", reduction))


def poisson_nll_loss(input: Any, target: Any, log_input: bool, full: bool, eps: float, reduction: Any) -> Any:
    """torch.poisson_nll_loss: every argument positional, as ATen's."""
    return _NF.poisson_nll_loss(input, target, log_input, full, eps=eps,
                                reduction=_reduction("poisson_nll_loss", reduction))


def constant_pad_nd(input: Any, pad: Any, value: float = 0) -> Any:
    """torch.constant_pad_nd: F.pad's constant mode."""
    return _NF.pad(input, tuple(pad), mode="constant", value=value)




def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> Any:
    """torch.rms_norm."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _NF.rms_norm(input, tuple(normalized_shape), weight, eps)


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: Any = 1, zero_infinity: bool = False) -> Any:
    """torch.ctc_loss: ATen's integer reduction."""
    return _NF.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                        _reduction("ctc_loss", reduction), zero_infinity)


def feature_dropout(input: Any, p: float, train: bool) -> Any:
    """Dropout of whole feature maps: one draw per (sample, channel), kept maps scaled by 1 / (1 - p).
    Mirrors torch.feature_dropout."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return input
    if input.dim() < 2:
        raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input, got {input.dim()}")
    if p == 1:
        return input * 0
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    noise = input.new_empty(shape).bernoulli_(1 - p) / (1 - p)
    return input * noise


def feature_dropout_(input: Any, p: float, train: bool) -> Any:
    """torch.feature_dropout_: feature_dropout written into input."""
    out = feature_dropout(input, p, train)
    return input if out is input else input.copy_(out)
