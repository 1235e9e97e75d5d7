"""`trace(fn, *args)`: the user's function, called on Tracers, becomes a verified Graph.

Arguments are pytrees. Tensor and array leaves become graph inputs; Python numbers
become 0-d inputs (so a new learning rate does not recompile) unless their position is in
`static_argnums`, which makes them compile-time constants. Tensors the function reads
from outside (globals, closures, module parameters) become implicit inputs, read at call
time. In-place updates of inputs are graph outputs written back after the call."""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from eager import _dtypes
from eager._grad_mode import STATE
from eager._tensor import Tensor
from eager.ops import TensorSpec

from . import pytree
from .errors import TraceError
from .ir import Graph, Value, verify
from .tracer import ACTIVE, TraceState, Tracer

_NUMBER_DTYPES = {bool: _dtypes.bool_, int: _dtypes.int64, float: _dtypes.float64}


def is_array(x) -> bool:
    return isinstance(x, (Tensor, np.ndarray)) or hasattr(x, "__cuda_array_interface__")


def is_leaf(x) -> bool:
    return is_array(x) or isinstance(x, Tracer)


@dataclass
class TraceResult:
    graph: Graph
    in_tree: Any
    out_tree: Any
    leaf_kinds: list  # per flattened argument leaf: "array", "number" or "static"
    input_leaves: list  # leaf index of each explicit graph input, in order
    captured: list  # (object, Value) implicit inputs, in graph-input order after explicit ones
    out_consts: dict  # output leaf index -> constant (a non-traced leaf the function returned)
    n_outputs: int  # user outputs among graph.outputs (updates follow them)
    updates: list = field(default_factory=list)  # ("input", leaf index) or ("captured", obj), per extra output


def _param_names(fn: Callable, n: int) -> list:
    try:
        params = list(inspect.signature(fn).parameters.values())
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "arg")
    except (TypeError, ValueError):
        names, star = [], "arg"
    return [names[i] if i < len(names) else f"{star}{i}" for i in range(n)]


def _clean(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", name) or "x"


def trace_function(fn: Callable, args: tuple, static_argnums=(), name: str | None = None) -> TraceResult:
    static_argnums = {i % max(len(args), 1) for i in static_argnums}
    leaves, in_tree = pytree.flatten(args, is_leaf)
    # which argument does each leaf belong to (for names and static_argnums)
    owners = []
    for i, a in enumerate(args):
        n = len(pytree.flatten(a, is_leaf)[0])
        owners += [i] * n
    names = _param_names(fn, len(args))
    graph = Graph(name=_clean(name or getattr(fn, "__name__", "f")))
    state = TraceState(graph)
    kinds, tracers, input_leaves = [], [], []
    per_arg_count: dict = {}
    for k, leaf in enumerate(leaves):
        owner = owners[k]
        count = sum(1 for o in owners if o == owner)
        base = _clean(names[owner]) if count == 1 else f"{_clean(names[owner])}_{per_arg_count.get(owner, 0)}"
        per_arg_count[owner] = per_arg_count.get(owner, 0) + 1
        if owner in static_argnums or not (is_array(leaf) or isinstance(leaf, (bool, int, float))):
            _check_hashable(leaf, owner)
            kinds.append("static")
            tracers.append(leaf)
            continue
        if is_array(leaf):
            data = leaf._data if isinstance(leaf, Tensor) else leaf
            spec = TensorSpec(tuple(data.shape), _dtypes.from_numpy(data.dtype))
            kinds.append("array")
        else:
            spec = TensorSpec((), _NUMBER_DTYPES[type(leaf)])
            kinds.append("number")
        v = Value(base, spec)
        graph.inputs.append(v)
        if kinds[-1] == "number":
            state.weak.add(v)
        input_leaves.append(k)
        tracers.append(Tracer(state, v))
    traced_args = pytree.unflatten(in_tree, tracers)
    explicit = list(graph.inputs)
    ACTIVE.stack.append(state)
    prev_grad = STATE.enabled
    try:
        result = fn(*traced_args)
    finally:
        ACTIVE.stack.pop()
        STATE.enabled = prev_grad
    out_leaves, out_tree = pytree.flatten(result, is_leaf)
    outputs, out_consts = [], {}
    for k, leaf in enumerate(out_leaves):
        if isinstance(leaf, Tracer):
            outputs.append(leaf._value)
        elif isinstance(leaf, Tensor) or isinstance(leaf, np.ndarray):
            outputs.append(state.capture(leaf))
        else:
            out_consts[k] = leaf
    n_outputs = len(outputs)
    updates = []
    for leaf_index, t, v in zip(input_leaves, [tracers[i] for i in input_leaves], explicit):
        if t._value is not v:
            outputs.append(t._value)
            updates.append(("input", leaf_index))
    for key, (obj, v) in state.captured.items():
        if state.latest[key] is not v:
            outputs.append(state.latest[key])
            updates.append(("captured", obj))
    graph.outputs = outputs
    captured = [(obj, v) for obj, v in state.captured.values()]
    verify(graph)
    return TraceResult(graph, in_tree, out_tree, kinds, input_leaves, captured, out_consts, n_outputs, updates)


def _check_hashable(value, argnum: int) -> None:
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"static argument {argnum} has unhashable type {type(value).__name__}; static arguments are part "
            "of the compile cache key, so pass a hashable value (a tuple instead of a list)"
        ) from None


def trace(fn: Callable, *example_args, static_argnums=()) -> Graph:
    """The Graph that `fn` computes on arguments shaped like `example_args`."""
    if hasattr(fn, "_graphmode_traceable"):
        fn = fn._graphmode_traceable
    return trace_function(fn, example_args, static_argnums).graph
