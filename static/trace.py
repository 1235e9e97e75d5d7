"""`trace(fn, *args)`: the user's function, called on Tracers, becomes a verified Graph.

Arguments are pytrees. Tensor and array leaves become graph inputs; Python numbers
become 0-d inputs (so a new learning rate does not recompile) unless their position is in
`static_argnums`, which makes them compile-time constants. Tensors the function reads
from outside (globals, closures, module parameters) become implicit inputs, read at call
time. In-place updates of inputs are graph outputs written back after the call."""
from __future__ import annotations

import functools
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
from .ir import Graph, Value, verify
from .tracer import ACTIVE, TraceState, Tracer, capturing_dispatch, check_view_current

_NUMBER_DTYPES = {bool: _dtypes.bool_, int: _dtypes.int64, float: _dtypes.float64}


def is_array(x) -> bool:
    """Tensors and arrays, NumPy scalars included (0-d arrays of a definite dtype, where a
    Python number is a weak scalar)."""
    return isinstance(x, (Tensor, np.ndarray, np.generic)) or hasattr(x, "__cuda_array_interface__")


def is_leaf(x) -> bool:
    return is_array(x) or isinstance(x, Tracer)


@dataclass
class TraceResult:
    graph: Graph
    in_tree: Any
    out_tree: Any
    leaf_kinds: list  # per flattened argument leaf: "array", "number" or "static"
    input_leaves: list  # leaf index of each explicit graph input, in order
    captured: list  # [object, Value] implicit inputs, in graph-input order after explicit ones
    out_consts: dict  # output leaf index -> constant (a non-traced leaf the function returned)
    n_outputs: int  # user outputs among graph.outputs (updates follow them)
    updates: list = field(default_factory=list)  # ("input", leaf index) or ("captured", index), per extra output
    sources: list = field(default_factory=list)  # (captured index, getter): where the user's code reads it

    def refresh_captured(self) -> bool:
        """Re-read captured tensors from where the function reads them (a global, a closure
        cell, a module attribute), so that rebinding `W = W - lr * g` between calls is seen.
        False when one now has another shape, dtype or kind: the graph no longer fits."""
        for i, getter in self.sources:
            entry = self.captured[i]
            try:
                current = getter()
            except Exception:  # noqa: BLE001  (the name went away: keep what was traced)
                continue
            if current is entry[0]:
                continue
            if not is_array(current):
                return False
            old, new = _array_of(entry[0]), _array_of(current)
            if (new.shape != old.shape or new.dtype != old.dtype or type(new) is not type(old)
                    or isinstance(current, Tensor) != isinstance(entry[0], Tensor)):
                return False
            entry[0] = current
        return True


def _array_of(x):
    return x._data if isinstance(x, Tensor) else x


def _param_names(fn: Callable, n: int) -> list:
    try:
        target = fn.forward if hasattr(fn, "named_parameters") and hasattr(fn, "forward") else fn  # a Module
        params = list(inspect.signature(target).parameters.values())
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "arg")
    except (TypeError, ValueError):
        names, star = [], "arg"
    return [names[i] if i < len(names) else f"{star}{i}" for i in range(n)]


