"""`static.compile`: the public wrapper of a compiled function, its options and the methods
that look inside it (`explain`, `ir`, `source`, `autograd_graphs`).

A call goes: key of the arguments (static.signature) -> the entry for that key, checked
(captured tensors, guarded Python values) or traced (static.entry) -> run its executable,
write in-place updates back and wrap the outputs (static.bridge); when the call records
gradients, through `CompiledFunction`, whose backward runs the compiled backward."""
from __future__ import annotations

import functools
import inspect
import time
import types
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

import eager
from eager._dynamo import STANCE as _STANCE
from eager._tensor import Tensor
from eager.nn.module import structure_version

from . import dynamic_shapes, graph_breaks, logs
from .bridge import CompiledFunction, as_tensor, input_arrays, input_objects, rebase, wrap_outputs, write_back
from .check import checked_call, env_check
from .entry import Entry
from .errors import TraceError
from .ir import Graph
from .passes import recording
from .passes.manager import pipeline_for
from .signature import MISS, CallKey, call_key, closest, describe_change, fast_call
from .trace_function import check_hashable
from .tracer import ACTIVE
from .training import first_step_pending, with_freed_history

BACKENDS = ("auto", "numpy", "cupy", "native", "interpret")
OPTIONS = ("backend", "static_argnums", "static_argnames", "fallback", "fullgraph", "max_retraces", "opt_level",
           "passes", "fast_math", "check")
_TORCH_ONLY = {
    "mode": "torch.compile's modes choose autotuning and CUDA graphs; static.compile has opt_level=0, 1 or 2 "
            "and passes= to choose the optimizations",
    "options": "pass the options as keyword arguments of static.compile",
    "disable": "call the original function (compiled.__wrapped__) to run it eagerly",
}


