"""`static.compile`, `static.grad` and `static.value_and_grad`.

A compiled function keeps one entry per call signature (shapes, dtypes, device, pytree
structure, static argument values, whether gradients are wanted). An entry holds the
traced graph and what runs it. Calls with eager tensors that require grad return tensors
whose `grad_fn` (CompiledFunctionBackward) runs the compiled backward graph."""
from __future__ import annotations

import functools
import warnings
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
from .partition import split_joint
from .trace import TraceResult, is_leaf, trace_function
from .tracer import ACTIVE, Tracer


# -- signatures -----------------------------------------------------------------------------
def _leaf_key(leaf, static: bool):
    if static:
        return ("static", leaf)
    if isinstance(leaf, Tensor):
        d = leaf._data
        return ("tensor", d.shape, d.dtype.str, type(d).__module__, leaf._requires_grad)
    if isinstance(leaf, np.ndarray):
        return ("array", leaf.shape, leaf.dtype.str, "numpy")
    if hasattr(leaf, "__cuda_array_interface__"):
        return ("array", leaf.shape, leaf.dtype.str, "cupy")
    if isinstance(leaf, (bool, int, float)):
        return ("number", type(leaf))
    return ("static", leaf)


def _describe_change(old: tuple, new: tuple) -> str:
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
                    return f"argument leaf {i} moved to another device"
                return f"argument leaf {i} changed requires_grad"
            if a[0] == "static":
                return f"static argument leaf {i} changed value {a[1]!r} -> {b[1]!r}"
            return f"argument leaf {i} changed type"
    if old[2] != new[2]:
        return "grad mode changed"
    return "a captured tensor changed shape or dtype"


# -- entries -------------------------------------------------------------------------------
class _Entry:
    """One compiled signature: the trace, and executables for the forward and, when a
    call needs gradients, for the split forward/backward."""

    def __init__(self, owner: "Compiled", args: tuple, key) -> None:
        self.owner = owner
        self.trace: TraceResult = trace_function(owner._traceable, args, owner.static_argnums, owner.__name__)
        self.stages = [("traced", self.trace.graph)]
        verify(self.trace.graph)
        self.stages.append(("verified", self.trace.graph))
        self.graph = owner._optimize(self.trace.graph, self.stages)
        self.forward = build_executable(self.graph, owner.backend)
        self.split = None
        self.captured_keys = [(tuple(_data(o).shape), _data(o).dtype.str) for o, _ in self.trace.captured]

    def captured_unchanged(self) -> bool:
        return all((tuple(_data(o).shape), _data(o).dtype.str) == k
                   for (o, _), k in zip(self.trace.captured, self.captured_keys))

    def autograd_split(self, args, diff_leaves: list, diff_captured: list):
        if self.split is None:
            self.split = _build_split(self.owner, args, diff_leaves, diff_captured)
        return self.split


def _data(obj):
    return obj._data if isinstance(obj, Tensor) else obj


def _input_arrays(entry: _Entry, leaves: list) -> list:
    arrays = []
    for leaf_index, v in zip(entry.trace.input_leaves, entry.trace.graph.inputs):
        leaf = leaves[leaf_index]
        if isinstance(leaf, Tensor):
            arrays.append(leaf._data)
        elif isinstance(leaf, (bool, int, float)):
            arrays.append(np.asarray(leaf, dtype=v.type.dtype.np))
        else:
            arrays.append(leaf)
    arrays += [_data(o) for o, _ in entry.trace.captured]
    return arrays


def _write_back(trace: TraceResult, leaves: list, results: list) -> None:
    for (kind, ref), value in zip(trace.updates, results):
        target = leaves[ref] if kind == "input" else ref
        if isinstance(target, (bool, int, float)):
            continue  # a Python number is immutable: rebinding it is the caller's business
        data = _data(target)
        xp = np if isinstance(data, np.ndarray) else eager._device.cupy_module()
        xp.copyto(data, value, casting="unsafe")
        if isinstance(target, Tensor):
            target._version[0] += 1


def _wrap_outputs(trace: TraceResult, values: list, as_tensors: bool):
    it = iter(values)
    leaves = []
    total = trace.n_outputs + len(trace.out_consts)
    for k in range(total):
        if k in trace.out_consts:
            leaves.append(trace.out_consts[k])
        else:
            v = next(it)
            leaves.append(v if not as_tensors or isinstance(v, Tensor) else eager._tensor.Tensor._make(
                v if not isinstance(v, np.generic) else np.asarray(v)))
    return pytree.unflatten(trace.out_tree, leaves)


