"""`static.compile`, `static.grad` and `static.value_and_grad`.

A compiled function keeps one entry per call signature (shapes, dtypes, device, pytree
structure, static argument values, whether gradients are wanted). An entry holds the
traced graph and what runs it. Calls with eager tensors that require grad return tensors
whose `grad_fn` (CompiledFunctionBackward) runs the compiled backward graph."""
from __future__ import annotations

import functools
import inspect
import types
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import eager
from eager._grad_mode import STATE
from eager._tensor import Tensor

from . import pytree
from .autodiff import vjp
from .errors import TraceError
from .executable import build_executable
from .ir import Graph, Value, verify
from .passes import is_recording, optimize_joint, recording, run_pipeline
from .passes.memory import VIEW_OPS
from .trace import TraceResult, check_hashable, flatten_args, is_leaf, static_positions, trace_function
from .tracer import ACTIVE, Tracer


# -- signatures -----------------------------------------------------------------------------
def _leaf_key(leaf, static: bool):
    """The part of the cache key one argument leaf contributes: what the trace depends on."""
    if static:
        return ("static", type(leaf), leaf)  # the type too: 1, 1.0 and True hash alike
    if isinstance(leaf, Tensor):
        d = leaf._data
        return ("tensor", d.shape, d.dtype, "cpu" if type(d) is np.ndarray else _device_of(d), leaf._requires_grad)
    if isinstance(leaf, (np.ndarray, np.generic)):  # a NumPy scalar is a 0-d array of its dtype
        return ("array", leaf.shape, leaf.dtype, "cpu")
    if hasattr(leaf, "__cuda_array_interface__"):
        return ("array", leaf.shape, leaf.dtype, _device_of(leaf))
    if isinstance(leaf, (bool, int, float)):
        return ("number", type(leaf))
    return ("static", type(leaf), leaf)


def _flat_keys(args: tuple):
    """Leaf keys of a flat tuple of eager tensors and NumPy arrays (the common call), or None:
    the same keys `_leaf_key` gives, without the general flattening."""
    keys = []
    for a in args:
        t = type(a)
        if t is Tensor:
            d = a._data
            keys.append(("tensor", d.shape, d.dtype, "cpu" if type(d) is np.ndarray else _device_of(d),
                         a._requires_grad))
        elif t is np.ndarray:
            keys.append(("array", a.shape, a.dtype, "cpu"))
        else:
            return None
    return tuple(keys)


def _device_of(data) -> str:
    return "cpu" if type(data) is np.ndarray else f"cuda:{data.device.id}"


def _describe_change(old: tuple, new: tuple) -> str:
    """Which part of the cache key differs: the reason a call retraces."""
    if old[0] != new[0]:
        return "the structure of the arguments changed"
    if len(old[1]) != len(new[1]):
        return "the number of arguments changed"
    for i, (a, b) in enumerate(zip(old[1], new[1])):
        if a != b:
            if a[0] != b[0]:
                return f"argument leaf {i} changed kind ({a[0]} -> {b[0]})"
            if a[0] in ("tensor", "array"):
                if a[1] != b[1]:
                    return f"argument leaf {i} changed shape {a[1]} -> {b[1]}"
                if a[2] != b[2]:
                    return f"argument leaf {i} changed dtype {a[2]} -> {b[2]}"
                if a[3] != b[3]:
                    return f"argument leaf {i} moved from {a[3]} to {b[3]}"
                return f"argument leaf {i} changed requires_grad"
            if a[0] == "static":
                return f"static argument leaf {i} changed value {a[2]!r} -> {b[2]!r}"
            return f"argument leaf {i} changed type"
    if old[2] != new[2]:
        return "grad mode changed"
    if old[3:] != new[3:]:
        return "the module's training mode changed"
    return "a captured tensor changed shape or dtype"


_NO_STATIC = frozenset()
_PLAIN = (Tensor, np.ndarray)  # argument types that are leaves by themselves


def _closest(keys, new: tuple) -> tuple:
    """The cached key most like `new`, so that a retrace reason names the one thing that
    differs (not everything that differs from whichever signature happened to come last)."""
    def distance(old):
        if old[0] != new[0] or len(old[1]) != len(new[1]):
            return 1 << 20
        return sum(a != b for a, b in zip(old[1], new[1])) + sum(a != b for a, b in zip(old[2:], new[2:]))

    return min(reversed(list(keys)), key=distance)  # ties: the most recent signature


