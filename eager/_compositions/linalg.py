"""Products as compositions: tensordot, kron and cross."""
from __future__ import annotations

import builtins as _builtins
import math
import warnings
from typing import Any

from gmops._checks import norm_dim

from .. import _functional as _F
from ._helpers import _is_tensor, _size
from .shape_ops import broadcast_tensors


def _tensordot_dims(dims: Any, ndim_a: int, ndim_b: int) -> tuple[list[int], list[int]]:
    if _is_tensor(dims):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > ndim_a or dims > ndim_b:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims} "
                               f"(ndim_a={ndim_a}, ndim_b={ndim_b})")
        return list(range(ndim_a - dims, ndim_a)), list(range(dims))
    if not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise RuntimeError(f"tensordot expects dims to be an int or a pair of dim lists, got {dims!r}")
    first, second = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(first) != len(second):
        raise RuntimeError(f"both dimension lists should have same length, got {len(first)} and {len(second)}")
    return ([norm_dim("tensordot", int(d), ndim_a) for d in first],
            [norm_dim("tensordot", int(d), ndim_b) for d in second])


def tensordot(a: Any, b: Any, dims: Any = 2, out: Any = None) -> Any:
    """The sum of products of a and b over the paired dims (the last `dims` of a with the first
    `dims` of b, or two lists): a's free dims, then b's. Made as permute, reshape and one
    matrix product. Mirrors torch.tensordot."""
    if out is not None:
        raise NotImplementedError("tensordot: out= is not supported; use the returned tensor")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"tensordot: both inputs should have same dtype, got {a.dtype.name} and {b.dtype.name}; "
                           "convert one with .to()")
    dims_a, dims_b = _tensordot_dims(dims, a.ndim, b.ndim)
    contracted = 1
    for da, db in zip(dims_a, dims_b):
        if _size(a, da) != _size(b, db):
            raise RuntimeError(f"contracted dimensions need to match, but first has size {_size(a, da)} in dim {da} "
                               f"and second has size {_size(b, db)} in dim {db}")
        contracted *= _size(a, da)
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    shape_a = [_size(a, d) for d in free_a]
    shape_b = [_size(b, d) for d in free_b]
    left = _F.reshape(_F.permute(a, free_a + dims_a), (math.prod(shape_a), contracted))
    right = _F.reshape(_F.permute(b, dims_b + free_b), (contracted, math.prod(shape_b)))
    return _F.reshape(_F.mm(left, right), tuple(shape_a + shape_b))


def kron(input: Any, other: Any) -> Any:  # noqa: A002
    """The Kronecker product: the block tensor of input[i] * other (the fewer dims padded with
    leading 1s), made as a broadcast product of interleaved reshapes. Mirrors torch.kron."""
    nd = _builtins.max(input.ndim, other.ndim)
    sa = [1] * (nd - input.ndim) + list(input.shape)
    sb = [1] * (nd - other.ndim) + list(other.shape)
    a = _F.reshape(input, tuple(v for s in sa for v in (s, 1)))
    b = _F.reshape(other, tuple(v for s in sb for v in (1, s)))
    return _F.reshape(a * b, tuple(x * y for x, y in zip(sa, sb)))


def _cross(name: str, input: Any, other: Any, dim: int | None) -> Any:  # noqa: A002
    if input.ndim != other.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions (got shapes "
                           f"{tuple(input.shape)} and {tuple(other.shape)}); unsqueeze the smaller one")
    a, b = broadcast_tensors(input, other)
    if dim is None:
        sizes = [d for d in range(a.ndim) if _size(a, d) == 3]
        if not sizes:
            raise RuntimeError(f"{name}: no dimension of size 3 in input (shape {tuple(a.shape)}); pass dim=")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated. Please either pass the dim "
                      "explicitly or simply use torch.linalg.cross.", UserWarning, stacklevel=3)
        d = sizes[0]
    else:
        d = norm_dim(name, dim, a.ndim)
        if _size(input, d) != 3 or _size(other, d) != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {_size(input, d)} "
                               f"and {_size(other, d)}")
    a1, a2, a3 = (_F.narrow(a, d, k, 1) for k in range(3))
    b1, b2, b3 = (_F.narrow(b, d, k, 1) for k in range(3))
    return _F.cat([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)


def cross(input: Any, other: Any, dim: int | None = None) -> Any:  # noqa: A002
    """The cross product of 3-vectors along dim (the first dim of size 3 when None, with
    PyTorch's deprecation warning), batch dims broadcast. Mirrors torch.cross."""
    return _cross("cross", input, other, dim)
