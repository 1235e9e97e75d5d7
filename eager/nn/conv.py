"""Convolution layers (1-3 spatial dims, transposed) and Unfold/Fold: Modules over functional."""
from __future__ import annotations

import math
from typing import Any

from .._factories import empty
from .._tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _tuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


class _ConvNd(Module):
    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        n = self._spatial
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
            raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be one of zeros, reflect, replicate, circular, got {padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.groups, self.padding_mode = _tuple(dilation, n), groups, padding_mode
        # PyTorch's _ConvNd attributes for every convolution (a transposed one sets its own)
        self.transposed, self.output_padding = False, getattr(self, "output_padding", (0,) * n)
        self.weight = Parameter(empty(out_channels, in_channels // groups, *self.kernel_size, device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _padded(self, input: Tensor):
        """(input, padding for the conv): a non-zero padding_mode pads here first, with the
        mode, for int paddings and for padding="same" alike (whose total d (k - 1) per dim
        goes left // 2 first, the rest right, as PyTorch's _reversed_padding_repeated_twice)."""
        if self.padding_mode == "zeros":
            return input, self.padding
        if self.padding == "valid":
            return input, 0
        pads: list[int] = []
        if self.padding == "same":
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
        else:
            for p in reversed(tuple(self.padding)):
                pads += [int(p), int(p)]
        return F.pad(input, tuple(pads), mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != (0,) * self._spatial:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._spatial:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W): weight (out, in/groups, kh, kw)."""

    _spatial = 2

    def forward(self, input: Tensor) -> Tensor:
        x, padding = self._padded(input)
        return F.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L): weight (out, in/groups, k)."""

    _spatial = 1

    def forward(self, input: Tensor) -> Tensor:
        x, padding = self._padded(input)
        return F.conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W): weight (out, in/groups, kd, kh, kw)."""

    _spatial = 3

    def forward(self, input: Tensor) -> Tensor:
        x, padding = self._padded(input)
        return F.conv3d(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    """Weight (in, out/groups, *kernel), as PyTorch's transposed convolutions."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not take string padding")
        self.output_padding = _tuple(output_padding, self._spatial)
        super().__init__(out_channels, in_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        # _ConvNd made (in, out/groups) swapped: name the channels as the layer sees them
        self.in_channels, self.out_channels = in_channels, out_channels
        self.transposed = True
        self.weight = Parameter(empty(in_channels, out_channels // groups, *self.kernel_size, device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        self.reset_parameters()

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple:
        """output_padding, or the one that makes the output `output_size` (PyTorch's
        ConvTranspose forward(input, output_size): the inverse of a strided conv is ambiguous
        by up to stride - 1 rows, and a skip connection's size settles it)."""
        n = self._spatial
        if output_size is None:
            return self.output_padding
        batch_dims = 2 if input.ndim == n + 2 else 1
        output_size = tuple(output_size)
        if len(output_size) == batch_dims + n:
            output_size = output_size[batch_dims:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                             f"{batch_dims + n} elements (got {len(output_size)})")
        low = [(input.shape[d + batch_dims] - 1) * self.stride[d] - 2 * self.padding[d]
               + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        high = [lo + self.stride[d] - 1 for d, lo in enumerate(low)]
        for size, lo, hi in zip(output_size, low, high):
            if not lo <= size <= hi:
                raise ValueError(f"requested an output size of {list(output_size)}, but valid sizes range from {low} "
                                 f"to {high} (for an input of {list(input.shape[batch_dims:])})")
        return tuple(size - lo for size, lo in zip(output_size, low))


class ConvTranspose2d(_ConvTransposeNd):
    _spatial = 2

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _spatial = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    _spatial = 3

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class Unfold(Module):
    """Sliding blocks of (N, C, H, W) as columns (F.unfold). Mirrors torch.nn.Unfold."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns summed back into (N, C, H, W) (F.fold). Mirrors torch.nn.Fold."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