def _clean(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", name) or "x"


def static_positions(static_argnums, n_args: int) -> frozenset:
    """`static_argnums` as positions of this call (negative ones count from the end; positions
    past the end, possible with *args, do not apply)."""
    out = set()
    for i in (static_argnums,) if isinstance(static_argnums, int) else static_argnums:
        j = i + n_args if i < 0 else i
        if 0 <= j < n_args:
            out.add(j)
    return frozenset(out)


def flatten_args(args: tuple, static: frozenset) -> tuple[list, Any, list]:
    """Leaves, structure and owning argument of each leaf. A static argument is one leaf as a
    whole (its value is part of the cache key, so it must be hashable, as in JAX); the others
    are pytrees of arrays and numbers."""
    leaves: list = []
    trees = []
    owners: list = []
    for i, a in enumerate(args):
        if i in static:
            leaves.append(a)
            trees.append(("leaf",))
            owners.append(i)
        else:
            sub, tree = pytree.flatten(a, is_leaf)
            leaves += sub
            trees.append(tree)
            owners += [i] * len(sub)
    return leaves, ("tuple", tuple(trees)), owners


def trace_function(fn: Callable, args: tuple, static_argnums=(), name: str | None = None) -> TraceResult:
    static = static_positions(static_argnums, len(args))
    leaves, in_tree, owners = flatten_args(args, static)
    names = _param_names(fn, len(args))
    graph = Graph(name=_clean(name or getattr(fn, "__name__", "f")))
    known = named_sources(fn)
    state = TraceState(graph, names={k: _clean(n) for k, (n, _) in known.items()})
    kinds, tracers, input_leaves = [], [], []
    per_arg_count: dict = {}
    leaves_per_arg: dict = {}
    for o in owners:
        leaves_per_arg[o] = leaves_per_arg.get(o, 0) + 1
    for k, leaf in enumerate(leaves):
        owner = owners[k]
        base = _clean(names[owner])
        if leaves_per_arg[owner] > 1:
            base = f"{base}_{per_arg_count.get(owner, 0)}"
        per_arg_count[owner] = per_arg_count.get(owner, 0) + 1
        if owner in static or not (is_array(leaf) or isinstance(leaf, (bool, int, float))):
            check_hashable(leaf, owner)
            kinds.append("static")
            tracers.append(leaf)
            continue
        if is_array(leaf):
            data = _array_of(leaf)
            spec = TensorSpec(tuple(data.shape), _dtypes.from_numpy(data.dtype))
            kinds.append("array")
        else:
            spec = TensorSpec((), _NUMBER_DTYPES[type(leaf)])
            kinds.append("number")
        v = Value(base, spec)
        graph.inputs.append(v)
        if kinds[-1] == "number" or isinstance(leaf, np.generic):
            state.weak.add(v)  # promotes as a Python number does in eager (eager takes .item())
        input_leaves.append(k)
        tracers.append(Tracer(state, v))
    traced_args = pytree.unflatten(in_tree, tracers)
    explicit = list(graph.inputs)
    ACTIVE.stack.append(state)
    prev_grad = STATE.enabled
    try:
        with capturing_dispatch():
            result = fn(*traced_args)
            out_leaves, out_tree = pytree.flatten(result, is_leaf)
            outputs, out_consts = [], {}
            for k, leaf in enumerate(out_leaves):
                if isinstance(leaf, Tracer):
                    if leaf._view_of is not None:
                        check_view_current(leaf, "the function returns")
                    outputs.append(leaf._value)
                elif is_array(leaf):
                    outputs.append(state.capture(leaf))
                else:
                    out_consts[k] = leaf
    finally:
        ACTIVE.stack.pop()
        STATE.enabled = prev_grad
        state.finished = True
    n_outputs = len(outputs)
    updates = []
    for leaf_index, t, v in zip(input_leaves, [tracers[i] for i in input_leaves], explicit):
        if t._value is not v:
            outputs.append(t._value)
            updates.append(("input", leaf_index))
    for index, (key, (obj, v)) in enumerate(state.captured.items()):
        if state.latest[key] is not v:
            outputs.append(state.latest[key])
            updates.append(("captured", index))
    graph.outputs = outputs
    captured = [[obj, v] for obj, v in state.captured.values()]
    verify(graph)
    sources = [(i, known[id(obj)][1]) for i, (obj, _) in enumerate(captured) if id(obj) in known]
    return TraceResult(graph, in_tree, out_tree, kinds, input_leaves, captured, out_consts, n_outputs, updates,
                       sources)


def named_sources(fn) -> dict:
    """id(tensor) -> (name, getter) for the tensors and arrays the function can reach through a
    name it owns: a global or closure variable of the function (or of what it wraps, or of a
    decorator's inner function), or a parameter or buffer of a module. Captured inputs take
    these names in the IR (%W rather than %c0), and are re-read through the getters at call
    time. Tensors reached any other way (a helper's globals) keep the object traced, which
    still sees in-place updates."""
    found: dict = {}
    seen = set()
    todo = [fn]
    while todo:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        todo.append(getattr(f, "__wrapped__", None))
        if hasattr(f, "named_parameters"):  # an eager.nn.Module
            for method in ("named_parameters", "named_buffers"):
                for path, t in getattr(f, method, lambda: ())():
                    found.setdefault(id(t), (path, functools.partial(_attribute_path, f, path.split("."))))
            todo.append(getattr(f, "forward", None))
            continue
        if inspect.ismethod(f):
            todo += [f.__self__, f.__func__]
            continue
        code = getattr(f, "__code__", None)
        if code is None:
            todo.append(getattr(type(f), "__call__", None) if not isinstance(f, type) else None)
            continue
        gl = getattr(f, "__globals__", {})
        for name in _global_names(code):
            value = gl.get(name)
            if is_array(value):
                found.setdefault(id(value), (name, functools.partial(gl.__getitem__, name)))
            elif _is_module(value):
                todo.append(value)
        for name, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if is_array(value):
                found.setdefault(id(value), (name, functools.partial(getattr, cell, "cell_contents")))
            elif _is_module(value) or (callable(value) and not isinstance(value, type)):
                todo.append(value)  # a module, or a decorator's wrapped function
    return found


def _is_module(value) -> bool:
    return hasattr(value, "named_parameters") and hasattr(value, "forward")


def _global_names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):  # nested functions, lambdas, comprehensions
            names |= _global_names(const)
    return names


def _attribute_path(obj, path: list):
    for part in path:
        obj = getattr(obj, part)
    return obj


def check_hashable(value, argnum) -> None:
    """Static values are part of the cache key: an unhashable one is an error up front (a list
    would otherwise defeat the cache and retrace on every call)."""
    try:
        hash(value)
    except TypeError:
        where = f"static argument {argnum}" if isinstance(argnum, int) else "a non-array argument leaf"
        raise TypeError(
            f"{where} has unhashable type {type(value).__name__}; static values are part of the compile "
            "cache key, so pass a hashable value (a tuple instead of a list)"
        ) from None


def trace(fn: Callable, *example_args, static_argnums=()) -> Graph:
    """The Graph that `fn` computes on arguments shaped like `example_args`."""
    if hasattr(fn, "_graphmode_traceable"):
        fn = fn._graphmode_traceable
    return trace_function(fn, example_args, static_argnums).graph
