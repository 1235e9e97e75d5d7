"""`trace(fn, *args)`: the user's function, called on Tracers, becomes a verified Graph.

Arguments are pytrees. Tensor and array leaves become graph inputs; Python numbers
become 0-d inputs (so a new learning rate does not recompile) unless their position is in
`static_argnums`, which makes them compile-time constants. Tensors the function reads
from outside (globals, closures, module parameters) become implicit inputs, read at call
time. In-place updates of inputs are graph outputs written back after the call."""
from __future__ import annotations

import contextlib
import functools
import inspect
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eager import _factories
from eager._grad_mode import STATE
from eager._tensor import Tensor
from gmbase import dtypes as _dtypes
from gmops import TensorSpec

from ..errors import TraceError
from ..ir import Graph, Value, verify
from ..training.bindings import call_prep, note_start
from . import guards, pytree, side_effects
from .reach import Walk, names_read
from .record import capturing_dispatch, check_view_current
from .state import ACTIVE, TraceState
from .symbolic import symbolic_shape, trace_done
from .tracer import Tracer

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
    leaf_kinds: list  # per flattened argument leaf: "array", "number", "static" or "alias" (a repeated tensor)
    input_leaves: list  # leaf index of each explicit graph input, in order
    captured: list  # [object, Value] implicit inputs, in graph-input order after explicit ones
    out_consts: dict  # output leaf index -> constant (a non-traced leaf the function returned)
    n_outputs: int  # user outputs among graph.outputs (updates follow them)
    updates: list = field(default_factory=list)  # ("input", leaf index) or ("captured", index), per update output
    sources: list = field(default_factory=list)  # (captured index, getter): where the user's code reads it
    guards: list = field(default_factory=list)  # the Python values the trace read (static.tracing.guards)
    constants: set = field(default_factory=set)  # captured positions of tensors made inside the function
    prepare: Any = None  # run before each call: random draws, attribute bindings (static.training.CallPrep)
    replays: Any = None  # Python side effects redone after each call (static.tracing.side_effects.Replays)
    refused: str | None = None  # why this signature runs eagerly (a side effect that cannot be replayed)

    def refresh_captured(self) -> bool:
        """Re-read captured tensors from where the function reads them (a global, a closure
        cell, a module attribute), so that rebinding `W = W - lr * g` between calls is seen.
        False when one now has another shape, dtype or kind: the graph no longer fits."""
        return refresh_sources(self, self.sources)


def refresh_sources(trace: TraceResult, sources: list) -> bool:
    """`TraceResult.refresh_captured` over some of its sources (the entry's fast path reads
    only those that can change without the module structure moving)."""
    for i, getter in sources:
        entry = trace.captured[i]
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


