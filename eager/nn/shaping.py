"""Layers that pad, rearrange, resize or compare tensors without weights: the padding
modules (constant, zero, reflection, replication), pixel shuffling, the fixed-mode
upsampling modules and the distance modules, each a thin Module over nn.functional with
PyTorch's names, arguments and reprs."""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from .module import Module


def _padding(padding: Any, n: int) -> tuple:
    """PyTorch's padding argument (an int for every side, or a 2n-tuple) as a 2n-tuple."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(int(p) for p in padding)
    if len(padding) != 2 * n:
        raise ValueError(f"expected padding of {2 * n} values (left/right per padded dim), got {padding}")
    return padding


class _Pad(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = _padding(padding, self.dims)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"{type(self).__name__}: expected {self.dims + 1}D or {self.dims + 2}D input, "
                             f"got {input.ndim}D (shape {tuple(input.shape)})")
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self.mode == "constant" else "")


def _pad_class(name: str, mode: str, dims: int, constant: bool) -> type:
    if constant:
        def __init__(self, padding: Any, value: float = 0.0) -> None:
            _Pad.__init__(self, padding, value)
    else:
        def __init__(self, padding: Any) -> None:  # type: ignore[misc]
            _Pad.__init__(self, padding)
    doc = f"Pad the last {dims} dim(s) of a {dims + 1}-D or {dims + 2}-D input ({mode}). Mirrors torch.nn.{name}."
    return type(name, (_Pad,), {"__init__": __init__, "mode": mode, "dims": dims, "__doc__": doc,
                                "__module__": __name__})


ConstantPad1d = _pad_class("ConstantPad1d", "constant", 1, True)
ConstantPad2d = _pad_class("ConstantPad2d", "constant", 2, True)
ConstantPad3d = _pad_class("ConstantPad3d", "constant", 3, True)
ReflectionPad1d = _pad_class("ReflectionPad1d", "reflect", 1, False)
ReflectionPad2d = _pad_class("ReflectionPad2d", "reflect", 2, False)
ReplicationPad1d = _pad_class("ReplicationPad1d", "replicate", 1, False)
ReplicationPad2d = _pad_class("ReplicationPad2d", "replicate", 2, False)
ReplicationPad3d = _pad_class("ReplicationPad3d", "replicate", 3, False)
CircularPad1d = _pad_class("CircularPad1d", "circular", 1, False)
CircularPad2d = _pad_class("CircularPad2d", "circular", 2, False)


class ZeroPad1d(ConstantPad1d):  # type: ignore[misc,valid-type]
    """Pad the last dim with zeros. Mirrors torch.nn.ZeroPad1d."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):  # type: ignore[misc,valid-type]
    """Pad the last two dims with zeros. Mirrors torch.nn.ZeroPad2d."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r). Mirrors torch.nn.PixelShuffle."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W). Mirrors torch.nn.PixelUnshuffle."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class UpsamplingNearest2d(Module):
    """Nearest-neighbour 2-D upsampling. Mirrors torch.nn.UpsamplingNearest2d."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__()
        self.size, self.scale_factor = size, scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, mode="nearest")


class UpsamplingBilinear2d(Module):
    """Bilinear 2-D upsampling with align_corners=True. Mirrors torch.nn.UpsamplingBilinear2d."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__()
        self.size, self.scale_factor = size, scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, mode="bilinear", align_corners=True)


class CosineSimilarity(Module):
    """The cosine similarity of two inputs along `dim`. Mirrors torch.nn.CosineSimilarity."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim. Mirrors torch.nn.PairwiseDistance."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Upsample(Module):
    """Resize with F.interpolate (nearest, linear, bilinear, bicubic)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"scale_factor={self.scale_factor}" if self.scale_factor is not None else f"size={self.size}"
        return f"{what}, mode='{self.mode}'"


class ChannelShuffle(Module):
    """Regroup channels (ShuffleNet). Mirrors torch.nn.ChannelShuffle."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
