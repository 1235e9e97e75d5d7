"""Flattening nested tuples/lists/dicts of leaves, and building them back (JAX's pytrees,
in miniature). The structure is hashable so it can be part of a cache key."""
from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any


def flatten(tree, is_leaf: Callable[[Any], bool], objects: bool = False) -> tuple[list, Any]:
    """Leaves and structure. `objects`: dataclass instances and plain user objects are nodes
    too (a compiled function's result: a dataclass of tensors comes back as one, holding this
    call's tensors, not the trace's values); elsewhere they are leaves."""
    leaves: list = []

    def walk(node):
        if type(node) is tuple and not is_leaf(node):
            return ("tuple", tuple(walk(x) for x in node))
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            return ("namedtuple", type(node), tuple(walk(x) for x in node))
        if isinstance(node, tuple) and type(node).__new__ is tuple.__new__:  # a plain subclass: eager.Size
            return ("tuple_of", type(node), tuple(walk(x) for x in node))
        if isinstance(node, tuple) and not is_leaf(node):
            return ("tuple", tuple(walk(x) for x in node))
        if isinstance(node, list):
            return ("list", tuple(walk(x) for x in node))
        if isinstance(node, dict):
            # insertion order, as the eager function returns it (a compiled function's dict
            # must read like eager's); two orders of the same keys are two structures
            keys = tuple(node)
            return ("dict", keys, tuple(walk(node[k]) for k in keys))
        if node is None:
            return ("none",)
        if objects and not is_leaf(node) and _is_object_node(node):
            if dataclasses.is_dataclass(node):
                names = tuple(f.name for f in dataclasses.fields(node))
                return ("dataclass", type(node), names, tuple(walk(getattr(node, n)) for n in names))
            names = tuple(node.__dict__)
            return ("object", type(node), names, tuple(walk(node.__dict__[n]) for n in names))
        leaves.append(node)
        return ("leaf",)

    return leaves, walk(tree)


def _is_object_node(node) -> bool:
    """A dataclass instance, or an instance of a user's class with a __dict__ (not a tensor,
    array, module, function or class)."""
    if isinstance(node, type) or callable(node) or not hasattr(node, "__dict__"):
        return False
    from .guards import is_module, is_plain_object  # noqa: PLC0415
    from .side_effects import holds_tracer  # noqa: PLC0415

    plain = dataclasses.is_dataclass(node) or is_plain_object(node) or type(node) is types.SimpleNamespace
    if not plain or is_module(node) or hasattr(node, "_data"):
        return False
    # only when it holds traced values: an object returned as it is (a config) stays itself
    return any(holds_tracer(v) for v in vars(node).values())


def _rebuilt(kind: str, cls: type, names: tuple, values: list) -> Any:
    obj: Any = cls.__new__(cls)  # type: ignore[call-overload]  # (a class's own __new__: SimpleNamespace's)
    for name, value in zip(names, values):
        object.__setattr__(obj, name, value)
    return obj


def unflatten(structure, leaves) -> Any:
    return _build(structure, iter(leaves))


def _build(s, it) -> Any:
    # a module-level function, not a closure: a recursive closure is a reference cycle, which
    # would leave every compiled call's outputs to the cyclic garbage collector
    kind = s[0]
    if kind == "leaf":
        return next(it)
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple(_build(x, it) for x in s[1])
    if kind == "tuple_of":
        return s[1](_build(x, it) for x in s[2])
    if kind == "namedtuple":
        return s[1](*(_build(x, it) for x in s[2]))
    if kind == "list":
        return [_build(x, it) for x in s[1]]
    if kind in ("dataclass", "object"):
        return _rebuilt(kind, s[1], s[2], [_build(x, it) for x in s[3]])
    return {k: _build(x, it) for k, x in zip(s[1], s[2])}
