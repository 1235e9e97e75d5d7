"""torch.histogramdd: the D-dimensional histogram of the rows of a (..., D) tensor.

Per dimension the edges are torch.histogram's (its linspace in the input dtype over `range` or the
values' min and max, or the given edge tensor) and a value lands in bin searchsorted(edges,
v, right) - 1 with the last bin closed on the right, as in torch.histogram; a row outside any
dimension's edges is not counted. Reads values (no gradient, as PyTorch's)."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .._functional.statistics import _linspace, _value_range
from ..return_types import make


def _edges(d: int, column: np.ndarray, bins: Any, lo_hi: tuple[float, float] | None, npdt: np.dtype) -> np.ndarray:
    if hasattr(bins, "shape"):
        if bins.dim() != 1 or bins.numel() < 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension and at least 1 entry, but "
                               f"got a tensor with {bins.dim()} dimensions for dimension {d}")
        return bins.detach().numpy().astype(npdt)
    nbins = int(bins)
    if nbins <= 0:
        raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {nbins} for dimension {d}")
    lo, hi = _value_range(column, lo_hi, d)
    return _linspace(lo, hi, nbins + 1, npdt)


def histogramdd(input: Any, bins: Any = 10, *, range: Any = None, weight: Any = None,  # noqa: A002
                density: bool = False) -> Any:
    """(hist, bin_edges): counts (or weight sums) of the rows of a (..., D) tensor in a D-dimensional grid of
    bins; bins is an int, D ints, or D edge tensors; range is (min0, max0, min1, max1, ...).
    Mirrors torch.histogramdd."""
    from .. import tensor as _tensor  # noqa: PLC0415

    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype}'")
    if input.dim() < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension, but got 0")
    data = input.detach().numpy()
    npdt = data.dtype
    dims = data.shape[-1]
    rows = data.reshape(-1, dims).astype(np.float64)
    if isinstance(bins, (builtins.int, np.integer)):
        per_dim: list[Any] = [int(bins)] * dims
    else:
        per_dim = list(bins)
    if len(per_dim) != dims:
        raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for each of the {dims} "
                           f"dimensions of the input, but got {len(per_dim)}")
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have {2 * dims} "
                           f"elements, but got {len(range)}")
    w = None
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               f"the input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
        w = weight.detach().numpy().reshape(-1).astype(np.float64)
    edges = [_edges(d, rows[:, d], per_dim[d],
                    None if range is None else (float(range[2 * d]), float(range[2 * d + 1])), npdt)
             for d in builtins.range(dims)]
    shape = tuple(max(len(e) - 1, 0) for e in edges)
    hist = np.zeros(shape, dtype=np.float64)
    keep = np.ones(rows.shape[0], dtype=bool)
    where = []
    for d, e in enumerate(edges):
        e64 = e.astype(np.float64)
        col = rows[:, d]
        keep &= (col >= e64[0]) & (col <= e64[-1]) if len(e64) > 1 else False
        where.append(np.minimum(np.searchsorted(e64, col, side="right") - 1, max(len(e64) - 2, 0)))
    if keep.any():
        np.add.at(hist, tuple(p[keep] for p in where), 1.0 if w is None else w[keep])
    if density:
        total = hist.sum()
        volume = np.ones(shape)
        for d, e in enumerate(edges):
            widths = np.diff(e.astype(np.float64)).reshape([-1 if i == d else 1 for i in builtins.range(dims)])
            volume = volume * widths
        hist = hist / (total * volume) if total else hist * np.nan
    result = make("histogramdd", ("hist", "bin_edges"))
    return result(_tensor(hist.astype(npdt), dtype=input.dtype),
                  tuple(_tensor(e, dtype=input.dtype) for e in edges))
