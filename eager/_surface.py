"""The Python surface of ops whose record declares one (`OpDef.surface`): the function
`eager.<name>`, the method `Tensor.<name>` and the in-place form `Tensor.<name>_`, generated
from the record instead of written by hand in three files.

Why: a pointwise op used to be spelled in the record, in `_functional`, in `_api` (method and
in-place form) and in `__init__`'s export list. Generated here, adding one is its record: the
function's docstring names the PyTorch function it mirrors, the in-place form keeps a copy of
the old value exactly when the op's backward reads its operand (`0 in op.save`), and static's
tracer values get the same methods (they share `TensorAPI`). Names written by hand always win:
generation never replaces an existing attribute.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .ops import REGISTRY, OpDef

KINDS = ("function", "method", "inplace")


def _check(op: OpDef) -> None:
    unknown = set(op.surface) - set(KINDS)
    if unknown:
        raise ValueError(f"op {op.name!r}: surface {sorted(unknown)} is not one of {KINDS}")


def function_for(op: OpDef) -> Callable[..., Any]:
    """`eager.<name>(input, *others, **attrs)`: the op applied (it dispatches on its operands:
    eager tensors, tracer values, batched values)."""

    def fn(*operands: Any, **attrs: Any) -> Any:
        return op(*operands, **attrs)

    fn.__name__ = fn.__qualname__ = op.name
    fn.__module__ = "eager"
    fn.__doc__ = (op.doc or f"{op.name}, elementwise.") + f" Mirrors torch.{op.name}."
    return fn


def functions() -> dict[str, Callable[..., Any]]:
    """The generated functions by name, for every op whose surface has "function"."""
    out = {}
    for op in REGISTRY.values():
        _check(op)
        if "function" in op.surface:
            out[op.name] = function_for(op)
    return out


def export_functions(namespace: dict[str, Any]) -> list[str]:
    """Put the generated functions into a module's namespace (eager's), leaving names it
    already has; returns the names added."""
    added = []
    for name, fn in functions().items():
        if name not in namespace:
            namespace[name] = fn
            added.append(name)
    return added


def install_methods(cls: type, inplace_type: Callable[..., Any]) -> list[str]:
    """Add the generated methods and in-place forms to the Tensor API class; `inplace_type`
    is its in-place descriptor (`_api._InPlace(fn, saves_self)`)."""
    added = []
    for op in REGISTRY.values():
        _check(op)
        fn = function_for(op)
        if "method" in op.surface and not hasattr(cls, op.name):
            method = _method(fn, op)
            setattr(cls, op.name, method)
            added.append(op.name)
        name = op.name + "_"
        if "inplace" in op.surface and not hasattr(cls, name):
            descriptor = inplace_type(fn, saves_self=0 in op.save)
            setattr(cls, name, descriptor)
            descriptor.__set_name__(cls, name)
            added.append(name)
    return added


def _method(fn: Callable[..., Any], op: OpDef) -> Callable[..., Any]:
    def method(self: Any, *others: Any, **attrs: Any) -> Any:
        return fn(self, *others, **attrs)

    method.__name__ = op.name
    method.__qualname__ = f"Tensor.{op.name}"
    method.__doc__ = f"See eager.{op.name}. Mirrors torch.Tensor.{op.name}."
    return method


__all__ = ["KINDS", "export_functions", "function_for", "functions", "install_methods"]
