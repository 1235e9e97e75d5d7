"""Vision functions of `eager.nn.functional`: padding, pixel and channel shuffles, resampling
(interpolate, upsample) and spatial transformers (affine_grid, grid_sample)."""
from __future__ import annotations

import warnings

from ... import _functional as _F
from ..._factories import ones as _ones
from ..._tensor import Tensor
from ._utils import _pair
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): channels moved into space. Mirrors torch.nn.functional.pixel_shuffle."""
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle. Mirrors torch.nn.functional.pixel_unshuffle."""
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} and input.size(-1)={w} are not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def pad(input: Tensor, pad: tuple, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims: pad = (last_left, last_right, prev_left, prev_right, ...).
    Modes: constant (negative pads crop), reflect, replicate, circular."""
    if len(pad) % 2:
        raise ValueError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise ValueError(f"Padding length should be less than or equal to two times the input dimension but got "
                         f"padding length {len(pad)} and input of dimension {input.ndim}")
    out = input
    for k in range(len(pad) // 2):
        d = input.ndim - 1 - k
        left, right = int(pad[2 * k]), int(pad[2 * k + 1])
        out = _pad_dim(out, d, left, right, mode, 0.0 if value is None else value)
    return out


def _pad_dim(x: Tensor, d: int, left: int, right: int, mode: str, value: float) -> Tensor:
    n = x.shape[d]
    if left < 0:
        x, n, left = _F.narrow(x, d, -left, n + left), n + left, 0
    if right < 0:
        x, n, right = _F.narrow(x, d, 0, n + right), n + right, 0
    if not left and not right:
        return x
    if mode == "constant":
        def block(n):
            shape = list(x.shape)
            shape[d] = n
            return x.new_full(tuple(shape), value)

        return _F.cat(([block(left)] if left else []) + [x] + ([block(right)] if right else []), d)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({left}, {right}) at dimension {d} of input {list(x.shape)}")
        idx = list(range(left, 0, -1)) + list(range(n)) + list(range(n - 2, n - 2 - right, -1))
    elif mode == "replicate":
        idx = [0] * left + list(range(n)) + [n - 1] * right
    elif mode == "circular":
        idx = [(i - left) % n for i in range(left + n + right)]
    else:
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (constant, reflect, replicate, circular)")
    from ..._factories import tensor as _tensor  # noqa: PLC0415

    return _F.index_select(x, d, _tensor(idx, device=x.device))


def _source_positions(n_in: int, n_out: int, scale: float | None, mode: str, align_corners: bool):
    """For each output position along one dim: the two source indices and the weight of the
    second (linear modes), or the one index (nearest), as PyTorch computes them."""
    import numpy as np  # noqa: PLC0415

    dst = np.arange(n_out, dtype=np.float64)
    if mode == "nearest":
        ratio = (1.0 / scale) if scale else n_in / n_out
        return np.minimum(np.floor(dst * ratio).astype(np.int64), n_in - 1), None, None
    if mode == "nearest-exact":  # the pixel whose centre is nearest (PyTorch's _upsample_nearest_exact)
        ratio = (1.0 / scale) if scale else n_in / n_out
        return np.minimum(np.floor((dst + 0.5) * ratio).astype(np.int64), n_in - 1), None, None
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(dst)
    else:
        ratio = (1.0 / scale) if scale else n_in / n_out
        src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _cubic_taps(n_in: int, n_out: int, scale: float | None, align_corners: bool):
    """Bicubic along one dim, as PyTorch's upsample_bicubic2d: for each output position the
    four source indices floor(src) - 1 .. floor(src) + 2 (clamped to the input) and their
    cubic-convolution weights (A = -0.75). Unlike the linear modes, src is not clamped at 0."""
    import numpy as np  # noqa: PLC0415

    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(dst)
    else:
        ratio = (1.0 / scale) if scale else n_in / n_out
        src = (dst + 0.5) * ratio - 0.5
    floor = np.floor(src)
    t = src - floor
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)])
    taps = np.clip(floor.astype(np.int64)[None, :] + np.arange(-1, 3)[:, None], 0, n_in - 1)
    return taps, weights


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, L) or (N, C, H, W): modes nearest, linear, bilinear
    and bicubic (separable index_select and weights: differentiable, no loop over pixels)."""
    from ..._factories import tensor as _tensor  # noqa: PLC0415

    spatial = input.ndim - 2
    if spatial not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode not in ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, nearest-exact, linear, "
                                  "bilinear, bicubic, trilinear, area)")
    needs = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in needs and needs[mode] != spatial:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needs[mode] + 2}D input")
    if antialias:
        raise NotImplementedError(f"interpolate(antialias=True) is not supported (mode {mode!r}); resize without "
                                  "it, or blur before downsampling")
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    in_sizes = tuple(input.shape[2:])
    scales: tuple[float | None, ...]
    if size is not None:
        out_sizes = _pair(size, spatial)
        scales = (None,) * spatial
    else:
        scales = tuple(float(s) for s in _pair(scale_factor, spatial))
        out_sizes = tuple(int(n * s) for n, s in zip(in_sizes, scales))
        if recompute_scale_factor:
            scales = (None,) * spatial
    if mode == "area":  # PyTorch's: an adaptive average pool to the output size
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[spatial - 1]
        return pool(input, out_sizes if spatial > 1 else out_sizes[0])
    out = input
    for k, (n_in, n_out, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        dim = 2 + k
        if mode == "bicubic":
            taps, weights = _cubic_taps(n_in, n_out, scale, bool(align_corners))
            shape = [1] * input.ndim
            shape[dim] = n_out
            total: Tensor | None = None
            for idx, w in zip(taps, weights):
                term = _F.index_select(out, dim, _tensor(idx, device=input.device)) * _tensor(
                    w.reshape(shape), dtype=input.dtype, device=input.device)
                total = term if total is None else total + term
            assert total is not None  # at least one tap per output position
            out = total
            continue
        lo, hi, frac = _source_positions(n_in, n_out, scale, mode, bool(align_corners))
        first = _F.index_select(out, dim, _tensor(lo, device=input.device))
        if frac is None:
            out = first
            continue
        second = _F.index_select(out, dim, _tensor(hi, device=input.device))
        shape = [1] * input.ndim
        shape[dim] = n_out
        w = _tensor(frac.reshape(shape), dtype=input.dtype, device=input.device)
        out = first + (second - first) * w
    return out


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """The deprecated name of interpolate (same arguments). Mirrors torch.nn.functional.upsample."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, g * c, ...) -> channels regrouped as (N, c * g, ...) (ShuffleNet).
    Mirrors torch.nn.functional.channel_shuffle."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"sizes {list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """interpolate(mode="nearest") (deprecated in PyTorch, with its warning).
    Mirrors torch.nn.functional.upsample_nearest."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """interpolate(mode="bilinear", align_corners=True) (deprecated in PyTorch, with its warning).
    Mirrors torch.nn.functional.upsample_bilinear."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


_ALIGN_CORNERS_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                          "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                          "documentation of grid_sample for details.")


def _linspace_from_neg_one(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """PyTorch's base-grid coordinates: n points in [-1, 1] (pixel corners with
    align_corners, else pixel centres, scaled by (n - 1) / n)."""
    from ..._factories import linspace, tensor  # noqa: PLC0415

    if n <= 1:
        return tensor([0.0], dtype=like.dtype, device=like.device)
    r = linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return r if align_corners else r * (n - 1) / n


def affine_grid(theta: Tensor, size: list, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of the 2-D affine maps theta (N, 2, 3) for an output
    of `size` (N, C, H, W): base coordinates in [-1, 1] times theta^T. Differentiable in
    theta (spatial transformer networks learn it). Mirrors torch.nn.functional.affine_grid."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 5:
        raise NotImplementedError("affine_grid: 3-D (5-D size) grids are not supported here; only 2-D (N, C, H, W)")
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                         f"Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, _, h, w = size
    xs = _linspace_from_neg_one(w, align_corners, theta).reshape(1, w).expand(h, w)
    ys = _linspace_from_neg_one(h, align_corners, theta).reshape(h, 1).expand(h, w)
    base = _F.stack([xs, ys, _ones((h, w), dtype=theta.dtype, device=theta.device)], -1)  # (H, W, 3)
    base = base.reshape(1, h * w, 3).expand(n, h * w, 3)
    return _F.matmul(base, theta.transpose(1, 2)).reshape(n, h, w, 2)


def _grid_source_index(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A grid coordinate in [-1, 1] as a pixel position, with the padding's clipping or
    reflection (PyTorch's grid_sampler_compute_source_index, gradients included: 0 where a
    coordinate is clipped)."""
    if align_corners:
        coord = (coord + 1) / 2 * (size - 1)
    else:
        coord = ((coord + 1) * size - 1) / 2
    if padding_mode == "reflection":
        low, high = (0.0, 2.0 * (size - 1)) if align_corners else (-1.0, 2.0 * size - 1)
        if low == high:
            coord = coord * 0.0
        else:
            lo, span = low / 2, (high - low) / 2
            dist = _F.abs(coord - lo)
            extra = _F.fmod(dist, span)
            flips = _F.floor(dist / span)
            coord = _F.where(_F.remainder(flips, 2) == 0, extra + lo, span - extra + lo)
    if padding_mode in ("border", "reflection"):
        coord = _F.where(coord <= 0, 0.0, _F.where(coord >= size - 1, float(size - 1), coord))
    return coord


def _gather_plane(flat: Tensor, iy: Tensor, ix: Tensor, h: int, w: int) -> tuple[Tensor, Tensor]:
    """The values of flat (N, C, H*W) at integer positions (iy, ix) (N, Ho, Wo) read as
    floats, and whether each is inside the plane (outside reads 0)."""
    valid = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
    lin = (_F.clamp(iy, 0, h - 1) * w + _F.clamp(ix, 0, w - 1)).long()
    n, c = flat.shape[0], flat.shape[1]
    index = lin.reshape(n, 1, -1).expand(n, c, lin.shape[1] * lin.shape[2])
    values = flat.gather(2, index).reshape(n, c, lin.shape[1], lin.shape[2])
    return values, valid.unsqueeze(1).to(flat.dtype)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample input (N, C, H, W) at the grid's (N, Ho, Wo, 2) normalized (x, y) positions,
    bilinearly or at the nearest pixel; outside the image 'zeros' reads 0, 'border' the edge,
    'reflection' the mirrored image. Differentiable in input and (bilinear) in grid, with
    PyTorch's corner weights and summation order. 2-D only here.
    Mirrors torch.nn.functional.grid_sample."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if mode == "bicubic":
        raise NotImplementedError("grid_sample(mode='bicubic') is not supported here; use 'bilinear' or 'nearest'")
    if input.ndim == 5:
        raise NotImplementedError("grid_sample: 5-D (volumetric) input is not supported here; only (N, C, H, W)")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions and a last "
                           f"grid dimension of 2, but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    n, c, h, w = input.shape
    ix = _grid_source_index(grid[..., 0], w, padding_mode, align_corners)
    iy = _grid_source_index(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)
    if mode == "nearest":
        vals, valid = _gather_plane(flat, _F.round(iy).detach(), _F.round(ix).detach(), h, w)
        return vals * valid
    x0, y0 = _F.floor(ix).detach(), _F.floor(iy).detach()
    x1, y1 = x0 + 1, y0 + 1
    corners = [(y0, x0, (x1 - ix) * (y1 - iy)), (y0, x1, (ix - x0) * (y1 - iy)),
               (y1, x0, (x1 - ix) * (iy - y0)), (y1, x1, (ix - x0) * (iy - y0))]
    out = None
    for cy, cx, weight in corners:  # nw, ne, sw, se: PyTorch's order of the sum
        vals, valid = _gather_plane(flat, cy, cx, h, w)
        term = vals * (weight.unsqueeze(1) * valid)
        out = term if out is None else out + term
    assert out is not None
    return out