# -- entries -------------------------------------------------------------------------------
class _Entry:
    """One compiled signature: the trace, and executables for the forward and, for calls that
    need gradients, split forward/backward graphs (one per set of inputs that require grad).
    What the key already decides (output kind, which inputs require grad) is worked out once
    here, so that a cached call does no more than look up, run and wrap."""

    def __init__(self, owner: "Compiled", args: tuple, key) -> None:
        self.owner = owner
        self.trace: TraceResult = trace_function(owner._traceable, args, owner.static_argnums, owner.__name__)
        self.stages = [("traced", self.trace.graph)]
        verify(self.trace.graph)
        self.stages.append(("verified", self.trace.graph))
        self.graph = owner._optimize(self.trace.graph, self.stages)
        self.forward = build_executable(self.graph, owner.backend, fast_math=owner.fast_math)
        self.splits: dict = {}
        trace = self.trace
        self.captured_keys = [(_data(o).shape, _data(o).dtype) for o, _ in trace.captured]
        leaf_keys = key[1]
        kinds = {k[0] for k in leaf_keys}
        # eager tensors in (or only numbers): tensors out; NumPy/CuPy arrays in: arrays out
        self.as_tensors = "tensor" in kinds or "array" not in kinds
        self.diff_inputs = tuple(i for i, k in enumerate(trace.input_leaves)
                                 if leaf_keys[k][0] == "tensor" and leaf_keys[k][4])
        self.n_captured = len(trace.captured)
        # the fast paths: every leaf a graph input given as an eager tensor; one plain output
        every_leaf_an_input = trace.input_leaves == list(range(len(leaf_keys))) and not trace.captured
        self.all_tensor_inputs = every_leaf_an_input and all(k[0] == "tensor" for k in leaf_keys)
        self.all_array_inputs = every_leaf_an_input and all(k[0] == "array" for k in leaf_keys)
        self.single_output = (trace.out_tree == ("leaf",) and trace.n_outputs == 1 and not trace.updates
                              and not trace.out_consts)
        self.output_aliases = _output_aliases(self.graph, trace.n_outputs)
        self.has_output_aliases = any(self.output_aliases)
        # a tuple of arrays out, arrays in, nothing else to do: value_and_grad's (value, grad)
        self.plain_tuple_output = (
            trace.out_tree == ("tuple", tuple(("leaf",) for _ in range(trace.n_outputs)))
            and not trace.updates and not trace.out_consts and not self.as_tensors
            and not self.has_output_aliases)

    def still_valid(self) -> bool:
        """Captured tensors re-read and still of the traced shapes and dtypes."""
        if not self.trace.refresh_captured():
            return False
        for (o, _), k in zip(self.trace.captured, self.captured_keys):
            d = _data(o)
            if d.shape != k[0] or d.dtype != k[1]:
                return False
        return True

    def autograd_split(self, args, diff_inputs: tuple, diff_captured: tuple) -> "_SplitGraphs":
        """The forward/backward pair for calls where exactly these inputs require grad."""
        key = (diff_inputs, diff_captured)
        sg = self.splits.get(key)
        if sg is None:
            leaf_ids = [self.trace.input_leaves[i] for i in diff_inputs]
            objects = [self.trace.captured[i][0] for i in diff_captured]
            sg = self.splits[key] = _build_split(self.owner, args, leaf_ids, objects)
        elif not sg.trace.refresh_captured():
            sg = self.splits[key] = _build_split(self.owner, args, [self.trace.input_leaves[i] for i in diff_inputs],
                                                 [self.trace.captured[i][0] for i in diff_captured])
        return sg


def _data(obj):
    return obj._data if isinstance(obj, Tensor) else obj


def _input_arrays(trace: TraceResult, leaves: list) -> list:
    """One array per graph input: the explicit leaves, then the captured tensors as they are now."""
    arrays = []
    for leaf_index, v in zip(trace.input_leaves, trace.graph.inputs):
        leaf = leaves[leaf_index]
        if isinstance(leaf, Tensor):
            arrays.append(leaf._data)
        elif isinstance(leaf, (bool, int, float)):
            arrays.append(np.asarray(leaf, dtype=v.type.dtype.np))
        else:
            arrays.append(leaf)
    for o, _ in trace.captured:
        arrays.append(o._data if isinstance(o, Tensor) else o)
    return arrays


