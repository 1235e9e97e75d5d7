"""Flattening nested tuples/lists/dicts of leaves, and building them back (JAX's pytrees,
in miniature). The structure is hashable so it can be part of a cache key."""
from __future__ import annotations

from typing import Any, Callable


def flatten(tree, is_leaf: Callable[[Any], bool]) -> tuple[list, Any]:
    leaves: list = []

    def walk(node):
        if isinstance(node, tuple) and not is_leaf(node) and not hasattr(node, "_fields"):
            return ("tuple", tuple(walk(x) for x in node))
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            return ("namedtuple", type(node), tuple(walk(x) for x in node))
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
    it = iter(leaves)

    def build(s):
        kind = s[0]
        if kind == "leaf":
            return next(it)
        if kind == "none":
            return None
        if kind == "tuple":
            return tuple(build(x) for x in s[1])
        if kind == "namedtuple":
            return s[1](*(build(x) for x in s[2]))
        if kind == "list":
            return [build(x) for x in s[1]]
        return {k: build(x) for k, x in zip(s[1], s[2])}

    return build(structure)
