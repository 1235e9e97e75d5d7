"""Fractional max pooling (Graham, 2014): a kernel_size window slid by pseudo-random steps whose
output has `output_size` (or input * `output_ratio`) cells per dimension, with PyTorch's
interval rule, so explicit `_random_samples` give PyTorch's values and indices.

Per plane and dimension, with sample u in [0, 1) and alpha = (in - k) / (out - 1):
start[i] = int((i + u) * alpha) - int(u * alpha) for i < out - 1, start[out - 1] = in - k.
The window starts depend only on the samples, so they are computed as integer arrays and the
values are gathered and reduced with eager's gather and max: the gradient is theirs.
Also the with_indices spellings of the adaptive and 3-D max pools."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import _functional as _F
from ..._tensor import Tensor
from .pooling import adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, max_pool3d


def _starts(samples: np.ndarray, in_size: int, out_size: int, k: int) -> np.ndarray:
    """(planes, out_size) window starts for per-plane samples, in float32 / float64 as the input's (as ATen's
    scalar_t arithmetic)."""
    starts = np.empty(samples.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = samples.dtype.type(in_size - k) / samples.dtype.type(out_size - 1)
        i = np.arange(out_size - 1, dtype=samples.dtype)
        starts[..., :-1] = (np.trunc((i + samples[..., None]) * alpha).astype(np.int64)
                            - np.trunc(samples * alpha).astype(np.int64)[..., None])
    if out_size > 0:
        starts[..., -1] = in_size - k
    return starts


def _fractional_max_pool(op: str, input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                         return_indices: bool, samples: Tensor | None, nd: int) -> Any:
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    ks = (kernel_size,) * nd if isinstance(kernel_size, int) else tuple(kernel_size)
    spatial = tuple(x.shape[2:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = (output_ratio,) * nd if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        out = tuple(int(s * r) for s, r in zip(spatial, ratio))
    else:
        out = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(ks) != nd or len(out) != nd:
        raise RuntimeError(f"{op}(): kernel_size and output_size must have {nd} elements, got {ks} and {out}")
    names = ("time", "height", "width")[-nd:] if nd == 3 else ("height", "width")
    for name, o, k, s in zip(names, out, ks, spatial):
        if o + k - 1 > s:
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} {s} "
                               f"(output {name} {o} + pool - 1 must be <= input)")
    n, c = x.shape[0], x.shape[1]
    if samples is None:
        from ... import rand  # noqa: PLC0415
        samples = rand(n, c, nd, dtype=x.dtype)
    u = samples.detach().numpy()
    if u.shape != (n, c, nd):
        raise RuntimeError(f"{op}(): _random_samples must have shape {(n, c, nd)}, got {tuple(u.shape)}")
    # ATen reads the samples as (w, h) for 2-D and (t, h, w) for 3-D
    order = (1, 0) if nd == 2 else (0, 1, 2)
    per_dim = []
    for d in range(nd):
        st = _starts(u[..., order[d]], spatial[d], out[d], ks[d])  # (n, c, out_d)
        cells = st[..., None] + np.arange(ks[d])  # (n, c, out_d, k_d)
        per_dim.append(cells)
    # flat plane index of every (output cell, window cell): sum of coordinate * plane stride
    strides = [math.prod(spatial[d + 1:]) for d in range(nd)]
    flat = np.zeros((n, c) + out + ks, dtype=np.int64)
    for d, cells in enumerate(per_dim):
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d] = out[d]
        shape[2 + nd + d] = ks[d]
        flat = flat + cells.reshape(shape) * strides[d]
    from ... import tensor as _tensor  # noqa: PLC0415
    index = _tensor(flat.reshape(n, c, -1))
    windows = _F.gather(x.reshape(n, c, -1), 2, index).reshape(n, c, math.prod(out), math.prod(ks))
    values, which = windows.max(-1)
    values = values.reshape((n, c) + out)
    if not batched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    picked = _F.gather(index.reshape(n, c, math.prod(out), math.prod(ks)), 3, which.unsqueeze(-1))
    picked = picked.reshape((n, c) + out)
    return values, (picked if batched else picked.squeeze(0))


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Mirrors torch.nn.functional.fractional_max_pool2d."""
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 2)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:
    """(values, indices). Mirrors torch.nn.functional.fractional_max_pool2d_with_indices."""
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size, output_ratio,
                                True, _random_samples, 2)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Mirrors torch.nn.functional.fractional_max_pool3d."""
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 3)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:
    """(values, indices). Mirrors torch.nn.functional.fractional_max_pool3d_with_indices."""
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size, output_ratio,
                                True, _random_samples, 3)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """(values, indices). Mirrors torch.nn.functional.adaptive_max_pool1d_with_indices."""
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """(values, indices). Mirrors torch.nn.functional.adaptive_max_pool2d_with_indices."""
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """(values, indices). Mirrors torch.nn.functional.adaptive_max_pool3d_with_indices."""
    return adaptive_max_pool3d(input, output_size, return_indices=True)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = True) -> Any:
    """(values, indices). Mirrors torch.nn.functional.max_pool3d_with_indices."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)