def _update_targets(trace: TraceResult, leaves: list) -> list:
    """What each in-place update output is written into (None: a Python number, immutable)."""
    targets = []
    for kind, ref in trace.updates:
        target = leaves[ref] if kind == "input" else trace.captured[ref][0]
        targets.append(None if isinstance(target, (bool, int, float)) else target)
    return targets


def _write_back(trace: TraceResult, leaves: list, results: list) -> None:
    """Store in-place updates (an optimizer step inside the function) into the caller's tensors."""
    for target, value in zip(_update_targets(trace, leaves), results):
        if target is None:
            continue  # rebinding a Python number is the caller's business
        data = _data(target)
        xp = np if isinstance(data, np.ndarray) else eager._device.cupy_module()
        xp.copyto(data, value, casting="unsafe")
        if isinstance(target, Tensor):
            target._vc[0] += 1  # an in-place change: saved-tensor checks must see it


def _as_tensor(v):
    return v if isinstance(v, Tensor) else Tensor._make(np.asarray(v) if isinstance(v, np.generic) else v)


def _wrap_outputs(trace: TraceResult, values: list, as_tensors: bool, link=None):
    """The function's result: its structure rebuilt around the output arrays (as tensors when
    tensors came in). `link` = (aliases, caller objects) shares version counters (above)."""
    it = iter(values)
    leaves, outs = [], []
    total = trace.n_outputs + len(trace.out_consts)
    for k in range(total):
        if k in trace.out_consts:
            leaves.append(trace.out_consts[k])
        else:
            v = next(it)
            v = _as_tensor(v) if as_tensors else v
            outs.append(v)
            leaves.append(v)
    if link is not None and as_tensors:
        _link_aliases(outs, *link)
    return pytree.unflatten(trace.out_tree, leaves)


# -- composition with eager autograd --------------------------------------------------------
class _SplitGraphs:
    """The joint graph of one signature, split for eager autograd: the forward runs at call
    time and returns the residuals; the backward runs when eager's engine reaches the node."""

    def __init__(self, joint_graph: Graph, split, trace: TraceResult, backend: str, fast_math: bool = False) -> None:
        self.joint, self.split, self.trace = joint_graph, split, trace
        self.forward = build_executable(split.forward, backend, fast_math=fast_math)
        self.backward = build_executable(split.backward, backend, fast_math=fast_math)
        self.seed_outputs: list = []
        self.user_outputs: list = []
        self.aliased_inputs = _aliased_inputs(split.forward, split.residuals)


def _alias_sets(graph: Graph) -> dict:
    """Value -> indices of the graph inputs whose buffer it may share (the input itself, or a
    view of it: reshape, transpose, basic indexing, ...)."""
    alias = {v: frozenset((i,)) for i, v in enumerate(graph.inputs)}
    for node in graph.nodes:
        if node.op in VIEW_OPS and node.inputs and isinstance(node.inputs[0], Value):
            for out in node.outputs:
                alias[out] = alias.get(node.inputs[0], frozenset())
    return alias


def _aliased_inputs(forward: Graph, residuals: list) -> list:
    """Indices of the forward's inputs whose buffers a residual may share. The backward reads
    those buffers later, so an in-place change to the caller's tensor in between must be
    detected, as eager does."""
    alias = _alias_sets(forward)
    return sorted(set().union(*(alias.get(v, ()) for v in residuals)))


def _output_aliases(graph: Graph, n_outputs: int) -> list:
    """Per user output, the inputs it may share memory with (empty for fresh results)."""
    alias = _alias_sets(graph)
    return [tuple(sorted(alias.get(v, ()))) if isinstance(v, Value) else () for v in graph.outputs[:n_outputs]]


def _link_aliases(tensors, aliases: list, inputs: list) -> None:
    """An output sharing memory with a caller's tensor shares its version counter too, as an
    eager view does: an in-place write through either one is then seen by every saved-tensor
    check (a compiled `x.reshape(-1)` would otherwise hide a write into x from autograd)."""
    for t, candidates in zip(tensors, aliases):
        for i in candidates:
            src = inputs[i]
            if isinstance(src, Tensor) and isinstance(t, Tensor) and \
                    eager._device.xp_of_array(src._data).may_share_memory(t._data, src._data):
                t._vc = src._vc
                t._base = src if src._base is None else src._base
                break


