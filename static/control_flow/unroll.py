"""`scan(..., unroll=k)` and `fori_loop(..., unroll=k)` as JAX runs them: k copies of the body
per iteration of the loop, so a short body gets fewer, larger steps (more for fusion to work
on, fewer trips through the loop's driver), with the values of the rolled loop.

JAX's semantics (jax.lax.scan's `_scan_impl`): `unroll=True` (or 0) unrolls the whole loop,
`False` (or 1) leaves it rolled. Otherwise the loop makes `length // k` trips of k steps and the
`length % k` steps left over run unrolled after it (before it, in index order, for a reverse
scan, which walks the indices downwards); a loop of exactly one trip is unrolled whole. The
unrolled steps record the user's function straight into the enclosing trace: no loop node.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import eager

from ..tracing import pytree
from .body import _flatten, check_step


def unroll_factor(unroll: Any, length: int, where: str) -> int:
    """The number of body copies per trip: JAX's normalization (True: all, False: 1), with its
    errors for anything but a bool or a non-negative int."""
    if isinstance(unroll, (bool, np.bool_)):
        return max(length, 1) if unroll else 1
    if not isinstance(unroll, (int, np.integer)):
        raise TypeError(f"{where}: the `unroll` argument expects a concrete `int` or `bool` value, got "
                        f"{type(unroll).__name__}")
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    return int(unroll)


def _stack(leaves: list) -> Any:
    return eager.stack([eager.tensor(v) if isinstance(v, (bool, int, float)) else v for v in leaves])


def _steps(f: Callable, carry: Any, x_leaves: list, x_tree: Any, has_xs: bool, count: int, reverse: bool,
           loc: str) -> tuple[Any, Any]:
    """`count` steps of `f` recorded in the enclosing trace on the leading `count` slices of
    `x_leaves` (in reverse order for a reverse scan); the ys stacked in index order. Each
    step's carry is checked against the one before it, as the rolled loop checks its body."""
    ys: list = []
    y_tree = None
    for step in range(count):
        i = count - 1 - step if reverse else step
        x = pytree.unflatten(x_tree, [v[i] for v in x_leaves]) if has_xs else None
        res = f(carry, x)
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"{loc}: scan body output must be a pair (carry, y), got {type(res).__name__}")
        new, y = res
        check_step("scan body", loc, carry, new)
        carry = new
        leaves, y_tree = _flatten(y)
        ys.append(leaves)
    if reverse:
        ys.reverse()
    stacked = [_stack([row[k] for row in ys]) for k in range(len(ys[0]))] if ys else []
    return carry, pytree.unflatten(y_tree, stacked) if y_tree is not None else None


def unrolled_scan(scan: Callable, f: Callable, init: Any, xs: Any, x_leaves: list, x_tree: Any, n: int,
                  reverse: bool, k: int, loc: str) -> tuple[Any, Any]:
    """scan with k body copies per trip (see the module docstring); `scan` is the rolled
    scan, which runs the trips."""
    trips, rem = (0, n) if k == 0 else divmod(n, k)
    if trips == 1 and rem == 0:  # one trip: unrolled whole, as JAX does
        trips, rem = 0, n
    has_xs = xs is not None
    main, tail = list(x_leaves), list(x_leaves)
    if rem and trips:
        cut = trips * k if not reverse else rem
        main, tail = [x[:cut] for x in x_leaves], [x[cut:] for x in x_leaves]
        if reverse:
            main, tail = tail, main
    carry, ys_main = init, None
    if trips:
        def block(c: Any, xb: Any) -> tuple[Any, Any]:
            leaves = _flatten(xb)[0] if has_xs else []
            return _steps(f, c, leaves, x_tree, has_xs, k, reverse, loc)

        blocks = [x.reshape((trips, k) + tuple(x.shape[1:])) for x in main]
        carry, ys_main = scan(block, carry, pytree.unflatten(x_tree, blocks) if has_xs else None, length=trips,
                              reverse=reverse)
    ys_rem = None
    if rem:
        carry, ys_rem = _steps(f, carry, tail, x_tree, has_xs, rem, reverse, loc)
    if ys_main is None:
        return carry, ys_rem
    main_leaves, y_tree = _flatten(ys_main)
    flat = [y.reshape((trips * k,) + tuple(y.shape[2:])) for y in main_leaves]
    if ys_rem is not None:
        rem_leaves = _flatten(ys_rem)[0]
        flat = [eager.cat([r, m] if reverse else [m, r]) for m, r in zip(flat, rem_leaves)]
    return carry, pytree.unflatten(y_tree, flat)
