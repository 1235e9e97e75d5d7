"""The two hooks every tensor-like type defines, and what the Tensor API's parts may assume of
it (`shape`, `dtype`, `ndim`, `device`, `view`): the base of each part of `TensorAPI`.

Why a class of its own: the operators, methods, conversions and in-place forms live in one
module each (split by job), and each is a mixin over this base, so a type checker sees the
hooks in every part and a subclass overrides them in one place.
"""
from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from gmbase import dtypes as _dtypes

if TYPE_CHECKING:
    from gmops._registry import OpDef

    from .._device import device

_T = TypeVar("_T", bound="TensorHooks")


def index_tensor(value: Any) -> Any:
    """An index given as a list, range or array becomes an eager tensor (an integer or mask index)."""
    from .._factories import index_tensor  # noqa: PLC0415  (the factories import Tensor, which imports this)

    return index_tensor(value)


class TensorHooks:
    """What a tensor-like type gives the Tensor API: `_apply_op` and `_apply_inplace` (see
    `eager._api`), and its metadata."""

    __slots__ = ()

    # -- the hooks ------------------------------------------------------------------------------
    @staticmethod
    def _apply_op(op: OpDef, operands: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        """Apply an op record to operands of this type (and Python numbers, other tensors)."""
        raise NotImplementedError

    def _apply_inplace(self: _T, fn: Callable[..., Any], others: tuple[Any, ...], name: str,
                       saves_self: builtins.bool = True, grad_name: str | None = None) -> _T:
        """Store `fn(self, *others)` into this tensor and return it; `grad_name` renames the
        recorded backward node (PyTorch's name of the in-place op's node)."""
        raise NotImplementedError

    # what every type provides (properties or methods of its own)
    if TYPE_CHECKING:
        @property
        def shape(self) -> tuple[builtins.int, ...]: ...
        @property
        def dtype(self) -> _dtypes.dtype: ...
        @property
        def ndim(self) -> builtins.int: ...
        @property
        def device(self) -> device: ...
        def view(self, *shape: Any) -> Any: ...