def _build_split(owner: "Compiled", args: tuple, diff_leaves: list, diff_captured: list) -> _SplitGraphs:
    """Retrace with the backward recorded after the forward, then split the joint graph."""
    seeds_holder = {}

    def joint_fn(*traced_args):
        out = owner._traceable(*traced_args)
        state = ACTIVE.stack[-1]
        out_leaves, _ = pytree.flatten(out, is_leaf)
        flat_args, _, _ = flatten_args(traced_args, static_positions(owner.static_argnums, len(traced_args)))
        wrt = [flat_args[i]._value for i in diff_leaves]
        wrt += [state.capture(o) for o in diff_captured]
        outs = [t for t in out_leaves if isinstance(t, Tracer) and t.is_floating_point()]
        seeds = []
        for k, t in enumerate(outs):
            v = Value(f"grad_out{k}", t._value.type)
            state.graph.inputs.append(v)
            seeds.append(v)
        seeds_holder["seeds"] = seeds
        seeds_holder["outs"] = [t._value for t in outs]
        grads = vjp(state, [t._value for t in outs], [Tracer(state, s) for s in seeds], wrt)
        return out, tuple(grads)

    joint_fn.__signature__ = _signature_of(owner._traceable)  # inputs keep the user's parameter names
    joint_fn.__wrapped__ = owner._traceable  # and captured tensors their names and call-time sources
    joint = trace_function(joint_fn, args, owner.static_argnums, owner.__name__ + "_joint")
    seeds = seeds_holder["seeds"]
    n_user = joint.n_outputs - len(diff_leaves) - len(diff_captured)
    # graph outputs: user outputs, grads, then updates; the split wants updates with the forward
    outs = joint.graph.outputs
    user, grads, updates = outs[:n_user], outs[n_user:joint.n_outputs], outs[joint.n_outputs:]
    joint.graph.outputs = user + updates + grads
    primal = [v for v in joint.graph.inputs if v not in seeds]
    stages: list = [("joint (forward + backward)", str(joint.graph) if is_recording() else None, "")]
    split = _partition(owner, joint.graph, primal, seeds, len(user) + len(updates), stages)
    verify(split.forward)
    verify(split.backward)
    joint.n_outputs = n_user
    sg = _SplitGraphs(joint.graph, split, joint, owner.backend, owner.fast_math)
    sg.seed_outputs = seeds_holder["outs"]
    sg.user_outputs = user
    sg.output_aliases = _output_aliases(split.forward, len(user))
    sg.pass_stages = stages
    return sg


def _signature_of(fn):
    try:
        return inspect.signature(fn.forward if _is_module(fn) else fn)
    except (TypeError, ValueError):
        return None


def _partition(owner: "Compiled", graph: Graph, primal: list, seeds: list, n_forward: int, stages: list):
    """Optimize forward and backward together, then split them by a min-cut."""
    split, _ = optimize_joint(graph, primal, seeds, n_forward, stages, opt_level=owner.opt_level,
                              passes=owner.passes, fast_math=owner.fast_math)
    return split


class CompiledFunction(eager.autograd.Function):
    """The eager autograd node of a compiled call: its backward runs the compiled backward.

    Residuals are saved with `save_for_backward`, together with every caller tensor a residual
    aliases (an input saved as is, or a view of one): eager's engine then frees them after the
    backward and refuses a second backward or an in-place change made in between, with the
    messages it gives for its own nodes."""

    @staticmethod
    def forward(ctx, sg: _SplitGraphs, arrays: list, leaves: list, *diff_tensors):
        trace = sg.trace
        n_user, n_upd = len(sg.user_outputs), len(trace.updates)
        results = sg.forward.run(arrays)
        user, updates, residuals = results[:n_user], results[n_user:n_user + n_upd], list(results[n_user + n_upd:])
        targets = [t for t in _update_targets(trace, leaves) if t is not None]
        if targets:
            # a residual that aliases a buffer about to be overwritten must keep the old values
            xp = eager._device.xp_of_array(arrays[0]) if arrays else np
            for k, r in enumerate(residuals):
                if any(xp.may_share_memory(r, _data(t)) for t in targets):
                    residuals[k] = r.copy()
        _write_back(trace, leaves, updates)
        inputs = _input_objects(trace, leaves)
        aliased = []
        for i in sg.aliased_inputs:
            t = inputs[i]
            if isinstance(t, Tensor) and not any(t is u for u in targets) and not any(t is a for a in aliased):
                aliased.append(t)
        ctx.save_for_backward(*[_as_tensor(r) for r in residuals], *aliased)
        ctx.sg, ctx.n_residuals = sg, len(residuals)
        ctx.diff_tensors = diff_tensors
        ctx.float_out = [k for k, v in enumerate(sg.user_outputs) if v in sg.seed_outputs]
        outs = tuple(_as_tensor(r) for r in user)
        _link_aliases(outs, sg.output_aliases, inputs)
        for k, t in enumerate(outs):
            if k not in ctx.float_out:
                ctx.mark_non_differentiable(t)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors  # raises after a first backward, or if an aliased input changed
        residuals = [t._data for t in saved[:ctx.n_residuals]]
        seeds = [grads[k]._data for k in ctx.float_out]
        results = tuple(_as_tensor(r) for r in ctx.sg.backward.run(residuals + seeds))
        if STATE.enabled and results:  # create_graph=True: the compiled backward has no graph of its own
            results = _NotTwiceDifferentiable.apply(len(results), *results, *ctx.diff_tensors)
            results = results if isinstance(results, tuple) else (results,)
        return (None, None, None) + tuple(results)


