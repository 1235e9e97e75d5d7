"""Modules that rearrange or resize without weights: pixel and channel shuffles, Upsample and the
fixed-mode upsampling modules, thin Modules over nn.functional."""
from __future__ import annotations

from .._tensor import Tensor
from . import functional as F
from .module import Module


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


class Upsample(Module):
    """Resize with F.interpolate (nearest, linear, bilinear, bicubic)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        # PyTorch keeps the factor as float(s): Upsample(scale_factor=2) prints scale_factor=2.0
        if scale_factor is not None:
            scale_factor = tuple(float(f) for f in scale_factor) if isinstance(scale_factor, tuple) else float(scale_factor)
        self.name = type(self).__name__
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"scale_factor={self.scale_factor}" if self.scale_factor is not None else f"size={self.size}"
        return f"{what}, mode='{self.mode}'"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling: an Upsample with mode 'nearest', as PyTorch's.
    Mirrors torch.nn.UpsamplingNearest2d."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with align_corners=True: an Upsample, as PyTorch's.
    Mirrors torch.nn.UpsamplingBilinear2d."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class ChannelShuffle(Module):
    """Regroup channels (ShuffleNet). Mirrors torch.nn.ChannelShuffle."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
