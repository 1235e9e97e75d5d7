"""cond and switch: the branch chosen in Python outside a trace, one `cond` node with every
branch as a body inside one, every branch computed and selected per example under vmap.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eager
from gmbase import dtypes as _dtypes
from gmops.control_flow import COND

from ..ir import Graph, Value
from ..tracing import pytree
from ..tracing.state import ACTIVE, user_location
from ..tracing.tracer import Tracer
from .body import (
    RuleTypeError,
    _as_traced,
    _Body,
    _body_text,
    _flatten,
    _NeedsBatching,
    _spec_of,
    _trace_body,
    _tracing,
    _tree_str,
    _type_name,
)


def _truth(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def _with_consts(body: _Body, consts: list) -> Graph:
    """The body's graph taking all of `consts` (in order) before its parameters."""
    g = body.graph
    n_own = len(body.consts)
    own = dict(zip(body.consts, g.inputs[:n_own]))
    params = g.inputs[n_own:]
    new_inputs = []
    for k, c in enumerate(consts):
        v = own.get(c)
        if v is None:
            v = Value(f"u{k}", c.type)
        new_inputs.append(v)
    g.inputs = new_inputs + list(params)
    return g


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """jax.lax.switch: `branches[index](*operands)`, the index clamped into range."""
    branches = list(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if getattr(type(index), "__graphmode_batched__", False):
        return _select(index, [b(*operands) for b in branches], "switch")
    if not _tracing():
        i = int(_truth(index))
        _check_branches(branches, operands, "switch")
        return branches[min(max(i, 0), len(branches) - 1)](*operands)
    return _cond_traced(index, branches, operands, "switch")


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any, operand: Any = None) -> Any:
    """jax.lax.cond: `true_fun(*operands) if pred else false_fun(*operands)`; traced, only the
    branch taken runs, and both branches must return identical types."""
    if operand is not None:
        operands = (operand,)
    if getattr(type(pred), "__graphmode_batched__", False):  # a batched predicate: both, then select (JAX)
        return _select(pred, [false_fun(*operands), true_fun(*operands)], "cond")
    if not _tracing():
        _check_branches([false_fun, true_fun], operands, "cond")
        return true_fun(*operands) if bool(_truth(pred)) else false_fun(*operands)
    return _cond_traced(pred, [false_fun, true_fun], operands, "cond")


class BranchTypeError(RuleTypeError):
    """Branches whose results differ in structure or type (JAX's TypeError)."""


# (branch code objects, operand types) already checked in eager mode
_CHECKED: set = set()


def _check_branches(branches: list, operands: tuple, kind: str) -> None:
    """Eager mode runs only the branch taken, but JAX checks that every branch gives results of
    the same types: the branches are traced once (no array is computed) on operands of these
    types, raising the traced cond's TypeError naming the user's line. Checked once per
    branch code and operand types; a branch that cannot be traced (Python that needs values)
    is not checked."""
    leaves, tree = _flatten(operands)
    if not all(isinstance(x, (eager.Tensor, np.ndarray, np.generic, bool, int, float)) for x in leaves):
        return
    try:
        key = (kind, tuple(getattr(b, "__code__", b) for b in branches), repr(tree),
               tuple((type(x), tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", ""))) for x in leaves))
        hash(key)
    except TypeError:
        return
    if key in _CHECKED:
        return
    from ..tracing.function import trace  # noqa: PLC0415

    def both(*xs: Any) -> Any:
        ops = pytree.unflatten(tree, list(xs))
        index = eager.tensor(True) if kind == "cond" else eager.tensor(0)
        return _cond_traced(index, branches, tuple(ops), kind)

    try:
        with eager.no_grad():
            trace(both, *leaves)
    except BranchTypeError:
        raise
    except Exception:  # noqa: BLE001 - a branch eager mode can run but not trace: nothing to compare
        pass
    _CHECKED.add(key)


def _select(index: Any, results: list, kind: str) -> Any:
    """Per example, the result of branch `index` (every branch computed): what cond and switch
    become under vmap with a batched predicate."""
    trees = [_flatten(r) for r in results]
    if any(t[1] != trees[0][1] for t in trees):
        raise BranchTypeError(f"{user_location()}: {kind} branch outputs must have the same pytree structure")
    n = len(results)
    if kind == "cond":
        index = index != 0 if index.dtype != _dtypes.bool_ else index
    else:
        index = eager.clamp(index, 0, n - 1)
    out = []
    for k in range(len(trees[0][0])):
        chosen = trees[0][0][k]
        for b in range(1, n):
            take = index if (kind == "cond" and n == 2) else index == b
            chosen = eager.where(take, trees[b][0][k], chosen)
        out.append(chosen)
    return pytree.unflatten(trees[0][1], out)


def _cond_traced(index: Any, branches: list, operands: tuple, kind: str) -> Any:
    loc = user_location()
    state = ACTIVE.stack[-1]
    idx = _as_traced(state, index)
    if idx.shape != ():
        raise TypeError(f"{loc}: Pred must be a scalar, got {_type_name(_spec_of(idx))}" if kind == "cond" else
                        f"{loc}: Branch index must be scalar, got {_type_name(_spec_of(idx))}")
    if idx.dtype.is_floating_point:
        raise TypeError(f"{loc}: Pred type must be either boolean or number, got {_type_name(_spec_of(idx))}"
                        if kind == "cond" else f"{loc}: Index type must be an integer, got {_type_name(_spec_of(idx))}")
    leaves, tree = _flatten(operands)
    ops_t = [_as_traced(state, leaf) for leaf in leaves]
    specs = [_spec_of(t) for t in ops_t]
    traced = []
    trees = []
    for fn in branches:
        holder: dict = {}

        def wrap(*ts: Any, fn: Callable = fn, holder: dict = holder) -> Any:
            out = fn(*pytree.unflatten(tree, list(ts)))
            o_leaves, o_tree = _flatten(out)
            holder["tree"] = o_tree
            return o_leaves

        try:
            traced.append(_trace_body(wrap, specs, lambda ts: tuple(ts), f"{kind}_branch"))
        except _NeedsBatching:
            raise TypeError(f"{loc}: vmap of a {kind} whose branches read a batched value from their closure is "
                            "not supported; pass the value in as an operand") from None
        trees.append(holder["tree"])
    names = ["false_fun", "true_fun"] if kind == "cond" else [f"branch {k}" for k in range(len(branches))]
    for k in range(1, len(traced)):
        a, b = [_type_name(t) for t in traced[0].out_types], [_type_name(t) for t in traced[k].out_types]
        if trees[k] != trees[0]:
            raise BranchTypeError(f"{loc}: {kind} branch outputs must have the same pytree structure, got "
                            f"{_tree_str(trees[0])} for {names[0]} and {_tree_str(trees[k])} for {names[k]}")
        if a != b:
            raise BranchTypeError(f"{loc}: {names[0]} and {names[k]} output must have identical types, got\n"
                            f"{names[0]}: ({', '.join(a)})\n{names[k]}: ({', '.join(b)})")
    if not traced[0].out_types:
        return pytree.unflatten(trees[0], [])
    consts = list(dict.fromkeys(c for b in traced for c in b.consts))
    texts = [_body_text(_with_consts(b, consts)) for b in traced]
    if idx.dtype != _dtypes.bool_ and kind == "cond":
        idx = idx != 0
    outs = COND(idx, *[Tracer(state, v) for v in consts], *ops_t, branches=texts)
    return pytree.unflatten(trees[0], list(outs))