class _NotTwiceDifferentiable(eager.autograd.Function):
    """Marks gradients computed by a compiled backward under create_graph=True: using them for
    a second derivative is an error rather than a silently missing term."""

    @staticmethod
    def forward(ctx, n: int, *tensors):
        return tuple(Tensor._make(t._data) for t in tensors[:n])

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("a compiled function's backward is not differentiable (a higher-order gradient "
                           "through CompiledFunctionBackward); use static.grad(static.grad(f)) for higher "
                           "order, or call the function uncompiled")


def _input_objects(trace: TraceResult, leaves: list) -> list:
    """The caller's object behind each graph input (explicit leaves, then captured tensors)."""
    return [leaves[k] for k in trace.input_leaves] + [o for o, _ in trace.captured]


# -- the public wrapper ----------------------------------------------------------------------
class Compiled:
    """A function compiled per call signature. Call it like the original."""

    def __init__(self, fn: Callable, *, backend: str = "auto", static_argnums=(), fallback: str | None = None,
                 max_retraces: int = 8, opt_level: int = 2, passes=None, fast_math: bool = False,
                 name: str | None = None) -> None:
        if fallback not in (None, "eager"):
            raise ValueError(f"static.compile: fallback must be None or 'eager', got {fallback!r}")
        if backend not in ("auto", "numpy", "cupy", "native", "interpret"):
            raise ValueError(f"static.compile: unknown backend {backend!r}; use 'auto', 'numpy', 'cupy', 'native' "
                             "or 'interpret'")
        self._traceable = fn
        self.backend = backend
        self.static_argnums = tuple(static_argnums) if not isinstance(static_argnums, int) else (static_argnums,)
        self.fallback = fallback
        self.max_retraces = max_retraces
        self.opt_level = opt_level
        self.passes = passes
        self.fast_math = fast_math
        self.__name__ = name or getattr(fn, "__name__", type(fn).__name__)
        self.__doc__ = getattr(fn, "__doc__", None)
        self._module = fn if _is_module(fn) else None  # its training mode is part of the key
        self._cache: dict = {}
        self._eager_keys: set = set()
        self.retraces: list = []  # why, for each trace after the first
        self._gave_up = False
        self._warned_fallback = False

    @property
    def _graphmode_traceable(self):
        return self._traceable

    def __repr__(self) -> str:
        return f"<static.compile of {self.__name__}: {len(self._cache)} signatures>"

    def __get__(self, instance, owner=None):
        """Decorating a method: `instance.method(x)` calls the compiled function with the
        instance as its first (static, hashable by identity) argument."""
        return self if instance is None else types.MethodType(self, instance)

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        """Keyword arguments bound to their positions, so that `f(x, lr=0.1)` and `f(x, 0.1)` are
        one signature (and static_argnums keep meaning positions)."""
        sig = _signature_of(self._traceable)
        if sig is None:
            raise TypeError(f"{self.__name__}: keyword arguments need an inspectable signature")
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if bound.kwargs:
            raise TypeError(f"{self.__name__}: keyword-only parameters ({', '.join(bound.kwargs)}) are not supported "
                            "by static.compile; make them positional")
        return tuple(bound.args)

    def _optimize(self, graph: Graph, stages: list) -> Graph:
        """The forward-only optimization pipeline."""
        return run_pipeline(graph, stages, opt_level=self.opt_level, passes=self.passes, fast_math=self.fast_math)

    def _key(self, args: tuple):
        """Leaves of the arguments and the cache key of this call."""
        leaf_keys = None if self.static_argnums else _flat_keys(args)
        if leaf_keys is not None:
            leaves, tree = args, None  # the common case: a flat tuple of tensors or arrays
        else:
            static = static_positions(self.static_argnums, len(args)) if self.static_argnums else _NO_STATIC
            leaves, tree, owners = flatten_args(args, static)
            for k in static:
                check_hashable(args[k], k)  # an error, not a retrace on every call
            leaf_keys = tuple(_leaf_key(leaf, owners[k] in static) for k, leaf in enumerate(leaves))
        key = (tree, leaf_keys, STATE.enabled)
        if self._module is not None:
            key += (tuple(m.training for m in self._module.modules()),)
        return leaves, key

    def _lookup(self, key, leaves):
        try:
            return self._cache.get(key)
        except TypeError:  # an unhashable non-array leaf inside a pytree argument
            for leaf in leaves:
                check_hashable(leaf, "leaf")
            raise

    def _entry(self, args: tuple):
        """The compiled entry for this call, tracing on a miss; None when the call runs eagerly."""
        leaves, key = self._key(args)
        entry = self._lookup(key, leaves)
        if entry is not None and entry.still_valid():
            return leaves, key, entry
        return leaves, key, self._miss(args, key, entry)

    def _miss(self, args: tuple, key, stale):
        """Trace a new entry (or replace a stale one), within the retrace limit."""
        if stale is not None:
            reason = "a captured tensor changed shape, dtype or kind"
        else:
            reason = _describe_change(_closest(self._cache, key), key) if self._cache else None
        if key in self._eager_keys or self._gave_up:
            return None
        if reason is not None and len(self.retraces) >= self.max_retraces:
            self._gave_up = True
            warnings.warn(f"static.compile: {self.__name__} was retraced {len(self.retraces)} times (the limit, "
                          f"max_retraces={self.max_retraces}) and needs another trace because {reason}; calls "
                          "with new signatures run eagerly from now on. Keep shapes and dtypes fixed, or mark "
                          "changing Python values with static_argnums.", RuntimeWarning, stacklevel=4)
            return None
        try:
            new_entry = _Entry(self, args, key)
        except TraceError as exc:
            if self.fallback != "eager":
                raise  # nothing was cached: the next valid call traces afresh
            self._eager_keys.add(key)
            if not self._warned_fallback:
                self._warned_fallback = True
                warnings.warn(f"static.compile: {self.__name__} cannot be traced ({exc}); running it eagerly "
                              "(fallback='eager').", RuntimeWarning, stacklevel=4)
            return None
        if reason is not None:
            self.retraces.append(reason)
        self._cache[key] = new_entry
        return new_entry

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = self._positional(args, kwargs)
        if ACTIVE.stack:
            return self._traceable(*args)  # called while tracing another function: inline it
        leaves, key = self._key(args)
        entry = self._lookup(key, leaves)
        if entry is None or (entry.n_captured and not entry.still_valid()):
            entry = self._miss(args, key, entry)
            if entry is None:
                return self._traceable(*args)
        trace = entry.trace
        if STATE.enabled and (entry.diff_inputs or entry.n_captured):
            diff_captured = tuple(i for i, (o, _) in enumerate(trace.captured)
                                  if isinstance(o, Tensor) and o._requires_grad)
            if entry.diff_inputs or diff_captured:
                return self._call_with_grad(entry, args, leaves, entry.diff_inputs, diff_captured)
        if entry.all_tensor_inputs:
            results = entry.forward.run([t._data for t in leaves])
        elif entry.all_array_inputs:
            results = entry.forward.run(list(leaves))
        else:
            results = entry.forward.run(_input_arrays(trace, leaves))
        if entry.plain_tuple_output:
            return tuple(results)
        if entry.single_output and not entry.has_output_aliases:
            r = results[0]
            return Tensor._make(np.asarray(r) if isinstance(r, np.generic) else r) if entry.as_tensors else r
        if trace.updates:
            _write_back(trace, leaves, results[trace.n_outputs:])
        link = (entry.output_aliases, _input_objects(trace, leaves)) if entry.has_output_aliases else None
        return _wrap_outputs(trace, results[:trace.n_outputs], entry.as_tensors, link)

    def _call_with_grad(self, entry, args, leaves, diff_inputs, diff_captured):
        sg = entry.autograd_split(args, diff_inputs, diff_captured)
        tensors = [leaves[entry.trace.input_leaves[i]] for i in diff_inputs]
        tensors += [entry.trace.captured[i][0] for i in diff_captured]
        outs = CompiledFunction.apply(sg, _input_arrays(sg.trace, leaves), leaves, *tensors)
        return _wrap_outputs(entry.trace, list(outs), True)

    # -- looking inside -------------------------------------------------------------------------
    def _entry_for(self, args):
        leaves, key, entry = self._entry(args)
        if entry is None:
            raise RuntimeError(f"{self.__name__} runs eagerly for these arguments (see the earlier warning); "
                               "there is no compiled graph to show")
        return leaves, entry

    def ir(self, *args, **kwargs) -> Graph:
        """The final, optimized graph for these arguments."""
        return self._entry_for(self._positional(args, kwargs) if kwargs else args)[1].graph

    def explain(self, *args, **kwargs) -> str:
        """The IR after each stage, the joint forward+backward graph when these arguments want
        gradients, then how it runs (and the generated source, when there is one)."""
        args = self._positional(args, kwargs) if kwargs else args
        leaves, entry = self._entry_for(args)
        # compiles keep no stage texts (printing every graph would cost more than the passes):
        # build this signature once more, recording them, without touching the cache
        with recording():
            entry = _Entry(self, args, self._key(args)[1])
        parts = []
        for name, graph, *note in entry.stages:
            header = f"== {name} ==" + (f"  ({note[0]})" if note and note[0] else "")
            parts.append(f"{header}\n{graph}")
        diff_inputs, diff_captured = _diff_sets(entry.trace, leaves)
        if STATE.enabled and (diff_inputs or diff_captured):
            sg = entry.autograd_split(args, diff_inputs, diff_captured)
            for name, graph, *note in getattr(sg, "pass_stages", [("joint (forward + backward)", sg.joint)]):
                header = f"== {name} ==" + (f"  ({note[0]})" if note and note[0] else "")
                parts.append(f"{header}\n{graph}")
            parts.append(f"== forward (returns {len(sg.split.residuals)} residuals for the backward) ==\n"
                         f"{sg.split.forward}")
            parts.append(f"== backward ==\n{sg.split.backward}")
            parts.append(f"== execution ==\nforward: {sg.forward.describe()}\nbackward: {sg.backward.describe()}\n"
                         "the result's grad_fn is CompiledFunctionBackward, which runs the backward")
        else:
            parts.append("== joint (forward + backward) ==\nnot built: no input of this call requires grad "
                         "(static.grad builds it into the traced graph)")
            parts.append(f"== execution ==\n{entry.forward.describe()}")
        src = entry.forward.source()
        if src:
            parts.append(f"== generated source ==\n{src}")
        return "\n\n".join(parts)

    def autograd_graphs(self, *args, **kwargs) -> "AutogradGraphs":
        """The optimized graphs a call on these arguments runs: the forward and, when an
        argument requires grad, the backward that CompiledFunctionBackward runs."""
        args = self._positional(args, kwargs) if kwargs else args
        leaves, entry = self._entry_for(args)
        trace = entry.trace
        diff_inputs, diff_captured = _diff_sets(trace, leaves)
        if not (diff_inputs or diff_captured):
            return AutogradGraphs(entry.graph, None, 0, [])
        split = entry.autograd_split(args, diff_inputs, diff_captured).split
        wrt = list(diff_inputs) + [len(trace.input_leaves) + j for j in diff_captured]
        names = [split.forward.inputs[i].name for i in wrt]
        return AutogradGraphs(split.forward, split.backward, len(split.residuals), names)

    def source(self, *args, **kwargs) -> str:
        """The generated source for these arguments ('' when the interpreter runs the graph)."""
        return self._entry_for(self._positional(args, kwargs) if kwargs else args)[1].forward.source()


