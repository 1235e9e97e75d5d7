"""Flattening nested tuples/lists/dicts of leaves, and building them back (JAX's pytrees,
in miniature). The structure is hashable so it can be part of a cache key."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def flatten(tree, is_leaf: Callable[[Any], bool]) -> tuple[list, Any]:
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
            keys = tuple(sorted(node, key=repr))
            return ("dict", keys, tuple(walk(node[k]) for k in keys))
        if node is None:
            return ("none",)
        leaves.append(node)
        return ("leaf",)

    return leaves, walk(tree)


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
    return {k: _build(x, it) for k, x in zip(s[1], s[2])}
