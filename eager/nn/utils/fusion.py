"""Folding an eval-mode batch norm into the convolution or linear layer before it
(torch.nn.utils.fusion): the fused layer computes bn(layer(x)) with the running statistics."""
from __future__ import annotations

import copy
from typing import Any

from ... import _functional as _F
from ..._factories import ones_like, zeros_like
from ..._tensor import Tensor
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of `conv` whose weight and bias include `bn`'s eval-mode affine map."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """(W * s, (b - mean) * s + beta) with s = gamma / sqrt(var + eps) per output channel (dim 1
    of a transposed convolution's weight), as Parameters in the convolution's dtypes."""
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ones_like(bn_rm)
    if bn_b is None:
        bn_b = zeros_like(bn_rm)
    bn_var_rsqrt = _F.rsqrt(bn_rv + bn_eps)
    rest = [1] * (len(conv_w.shape) - 2)
    shape = [1, -1, *rest] if transpose else [-1, 1, *rest]
    fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of `linear` whose weight and bias include `bn`'s eval-mode affine map."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, "
            f"got linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                           bn_w: Tensor, bn_b: Tensor) -> tuple[Parameter, Parameter]:
    """(W * s[:, None], (b - mean) * s + beta) with s = gamma / sqrt(var + eps)."""
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = zeros_like(bn_rm)
    bn_scale = bn_w * _F.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