@dataclass
class AutogradGraphs:
    """What `Compiled.autograd_graphs` returns."""

    forward: Graph
    backward: Graph | None  # None when no argument requires grad
    n_saved: int  # how many of the forward's last outputs the backward reads
    grad_names: list  # the forward input each backward output is the gradient of


def _diff_sets(trace: TraceResult, leaves: list) -> tuple:
    """(explicit input positions, captured positions) whose tensors require grad now."""
    diff_inputs = tuple(i for i, k in enumerate(trace.input_leaves)
                        if isinstance(leaves[k], Tensor) and leaves[k]._requires_grad)
    diff_captured = tuple(i for i, (o, _) in enumerate(trace.captured) if isinstance(o, Tensor) and o._requires_grad)
    return diff_inputs, diff_captured


def compile(fn: Callable | None = None, **options) -> Any:  # noqa: A001  (the public name is compile)
    """`@static.compile` or `static.compile(backend=..., static_argnums=..., fallback=...)`;
    also `static.compile(module)` for an eager.nn.Module."""
    if fn is None:
        return lambda f: compile(f, **options)
    if isinstance(fn, Compiled):
        if not options:
            return fn
        return Compiled(fn._traceable, **{**_options_of(fn), **options})
    if _is_module(fn):
        return Compiled(fn, name=type(fn).__name__, **options)
    return Compiled(fn, **options)