def _is_static_leaf(leaf) -> bool:
    """A leaf that is a compile-time constant rather than a graph input: anything that is not
    an array or a Python number, and Python ints beyond int64 (no 0-d input can hold them;
    eager takes them as exact Python numbers, so the trace must too)."""
    if is_array(leaf):
        return False
    if type(leaf) is int:
        return not (_INT64_MIN <= leaf <= _INT64_MAX)
    return not isinstance(leaf, (bool, int, float))


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def trace_function(fn: Callable, args: tuple, static_argnums=(), name: str | None = None, *,
                   same_as: tuple | None = None, finish: Callable | None = None,
                   verify_graph: bool = True, effects_kept: bool = False) -> TraceResult:
    """Trace `fn` on `args`. `same_as[k]` names an earlier leaf that leaf k is the very same
    tensor as (the caller passed one tensor twice): both get one Tracer, so an in-place update
    through one is seen through the other, as in eager. `finish(state, outputs, updates)` runs
    inside the trace after the function returned (the autograd joint records its backward
    there, given each leaf's input Value as passed in, None for static leaves); the Values it
    returns become graph outputs after the updates. verify_graph=False leaves the verifier to
    the caller: static.jit.entry verifies a graph when it builds one, not when a cache answers for
    it (a record is made from a graph verified when it was built, and its key is that graph's
    text). effects_kept=True (a compiled function's trace): the Python side effects of the
    trace are found, undone and replayed after each call, or refuse the trace
    (static.tracing.side_effects); otherwise the function's Python runs once and what it did stays."""
    static = static_positions(static_argnums, len(args))
    leaves, in_tree, owners = flatten_args(args, static)
    names = _param_names(fn, len(args))
    graph = Graph(name=_clean(name or str(getattr(fn, "__name__", "f"))))
    known = named_sources(fn)
    state = TraceState(graph, names={k: _clean(n) for k, (n, _) in known.items()})
    note_start(state, fn, known.values())  # the .grad of reachable parameters before the function runs
    kinds: list[str] = []  # per leaf: "static", "alias", "array" or "number"
    tracers: list[Any] = []
    input_leaves: list[int] = []
    origin: list[Any] = []
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
        if owner in static or _is_static_leaf(leaf):
            check_hashable(leaf, owner)
            kinds.append("static")
            tracers.append(leaf)
            origin.append(None)
            continue
        if same_as is not None and same_as[k] != k:
            kinds.append("alias")
            tracers.append(tracers[same_as[k]])
            origin.append(origin[same_as[k]])
            continue
        if is_array(leaf):
            data = _array_of(leaf)
            state.saw_array(data)
            spec = TensorSpec(symbolic_shape(k, tuple(data.shape)), _dtypes.from_numpy(data.dtype))
            kinds.append("array")
        else:
            spec = TensorSpec((), _NUMBER_DTYPES[type(leaf)])
            kinds.append("number")
        v = Value(base, spec)
        graph.inputs.append(v)
        if kinds[-1] == "number" or isinstance(leaf, np.generic):
            state.weak.add(v)  # promotes as a Python number does in eager (eager takes .item())
        if isinstance(leaf, Tensor) and leaf._requires_grad and leaf.grad_fn is None:
            state.grad_leaves.add(v)  # an in-place write on it under grad mode is refused, as in eager
        input_leaves.append(k)
        tracers.append(Tracer(state, v))
        origin.append(v)
    traced_args = pytree.unflatten(in_tree, tracers)
    explicit = list(graph.inputs)
    # what the function reads from outside, as it is before the function runs: the guards, and
    # the snapshots the trace's own writes are found against (static.tracing.side_effects)
    pre_guards = _guards_of(fn, leaves, kinds)
    globals_before = side_effects.snapshot_globals(side_effects.user_functions(fn)) if effects_kept else []
    watch = side_effects.Watch()
    effects = None
    ACTIVE.stack.append(state)
    prev_grad = STATE.enabled
    prev_log = _factories.log_created(state.created)
    extra: list = []
    try:
        with capturing_dispatch():
            if effects_kept:
                with side_effects.watching(watch):
                    result = fn(*traced_args)
                kept_guards, effects = side_effects.after_trace(pre_guards, globals_before, watch)
            else:  # static.trace: the function ran once, as the caller asked; nothing to redo
                result = fn(*traced_args)
                kept_guards, effects = pre_guards, side_effects.Effects()
            where = side_effects.escaped(_escape_roots(globals_before, kept_guards)) if effects_kept else None
            if where is not None:
                raise TraceError(f"{name or getattr(fn, '__name__', 'the function')}: a traced value is left in "
                                 f"{where} after tracing; compiled code cannot store a value of one call in Python "
                                 "data. Store it as a tensor (return it, or .detach().clone() it outside the "
                                 "compiled function), or append it to a list the function reads by name.")
            if effects.tracers:  # values the replays hand out: extra outputs after the function's own
                result = (result, tuple(effects.tracers))
            out_leaves, out_tree = pytree.flatten(result, is_leaf, objects=True)
            outputs, out_consts = [], {}
            for k, leaf in enumerate(out_leaves):
                if isinstance(leaf, Tracer):
                    if leaf._view_of is not None:
                        check_view_current(leaf, "the function returns")
                    outputs.append(leaf._value)
                elif is_array(leaf):
                    outputs.append(state.capture(leaf))
                else:
                    if effects_kept and side_effects.holds_tracer_deep(leaf):
                        raise TraceError(
                            f"{name or getattr(fn, '__name__', 'the function')} returns a {type(leaf).__name__} "
                            "holding traced values, which a compiled call cannot fill with its results; return "
                            "tensors in tuples, lists, dicts, namedtuples, dataclasses or objects of your own "
                            "classes")
                    out_consts[k] = leaf
            updates, update_values = [], []
            for leaf_index, v in zip(input_leaves, explicit):
                t = tracers[leaf_index]
                if t._value is not v:
                    update_values.append(t._value)
                    updates.append(("input", leaf_index))
            for index, (key, (obj, v)) in enumerate(state.captured.items()):
                if state.latest[key] is not v and not state.is_created(obj):  # a constant's update is local
                    update_values.append(state.latest[key])
                    updates.append(("captured", index))
            if finish is not None:
                STATE.enabled = prev_grad
                extra = list(finish(state, origin, outputs, update_values, updates))
    except BaseException:
        for undo in reversed(state.on_failure):
            undo()
        if effects is None:  # the function failed: undo what it wrote to the world as well
            with contextlib.suppress(Exception):
                side_effects.after_trace(pre_guards, globals_before, watch)
        raise
    finally:
        ACTIVE.stack.pop()
        trace_done()  # guards on symbolic sizes come from the trace, not from the passes after it
        STATE.enabled = prev_grad
        _factories.log_created(prev_log)
        state.finished = True
    n_outputs = len(outputs)
    graph.outputs = outputs + update_values + extra
    captured = [[obj, v] for obj, v in state.captured.values()]
    if verify_graph:
        verify(graph)
    sources = [(i, known[id(obj)][1]) for i, (obj, _) in enumerate(captured) if id(obj) in known]
    constants = {i for i, (obj, _) in enumerate(captured) if state.is_created(obj)}
    prepare = call_prep(state, captured, input_leaves, updates)
    assert effects is not None
    return TraceResult(graph, in_tree, out_tree, kinds, input_leaves, captured, out_consts, n_outputs, updates,
                       sources, kept_guards + state.guards, constants, prepare, effects.template(), effects.refused)