class Compiled:
    """A function compiled per call signature. Call it like the original."""

    def __init__(self, fn: Callable, *, backend: str = "auto", static_argnums: int | Iterable[int] = (),
                 static_argnames: str | Iterable[str] = (), fallback: str | None = None, fullgraph: bool = False,
                 max_retraces: int = 8, opt_level: int = 2, passes: Iterable[str] | dict | None = None,
                 fast_math: bool = False, name: str | None = None, check: bool | None = None) -> None:
        _check_options(fn, backend, static_argnums, static_argnames, fallback, fullgraph, max_retraces, opt_level,
                       passes, fast_math)
        self._traceable = fn
        self.backend = backend
        self._signature = _signature_of(fn)
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.static_argnames = names
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self._static_kwonly = frozenset(n for n in names if _kind_of(self._signature, n) == "keyword-only")
        self.static_argnums = tuple(dict.fromkeys(nums + _positions_of(self._signature, names, fn)))
        self.fallback = fallback
        self.fullgraph = fullgraph
        self.max_retraces = max_retraces
        self.opt_level = opt_level
        self.passes = passes
        self.fast_math = fast_math
        if check is not None and not isinstance(check, bool):
            raise TypeError(f"static.compile: check must be True or False, got {check!r}")
        # every call run compiled and eagerly, compared (static.check); GRAPHMODE_CHECK=1 for a whole script
        self.check = env_check() if check is None else check
        self._last_entry: Entry | None = None
        self._refusals_said: set = set()  # the side effects already warned about (static.side_effects)
        functools.update_wrapper(self, fn if callable(fn) and hasattr(fn, "__name__") else type(fn),
                                 updated=())
        if name is not None:
            self.__name__ = self.__qualname__ = name
        self.__wrapped__ = fn
        self._module: Any = fn if _is_module(fn) else None  # its training mode is part of the key
        self._needs_binding = self._signature is not None and any(
            p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in self._signature.parameters.values())
        self._trace_target = _KeywordCall(fn, self._signature) \
            if self._needs_binding and self._signature is not None else fn
        self._cache: dict = {}
        self._alternates: dict = {}  # key -> earlier entries of that key whose guards failed (see _alternate)
        self._eager_keys: set = set()
        self.retraces: list = []  # why, for each trace after the first
        # seconds each signature took to build (trace, then the post-trace cache or autodiff,
        # passes and code generation), in order: what compiling cost, apart from running
        self.compile_seconds: list = []
        self._gave_up = False
        self._warned_fallback = False
        # the last call's signature, checked in generated code (static.signature.fast_call)
        self._fast: Callable[[tuple], Any] | None = None
        self._fast_entry: Entry | None = None
        self._modes_version = -1
        self._modes_value: tuple = ()
        self._first_step_checked = False  # whether the first call looked for an optimizer's first step
        _fingerprint_early()
        if backend in ("auto", "native"):
            _probe_compiler_early(backend)

    def __getattr__(self, name: str):
        """A compiled module behaves like the module: its attributes, parameters(),
        named_parameters(), state_dict(), train()/eval() (the mode is part of the key), to()."""
        module = self.__dict__.get("_module")
        if module is None or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(module, name)

    @property
    def _graphmode_traceable(self):
        return self._traceable

    @property
    def __signature__(self):
        return self._signature

    def __repr__(self) -> str:
        return f"<static.compile of {self.__name__}: {len(self._cache)} signatures>"

    def __get__(self, instance, owner=None):
        """Decorating a method: `instance.method(x)` calls the compiled function with the
        instance as its first (static, hashable by identity) argument."""
        return self if instance is None else types.MethodType(self, instance)

    # -- arguments -------------------------------------------------------------------------------
    def _arguments(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments as one positional tuple: keywords bound to their positions, so
        that `f(x, lr=0.1)` and `f(x, 0.1)` are one signature (and static_argnums keep meaning
        positions). Keyword-only arguments and **kwargs travel as two trailing dicts (static
        ones as a hashable tuple of items), unpacked again by `_call_traceable`."""
        if not kwargs and not self._needs_binding:
            return args
        sig = self._signature
        if sig is None:
            raise TypeError(f"{self.__name__}: keyword arguments need an inspectable signature")
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if not self._needs_binding:
            return tuple(bound.args)
        keywords = dict(bound.kwargs)
        var_kw = next((p.name for p in sig.parameters.values() if p.kind == p.VAR_KEYWORD), None)
        if var_kw is not None:
            keywords.update(keywords.pop(var_kw, {}))
        static = tuple(sorted((k, v) for k, v in keywords.items() if k in self._static_kwonly))
        dynamic = {k: v for k, v in keywords.items() if k not in self._static_kwonly}
        return (*bound.args, dynamic, _StaticKeywords(static))

    def _call_traceable(self, args: tuple):
        """Run the wrapped function on arguments as `_arguments` arranged them."""
        return self._trace_target(*args)

    def _static_positions(self, args: tuple) -> tuple:
        if self._needs_binding and args and isinstance(args[-1], _StaticKeywords):
            return self.static_argnums + (len(args) - 1,)
        return self.static_argnums

    # -- the one lookup path ---------------------------------------------------------------------
    def _lookup(self, args: tuple, stacklevel: int, calling: bool = False):
        """(leaves, key, entry) for this call: the cached entry when it still fits (captured
        tensors re-read, guarded Python values unchanged), otherwise a new trace; entry None
        when the call runs eagerly (`calling`: a call, not a look inside, which may run the
        first step of an optimizer eagerly: see `_first_optimizer_step`)."""
        leaves, key = call_key(args, self._static_positions(args), self._modes() if self._module is not None else ())
        try:
            entry = self._cache.get(key)
        except TypeError:  # an unhashable non-array leaf inside a pytree argument
            for leaf in leaves:
                check_hashable(leaf, "leaf")
            raise
        if entry is not None:
            reason = entry.invalid() if entry.checks else None
            if reason is None:
                return leaves, key, entry
            other = self._alternate(key, entry)
            if other is not None:
                return leaves, key, other
        else:
            found = dynamic_shapes.lookup(self, key, leaves)  # an entry with symbolic sizes that fits
            if found is not None:
                return leaves, key, found
            reason = describe_change(closest(self._cache, key), key) if self._cache else None
            if calling and not self._cache and self._first_optimizer_step():
                return leaves, key, None
        return leaves, key, self._miss(args, key, leaves, reason, stacklevel + 1)

    def _first_optimizer_step(self) -> bool:
        """Whether the very first call of this function runs eagerly because it is the first
        step of an optimizer it reaches whose first step makes state from the gradient (SGD's
        momentum buffer; see `training.first_step_pending`: state that does not depend on the
        gradient is made before the trace, and that first step is compiled). Such a step's
        graph differs from every later step's and would run once: compiling it would double
        the compile time of a training loop for one call. Run eagerly, it gives eager's
        results by construction, and the second call traces the steady graph (one signature
        for a steady loop). Asked once."""
        if self._first_step_checked or self.fullgraph:  # fullgraph=True never runs the function eagerly
            return False
        self._first_step_checked = True
        pending = first_step_pending(self._traceable)
        if pending:
            logs.recompiles.debug("%s: the first call runs eagerly (an optimizer's first step makes its state from the gradient)",
                                  self.__name__)
        return pending

    def _miss(self, args: tuple, key: CallKey, leaves, reason: str | None, stacklevel: int):
        """Trace a new entry (or replace a stale one), within the retrace limit."""
        if key in self._eager_keys or self._gave_up:
            return None
        if self._cache and _STANCE.name in ("eager_on_recompile", "fail_on_recompile"):  # eager.compiler.set_stance
            if _STANCE.name == "eager_on_recompile":
                return None
            raise RuntimeError(f"{self.__name__}: needs a new trace because {reason}, and "
                               "eager.compiler.set_stance('fail_on_recompile') is in force")
        if reason is not None and len(self.retraces) >= self.max_retraces:
            message = (f"static.compile: {self.__name__} was retraced {len(self.retraces)} times (the limit, "
                       f"max_retraces={self.max_retraces}) and needs another trace because {reason}")
            if self.fullgraph:
                raise RuntimeError(message + "; fullgraph=True does not fall back to eager. Keep shapes, dtypes "
                                   "and the Python values the function reads fixed, or raise max_retraces.")
            self._gave_up = True
            remedy = (" A batch or sequence length that varies: pad it to a few fixed sizes, or drop the last "
                      "partial batch (DataLoader(drop_last=True))." if "(dimension " in message else "")
            warnings.warn(message + "; calls with new signatures run eagerly from now on. Keep shapes and dtypes "
                          "fixed, or mark changing Python values with static_argnums." + remedy, RuntimeWarning,
                          stacklevel=stacklevel + 1)
            return None
        started = time.perf_counter()
        try:
            entry = dynamic_shapes.build(self, args, key, leaves) or Entry(self, args, key, leaves)
        except TraceError as exc:
            if self.fallback != "eager":
                raise  # nothing was cached: the next valid call traces afresh
            self._eager_keys.add(key)
            if graph_breaks.split_at_break(self, key, args, exc):  # compiled pieces around the break
                return None
            if not self._warned_fallback:
                self._warned_fallback = True
                warnings.warn(f"static.compile: {self.__name__} cannot be traced ({exc}); running it eagerly "
                              "(fallback='eager').", RuntimeWarning, stacklevel=stacklevel + 1)
            return None
        self.compile_seconds.append(time.perf_counter() - started)
        if reason is not None:
            self.retraces.append(reason)
        logs.recompiles.debug("%s: %s", self.__name__, f"retraced because {reason}" if reason else "first trace")
        old = self._cache.get(key)
        if old is not None:  # kept: a state that alternates (train/eval, a toggled flag) finds it again
            self._alternates.setdefault(key, []).append(old)
        self._cache[key] = entry
        return entry

    def _alternate(self, key: CallKey, stale: Entry) -> Entry | None:
        """Another entry traced for this key whose checks pass now (the Python state the
        function reads alternates between values it has seen); it becomes the key's entry."""
        others = self._alternates.get(key)
        if not others:
            return None
        for i, e in enumerate(others):
            if e.invalid() is None:
                others[i] = stale
                self._cache[key] = e
                return e
        return None

    def entries(self) -> list:
        """Every compiled entry: per signature the current one and those kept for states the
        function alternates between. The retrace limit counts these (less the first)."""
        out = list(self._cache.values())
        for others in self._alternates.values():
            out += others
        return out

    # -- calling ---------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _STANCE.force_eager and not ACTIVE.stack:  # eager.compiler.set_stance("force_eager"), disable()
            return self.__wrapped__(*args, **kwargs)
        fast = self._fast  # (None under check=True)
        if fast is not None and not kwargs:
            out = fast(args)  # the signature of the last call, checked exactly as the key would be
            if out is not MISS:
                return out
        if self.check and not ACTIVE.stack:
            return checked_call(self, args, kwargs)
        return self._call_unchecked(args, kwargs, 3)

    def _call_unchecked(self, args: tuple, kwargs: dict, stacklevel: int):
        """A call (`stacklevel`: of the user's frame that made it, for warnings)."""
        if kwargs or self._needs_binding:
            args = self._arguments(args, kwargs)
        if ACTIVE.stack:
            return self._call_traceable(args)  # called while tracing another function: inline it
        leaves, key, entry = self._lookup(args, stacklevel=stacklevel, calling=True)
        if entry is None or entry.eager_reason is not None:
            if entry is not None and entry.trace.refused is not None:
                self._refused(entry, stacklevel + 1)
            return graph_breaks.run_uncompiled(self, key, args)  # its graph-break split, or eagerly
        self._last_entry = entry
        if entry is not self._fast_entry:
            self._fast_entry = entry
            self._fast = fast_call(key, entry, self._run, self._modes if self._module is not None else None) \
                if not self._needs_binding and not self.static_argnums and not self.check else None
        return self._run(entry, leaves)

    def _refused(self, entry: Entry, stacklevel: int) -> None:
        """A signature whose trace did something to Python state that a compiled call cannot
        redo runs eagerly: said once (fullgraph=True raises instead)."""
        reason = entry.trace.refused
        if self.fullgraph:
            raise TraceError(f"{self.__name__}: {reason}; fullgraph=True does not run it eagerly")
        if reason not in self._refusals_said:
            self._refusals_said.add(reason)
            warnings.warn(f"static.compile: {self.__name__} runs eagerly for this signature: {reason}",
                          RuntimeWarning, stacklevel=stacklevel)

    def _run(self, entry: Entry, leaves):
        """Run a cached signature's executable on the call's leaves, write in-place updates
        back and wrap the outputs."""
        trace = entry.trace
        if trace.replays is not None and trace.replays.before:  # a scheduler stepped before the optimizer
            trace.replays.run_before()
        if trace.prepare is not None:  # random draws as eager makes them, attributes the trace set (static.training)
            trace.prepare(leaves, rebind=entry.grad is None)
        if entry.grad is not None:
            return self._call_with_grad(entry, leaves)
        if entry.all_tensor_inputs:
            results = entry.forward.run([t._data for t in leaves])
        elif entry.all_array_inputs:
            results = entry.forward.run(list(leaves))
        else:
            results = entry.forward.run(input_arrays(trace, leaves))
        if entry.plain_tuple_output:
            return tuple(results)
        if entry.single_output and not entry.has_output_aliases:
            r = results[0]
            return Tensor._make(np.asarray(r) if isinstance(r, np.generic) else r) if entry.as_tensors else r
        for i in entry.fresh_copies:  # a constant the function returns: a new buffer every call
            results[i] = results[i].copy()
        if trace.updates:
            write_back(trace, leaves, results[trace.n_outputs:], entry.fresh_grads, entry.fresh_grad_copies)
        if entry.freed_outputs and entry.as_tensors:
            for i in entry.freed_outputs:
                results[i] = with_freed_history(as_tensor(results[i]))
        link = (entry.output_aliases, input_objects(trace, leaves)) if entry.has_output_aliases else None
        out = wrap_outputs(trace, results[:trace.n_outputs], entry.as_tensors, link)
        return _replayed(trace, out)

    def _modes(self) -> tuple:
        """The training flag of every submodule of a compiled module, walked again only after
        some module changed (eager.nn's structure version): no tree walk per call."""
        version = structure_version()
        if version != self._modes_version:
            assert self._module is not None
            self._modes_value = tuple(m.training for m in self._module.modules())
            self._modes_version = version
        return self._modes_value

    def _call_with_grad(self, entry: Entry, leaves):
        trace, grad = entry.trace, entry.grad
        assert grad is not None  # called for entries that record gradients
        tensors = [leaves[k] for k in grad.wrt_leaves] + [trace.captured[i][0] for i in grad.wrt_captured]
        with eager.enable_grad():  # an enable_grad() region inside records even under an outer no_grad
            outs = CompiledFunction.apply(entry, input_arrays(trace, leaves), leaves, *tensors)
        n_user = trace.n_outputs
        targets = _update_tensors(trace, leaves)
        for k, target in enumerate(targets):
            if target is not None and n_user + k in grad.differentiable_outputs:
                rebase(target, outs[n_user + k])
        for i in entry.freed_outputs:
            with_freed_history(outs[i])
        return _replayed(trace, wrap_outputs(trace, list(outs[:n_user]), True))

    # -- looking inside --------------------------------------------------------------------------
    def _entry_for(self, args: tuple, kwargs: dict):
        args = self._arguments(args, kwargs)
        leaves, key, entry = self._lookup(args, stacklevel=3)
        if entry is None or entry.eager_reason is not None:
            why = entry.eager_reason if entry is not None else "see the earlier warning"
            raise RuntimeError(f"{self.__name__} runs eagerly for these arguments ({why}); there is no compiled "
                               "graph to show")
        return args, leaves, key, entry

    def ir(self, *args, **kwargs) -> Graph:
        """The final, optimized graph a call on these arguments runs (the forward, when the call
        records gradients: see autograd_graphs for the backward)."""
        return self._entry_for(args, kwargs)[3].graph

    def explain(self, *args, **kwargs) -> str:
        """The IR after each stage (the joint forward+backward graph and its split when these
        arguments want gradients), then how it runs and the generated source."""
        split = graph_breaks.explain_split(self, args, kwargs)  # a function split at graph breaks
        if split is not None:
            return split
        args, leaves, key, entry = self._entry_for(args, kwargs)
        ran = entry  # what calls run: its executables say where their code came from
        # compiles keep no stage texts (printing every graph would cost more than the passes):
        # build this signature once more, recording them, without touching the cache
        with recording(), dynamic_shapes.rebuilding(self, ran, key):  # a symbolic entry: with its symbols
            entry = Entry(self, args, key, leaves)
        parts = []
        for name, graph, *note in entry.stages:
            header = f"== {name} ==" + (f"  ({note[0]})" if note and note[0] else "")
            parts.append(f"{header}\n{graph}")
        grad = entry.grad
        if grad is not None:
            parts.insert(2, "== joint (forward + backward) ==\nthe traced graph records the backward after the "
                            f"forward, seeded by {len(grad.seed_positions)} grad_out input(s); it is optimized "
                            "as a whole, then split")
            parts.append(f"== forward (returns {len(grad.split.residuals)} residuals for the backward) ==\n"
                         f"{grad.split.forward}")
            parts.append(f"== backward ==\n{grad.split.backward}")
            parts.append(f"== execution ==\nforward: {entry.forward.describe()}\nbackward: "
                         f"{grad.backward.describe()}\nthe result's grad_fn is CompiledFunctionBackward, which runs "
                         "the backward")
        else:
            parts.append("== joint (forward + backward) ==\nnot built: no input of this call requires grad "
                         "(static.grad builds it into the traced graph)")
            parts.append(f"== execution ==\n{entry.forward.describe()}")
        src = _source(entry)
        if src:
            parts.append(f"== generated source ==\n{src}")
        dynamic = dynamic_shapes.describe(self.__dict__.get("_dynamic_policy"))
        if dynamic:
            parts.append(f"== dynamic shapes ==\n{dynamic}")
        breaks = graph_breaks.describe(self)
        if breaks:
            parts.append(f"== graph breaks ==\n{breaks}")
        from .explain_summary import summary  # noqa: PLC0415  (the one-screen opening: static/explain_summary.py)

        return "\n\n".join([summary(self, ran, entry), *parts])

    def autograd_graphs(self, *args, **kwargs) -> "AutogradGraphs":
        """The optimized graphs a call on these arguments runs: the forward and, when an
        argument requires grad, the backward that CompiledFunctionBackward runs."""
        args, leaves, key, entry = self._entry_for(args, kwargs)
        grad = entry.grad
        if grad is None:
            return AutogradGraphs(entry.graph, None, 0, [])
        split = grad.split
        inputs = entry.trace.input_leaves
        wrt = [inputs.index(k) for k in grad.wrt_leaves] + [len(inputs) + j for j in grad.wrt_captured]
        names = [split.forward.inputs[i].name for i in wrt]
        return AutogradGraphs(split.forward, split.backward, len(split.residuals), names)

    def source(self, *args, **kwargs) -> str:
        """The generated source a call on these arguments runs: the forward's, and the
        backward's after it when the call records gradients ('' when the interpreter runs)."""
        return _source(self._entry_for(args, kwargs)[3])

    def lower(self, *args, **kwargs) -> Any:
        """jax.jit(f).lower(x): the function traced for these arguments and optimized, not yet
        compiled; `.as_text()` its IR, `.compile()` the executable (static/stages.py)."""
        from .stages import lower  # noqa: PLC0415

        return lower(self, args, kwargs)


def _replayed(trace, out):
    """The function's result, after the trace's Python side effects were redone with this
    call's values (static.side_effects): the graph returned those values after the result."""
    replays = trace.replays
    if replays is None:
        return out
    if replays.n_values:
        out, values = out
        replays(list(values))
    else:
        replays([])
    return out


def _fingerprint_early() -> None:
    """Start hashing the library's sources (the caches' key, codegen.cache.source_fingerprint)
    on a helper thread, so that it overlaps what runs before the first compiled call. From the
    first static.compile, not from the import of this module: the hash writes its manifest
    into the code cache, which a program that only imports static (`graphmode cache info`)
    must find as it was."""
    try:
        from codegen import cache  # noqa: PLC0415
    except ImportError:
        return
    cache.prefetch_fingerprint()


def _probe_compiler_early(backend: str) -> None:
    """Start probing the C++ compiler on a helper thread when this function may run native
    code: the probe (a few compiler runs, once per machine: its record is cached) then overlaps
    the first call's tracing and passes."""
    try:
        from codegen import native  # noqa: PLC0415  (codegen fills the backend registry)
        from gmnative import build as native_build  # noqa: PLC0415
    except ImportError:
        return
    if backend == "native" or not native.native_disabled():
        native_build.prefetch_probe()


class _KeywordCall:
    """The function as tracing calls it when it has keyword-only parameters or **kwargs: the
    arguments arrive as `_arguments` arranges them (positional ones, then a dict of the
    keyword ones, then the static keyword ones) and are passed on by name."""

    def __init__(self, fn: Callable, sig: inspect.Signature) -> None:
        self.fn = fn
        self.__wrapped__ = fn  # captured tensors keep their names and call-time sources
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        positional = [p for p in sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        extra = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in ("kwargs", "static_kwargs")]
        if positional and positional[-1].kind == inspect.Parameter.VAR_POSITIONAL:
            positional = positional[:-1]
        self.__signature__ = inspect.Signature(
            [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY, default=inspect.Parameter.empty) for p in positional]
            + extra)

    def __call__(self, *args):
        if args and isinstance(args[-1], _StaticKeywords):
            return self.fn(*args[:-2], **args[-2], **dict(args[-1].items))
        return self.fn(*args)