# -- composition with eager autograd --------------------------------------------------------
class _SplitGraphs:
    def __init__(self, owner, split, trace, diff_inputs, n_out, backend):
        self.split, self.trace, self.diff_inputs, self.n_out = split, trace, diff_inputs, n_out
        self.forward = build_executable(split.forward, backend)
        self.backward = build_executable(split.backward, backend)


def _build_split(owner: "Compiled", args: tuple, diff_leaves: list, diff_captured: list) -> _SplitGraphs:
    """Retrace with the backward recorded after the forward, then split the joint graph."""
    seeds_holder = {}

    def joint_fn(*traced_args):
        out = owner._traceable(*traced_args)
        state = ACTIVE.stack[-1]
        out_leaves, _ = pytree.flatten(out, is_leaf)
        flat_args, _ = pytree.flatten(traced_args, is_leaf)
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

    joint = trace_function(joint_fn, args, owner.static_argnums, owner.__name__ + "_joint")
    seeds = seeds_holder["seeds"]
    n_user = joint.n_outputs - len(diff_leaves) - len(diff_captured)
    # graph outputs: user outputs, grads, then updates; the split wants updates with the forward
    outs = joint.graph.outputs
    user, grads, updates = outs[:n_user], outs[n_user:joint.n_outputs], outs[joint.n_outputs:]
    joint.graph.outputs = user + updates + grads
    primal = [v for v in joint.graph.inputs if v not in seeds]
    split = split_joint(joint.graph, primal, seeds, len(user) + len(updates))
    verify(split.forward)
    verify(split.backward)
    joint.n_outputs = n_user
    sg = _SplitGraphs(owner, split, joint, diff_leaves, n_user, owner.backend)
    sg.seed_outputs = seeds_holder["outs"]
    sg.user_outputs = user
    return sg


class CompiledFunction(eager.autograd.Function):
    """The eager autograd node of a compiled call: its backward runs the compiled backward."""

    @staticmethod
    def forward(ctx, sg: _SplitGraphs, arrays: list, leaves: list, *diff_tensors):
        trace = sg.trace
        n_user, n_upd = len(sg.user_outputs), len(trace.updates)
        results = sg.forward.run(arrays)
        user, updates, residuals = results[:n_user], results[n_user:n_user + n_upd], results[n_user + n_upd:]
        _write_back(trace, leaves, updates)
        ctx.sg, ctx.residuals = sg, residuals
        ctx.float_out = [k for k, v in enumerate(sg.user_outputs) if v in sg.seed_outputs]
        outs = tuple(Tensor._make(np.asarray(r) if isinstance(r, np.generic) else r) for r in user)
        for k, t in enumerate(outs):
            if k not in ctx.float_out:
                ctx.mark_non_differentiable(t)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        sg = ctx.sg
        seeds = []
        for k in ctx.float_out:
            g = grads[k]
            seeds.append(g._data)
        results = sg.backward.run(list(ctx.residuals) + seeds)
        return (None, None, None) + tuple(Tensor._make(np.asarray(r) if isinstance(r, np.generic) else r)
                                          for r in results)


