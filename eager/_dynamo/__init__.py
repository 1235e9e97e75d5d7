"""`torch._dynamo` here: the names scripts reach for around `torch.compile` (marking dynamic
dimensions, resetting the caches, disabling compilation for a function or a region, the
config), each working on `eager.compile`'s compiled functions.

graphmode's compiler traces the Python function on abstract values (static.tracer), so
`allow_in_graph` and `assume_constant_result` need no bytecode machinery: a function is
always traced through, and a Python value a function returns while tracing is already a
constant of that trace (guarded where static.guards can re-read it)."""
from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import config, exc, testing  # noqa: F401  (torch._dynamo.config, .exc, .testing)

# every function eager.compile made, so that reset() empties their caches
_COMPILED: "weakref.WeakSet[Any]" = weakref.WeakSet()


class _Stance:
    """set_stance / disable(): how compiled functions run now."""

    name = "default"
    force_eager = False  # compiled functions call the original function


STANCE = _Stance()
STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")


def register(compiled: Any) -> Any:
    _COMPILED.add(compiled)
    return compiled


# -- dimensions ---------------------------------------------------------------------------------------

def _dims(t: Any, index: Any, name: str) -> list:
    from .._tensor import Tensor  # noqa: PLC0415

    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: expected an eager Tensor, got {type(t).__name__}")
    dims = [index] if isinstance(index, int) else list(index)
    out = []
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"{name}: dimensions must be ints, got {d!r}")
        if not -t.ndim <= d < t.ndim:
            raise IndexError(f"{name}: dimension {d} out of range for a tensor of {t.ndim} dimension(s) "
                             f"(shape {tuple(t.shape)})")
        out.append(d % t.ndim)
    return out


def mark_dynamic(t: Any, index: Any, min: int | None = None, max: int | None = None) -> None:  # noqa: A002
    """Make dimension `index` (an int or a list) of `t` a symbol when a compiled function is
    called with it: one trace serves every size of it (static.dynamic_shapes). min/max are
    accepted as PyTorch's bounds; sizes 0 and 1 stay specialized, as there."""
    for d in _dims(t, index, "mark_dynamic"):
        marked = getattr(t, "_dynamo_dynamic_indices", None) or set()
        marked.add(d)
        t._dynamo_dynamic_indices = marked
        static = getattr(t, "_dynamo_static_indices", None)
        if static:
            static.discard(d)


def maybe_mark_dynamic(t: Any, index: Any) -> None:
    """As mark_dynamic; PyTorch does not raise when the dimension ends up specialized, and
    neither does mark_dynamic here (a trace that needs the size as a number is traced for it)."""
    mark_dynamic(t, index)


def mark_static(t: Any, index: Any = None) -> None:
    """Keep dimension `index` (all of them when None) of `t` a number even where it changes
    (each size its own trace)."""
    dims = list(range(t.ndim)) if index is None else _dims(t, index, "mark_static")
    static = getattr(t, "_dynamo_static_indices", None) or set()
    static.update(dims)
    t._dynamo_static_indices = static
    marked = getattr(t, "_dynamo_dynamic_indices", None)
    if marked:
        marked.difference_update(dims)


def mark_static_address(t: Any, guard: bool = True) -> None:
    """Accepted (PyTorch's CUDA-graph hint): tensors are inputs by reference here."""


# -- caches and switches ----------------------------------------------------------------------------

def reset() -> None:
    """Forget every compiled signature of every function eager.compile made (and the
    in-memory post-trace cache), as torch._dynamo.reset(): the next call traces afresh."""
    testing.keep_counts()  # a CompileCounter keeps what it counted, as PyTorch's
    for c in list(_COMPILED):
        _reset_one(c)
    trace_cache = sys.modules.get("static.jit.trace_cache")
    if trace_cache is not None:
        trace_cache.clear_memory()


def _reset_one(c: Any) -> None:
    state = c.__dict__
    for name in ("_cache",):
        if isinstance(state.get(name), dict):
            state[name].clear()
    for name in ("_eager_keys",):
        if isinstance(state.get(name), set):
            state[name].clear()
    for name in ("retraces", "compile_seconds"):
        if isinstance(state.get(name), list):
            state[name].clear()
    for name, value in (("_gave_up", False), ("_warned_fallback", False), ("_fast", None), ("_fast_entry", None),
                        ("_first_step_checked", False)):
        if name in state:
            state[name] = value
    policy = state.pop("_dynamic_policy", None)
    if policy is not None:  # keep the mode compile was given, not what was learnt
        from static.jit import dynamic_shapes  # noqa: PLC0415

        dynamic_shapes.set_mode(c, policy.mode)
    breaks = state.get("_graph_breaks")
    if breaks is not None and hasattr(breaks, "clear"):
        breaks.clear()