class _StaticKeywords:
    """Keyword arguments named in static_argnames: hashed by value, part of the cache key."""

    __slots__ = ("items",)

    def __init__(self, items: tuple) -> None:
        self.items = items

    def __hash__(self) -> int:
        return hash(self.items)

    def __eq__(self, other) -> bool:
        return isinstance(other, _StaticKeywords) and other.items == self.items

    def __repr__(self) -> str:
        return f"static keywords {dict(self.items)!r}"


@dataclass
class AutogradGraphs:
    """What `Compiled.autograd_graphs` returns."""

    forward: Graph
    backward: Graph | None  # None when no argument requires grad
    n_saved: int  # how many of the forward's last outputs the backward reads
    grad_names: list  # the forward input each backward output is the gradient of


def _source(entry: Entry) -> str:
    forward = entry.forward.source()
    if entry.grad is None:
        return forward
    backward = entry.grad.backward.source()
    return "\n\n".join(s for s in (forward, backward) if s)


def _update_tensors(trace, leaves) -> list:
    out = []
    for kind, ref in trace.updates:
        target = leaves[ref] if kind == "input" else trace.captured[ref][0]
        out.append(target if isinstance(target, Tensor) else None)
    return out


def _signature_of(fn) -> inspect.Signature | None:
    try:
        return inspect.signature(fn.forward if _is_module(fn) else fn)
    except (TypeError, ValueError):
        return None


