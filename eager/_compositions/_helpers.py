"""What the compositions share: tensor tests, result and float dtypes, tensors like another."""
from __future__ import annotations

import math
from typing import Any

from gmbase import dtypes as _dtypes

from .. import _functional as _F
from .._api import TensorAPI

_LN2 = math.log(2.0)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, TensorAPI)


def _result_dtype(*operands: Any) -> _dtypes.dtype:
    """PyTorch's promotion of tensors (dimensioned before 0-d) and Python numbers."""
    dims = [o.dtype for o in operands if _is_tensor(o) and o.ndim > 0]
    zero_dims = [o.dtype for o in operands if _is_tensor(o) and o.ndim == 0]
    scalars = [o for o in operands if not _is_tensor(o)]
    return _dtypes.result_type(dims, zero_dims, scalars)


def _float_dtype(*operands: Any) -> _dtypes.dtype:
    """The promoted dtype, or the default float one where it is bool or integer (PyTorch's
    rule for float-valued functions of integers, such as sin or xlogy)."""
    d = _result_dtype(*operands)
    return d if d.is_floating_point else _dtypes.DEFAULT_FLOAT


def _like(operand: Any, dtype: _dtypes.dtype, device: Any) -> Any:
    """`operand` as a tensor of `dtype` (a Python number becomes a 0-d tensor)."""
    if _is_tensor(operand):
        return _F.to_dtype(operand, dtype)
    from .._factories import tensor  # noqa: PLC0415

    return tensor(operand, dtype=dtype, device=device)


def _device_of(*operands: Any) -> Any:
    for o in operands:
        if _is_tensor(o):
            return o.device
    return None


def _floats_only(name: str, *operands: Any) -> tuple[Any, ...]:
    """The operands as tensors of their promoted floating dtype; an integer or bool result
    dtype raises NotImplementedError, as PyTorch's kernels for these functions do."""
    if not any(_is_tensor(o) for o in operands):
        raise TypeError(f"{name}(): expected at least one tensor argument, got {[type(o).__name__ for o in operands]}")
    d = _result_dtype(*operands)
    if not d.is_floating_point:
        raise NotImplementedError(f'"{name}" not implemented for \'{_dtypes.scalar_type_name(d)}\': {name} needs a '
                                  f"floating-point input; convert it with .float() or .double()")
    device = _device_of(*operands)
    return tuple(_like(o, d, device) for o in operands)


def _floats(*operands: Any) -> tuple[Any, ...]:
    """The operands as tensors of their promoted dtype, the default float one for integers."""
    d = _float_dtype(*operands)
    device = _device_of(*operands)
    return tuple(_like(o, d, device) for o in operands)


def _size(x: Any, dim: int) -> int:
    return int(x.shape[dim])
