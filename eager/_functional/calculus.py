"""torch.gradient: central differences of sampled values along one or more dims, with
first- or second-order one-sided differences at the edges, over uniform spacing or given
coordinates (NumPy's gradient, which PyTorch follows).

Why slices and products: each estimate is a weighted sum of shifted slices (narrow), so it
is differentiable and traces; coordinate weights are computed on the host once.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops._checks import norm_dim

from ._common import _host, _ndim
from .elementwise import to_dtype
from .shape_ops import cat, narrow, reshape


def _weights(values: np.ndarray, dim: int, nd: int, like: Any) -> Any:
    from .._factories import tensor  # noqa: PLC0415

    shape = [1] * nd
    shape[dim] = values.shape[0]
    return tensor(values.reshape(shape), dtype=like.dtype, device=like.device)


def _along(f: Any, dim: int, h: Any, edge_order: int) -> Any:
    """The derivative estimate along `dim`: h a number (uniform spacing) or the 1-d
    coordinates as a NumPy array."""
    n = f.shape[dim]

    def sl(start: int, length: int) -> Any:
        return narrow(f, dim, start % n if start < 0 else start, length)

    if not isinstance(h, np.ndarray):
        h = float(h)
        inner = (sl(2, n - 2) - sl(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first = (sl(1, 1) - sl(0, 1)) / h
            last = (sl(-1, 1) - sl(-2, 1)) / h
        else:
            first = (sl(0, 1) * -1.5 + sl(1, 1) * 2.0 - sl(2, 1) * 0.5) / h
            last = (sl(-3, 1) * 0.5 - sl(-2, 1) * 2.0 + sl(-1, 1) * 1.5) / h
        return cat([first, inner, last], dim)
    nd = _ndim(f)
    dx = np.diff(h.astype(np.float64))
    d1, d2 = dx[:-1], dx[1:]
    a = -d2 / (d1 * (d1 + d2))
    b = (d2 - d1) / (d1 * d2)
    c = d1 / (d2 * (d1 + d2))
    inner = sl(0, n - 2) * _weights(a, dim, nd, f) + sl(1, n - 2) * _weights(b, dim, nd, f) \
        + sl(2, n - 2) * _weights(c, dim, nd, f)
    if edge_order == 1:
        first = (sl(1, 1) - sl(0, 1)) / float(dx[0])
        last = (sl(-1, 1) - sl(-2, 1)) / float(dx[-1])
    else:
        p, q = float(dx[0]), float(dx[1])
        first = sl(0, 1) * (-(2 * p + q) / (p * (p + q))) + sl(1, 1) * ((p + q) / (p * q)) \
            + sl(2, 1) * (-p / (q * (p + q)))
        p, q = float(dx[-2]), float(dx[-1])
        last = sl(-3, 1) * (q / (p * (p + q))) + sl(-2, 1) * (-(q + p) / (p * q)) \
            + sl(-1, 1) * ((2 * q + p) / (q * (p + q)))
    return cat([first, inner, last], dim)


def gradient(input: Any, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple:
    """The estimated partial derivatives of the sampled function input, one tensor per dim
    (all, or those in `dim`). `spacing`: a number (every dim), a list of numbers (one per dim)
    or a list of 1-d coordinate tensors. Mirrors torch.gradient."""
    nd = _ndim(input)
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, int):
        dims = [norm_dim("gradient", dim, nd)]
    else:
        dims = [norm_dim("gradient", d, nd) for d in dim]
    repeated = [d for k, d in enumerate(dims) if d in dims[:k]]
    if repeated:
        raise RuntimeError(f"dim {repeated[0]} appears multiple times in the list of dims")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            where = (f"'self.dim() = {nd}', since dim argument was not given" if dim is None else
                     f"'len(dim) = {len(dims)}'")
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to {where}, but got a list of length {len(spacing)}")
        steps = list(spacing)
    else:
        if hasattr(spacing, "shape"):
            if _ndim(spacing) != 0:
                raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a list")
            spacing = _host(spacing).item()
        steps = [spacing] * len(dims)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    f = input if input.dtype.is_floating_point or getattr(input.dtype, "is_complex", False) else \
        to_dtype(input, _dtypes.DEFAULT_FLOAT)
    out = []
    for d, h in zip(dims, steps):
        if hasattr(h, "shape"):
            if _ndim(h) == 0:
                h = _host(h).item()
            else:
                coords = _host(h).reshape(-1)
                if coords.shape[0] != input.shape[d]:
                    raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and to have "
                                       f"as many elements as the size of the dimension {d}, but got a tensor of "
                                       f"{coords.shape[0]} elements for a dimension of size {input.shape[d]}")
                h = coords
        out.append(_along(f, d, h, edge_order))
    return tuple(reshape(o, *input.shape) for o in out)