def _kind_of(sig: inspect.Signature | None, name: str) -> str | None:
    if sig is None or name not in sig.parameters:
        return None
    return "keyword-only" if sig.parameters[name].kind == inspect.Parameter.KEYWORD_ONLY else "positional"


def _positions_of(sig: inspect.Signature | None, names: tuple, fn) -> tuple:
    """Positions of the positional parameters named in static_argnames."""
    if not names:
        return ()
    if sig is None:
        raise ValueError(f"static.compile: static_argnames={names!r} needs an inspectable signature of "
                         f"{getattr(fn, '__name__', fn)!r}")
    params = list(sig.parameters.values())
    has_var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
    out = []
    for n in names:
        if n not in sig.parameters:
            if has_var_kw:
                continue
            raise ValueError(f"static.compile: static_argnames names {n!r}, which is not a parameter of "
                             f"{getattr(fn, '__name__', 'the function')}{sig}")
        p = sig.parameters[n]
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            out.append(params.index(p))
    return tuple(out)


def _is_module(obj) -> bool:
    return hasattr(obj, "named_parameters") and hasattr(obj, "forward") and callable(obj)


def _check_options(fn, backend, static_argnums, static_argnames, fallback, fullgraph, max_retraces, opt_level,
                   passes, fast_math, check=None) -> None:
    """Every option checked when it is given (at decoration), with what would be valid."""
    if check is not None and not isinstance(check, bool):
        raise TypeError(f"static.compile: check must be True, False or None (GRAPHMODE_CHECK decides), got {check!r}")
    if not callable(fn):
        raise TypeError(f"static.compile expects a function or an eager.nn.Module to compile, got "
                        f"{type(fn).__name__} {fn!r}")
    if backend not in BACKENDS:
        raise ValueError(f"static.compile: unknown backend {backend!r}; use one of {', '.join(map(repr, BACKENDS))}")
    if fallback not in (None, "eager"):
        raise ValueError(f"static.compile: fallback must be None or 'eager', got {fallback!r}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"static.compile: fullgraph must be True or False, got {fullgraph!r}")
    if fullgraph and fallback == "eager":
        raise ValueError("static.compile: fullgraph=True never falls back to eager; it cannot be combined with "
                         "fallback='eager'")
    if isinstance(max_retraces, bool) or not isinstance(max_retraces, int):
        raise TypeError(f"static.compile: max_retraces must be a non-negative int, got "
                        f"{type(max_retraces).__name__} {max_retraces!r}")
    if max_retraces < 0:
        raise ValueError(f"static.compile: max_retraces must be a non-negative int, got {max_retraces}")
    if isinstance(opt_level, bool) or opt_level not in (0, 1, 2):
        raise ValueError(f"static.compile: opt_level must be 0, 1 or 2, got {opt_level!r}")
    if not isinstance(fast_math, bool):
        raise TypeError(f"static.compile: fast_math must be True or False, got {fast_math!r}")
    if isinstance(passes, str):
        raise TypeError(f"static.compile: passes must be a list of pass names (passes=[{passes!r}]) or a dict "
                        f"switching passes on and off, not the string {passes!r}")
    if passes is not None:
        if not isinstance(passes, dict):
            passes = _strings(passes, list, "passes must be a list of pass names or a dict",
                              "passes must name passes by string")
        try:
            pipeline_for(opt_level, passes)
        except ValueError as exc:
            raise ValueError(f"static.compile: {exc}") from None
    _check_argnums(fn, static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
    _strings(names, tuple, "static_argnames must be a name or a sequence of names", "static_argnames must be strings")


def _strings(value: Any, collect: type, not_a_sequence: str, not_strings: str) -> Any:
    """`value` collected into a `collect` (list or tuple) of strings; otherwise the TypeError
    of the static.compile option, saying which of the two it is not."""
    try:
        items = collect(value)
    except TypeError:
        raise TypeError(f"static.compile: {not_a_sequence}, got {type(value).__name__}") from None
    if not all(isinstance(item, str) for item in items):
        raise TypeError(f"static.compile: {not_strings}, got {items!r}")
    return items


def _check_argnums(fn, static_argnums) -> None:
    nums = (static_argnums,) if isinstance(static_argnums, int) and not isinstance(static_argnums, bool) \
        else static_argnums
    if isinstance(nums, (str, bytes)) or not isinstance(nums, Iterable):
        raise TypeError(f"static.compile: static_argnums must be an int or a sequence of ints, got "
                        f"{type(static_argnums).__name__} {static_argnums!r}")
    nums = tuple(nums)
    bad = [n for n in nums if isinstance(n, bool) or not isinstance(n, int)]
    if bad:
        raise TypeError(f"static.compile: static_argnums must be ints, got {bad[0]!r} in {static_argnums!r}")
    sig = _signature_of(fn)
    if sig is None or not nums:
        return
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return  # *args: any position may exist
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    for i in nums:
        if not -n <= i < n:
            name = getattr(fn, "__name__", None) or f"{type(fn).__name__}.forward"  # (a module has no __name__)
            shown = ", ".join(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
            raise ValueError(f"static.compile: static_argnums={static_argnums!r} refers to position {i}, but "
                             f"{name}({shown}) accepts {n} positional argument(s); positions count from 0, "
                             "negative ones from the end")


def compile(fn: Callable | None = None, *, backend: str = "auto",  # noqa: A001  (the public name is compile)
            static_argnums: int | Iterable[int] = (), static_argnames: str | Iterable[str] = (),
            fallback: str | None = None, fullgraph: bool = False, max_retraces: int = 8, opt_level: int = 2,
            passes: Iterable[str] | dict | None = None, fast_math: bool = False, check: bool | None = None,
            **unsupported: Any) -> Any:
    """Compile `fn` (a function, or an eager.nn.Module) per call signature.

    Use as `@static.compile`, `@static.compile(option=...)` or `static.compile(fn, ...)`. The
    function is traced on the first call with each new signature (shapes, dtypes, devices,
    pytree structure, requires_grad, static values, grad mode, training mode); the graph is
    optimized and run as generated code on later calls with that signature.

    Args:
        fn: the function or module. Omitted: returns a decorator with these options.
        backend: "auto" (generated code for the inputs' device: native C when a C++ compiler
            is found, else NumPy, on the CPU; CuPy on a GPU), "numpy", "native", "cupy", or
            "interpret" (the reference interpreter).
        static_argnums: positions of arguments that are compile-time constants (hashable; a
            new value retraces), as in jax.jit. Negative positions count from the end.
        static_argnames: parameter names of such arguments (positional or keyword-only).
        fallback: None (a function that cannot be traced raises TraceError) or "eager" (it
            runs eagerly instead, with one warning).
        fullgraph: True never falls back to eager: an untraceable function raises, and so does
            a call past the retrace limit (torch.compile's fullgraph=True).
        max_retraces: how many new signatures after the first are traced before further new
            ones run eagerly (with a warning naming what changed). A non-negative int.
        opt_level: 0 (no passes), 1 (simplifications), 2 (also fusion, memory planning and the
            rematerializing forward/backward split).
        passes: a list naming exactly the passes to run, or a dict switching named passes
            on (True) or off (False).
        fast_math: allow rewrites that change rounding or special values (x + 0.0 -> x).
        check: run every call both compiled and eagerly on the same state and raise
            `static.CheckError` at the first difference, naming the value, the largest
            difference, the IR line and the user's line (static.check). None: the
            environment variable GRAPHMODE_CHECK decides (off unless set to 1).
        dynamic: (a keyword, as torch.compile's) None: a dimension that changes between calls
            is traced once more as a symbol, and that trace serves every later size
            (static.dynamic_shapes); True: every dimension is a symbol from the first call;
            False: each new size is its own trace.

    Returns a `Compiled` wrapper that keeps the wrapped function's name, docstring and
    signature (`__wrapped__` is the original), with `explain()`, `ir()`, `source()` and
    `autograd_graphs()` to look inside."""
    dynamic = unsupported.pop("dynamic", None)  # torch.compile's: static.dynamic_shapes
    if dynamic not in (None, True, False):
        raise TypeError(f"static.compile: dynamic must be None (automatic), True or False, got {dynamic!r}")
    if unsupported:
        name = next(iter(unsupported))
        hint = _TORCH_ONLY.get(name)
        raise TypeError(f"static.compile got an unexpected option {name!r}" + (f" ({hint})" if hint else "")
                        + f"; valid options: {', '.join(OPTIONS)}")
    options = dict(backend=backend, static_argnums=static_argnums, static_argnames=static_argnames,
                   fallback=fallback, fullgraph=fullgraph, max_retraces=max_retraces, opt_level=opt_level,
                   passes=passes, fast_math=fast_math, check=check)
    if fn is None:
        _check_options(_any_arguments, **options)  # checked now, at decoration, not at the first call
        if dynamic is not None:
            return lambda f: dynamic_shapes.with_mode(_compile_with(f, options), dynamic)
        return functools.partial(_compile_with, options=options)
    return dynamic_shapes.with_mode(_compile_with(fn, options), dynamic)


def _compile_with(fn, options: dict) -> Compiled:
    if isinstance(fn, Compiled):
        given = {k: v for k, v in options.items() if v != _DEFAULTS[k]}
        if not given:
            return fn
        return Compiled(fn._traceable, **{**options_of(fn), **given})
    if _is_module(fn):
        return Compiled(fn, name=type(fn).__name__, **options)
    return Compiled(fn, **options)


def _any_arguments(*args: Any, **kwargs: Any) -> None:
    """Stands for the function not given yet when options are checked."""


_DEFAULTS = dict(backend="auto", static_argnums=(), static_argnames=(), fallback=None, fullgraph=False,
                 max_retraces=8, opt_level=2, passes=None, fast_math=False, check=None)


def options_of(c: Compiled) -> dict:
    """The options a compiled function was made with (to compile a transform of it alike)."""
    return dict(backend=c.backend, static_argnums=c.static_argnums, static_argnames=c.static_argnames,
                fallback=c.fallback, fullgraph=c.fullgraph, max_retraces=c.max_retraces, opt_level=c.opt_level,
                passes=c.passes, fast_math=c.fast_math, check=c.check)


compile.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # the documented options only
    [p for p in inspect.signature(compile).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD],
    return_annotation=inspect.signature(compile).return_annotation)

