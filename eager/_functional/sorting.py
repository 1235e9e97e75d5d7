"""Sorting, selection and searching of eager's functional surface: sort, argsort, topk,
kthvalue, median, searchsorted, bucketize."""
from __future__ import annotations

from typing import Any

import numpy as np

from gmops import indexing as I
from gmops import math_ops as M
from gmops._checks import norm_dim

from ..return_types import make as _return_type
from ._common import _host, _ndim, _renamed
from .elementwise import clone
from .shape_ops import narrow, reshape, squeeze

return_types_sort = _return_type("sort")  # torch.return_types.sort
return_types_topk = _return_type("topk")  # torch.return_types.topk
return_types_kthvalue = _return_type("kthvalue")  # torch.return_types.kthvalue
return_types_median = _return_type("median")  # torch.return_types.median


def argsort(input, dim=-1, descending=False, stable=False):
    """Always stable here (a valid answer for stable=False too)."""
    return M.ARGSORT(input, dim=norm_dim("argsort", dim, _ndim(input)), descending=bool(descending))


def sort(input, dim=-1, descending=False, stable=False):
    """The values sorted along `dim` and their original indices, as a (values, indices) named tuple.

    Mirrors torch.sort."""
    d = norm_dim("sort", dim, _ndim(input))
    if _ndim(input) == 0:
        return return_types_sort(input * 1 if input.is_floating_point() else clone(input), M.ARGSORT(input, dim=0))
    index = M.ARGSORT(input, dim=d, descending=bool(descending))
    return return_types_sort(_renamed(I.GATHER(input, index, dim=d), "SortBackward0"), index)


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The `k` largest (or smallest) values along `dim` and their indices, as a (values, indices) named tuple.

    Mirrors torch.topk."""
    d = norm_dim("topk", dim, _ndim(input))
    n = input.shape[d] if _ndim(input) else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k ({k}) out of range for a dimension of size {n}")
    index = narrow(M.ARGSORT(input, dim=d, descending=bool(largest)), d, 0, k)
    return return_types_topk(_renamed(I.GATHER(input, index, dim=d), "TopkBackward0"), index)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element (k counts from 1) along dim, and its index."""
    d = norm_dim("kthvalue", dim, _ndim(input))
    n = input.shape[d]
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    index = narrow(M.ARGSORT(input, dim=d), d, k - 1, 1)
    values = _renamed(I.GATHER(input, index, dim=d), "KthvalueBackward0")
    if not keepdim:
        values, index = squeeze(values, d), squeeze(index, d)
    return return_types_kthvalue(values, index)


def median(input, dim=None, keepdim=False):
    """The lower median (of an even count, the smaller middle value), as PyTorch's."""
    if dim is None:
        flat = reshape(input, -1)
        out = kthvalue(flat, (flat.shape[0] - 1) // 2 + 1, 0).values
        return _renamed(out, "MedianBackward0")
    d = norm_dim("median", dim, _ndim(input))
    values, index = kthvalue(input, (input.shape[d] - 1) // 2 + 1, d, keepdim)
    return return_types_median(_renamed(values, "MedianBackward1"), index)


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side: str | None = None,
                 sorter=None):
    """For each value, the index where it would be inserted into the sorted last dimension of
    sorted_sequence (the first such index; the last with right=True or side="right"); a 1-d
    sequence serves every value, an N-d one pairs its rows with input's. No gradient (indices).
    Mirrors torch.searchsorted."""
    from .._factories import tensor  # noqa: PLC0415

    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = _host(sorted_sequence)
    values = _host(input)
    if sorter is not None:
        seq = np.take_along_axis(seq, _host(sorter), -1)
    how: Any = "right" if right else "left"
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=how)
    else:
        if seq.shape[:-1] != values.shape[:-1]:
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               f"dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
        flat_seq, flat_val = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
        out = np.stack([np.searchsorted(r, v, side=how) for r, v in zip(flat_seq, flat_val)]).reshape(values.shape)
    result = tensor(out.astype(np.int32 if out_int32 else np.int64))
    device = getattr(input, "device", None) or getattr(sorted_sequence, "device", None)
    return result if device is None or device.type == "cpu" else result.to(device)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """The bucket of each value among the 1-d sorted boundaries: i with boundaries[i-1] < x <=
    boundaries[i] (boundaries[i-1] <= x < boundaries[i] with right=True). Mirrors torch.bucketize."""
    if _ndim(boundaries) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({_ndim(boundaries)})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
