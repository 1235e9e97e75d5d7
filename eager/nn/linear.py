"""Linear, Bilinear and Identity, with PyTorch's default initialisation of a linear map."""
from __future__ import annotations

import math
from typing import Any

from .._factories import empty
from .._tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _weight_and_bias(m: Module, weight_shape: tuple, bias: bool, device: Any, dtype: Any) -> None:
    """m.weight of weight_shape and m.bias of weight_shape[0] (or a None bias), uninitialized."""
    m.weight = Parameter(empty(*weight_shape, device=device, dtype=dtype))
    if bias:
        m.bias = Parameter(empty(weight_shape[0], device=device, dtype=dtype))
    else:
        m.register_parameter("bias", None)


def _uniform_by_fan_in(m: Module, fan_in: int) -> None:
    """PyTorch's default init of a linear map: kaiming_uniform_(a=sqrt(5)) on the weight reduces
    to U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias takes the same bound."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    init.uniform_(m.weight, -bound, bound)
    if m.bias is not None:
        init.uniform_(m.bias, -bound, bound)


class Linear(Module):
    """y = x W^T + b. W and b start as U(-1/sqrt(in), 1/sqrt(in)), PyTorch's default init."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_by_fan_in(self, self.in_features)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under another name: MultiheadAttention's out_proj is one in PyTorch (printed,
    pickled and checked by that name); it computes what Linear computes."""


class Bilinear(Module):
    """y = x1^T A x2 + b with A of shape (out, in1, in2); A and b start as U(-1/sqrt(in1),
    1/sqrt(in1)), PyTorch's default init."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_by_fan_in(self, self.in1_features)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Identity(Module):
    """Returns its input: a placeholder where a layer is optional."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input