def _options_of(c: Compiled) -> dict:
    return dict(backend=c.backend, static_argnums=c.static_argnums, fallback=c.fallback,
                max_retraces=c.max_retraces, opt_level=c.opt_level, passes=c.passes, fast_math=c.fast_math)


def _is_module(obj) -> bool:
    return hasattr(obj, "named_parameters") and hasattr(obj, "forward") and callable(obj)


# -- transforms ---------------------------------------------------------------------------------
class _GradTransform:
    """fn -> a function of the same arguments returning gradients (JAX conventions). It runs
    on Tracers: the gradient is recorded into the same graph as fn itself."""

    def __init__(self, fn, argnums, has_aux: bool, with_value: bool) -> None:
        self.fn = fn._traceable if isinstance(fn, Compiled) else fn
        self.argnums = argnums
        self.has_aux = has_aux
        self.with_value = with_value
        kind = "value_and_grad" if with_value else "grad"
        self.__name__ = f"{kind}_{getattr(self.fn, '__name__', 'f')}"
        functools.update_wrapper(self, self.fn, assigned=("__doc__", "__module__"), updated=())

    def __call__(self, *args):
        state = ACTIVE.stack[-1] if ACTIVE.stack else None
        if state is None:
            raise TraceError("static.grad transforms run inside a trace; call the compiled function instead")
        out = self.fn(*args)
        aux = None
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("static.grad(has_aux=True): the function must return a pair (output, aux)")
            out, aux = out
        if not isinstance(out, Tracer) or out.numel() != 1 or not out.is_floating_point():
            shape = list(out.shape) if hasattr(out, "shape") else type(out).__name__
            raise TypeError(f"static.grad: {getattr(self.fn, '__name__', 'f')} must return a scalar floating "
                            f"point value (got {shape}); use static.vjp-style seeding for other outputs")
        single = isinstance(self.argnums, int)
        nums = (self.argnums,) if single else tuple(self.argnums)
        wrt_trees = []
        flat_wrt = []
        for n in nums:
            leaves, tree = pytree.flatten(args[n], is_leaf)
            wrt_trees.append((tree, len(leaves)))
            flat_wrt += leaves
        for leaf in flat_wrt:
            if not isinstance(leaf, Tracer) or not leaf.is_floating_point():
                raise TypeError("static.grad: differentiated arguments must be floating point tensors or numbers")
        seed = eager.ops.special.FULL_LIKE(out, value=1.0)
        grads = vjp(state, [out._value], [seed], [t._value for t in flat_wrt])
        grouped, pos = [], 0
        for tree, n in wrt_trees:
            grouped.append(pytree.unflatten(tree, grads[pos:pos + n]))
            pos += n
        g = grouped[0] if single else tuple(grouped)
        result = (out, g) if self.with_value else g
        return (result, aux) if self.has_aux else result


def grad(fn: Callable, argnums=0, has_aux: bool = False, **options) -> Compiled:
    """The gradient of scalar `fn` with respect to argument(s) `argnums`, compiled."""
    return Compiled(_GradTransform(fn, argnums, has_aux, with_value=False), **_inherit(fn, options))


def value_and_grad(fn: Callable, argnums=0, has_aux: bool = False, **options) -> Compiled:
    """(fn(*args), grad) in one compiled graph."""
    return Compiled(_GradTransform(fn, argnums, has_aux, with_value=True), **_inherit(fn, options))


def _inherit(fn, options: dict) -> dict:
    return {**_options_of(fn), **options} if isinstance(fn, Compiled) else options
