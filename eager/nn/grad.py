"""`torch.nn.grad`: the gradient of a convolution with respect to its input or its weight, given
the output's gradient (custom backward passes and gradient-checking scripts call these).

Each is the backward of eager's own convolution (autograd.grad through conv{1,2,3}d at a zero
input or the given weight), so it is exactly the gradient training computes."""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]

_CONVS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _grad_input(nd: int, input_size: Any, weight: Tensor, grad_output: Tensor, stride: Any, padding: Any,
                dilation: Any, groups: int) -> Tensor:
    from .. import autograd, enable_grad, zeros  # noqa: PLC0415

    size = tuple(input_size)
    if len(size) != nd + 2:
        raise ValueError(f"conv{nd}d_input: input_size must have {nd + 2} dimensions (N, C, spatial...), got {size}")
    with enable_grad():
        x = zeros(size, dtype=grad_output.dtype, requires_grad=True)
        w = weight.detach()
        out = _CONVS[nd](x, w, None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"conv{nd}d_input: grad_output has shape {tuple(grad_output.shape)} but the convolution "
                               f"of input_size {size} gives {tuple(out.shape)}; check stride/padding/dilation")
        (g,) = autograd.grad(out, x, grad_output)
    return g


def _grad_weight(nd: int, input: Tensor, weight_size: Any, grad_output: Tensor, stride: Any, padding: Any,
                 dilation: Any, groups: int) -> Tensor:
    from .. import autograd, enable_grad, zeros  # noqa: PLC0415

    size = tuple(weight_size)
    if len(size) != nd + 2:
        raise ValueError(f"conv{nd}d_weight: weight_size must have {nd + 2} dimensions, got {size}")
    with enable_grad():
        w = zeros(size, dtype=grad_output.dtype, requires_grad=True)
        out = _CONVS[nd](input.detach(), w, None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"conv{nd}d_weight: grad_output has shape {tuple(grad_output.shape)} but the "
                               f"convolution gives {tuple(out.shape)}; check stride/padding/dilation")
        (g,) = autograd.grad(out, w, grad_output)
    return g


def conv1d_input(input_size: Any, weight: Tensor, grad_output: Tensor, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of conv1d with respect to its input. Mirrors torch.nn.grad.conv1d_input."""
    return _grad_input(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size: Any, grad_output: Tensor, stride: Any = 1, padding: Any = 0,
                  dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of conv1d with respect to its weight. Mirrors torch.nn.grad.conv1d_weight."""
    return _grad_weight(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size: Any, weight: Tensor, grad_output: Tensor, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of conv2d with respect to its input. Mirrors torch.nn.grad.conv2d_input."""
    return _grad_input(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size: Any, grad_output: Tensor, stride: Any = 1, padding: Any = 0,
                  dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of conv2d with respect to its weight. Mirrors torch.nn.grad.conv2d_weight."""
    return _grad_weight(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size: Any, weight: Tensor, grad_output: Tensor, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of conv3d with respect to its input. Mirrors torch.nn.grad.conv3d_input."""
    return _grad_input(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size: Any, grad_output: Tensor, stride: Any = 1, padding: Any = 0,
                  dilation: Any = 1, groups: int = 1) -> Tensor:
    """The gradient of conv3d with respect to its weight. Mirrors torch.nn.grad.conv3d_weight."""
    return _grad_weight(3, input, weight_size, grad_output, stride, padding, dilation, groups)