class _Disable:
    """disable(): a decorator (the function runs eagerly, called alone or from a compiled
    function) and a context manager (compiled functions run their original Python inside)."""

    def __init__(self, fn: Callable | None = None, recursive: bool = True) -> None:
        self.fn = fn
        self.recursive = recursive
        self._saved: list = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None:  # @disable() with parentheses: decorate now
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return _disabled(args[0])
            raise TypeError("disable: use @disable, @disable(), disable(fn) or `with disable():`")
        return _disabled(self.fn)(*args, **kwargs)

    def __enter__(self) -> None:
        self._saved.append((STANCE.name, STANCE.force_eager))
        STANCE.force_eager = True

    def __exit__(self, *exc_info: Any) -> None:
        STANCE.name, STANCE.force_eager = self._saved.pop()


def _disabled(fn: Callable) -> Callable:
    """fn marked to run eagerly: eager.compile of it returns it as is; called while a
    compiled function is traced, it breaks the graph there (the Python runs for real)."""
    if getattr(fn, "_graphmode_disabled", False):
        return fn
    original = getattr(fn, "__wrapped__", fn) if hasattr(fn, "_graphmode_traceable") else fn

    @functools.wraps(original)
    def run_eagerly(*args: Any, **kwargs: Any) -> Any:
        if is_compiling():
            from static.jit.graph_breaks import break_graph  # noqa: PLC0415

            return break_graph(original, args, kwargs, f"{getattr(original, '__qualname__', original)} is "
                               "marked with disable()")
        return original(*args, **kwargs)

    run_eagerly._graphmode_disabled = True  # type: ignore[attr-defined]
    return run_eagerly


def disable(fn: Callable | None = None, recursive: bool = True) -> Any:
    """torch._dynamo.disable / torch.compiler.disable: `@disable` on a function makes it run
    eagerly (a compiled function calling it breaks its graph there); `with disable():`
    makes compiled functions run their original Python inside the block."""
    if fn is not None:
        if not callable(fn):
            raise TypeError(f"disable: expected a function, got {type(fn).__name__}")
        return _disabled(fn)
    return _Disable(None, recursive)


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend: Any = None) -> Any:
    """torch.compiler.set_stance: "default"; "force_eager" (compiled functions run their
    original Python); "fail_on_recompile" (a call that would trace again raises); and
    "eager_on_recompile" (a call that would trace again runs eagerly). Usable as a call, a
    context manager and a decorator."""
    if stance not in STANCES:
        raise ValueError(f"set_stance: unknown stance {stance!r}; use one of {', '.join(STANCES)}")
    return _StanceSetter(stance)


class _StanceSetter:
    def __init__(self, stance: str) -> None:
        self.prev = (STANCE.name, STANCE.force_eager)
        self._apply(stance)

    @staticmethod
    def _apply(stance: str) -> None:
        STANCE.name = stance
        STANCE.force_eager = stance == "force_eager"

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: Any) -> None:
        STANCE.name, STANCE.force_eager = self.prev

    def __call__(self, fn: Callable) -> Callable:
        stance = STANCE.name
        self.__exit__()

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            prev = (STANCE.name, STANCE.force_eager)
            self._apply(stance)
            try:
                return fn(*args, **kwargs)
            finally:
                STANCE.name, STANCE.force_eager = prev

        return run


def allow_in_graph(fn: Callable) -> Callable:
    """torch._dynamo.allow_in_graph: the function is traced into the graph. graphmode traces
    through every Python function anyway, so it is returned as is (marked)."""
    if not callable(fn):
        raise TypeError(f"allow_in_graph: expected a function, got {type(fn).__name__}")
    try:
        fn._graphmode_allow_in_graph = True  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """torch._dynamo.assume_constant_result: the function's result is a constant of the
    trace. A function called while tracing runs for real, and a Python value it returns is
    already a constant of the trace: returned as is (marked)."""
    if not callable(fn):
        raise TypeError(f"assume_constant_result: expected a function, got {type(fn).__name__}")
    try:
        fn._graphmode_constant_result = True  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        pass
    return fn


def is_compiling() -> bool:
    """Whether the code runs while a compiled function is being traced (torch.compiler.is_compiling)."""
    tracer = sys.modules.get("static.tracing.tracer")
    return bool(tracer is not None and tracer.ACTIVE.stack)


is_dynamo_compiling = is_compiling


