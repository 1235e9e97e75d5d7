"""The in-place forms of the Tensor API (`x.add_(y)`, `x += y`, `x.scatter_(...)`): each
is its out-of-place function's result stored back into the tensor through the type's
`_apply_inplace` hook (eager writes the buffer and rebases the autograd history, the tracer
makes the tensor name the new value).

Why one table: every in-place form is the same three facts (the function, whether its
backward reads the old value, the name), so `_InPlace` holds them and this module lists the
forms written by hand; the pointwise records' forms are generated (`eager._surface`).
"""
from __future__ import annotations

import builtins
from collections.abc import Callable
from types import MethodType
from typing import Any, TypeVar

from .. import _functional as F
from .hooks import TensorHooks

_T = TypeVar("_T", bound=TensorHooks)


class _InPlace:
    """An in-place method that stores its out-of-place function's result into the tensor
    (`x.add_(y)` is `x = add(x, y)` written back), through the type's `_apply_inplace` hook.

    `saves_self`: the function's backward reads its first operand, so eager must keep a
    copy of the old value when the write is recorded. The attribute's name (set when the
    class is made) is the method's name in messages; an alias (`__iadd__ = add_`) keeps it."""

    def __init__(self, fn: Callable[..., Any], saves_self: bool) -> None:
        self.fn = fn
        self.saves_self = saves_self
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        if not self.name:
            self.name = self.__name__ = name
            self.__qualname__ = f"{owner.__qualname__}.{name}"
            self.__doc__ = f"In-place {name[:-1]}: writes the result into this tensor. Mirrors torch.Tensor.{name}."

    def __get__(self, obj: TensorHooks | None, owner: type | None = None) -> Any:
        return self if obj is None else MethodType(self, obj)

    def __call__(self, tensor: TensorHooks, *args: Any, **kwargs: Any) -> Any:
        fn = self.fn
        if kwargs:
            return tensor._apply_inplace(lambda s, *o: fn(s, *o, **kwargs), args, self.name, self.saves_self)
        return tensor._apply_inplace(fn, args, self.name, self.saves_self)


def _masked_fill(input: Any, mask: Any, value: Any) -> Any:
    return F.where(mask, value, input)

