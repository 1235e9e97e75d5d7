"""`TensorAPI`: the Tensor API users write (operators, methods, in-place forms), written once
for every tensor-like type.

Eager's `Tensor` and static's `Tracer` both inherit it, so the same user source runs in
both modes and a method added here exists in both. Everything here is expressed in ops
(through `eager._functional` or the op records), never in arrays; what differs between
the two types is behind two hooks, as JAX's tracers implement one array API over
`bind` and tinygrad's `ElementwiseMixin` over `_apply_uop`:

- `_apply_op(op, operands, attrs)`: apply an op record. Eager runs it and records its
  backward node (`eager._dispatch.dispatch`); the tracer appends an IR node
  (`static.tracer.record`). The operators call it directly (one call per operator: this
  is eager's hot path).
- `_apply_inplace(fn, others, name, ...)`: store `fn(self, *others)` into this tensor. Eager
  writes the buffer and rebases the autograd history (`eager._inplace.apply_inplace`);
  the tracer makes the tensor name the new value (functionalization).

Only metadata (`shape`, `dtype`, `ndim`, `device`) and what needs data or memory
(`item`, `numpy`, `view`'s sharing check, `__setitem__`, fills) stay on each type.

The API is split by job, one module each: `hooks` (the two hooks and what the parts may
assume), `operators`, `methods` (written by hand), `conversions` (dtypes, new tensors) and
`inplace` (the in-place table); the methods and in-place forms of the pointwise records are
generated from each record's `surface` (`eager._surface`) and added here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .conversions import TensorConversions
from .hooks import TensorHooks
from .inplace import TensorInPlace, _InPlace
from .methods import TensorMethods
from .operators import TensorOperators


class TensorAPI(TensorOperators, TensorMethods, TensorConversions, TensorInPlace):
    """The Tensor API shared by eager tensors and static's tracer values (see the module
    docstring for the two hooks a subclass defines)."""

    __slots__ = ()

    if TYPE_CHECKING:
        # the methods and in-place forms generated from the op records (below) are made at
        # import time, so a type checker cannot list them: it types them as Any
        def __getattr__(self, name: str) -> Any: ...


def inplace_methods() -> dict[str, _InPlace]:
    """The in-place forms that are a function written back (name -> entry), for tests and
    tools that go over all of them."""
    found: dict[str, _InPlace] = {}
    for cls in reversed(TensorAPI.__mro__):
        found.update({name: v for name, v in vars(cls).items() if isinstance(v, _InPlace) and v.name == name})
    return found


# the methods and in-place forms of ops whose record declares them (eager._surface)
from .._surface import install_methods as _install_methods  # noqa: E402

_install_methods(TensorAPI, _InPlace)
# Python's augmented assignments that are generated in-place forms (`x *= y` is `x.mul_(y)`)
_AUGMENTED = {"__imul__": "mul_", "__ipow__": "pow_", "__iadd__": "add_", "__isub__": "sub_",
              "__itruediv__": "div_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_",
              "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
              "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_"}
for _dunder, _inplace in _AUGMENTED.items():
    setattr(TensorAPI, _dunder, TensorAPI.__dict__[_inplace])
del _dunder, _inplace
# (`@=` stays Python's rebinding: PyTorch defines no __imatmul__, so `a @= b` is `a = a @ b`)

__all__ = ["TensorAPI", "TensorHooks", "inplace_methods"]