def optimize(backend: str = "inductor", *, nopython: bool = False, dynamic: bool | None = None,
             disable: bool = False) -> Callable:  # noqa: A002
    """The legacy spelling `torch._dynamo.optimize(backend)(fn)`: eager.compile(fn, backend=...)."""
    from .._compile import compile as compile_  # noqa: PLC0415

    if disable:
        return lambda fn: fn
    return lambda fn: compile_(fn, backend=backend, fullgraph=nopython, dynamic=dynamic)


# -- explain ----------------------------------------------------------------------------------------

@dataclass
class ExplainOutput:
    """What torch._dynamo.explain(fn)(*args) reports: graphs, breaks with their reasons and
    user lines, ops per graph, guards, compile times."""

    graphs: list = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list = field(default_factory=list)
    out_guards: list = field(default_factory=list)
    compile_times: str = ""
    symbolic_dims: str = ""

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, reason in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {i}:\n    Reason: {reason.reason}\n    User Stack: {reason.user_stack}")
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines.extend(f"    {op}" for op in ops)
        if self.out_guards:
            lines.append("Out Guards:")
            lines.extend(f"  {g}" for g in self.out_guards)
        if self.symbolic_dims:
            lines.append("Dynamic Shapes:")
            lines.extend(f"  {line}" for line in self.symbolic_dims.splitlines())
        if self.compile_times:
            lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines)


def _segment_graphs(compiled: Any) -> list:
    """The compiled graphs of a split function's pieces, pieces of pieces included."""
    state = compiled.__dict__.get("_graph_breaks")
    graphs: list = []
    for split in (state.splits.values() if state is not None else ()):
        for piece in (split.prefix, split.rest, *(split.branches or ())):
            if piece is None:
                continue
            if piece.__dict__.get("_graph_breaks") is not None and piece.__dict__["_graph_breaks"].splits:
                graphs += _segment_graphs(piece)
            graphs += [e.graph for e in piece.entries() if getattr(e, "graph", None) is not None]
    return graphs


@dataclass
class BreakReason:
    reason: str
    user_stack: str


def explain(fn: Callable, *extra_args: Any, **extra_kwargs: Any) -> Callable[..., ExplainOutput]:
    """torch._dynamo.explain(fn)(*args, **kwargs): compile fn, run it once on the arguments,
    and say how many graphs it made, where and why it broke, its ops and guards."""
    if extra_args or extra_kwargs:  # the old spelling explain(fn, *args)
        return explain(fn)(*extra_args, **extra_kwargs)  # type: ignore[return-value]

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        from static import compile as static_compile  # noqa: PLC0415
        from static.jit import dynamic_shapes  # noqa: PLC0415

        target = getattr(fn, "_graphmode_traceable", fn)
        compiled = static_compile(target, fallback="eager", backend="numpy")
        out = ExplainOutput()
        import warnings  # noqa: PLC0415

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            compiled(*args, **kwargs)
        breaks = compiled.__dict__.get("_graph_breaks")
        graphs = []
        if breaks is not None and breaks.segments_seen:
            from static.jit.graph_breaks import all_breaks  # noqa: PLC0415

            graphs = _segment_graphs(compiled)
            out.break_reasons = [BreakReason(b.reason, b.where) for b in all_breaks(compiled)[0]]
        else:
            try:
                graphs = [compiled.ir(*args, **kwargs)]
            except RuntimeError as exc:  # ran eagerly: one break, the whole function
                out.break_reasons = [BreakReason(str(exc), getattr(target, "__qualname__", str(target)))]
        out.graphs = graphs
        out.graph_count = len(graphs)
        out.graph_break_count = len(out.break_reasons)
        out.ops_per_graph = [[n.op for n in g.nodes] for g in graphs]
        out.op_count = sum(len(ops) for ops in out.ops_per_graph)
        for entry in compiled._cache.values():
            trace = getattr(entry, "trace", None)
            out.out_guards += [repr(g) for g in getattr(trace, "guards", [])]
        out.compile_times = ", ".join(f"{s * 1e3:.1f} ms" for s in compiled.compile_seconds)
        out.symbolic_dims = dynamic_shapes.describe(compiled.__dict__.get("_dynamic_policy"))
        return out

    return run


__all__ = ["allow_in_graph", "assume_constant_result", "config", "disable", "explain", "is_compiling",
           "mark_dynamic", "mark_static", "maybe_mark_dynamic", "optimize", "reset", "set_stance"]


def __getattr__(name: str) -> Any:
    """torch._dynamo.OptimizedModule (eval_frame's class): loaded on first use, as it loads nn."""
    if name == "OptimizedModule":
        from .eval_frame import OptimizedModule  # noqa: PLC0415

        return OptimizedModule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
