"""Helpers shared by the families of `eager.nn.functional`: reduction names, argument
pairs, value ranges read for input checks."""
from __future__ import annotations

from ..._tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


def _data_range(t) -> tuple | None:
    """(min, max) of an eager tensor's values for input checks, read from its array (no
    op is recorded, so a trace that captured the tensor is not asked for data); None for
    a traced value or an empty tensor, which skip the check."""
    if not isinstance(t, Tensor) or t._data.size == 0:
        return None
    return t._data.min().item(), t._data.max().item()


def _pair(v, n: int = 2) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _index_tensor(array, like: Tensor) -> Tensor:
    from ..._factories import tensor as _tensor  # noqa: PLC0415

    return _tensor(array, device=like.device)