# -- the public wrapper ----------------------------------------------------------------------
class Compiled:
    """A function compiled per call signature. Call it like the original."""

    def __init__(self, fn: Callable, *, backend: str = "auto", static_argnums=(), fallback: str | None = None,
                 max_retraces: int = 8, opt_level: int = 2, passes=None, fast_math: bool = False,
                 name: str | None = None) -> None:
        if fallback not in (None, "eager"):
            raise ValueError(f"static.compile: fallback must be None or 'eager', got {fallback!r}")
        if backend not in ("auto", "numpy", "cupy", "interpret"):
            raise ValueError(f"static.compile: unknown backend {backend!r}; use 'auto', 'numpy', 'cupy' or "
                             "'interpret'")
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
        self._cache: dict = {}
        self._eager_keys: set = set()
        self._last_key = None
        self.retraces: list = []  # (reason) per trace after the first
        self._gave_up = False

    @property
    def _graphmode_traceable(self):
        return self._traceable

    def __repr__(self) -> str:
        return f"<static.compile of {self.__name__}: {len(self._cache)} signatures>"

    def _optimize(self, graph: Graph, stages: list) -> Graph:
        """The optimization pipeline (static.passes when present)."""
        try:
            from .passes import run_pipeline  # noqa: PLC0415
        except ImportError:
            return graph
        return run_pipeline(graph, stages, opt_level=self.opt_level, passes=self.passes, fast_math=self.fast_math)

    def _key(self, args: tuple):
        leaves, tree = pytree.flatten(args, is_leaf)
        static = set(i % max(len(args), 1) for i in self.static_argnums)
        owners = []
        for i, a in enumerate(args):
            owners += [i] * len(pytree.flatten(a, is_leaf)[0])
        leaf_keys = tuple(_leaf_key(leaf, owners[k] in static) for k, leaf in enumerate(leaves))
        return leaves, (tree, leaf_keys, STATE.enabled)

    def _entry(self, args: tuple):
        leaves, key = self._key(args)
        entry = self._cache.get(key)
        if entry is not None and entry.captured_unchanged():
            return leaves, key, entry
        if key in self._eager_keys or self._gave_up:
            return leaves, key, None
        if self._cache:
            reason = _describe_change(self._last_key, key) if entry is None else "a captured tensor changed"
            self.retraces.append(reason)
            if len(self.retraces) >= self.max_retraces:
                self._gave_up = True
                warnings.warn(f"static.compile: {self.__name__} was traced {len(self.retraces) + 1} times (last "
                              f"because {reason}); running it eagerly from now on. Keep shapes and dtypes "
                              "fixed, or mark changing Python values with static_argnums.", RuntimeWarning,
                              stacklevel=3)
                return leaves, key, None
        try:
            entry = _Entry(self, args, key)
        except TraceError as exc:
            if self.fallback != "eager":
                raise
            self._eager_keys.add(key)
            warnings.warn(f"static.compile: {self.__name__} cannot be traced ({exc}); running it eagerly "
                          "(fallback='eager').", RuntimeWarning, stacklevel=3)
            return leaves, key, None
        self._cache[key] = entry
        self._last_key = key
        return leaves, key, entry

    def __call__(self, *args):
        if ACTIVE.stack and any(isinstance(leaf, Tracer) for leaf in pytree.flatten(args, is_leaf)[0]):
            return self._traceable(*args)  # called inside another trace: inline it
        leaves, key, entry = self._entry(args)
        if entry is None:
            return self._traceable(*args)
        trace = entry.trace
        as_tensors = any(isinstance(leaf, Tensor) for leaf in leaves) or not any(
            isinstance(leaf, np.ndarray) or hasattr(leaf, "__cuda_array_interface__") for leaf in leaves)
        arrays = _input_arrays(entry, leaves)
        if STATE.enabled:
            diff_leaves = [trace.input_leaves.index(k) for k in trace.input_leaves
                           if isinstance(leaves[k], Tensor) and leaves[k]._requires_grad]
            diff_captured = [o for o, _ in trace.captured if isinstance(o, Tensor) and o._requires_grad]
            if diff_leaves or diff_captured:
                return self._call_with_grad(entry, args, leaves, arrays, diff_leaves, diff_captured)
        results = entry.forward.run(arrays)
        _write_back(trace, leaves, results[trace.n_outputs:])
        return _wrap_outputs(trace, results[:trace.n_outputs], as_tensors)

    def _call_with_grad(self, entry, args, leaves, arrays, diff_leaves, diff_captured):
        leaf_ids = [entry.trace.input_leaves[i] for i in diff_leaves]
        sg = entry.autograd_split(args, leaf_ids, diff_captured)
        tensors = [leaves[k] for k in leaf_ids] + list(diff_captured)
        outs = CompiledFunction.apply(sg, arrays, leaves, *tensors)
        return _wrap_outputs(entry.trace, list(outs), True)

    # -- looking inside -------------------------------------------------------------------------
    def _entry_for(self, args):
        leaves, key, entry = self._entry(args)
        if entry is None:
            raise RuntimeError(f"{self.__name__} runs eagerly for these arguments (see the earlier warning); "
                               "there is no compiled graph to show")
        return entry

    def ir(self, *args) -> Graph:
        """The final, optimized graph for these arguments."""
        return self._entry_for(args).graph

    def explain(self, *args) -> str:
        """The IR after each stage, then how it runs (and the generated source, when there is one)."""
        entry = self._entry_for(args)
        parts = []
        for name, graph, *note in entry.stages:
            header = f"== {name} ==" + (f"  ({note[0]})" if note and note[0] else "")
            parts.append(f"{header}\n{graph}")
        parts.append(f"== execution ==\n{entry.forward.describe()}")
        src = entry.forward.source()
        if src:
            parts.append(f"== generated source ==\n{src}")
        return "\n\n".join(parts)

    def source(self, *args) -> str:
        """The generated source for these arguments ('' when the interpreter runs the graph)."""
        return self._entry_for(args).forward.source()


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
        module = fn
        for pname, p in module.named_parameters():
            p._graphmode_name = pname
        return Compiled(module, name=type(module).__name__, **options)
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