def _escape_roots(globals_before: list, kept: list) -> list:
    """Where a tracer left behind would be seen by the user: the globals of the functions the
    trace ran, the attributes of the modules and objects it reached."""
    roots = []
    for gl, _ in globals_before:
        module = gl.get("__name__", "?")
        roots += [(f"the global {k!r} of {module}", v) for k, v in list(gl.items())
                  if not k.startswith("__") and not isinstance(v, (type, types.ModuleType, types.FunctionType))]
    for g in kept:
        if isinstance(g, guards.Attributes):
            roots += [(f"attribute {k!r} of {g._kind()}", v) for k, v in list(g.module.__dict__.items())
                      if not k.startswith("_")]
    return roots


def _guards_of(fn, leaves: list, kinds: list) -> list:
    """Guards on the Python values the function reads: through names it owns (globals,
    closures, a module's attributes) and through the attributes of objects passed as static
    arguments (the instance of a compiled method is one: `self.k` must not go stale)."""
    out = guards.collect(fn)
    for leaf, kind in zip(leaves, kinds):
        if kind == "static" and (guards.is_plain_object(leaf) or _is_module(leaf)):
            out += guards.collect(leaf)
    return out


def named_sources(fn) -> dict:
    """id(tensor) -> (name, getter) for the tensors and arrays the function can reach through a
    name it owns: a global or closure variable of the function (or of what it wraps, or of a
    decorator's inner function), or a parameter or buffer of a module. Captured inputs take
    these names in the IR (%W rather than %c0), and are re-read through the getters at call
    time. Tensors reached any other way (a helper's globals) keep the object traced, which
    still sees in-place updates."""
    found: dict = {}
    walk = Walk(fn)
    for f in walk:
        if hasattr(f, "named_parameters") and not isinstance(f, type):  # an eager.nn.Module
            for method in ("named_parameters", "named_buffers"):
                for path, t in getattr(f, method, lambda: ())():
                    found.setdefault(id(t), (path, functools.partial(_attribute_path, f, path.split("."))))
            walk.push(getattr(f, "forward", None))
            continue
        code = getattr(f, "__code__", None)
        if code is None:
            walk.push(getattr(type(f), "__call__", None) if not isinstance(f, type) else None)  # noqa: B004
            continue
        for read in names_read(f):
            value = read.value
            if is_array(value):
                found.setdefault(id(value), (read.name, read.read))
            elif type(value) in (dict, list, tuple):  # tensors in a global config dict, a list of weights
                _container_sources(found, read.name, read.read, value, ())
            elif _is_module(value) or (read.kind == "closure" and callable(value) and not isinstance(value, type)):
                walk.push(value)  # a module, or a decorator's wrapped function
    return found


def _container_sources(found: dict, name: str, read: Callable, value, path: tuple, active: set | None = None) -> None:
    """The tensors held in a dict, list or tuple a function names, each re-read at call time
    through its path (`state["h"] = new_h` between calls is the new tensor, not a retrace)."""
    active = set() if active is None else active
    if id(value) in active:  # a container that holds itself
        return
    active.add(id(value))
    items = value.items() if type(value) is dict else enumerate(value)
    for key, item in list(items):
        if is_array(item):
            found.setdefault(id(item), (_clean(f"{name}_{key}"), functools.partial(_item_path, read, path + (key,))))
        elif type(item) in (dict, list, tuple):
            _container_sources(found, name, read, item, path + (key,), active)
    active.discard(id(value))


def _item_path(read: Callable, path: tuple):
    obj = read()
    for key in path:
        obj = obj[key]
    return obj


def _is_module(value) -> bool:
    return not isinstance(value, type) and hasattr(value, "named_parameters") and hasattr(value, "forward")


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
