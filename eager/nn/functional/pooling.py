"""Poolings of `eager.nn.functional`: max, average, power, adaptive (1-3 dims) and max-unpooling."""
from __future__ import annotations

import itertools as _itertools
import math as _math

from gmops import conv as _conv
from gmops import pooling as _pooling

from ... import _functional as _F
from ..._factories import arange, zeros_like
from ..._factories import ones as _ones
from ..._tensor import Tensor
from ._utils import _pair
from .activations import relu


def _pool_input(name: str, input: Tensor) -> tuple[Tensor, bool]:
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{name}: Expected 3D or 4D (batch mode) tensor for input, but got shape "
                           f"{list(input.shape)}")
    return (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)


def _ceil_extra(n: int, k: int, s: int, p: int, d: int) -> int:
    """Padding to add on the right so that ceil_mode's last (partial) window exists:
    PyTorch's output size is ceil((n + 2p - d(k-1) - 1) / s) + 1, less one when that last
    window would start past the input and its left padding."""
    span = n + 2 * p - d * (k - 1) - 1
    out = -(-span // s) + 1
    if (out - 1) * s >= n + p:
        out -= 1
    return max(0, (out - 1) * s + d * (k - 1) + 1 - (n + 2 * p))


def _pool_geometry(name, input, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or stride == [] or stride == () else _pair(stride)
    ph, pw = _pair(padding)
    dilation = _pair(dilation)
    if ph > kernel[0] // 2 or pw > kernel[1] // 2:
        raise RuntimeError(f"{name}: pad should be at most half of effective kernel size, but got pad={(ph, pw)}, "
                           f"kernel_size={kernel}")
    eh = ew = 0
    if ceil_mode:
        h, w = input.shape[-2:]
        eh = _ceil_extra(h, kernel[0], stride[0], ph, dilation[0])
        ew = _ceil_extra(w, kernel[1], stride[1], pw, dilation[1])
    return kernel, stride, (ph, ph + eh, pw, pw + ew), dilation


def _pool_windows(name, input, kernel_size, stride, padding, dilation, ceil_mode, pad_value):
    kernel, stride, pads, dilation = _pool_geometry(name, input, kernel_size, stride, padding, dilation, ceil_mode)
    x, unbatched = _pool_input(name, input)
    cols = _conv.UNFOLD(x, kernel=kernel, stride=stride, padding=pads, dilation=dilation, pad_value=pad_value)
    c, kh, kw, n, oh, ow = cols.shape
    return cols.reshape(c, kh * kw, n, oh, ow), unbatched


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each kernel_size window of a (N, C, H, W) or (C, H, W) input.

    With `return_indices`, also the flat index of each maximum in its input plane.
    Mirrors torch.nn.functional.max_pool2d."""
    if not return_indices and isinstance(input, Tensor):
        # an eager tensor: one op reading each window of the image once, and one for its
        # gradient (gmops.pooling); a trace records the decomposition below, which the code
        # generators fuse
        kernel, strides, pads, dilations = _pool_geometry("max_pool2d", input, kernel_size, stride, padding,
                                                          dilation, ceil_mode)
        x, unbatched = _pool_input("max_pool2d", input)
        out = _pooling.MAX_POOL2D(x, kernel=kernel, stride=strides, padding=pads, dilation=dilations)
        return out.squeeze(0) if unbatched else out
    windows, unbatched = _pool_windows("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                                       -_math.inf)
    values, where = _F.max(windows, 1)
    # row-major (N, C, ...) as PyTorch's, so pool(x).view(N, -1) works
    values, where = values.permute(1, 0, 2, 3).contiguous(), where.permute(1, 0, 2, 3).contiguous()
    _F._renamed(values, "MaxPool2DWithIndicesBackward0")
    if return_indices:
        where = _flat_input_index(where, input.shape[-2:], kernel_size, stride, padding, dilation)
    if unbatched:
        values, where = values.squeeze(0), where.squeeze(0)
    return (values, where) if return_indices else values


def _flat_input_index(where: Tensor, hw, kernel_size, stride, padding, dilation) -> Tensor:
    """PyTorch's max_pool indices: the flat position row * W + col in the (unpadded) input
    plane, from the position `where` inside each window."""
    kh, kw = _pair(kernel_size)
    sh, sw = (kh, kw) if stride is None or stride == [] or stride == () else _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    oh, ow = where.shape[-2:]
    rows = (arange(oh, device=where.device) * sh - ph).reshape(oh, 1) + _F.floor_divide(where, kw) * dh
    cols = (arange(ow, device=where.device) * sw - pw).reshape(1, ow) + _F.remainder(where, kw) * dw
    return rows * hw[1] + cols


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each kernel_size window of a (N, C, H, W) or (C, H, W) input.

    `count_include_pad` and `divisor_override` choose the divisor as in PyTorch.
    Mirrors torch.nn.functional.avg_pool2d."""
    windows, unbatched = _pool_windows("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode, 0.0)
    if divisor_override:
        out = _F.sum(windows, 1) / float(divisor_override)
    elif not ceil_mode and (count_include_pad or not any(_pair(padding))):
        out = _F.mean(windows, 1)
    else:
        # the divisor counts the input (and its padding when count_include_pad), never the
        # extra cells a ceil_mode window reaches past them
        kernel, strides, pads, _ = _pool_geometry("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
        h, w = input.shape[-2:]
        ph, pw = _pair(padding)
        if count_include_pad:
            ones = _ones(1, 1, h + 2 * ph, w + 2 * pw, dtype=input.dtype, device=input.device)
            pads = (0, pads[1] - ph, 0, pads[3] - pw)
        else:
            ones = _ones(1, 1, h, w, dtype=input.dtype, device=input.device)
        counts = _conv.UNFOLD(ones, kernel=kernel, stride=strides, padding=pads, dilation=(1, 1), pad_value=0.0)
        counts = counts.reshape(1, kernel[0] * kernel[1], 1, *counts.shape[-2:])
        out = _F.sum(windows, 1) / _F.sum(counts, 1)
    out = out.permute(1, 0, 2, 3).contiguous()  # row-major, as PyTorch's
    _F._renamed(out, "AvgPool2DBackward0")
    return out.squeeze(0) if unbatched else out


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each kernel_size window of a (N, C, L) or (C, L) input.

    Mirrors torch.nn.functional.max_pool1d."""
    k = _pair(kernel_size, 1)[0]
    s = k if stride is None else _pair(stride, 1)[0]
    out = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _pair(padding, 1)[0]), (1, _pair(dilation, 1)[0]),
                     ceil_mode, return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean over each kernel_size window of a (N, C, L) or (C, L) input. Mirrors torch.nn.functional.avg_pool1d."""
    k = _pair(kernel_size, 1)[0]
    s = k if stride is None else _pair(stride, 1)[0]
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _pair(padding, 1)[0]), ceil_mode,
                      count_include_pad).squeeze(-2)


def _adaptive_bounds(n: int, m: int) -> list[tuple[int, int]]:
    return [((i * n) // m, -((-(i + 1) * n) // m)) for i in range(m)]


def _adaptive(input: Tensor, output_size, reduce, name: str) -> Tensor:
    x, unbatched = _pool_input(name, input)
    h, w = x.shape[-2:]
    oh, ow = (v if v is not None else n for v, n in zip(_pair(output_size), (h, w)))
    if h % oh == 0 and w % ow == 0:  # equal windows: one pooling over strided windows
        kernel = (h // oh, w // ow)
        windows = _conv.UNFOLD(x, kernel=kernel, stride=kernel, padding=(0, 0, 0, 0), dilation=(1, 1),
                               pad_value=0.0)
        n, c = x.shape[:2]
        out = reduce(windows.reshape(c, kernel[0] * kernel[1], n, oh, ow), 1).permute(1, 0, 2, 3).contiguous()
    else:
        rows = []
        for h0, h1 in _adaptive_bounds(h, oh):
            cells = [reduce(x[:, :, h0:h1, w0:w1].reshape(x.shape[0], x.shape[1], -1), 2)
                     for w0, w1 in _adaptive_bounds(w, ow)]
            rows.append(_F.stack(cells, -1))
        out = _F.stack(rows, -2)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """The mean over windows chosen so the output has spatial size `output_size`.

    Mirrors torch.nn.functional.adaptive_avg_pool2d."""
    return _F._renamed(_adaptive(input, output_size, _F.mean, "adaptive_avg_pool2d"), "AdaptiveAvgPool2DBackward0")


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over windows chosen so the output has spatial size `output_size`; with
    return_indices, (values, the flat index of each maximum in its input plane).

    Mirrors torch.nn.functional.adaptive_max_pool2d."""
    out = _adaptive(input, output_size, lambda t, d: _F.amax(t, d), "adaptive_max_pool2d")
    return (out, _adaptive_max_indices(input, out, 2)) if return_indices else out


def _adaptive_max_indices(input: Tensor, out: Tensor, spatial: int) -> Tensor:
    """The flat index (in the input's trailing `spatial`-dim plane) of each adaptive window's
    maximum, the first in row-major order on ties and the first NaN where there is one, as
    PyTorch's kernel scans (int64, not differentiable)."""
    import numpy as np  # noqa: PLC0415

    from ..._factories import tensor  # noqa: PLC0415

    a = np.asarray(input.detach().cpu().numpy())
    sizes = a.shape[-spatial:]
    outs = tuple(out.shape[-spatial:])
    lead = a.shape[:-spatial]
    flat = a.reshape(-1, *sizes)
    idx = np.empty((flat.shape[0], *outs), dtype=np.int64)
    for cell in _itertools.product(*(range(o) for o in outs)):
        bounds = [_adaptive_bounds(s, o)[i] for s, o, i in zip(sizes, outs, cell)]
        window = flat[(slice(None),) + tuple(slice(lo, hi) for lo, hi in bounds)]
        w = window.reshape(window.shape[0], -1)
        nan = np.isnan(w) if w.dtype.kind == "f" else np.zeros(w.shape, bool)
        local = np.where(nan.any(1), nan.argmax(1), w.argmax(1))
        coords = np.unravel_index(local, window.shape[1:])
        idx[(slice(None),) + cell] = np.ravel_multi_index(
            tuple(c + lo for c, (lo, _) in zip(coords, bounds)), sizes)
    return tensor(idx.reshape(*lead, *outs), device=input.device)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """The mean over windows chosen so the output has length `output_size`.

    Mirrors torch.nn.functional.adaptive_avg_pool1d."""
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _pair(output_size, 1)[0])).squeeze(-2)


def _pool_input_nd(name: str, input: Tensor, spatial: int) -> tuple[Tensor, bool]:
    if input.ndim not in (spatial + 1, spatial + 2) or 0 in tuple(input.shape[1:]):
        raise RuntimeError(f"{name}: Expected non-empty {spatial + 1}D or {spatial + 2}D (batch mode) tensor for "
                           f"input, but got shape {list(input.shape)}")
    return (input.unsqueeze(0), True) if input.ndim == spatial + 1 else (input, False)


def _pool_geometry_nd(name: str, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                      spatial: int) -> tuple[tuple, tuple, tuple, tuple]:
    """(kernel, stride, per-dim (before, after) padding, dilation); ceil_mode's last partial
    window gets extra padding on the right, as in 2-D."""
    kernel = _pair(kernel_size, spatial)
    strides = kernel if stride is None or stride == [] or stride == () else _pair(stride, spatial)
    pads, dilation = _pair(padding, spatial), _pair(dilation, spatial)
    if any(p > k // 2 for p, k in zip(pads, kernel)):
        raise RuntimeError(f"{name}: pad should be at most half of effective kernel size, but got pad={pads}, "
                           f"kernel_size={kernel}")
    if any(v <= 0 for v in kernel + strides + dilation):
        raise RuntimeError(f"{name}: kernel_size, stride and dilation must be greater than zero, but got "
                           f"kernel_size={kernel}, stride={strides}, dilation={dilation}")
    sizes = tuple(input.shape[-spatial:])
    out: list[int] = []
    for i in range(spatial):
        extra = _ceil_extra(sizes[i], kernel[i], strides[i], pads[i], dilation[i]) if ceil_mode else 0
        out += [pads[i], pads[i] + extra]
    return kernel, strides, tuple(out), dilation


def _pool_windows_nd(name: str, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                     pad_value: float, spatial: int) -> tuple[Tensor, bool]:
    """Every pooling window as (C, prod(kernel), N, *out) and whether the input was unbatched."""
    kernel, strides, pads, dilation = _pool_geometry_nd(name, input, kernel_size, stride, padding, dilation,
                                                        ceil_mode, spatial)
    x, unbatched = _pool_input_nd(name, input, spatial)
    try:
        cols = _conv.UNFOLD(x, kernel=kernel, stride=strides, padding=pads, dilation=dilation, pad_value=pad_value)
    except RuntimeError as exc:
        raise RuntimeError(f"{name}: Given input size {list(input.shape)}, the output size would be empty: the "
                           f"kernel {kernel} (dilation {dilation}, padding {_pair(padding, spatial)}) is larger than "
                           "the input; use a smaller kernel_size or more padding") from exc
    c, n = cols.shape[0], cols.shape[spatial + 1]
    return cols.reshape(c, _math.prod(kernel), n, *cols.shape[spatial + 2:]), unbatched


def _flat_input_index_nd(where: Tensor, sizes: tuple, kernel: tuple, strides: tuple, pads: tuple,
                         dilation: tuple) -> Tensor:
    """PyTorch's max_pool indices: the flat position of each maximum in its (unpadded) input
    volume, from its position `where` inside the window."""
    spatial = len(kernel)
    out_sizes = tuple(where.shape[-spatial:])
    flat: Tensor = where * 0
    for i in range(spatial):
        inner = _math.prod(kernel[i + 1:])
        offset = _F.remainder(_F.floor_divide(where, inner), kernel[i])
        start = arange(out_sizes[i], device=where.device) * strides[i] - pads[i]
        start = start.reshape(*(out_sizes[i] if d == i else 1 for d in range(spatial)))
        pos = (start + offset * dilation[i]) * _math.prod(sizes[i + 1:])
        flat = flat + pos
    return flat


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each kernel_size window of a (N, C, D, H, W) or (C, D, H, W) input.

    With `return_indices`, also the flat index of each maximum in its input volume.
    Mirrors torch.nn.functional.max_pool3d."""
    windows, unbatched = _pool_windows_nd("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                                          -_math.inf, 3)
    values, where = _F.max(windows, 1)
    values, where = values.permute(1, 0, 2, 3, 4).contiguous(), where.permute(1, 0, 2, 3, 4).contiguous()
    if return_indices:
        kernel, strides, _, dils = _pool_geometry_nd("max_pool3d", input, kernel_size, stride, padding, dilation,
                                                     ceil_mode, 3)
        where = _flat_input_index_nd(where, tuple(input.shape[-3:]), kernel, strides, _pair(padding, 3), dils)
    if unbatched:
        values, where = values.squeeze(0), where.squeeze(0)
    _F._renamed(values, "MaxPool3DWithIndicesBackward0")  # (PyTorch pools unbatched inputs natively)
    return (values, where) if return_indices else values


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each kernel_size window of a (N, C, D, H, W) or (C, D, H, W) input;
    `count_include_pad` and `divisor_override` choose the divisor as in PyTorch.

    Mirrors torch.nn.functional.avg_pool3d."""
    spatial = 3
    windows, unbatched = _pool_windows_nd("avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode, 0.0,
                                          spatial)
    if divisor_override is not None and divisor_override <= 0:
        raise RuntimeError(f"avg_pool3d: divisor must be not zero, got divisor_override={divisor_override}")
    pads = _pair(padding, spatial)
    if divisor_override:
        out = _F.sum(windows, 1) / float(divisor_override)
    elif not ceil_mode and (count_include_pad or not any(pads)):
        out = _F.mean(windows, 1)
    else:
        # the divisor counts the input (and its padding when count_include_pad), never the
        # extra cells a ceil_mode window reaches past them
        kernel, strides, full, _ = _pool_geometry_nd("avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode,
                                                     spatial)
        sizes = tuple(input.shape[-spatial:])
        if count_include_pad:
            ones = _ones(1, 1, *(s + 2 * p for s, p in zip(sizes, pads)), dtype=input.dtype, device=input.device)
            full = tuple(v for i in range(spatial) for v in (0, full[2 * i + 1] - pads[i]))
        else:
            ones = _ones(1, 1, *sizes, dtype=input.dtype, device=input.device)
        counts = _conv.UNFOLD(ones, kernel=kernel, stride=strides, padding=full, dilation=(1,) * spatial,
                              pad_value=0.0)
        counts = counts.reshape(1, _math.prod(kernel), 1, *counts.shape[spatial + 2:])
        out = _F.sum(windows, 1) / _F.sum(counts, 1)
    out = out.permute(1, 0, 2, 3, 4).contiguous()
    return _F._renamed(out.squeeze(0) if unbatched else out, "AvgPool3DBackward0")


def _adaptive_nd(name: str, input: Tensor, output_size, reduce, spatial: int) -> Tensor:
    """Adaptive pooling over `spatial` trailing dims: one pooling over strided windows when
    every size divides evenly, else one reduction per output cell (PyTorch's window bounds)."""
    x, unbatched = _pool_input_nd(name, input, spatial)
    sizes = tuple(x.shape[-spatial:])
    outs = tuple(v if v is not None else s for v, s in zip(_pair(output_size, spatial), sizes))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"{name}: output_size must be positive, got {tuple(outs)}")
    n, c = x.shape[:2]
    if all(s % o == 0 for s, o in zip(sizes, outs)):
        kernel = tuple(s // o for s, o in zip(sizes, outs))
        windows = _conv.UNFOLD(x, kernel=kernel, stride=kernel, padding=(0,) * (2 * spatial),
                               dilation=(1,) * spatial, pad_value=0.0)
        out = reduce(windows.reshape(c, _math.prod(kernel), n, *outs), 1).permute(1, 0, *range(2, spatial + 2))
        out = out.contiguous()
    else:
        cells = []
        for bounds in _itertools.product(*(_adaptive_bounds(s, o) for s, o in zip(sizes, outs))):
            box = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in bounds)]
            cells.append(reduce(box.reshape(n, c, -1), 2))
        out = _F.stack(cells, -1).reshape(n, c, *outs)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """The mean over windows chosen so the output has spatial size `output_size` (None keeps
    that dim's size).

    Mirrors torch.nn.functional.adaptive_avg_pool3d."""
    if _pair(output_size, 3) == (1, 1, 1) and input.ndim in (4, 5) and 0 not in tuple(input.shape[1:]):
        return _F.mean(input, (-3, -2, -1), keepdim=True)  # PyTorch's global average: a plain mean
    return _F._renamed(_adaptive_nd("adaptive_avg_pool3d", input, output_size, _F.mean, 3),
                       "AdaptiveAvgPool3DBackward0")


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm over each window: (sum x ** p) ** (1 / p), as PyTorch computes it (an
    average pool of x ** p times the window size). Mirrors torch.nn.functional.lp_pool2d."""
    kw, kh = _pair(kernel_size)
    out = avg_pool2d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (_F.sign(out) * relu(_F.abs(out)) * (kw * kh)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm over each window of a (N, C, L) input. Mirrors torch.nn.functional.lp_pool1d."""
    out = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (_F.sign(out) * relu(_F.abs(out)) * kernel_size) ** (1.0 / norm_type)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm over each window of a (N, C, D, H, W) input. Mirrors torch.nn.functional.lp_pool3d."""
    kd, kh, kw = _pair(kernel_size, 3)
    out = avg_pool3d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (_F.sign(out) * relu(_F.abs(out)) * (kd * kh * kw)) ** (1.0 / norm_type)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over windows chosen so the output has length `output_size`.
    Mirrors torch.nn.functional.adaptive_max_pool1d."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d: Expected 2D or 3D input, but got {input.ndim}D")
    out = adaptive_max_pool2d(input.unsqueeze(-2), (1, _pair(output_size, 1)[0]), return_indices)
    if return_indices:  # (a plane of height 1: the flat index is the position along the length)
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over windows chosen so the output has spatial size `output_size`.
    Mirrors torch.nn.functional.adaptive_max_pool3d."""
    out = _adaptive_nd("adaptive_max_pool3d", input, output_size, lambda t, d: _F.amax(t, d), 3)
    return (out, _adaptive_max_indices(input, out, 3)) if return_indices else out


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool2d: each value written at its flat index in a zero
    plane of the unpooled size. Mirrors torch.nn.functional.max_unpool2d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool1d. Mirrors torch.nn.functional.max_unpool1d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool3d. Mirrors torch.nn.functional.max_unpool3d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def _max_unpool(input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size, spatial: int) -> Tensor:
    kernel = _pair(kernel_size, spatial)
    strides = kernel if stride is None else _pair(stride, spatial)
    pads = _pair(padding, spatial)
    in_sizes = tuple(input.shape[-spatial:])
    default = tuple((i - 1) * s - 2 * p + k for i, s, p, k in zip(in_sizes, strides, pads, kernel))
    if output_size is None:
        sizes = default
    else:
        sizes = tuple(output_size)[-spatial:]
        for d, (got, want) in enumerate(zip(sizes, default)):
            lo, hi = want - strides[d], want + strides[d]
            if not lo < got < hi:
                raise ValueError(f"invalid output_size {tuple(output_size)} (dim {d} must be between {lo} and {hi})")
    lead = tuple(input.shape[:-spatial])
    plane = _math.prod(sizes)
    flat_in = input.reshape(-1, _math.prod(in_sizes))
    flat_idx = indices.reshape(-1, _math.prod(in_sizes))
    out = zeros_like(flat_in.new_zeros((flat_in.shape[0], plane)))
    out = _F.scatter(out, 1, flat_idx, flat_in)
    return out.reshape(*lead, *sizes)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """max_pool1d returning (values, indices). Mirrors torch.nn.functional.max_pool1d_with_indices."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """max_pool2d returning (values, indices). Mirrors torch.nn.functional.max_pool2d_with_indices."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)