class TensorInPlace(TensorHooks):
    """The in-place forms written by hand (the records' generated ones are added to TensorAPI)."""

    __slots__ = ()

    masked_fill_ = _InPlace(_masked_fill, saves_self=False)
    scatter_reduce_ = _InPlace(F.scatter_reduce, saves_self=True)
    addcmul_ = _InPlace(F.addcmul, saves_self=False)
    addcdiv_ = _InPlace(F.addcdiv, saves_self=False)
    index_copy_ = _InPlace(F.index_copy, saves_self=False)
    index_reduce_ = _InPlace(F.index_reduce, saves_self=True)
    masked_scatter_ = _InPlace(F.masked_scatter, saves_self=False)
    put_ = _InPlace(F.put, saves_self=False)

    def polygamma_(self: _T, n: builtins.int) -> _T:
        """In-place polygamma(n, self). Mirrors torch.Tensor.polygamma_."""
        from .._functional.gamma_family import polygamma  # noqa: PLC0415

        return self._apply_inplace(lambda s: polygamma(n, s), (), "polygamma_", saves_self=True)

    def mvlgamma_(self: _T, p: builtins.int) -> _T:
        """In-place mvlgamma(self, p). Mirrors torch.Tensor.mvlgamma_."""
        from .._functional.gamma_family import mvlgamma  # noqa: PLC0415

        return self._apply_inplace(lambda s: mvlgamma(s, p), (), "mvlgamma_", saves_self=True)

    def igamma_(self: _T, other: Any) -> _T:
        """In-place igamma(self, other). Mirrors torch.Tensor.igamma_."""
        from .._functional.gamma_family import igamma  # noqa: PLC0415

        return self._apply_inplace(igamma, (other,), "igamma_", saves_self=True)

    def igammac_(self: _T, other: Any) -> _T:
        """In-place igammac(self, other). Mirrors torch.Tensor.igammac_."""
        from .._functional.gamma_family import igammac  # noqa: PLC0415

        return self._apply_inplace(igammac, (other,), "igammac_", saves_self=True)

    def scatter_(self: _T, dim: builtins.int, index: Any, src: Any = None, value: Any = None, *,
                 reduce: str | None = None) -> _T:
        """In-place scatter: write `src` (or `value`) at `index` along `dim`. Mirrors torch.Tensor.scatter_."""
        source = src if src is not None else value
        if isinstance(source, TensorHooks):
            return self._apply_inplace(lambda s, o: F.scatter(s, dim, index, o, reduce=reduce), (source,), "scatter_",
                                 saves_self=False)
        return self._apply_inplace(lambda s: F.scatter(s, dim, index, value=source, reduce=reduce), (), "scatter_",
                             saves_self=False)

    def scatter_add_(self: _T, dim: builtins.int, index: Any, src: Any) -> _T:
        """In-place scatter_add: add `src` at `index` along `dim`. Mirrors torch.Tensor.scatter_add_."""
        return self._apply_inplace(lambda s, o: F.scatter_add(s, dim, index, o), (src,), "scatter_add_", saves_self=False)

    def index_add_(self: _T, dim: builtins.int, index: Any, source: Any, *, alpha: Any = 1) -> _T:
        """In-place index_add: add `alpha * source` at `index` along `dim`. Mirrors torch.Tensor.index_add_."""
        return self._apply_inplace(lambda s, o: F.index_add(s, dim, index, o, alpha=alpha), (source,), "index_add_",
                             saves_self=False)

    def index_fill_(self: _T, dim: builtins.int, index: Any, value: Any) -> _T:
        """In-place index_fill: `value` at every position whose index along `dim` is in `index`.
        Mirrors torch.Tensor.index_fill_."""
        if isinstance(value, TensorHooks):
            return self._apply_inplace(lambda s, v: F.index_fill(s, dim, index, v), (value,), "index_fill_",
                                       saves_self=False)
        return self._apply_inplace(lambda s: F.index_fill(s, dim, index, value), (), "index_fill_", saves_self=False)

    def fill_diagonal_(self: _T, fill_value: Any, wrap: builtins.bool = False) -> _T:
        """Write fill_value on the main diagonal (all dims equal beyond 2-d; a tall matrix
        restarts it every cols + 1 rows with wrap). Mirrors torch.Tensor.fill_diagonal_."""
        from .._factories import tensor  # noqa: PLC0415

        mask = tensor(F.diagonal_mask("fill_diagonal_", tuple(self.shape), wrap), device=self.device)
        return self._apply_inplace(lambda s: F.masked_fill(s, mask, fill_value), (), "fill_diagonal_",
                                   saves_self=False)

    def index_put_(self: _T, indices: Any, values: Any, accumulate: builtins.bool = False) -> _T:
        """In-place index_put: write (or with accumulate, add) values at the positions the
        tuple of index tensors picks. Mirrors torch.Tensor.index_put_."""
        return self._apply_inplace(lambda s, v: F.index_put(s, indices, v, accumulate), (values,), "index_put_",
                                   saves_self=False)

    def index_put(self, indices: Any, values: Any, accumulate: builtins.bool = False) -> Any:
        """A copy with values written (added, with accumulate) at the indexed positions.
        Mirrors torch.Tensor.index_put."""
        return F.index_put(self, indices, values, accumulate)

    def histc(self, bins: builtins.int = 100, min: Any = 0, max: Any = 0) -> Any:  # noqa: A002
        """Counts in equal-width bins over [min, max]. Mirrors torch.Tensor.histc."""
        return F.histc(self, bins, min, max)

    def tril_(self: _T, diagonal: builtins.int = 0) -> _T:
        """In-place tril: zero the elements above the `diagonal`-th diagonal. Mirrors torch.Tensor.tril_."""
        return self._apply_inplace(lambda s: F.tril(s, diagonal), (), "tril_", saves_self=False)

    def triu_(self: _T, diagonal: builtins.int = 0) -> _T:
        """In-place triu: zero the elements below the `diagonal`-th diagonal. Mirrors torch.Tensor.triu_."""
        return self._apply_inplace(lambda s: F.triu(s, diagonal), (), "triu_", saves_self=False)

    def lerp_(self: _T, end: Any, weight: Any) -> _T:
        """In-place lerp: self + weight * (end - self). Mirrors torch.Tensor.lerp_."""
        return self._apply_inplace(lambda s, e: F.lerp(s, e, weight), (end,), "lerp_", saves_self=False)

