"""The operators of the Tensor API (`+`, `-`, `*`, `/`, `**`, `@`, comparisons, bitwise ones,
indexing): each is one call of the type's `_apply_op` hook, or of the functional op where the
operator needs its argument handling (matmul, `&`, `//`, `[]`).

Why apart from the methods: an operator is eager's hot path (`x + y` is one hook call, no
function in between), so this module is kept to that shape and measured with the W4 benchmark.
"""
from __future__ import annotations

import builtins
from typing import Any, TypeVar

from gmops import elementwise as E

from .. import _functional as F
from .hooks import TensorHooks, index_tensor

_T = TypeVar("_T", bound=TensorHooks)


class TensorOperators(TensorHooks):
    """Python's operators on tensors, as PyTorch defines them (elementwise comparisons included)."""

    __slots__ = ()

    def __hash__(self) -> builtins.int:  # defining __eq__ would otherwise make tensors unhashable
        return id(self)

    def __add__(self, other: Any) -> Any:
        return self._apply_op(E.ADD, (self, other), {})

    def __radd__(self, other: Any) -> Any:
        return self._apply_op(E.ADD, (other, self), {})

    def __sub__(self, other: Any) -> Any:
        F.check_sub(self, other)
        return self._apply_op(E.SUB, (self, other), {})

    def __rsub__(self, other: Any) -> Any:
        F.check_sub(self, other)
        return self._apply_op(E.RSUB, (self, other), {})

    def __mul__(self, other: Any) -> Any:
        return self._apply_op(E.MUL, (self, other), {})

    def __rmul__(self, other: Any) -> Any:
        return self._apply_op(E.MUL, (other, self), {})

    def __truediv__(self, other: Any) -> Any:
        return self._apply_op(E.DIV, (self, other), {})

    def __rtruediv__(self, other: Any) -> Any:
        return self._apply_op(E.DIV, (other, self), {})

    def __pow__(self, other: Any) -> Any:
        return self._apply_op(E.POW, (self, other), {})

    def __rpow__(self, other: Any) -> Any:
        return self._apply_op(E.POW, (other, self), {})

    def __neg__(self) -> Any:
        return self._apply_op(E.NEG, (self,), {})  # (the record refuses bool, as PyTorch)

    def __pos__(self: _T) -> _T:
        return self

    def __abs__(self) -> Any:
        return self._apply_op(E.ABS, (self,), {})

    def __matmul__(self, other: Any) -> Any:
        return F.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return F.matmul(other, self)

    def __eq__(self, other: Any) -> Any:  # elementwise, as in PyTorch
        return self._apply_op(E.EQ, (self, other), {})

    def __ne__(self, other: Any) -> Any:
        return self._apply_op(E.NE, (self, other), {})

    def __lt__(self, other: Any) -> Any:
        return self._apply_op(E.LT, (self, other), {})

    def __le__(self, other: Any) -> Any:
        return self._apply_op(E.LE, (self, other), {})

    def __gt__(self, other: Any) -> Any:
        return self._apply_op(E.GT, (self, other), {})

    def __ge__(self, other: Any) -> Any:
        return self._apply_op(E.GE, (self, other), {})

    def __and__(self, other: Any) -> Any:
        return F.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Any:
        return F.bitwise_and(self, other)

    def __or__(self, other: Any) -> Any:
        return F.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Any:
        return F.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Any:
        return F.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Any:
        return F.bitwise_xor(other, self)

    def __lshift__(self, other: Any) -> Any:
        return F.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> Any:
        return F.bitwise_left_shift(other, self)

    def __rshift__(self, other: Any) -> Any:
        return F.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> Any:
        return F.bitwise_right_shift(other, self)

    def __invert__(self) -> Any:
        if getattr(self.dtype, "is_floating_point", False):  # PyTorch's message for the operator
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return F.bitwise_not(self)

    def __floordiv__(self, other: Any) -> Any:
        return F.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return F.floor_divide(other, self)

    def __mod__(self, other: Any) -> Any:
        return F.remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        return F.remainder(other, self)

    def __getitem__(self, index: Any) -> Any:
        return F.getitem(self, index, index_tensor)
