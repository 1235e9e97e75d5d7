"""Explicit compile stages, as JAX's `jax.jit(f).lower(x).compile()`:

    lowered = static.compile(f).lower(x)     # traced for x's signature and optimized: no code yet
    print(lowered.as_text())                 # the optimized IR
    run = lowered.compile()                  # the backend's executable for that graph
    print(run.as_text())                     # its generated source ('' for the interpreter)
    y = run(x)                               # runs it; another signature raises TypeError

Each stage has its cache around it: `lower` keeps one Lowered per signature on the compiled
function (the same arguments lower once), `Lowered.compile` builds its executable once (and
code generation below it has its own module and disk caches, keyed by the generated input).
A call through `Compiled.__call__` does all three at once; the stages let a caller look at,
time or ship each step apart.

The staged path is the forward, as JAX's: outputs record no gradient (lowered under
no_grad). A function that writes to its inputs or captured tensors, draws random numbers or
has Python side effects to replay needs the full call path, and lowering it says so.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import eager
from eager._tensor import Tensor

from ..ir import Graph
from ..passes import run_pipeline
from ..tracing.function import TraceResult, flatten_args, trace_function
from .bridge import input_arrays, wrap_outputs
from .executable import build_executable, row_regions

if TYPE_CHECKING:
    from .compiled import Compiled

__all__ = ["Lowered", "Executable", "lower"]


def _signature(leaves: list, static: set) -> tuple:
    """What a staged executable is specialized to: each array leaf's kind, shape and dtype,
    each number and static value itself (numbers are traced as the constants they are)."""
    out: list[tuple] = []
    for k, leaf in enumerate(leaves):
        if k in static:
            out.append(("static", leaf))
        elif isinstance(leaf, Tensor):
            out.append(("tensor", tuple(leaf.shape), str(leaf.dtype)))
        elif isinstance(leaf, (np.ndarray, np.generic)):
            out.append(("array", tuple(np.shape(leaf)), str(np.asarray(leaf).dtype)))
        else:
            out.append(("value", type(leaf).__name__, leaf))
    return tuple(out)


def _leaves(owner: "Compiled", args: tuple, kwargs: dict) -> tuple[tuple, list, tuple]:
    """The call's arguments as the compiled function arranges them, their flattened leaves and
    the signature they make."""
    arranged = owner._arguments(args, kwargs)
    static = frozenset(owner._static_positions(arranged))
    leaves, _, owners = flatten_args(arranged, static)
    static_leaves = {k for k, i in enumerate(owners) if i in static}
    return arranged, leaves, _signature(leaves, static_leaves)


def _refusal(trace: TraceResult) -> str | None:
    if trace.refused is not None:
        return trace.refused
    if trace.updates:
        return "it writes to its inputs or to tensors it captures (in-place updates written back after a call)"
    if trace.prepare is not None:
        return "it draws random numbers or binds attributes before each call"
    if trace.replays is not None:
        return "it has Python side effects that a call replays"
    return None


class Executable:
    """jax.stages.Compiled: one signature's executable. Calling it runs the generated code on
    arguments of that signature; `as_text()` is the generated source."""

    def __init__(self, lowered: "Lowered") -> None:
        self.lowered = lowered
        owner = lowered.owner
        self._run = build_executable(lowered.graph, owner.backend, owner.fast_math)

    def as_text(self) -> str:
        """The generated source ('' where the interpreter runs the graph)."""
        return self._run.source()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        low = self.lowered
        _, leaves, signature = _leaves(low.owner, args, kwargs)
        if signature != low.signature:
            raise TypeError(f"{low.name}: this executable was compiled for arguments {_show(low.signature)}, "
                            f"called with {_show(signature)}; lower again for these arguments "
                            f"(static.compile(f).lower(*args).compile())")
        trace = low.trace
        results = self._run.run(input_arrays(trace, leaves))
        as_tensors = any(isinstance(x, Tensor) for x in leaves) or not any(
            isinstance(x, (np.ndarray, np.generic)) for x in leaves)
        return wrap_outputs(trace, list(results[:trace.n_outputs]), as_tensors)

    def __repr__(self) -> str:
        return f"<static executable of {self.lowered.name} for {_show(self.lowered.signature)}>"


class Lowered:
    """jax.stages.Lowered: the function traced for one signature and optimized by the passes,
    not yet compiled to code. `as_text()` is the optimized IR; `compile()` the executable."""

    def __init__(self, owner: "Compiled", trace: TraceResult, graph: Graph, signature: tuple) -> None:
        self.owner, self.trace, self.graph, self.signature = owner, trace, graph, signature
        self.name = getattr(owner, "__name__", "function")
        self._compiled: Executable | None = None

    def as_text(self) -> str:
        """The optimized graph's IR text (what the backend generates code from)."""
        return str(self.graph)

    def compile(self) -> Executable:
        """The backend's executable for this graph, built once per Lowered."""
        if self._compiled is None:
            self._compiled = Executable(self)
        return self._compiled

    def __repr__(self) -> str:
        return f"<static lowering of {self.name} for {_show(self.signature)}>"


def lower(owner: "Compiled", args: tuple, kwargs: dict) -> Lowered:
    """Trace `owner`'s function for these arguments and run the passes (cached per signature
    on `owner`). Raises ValueError where the staged forward cannot stand for the call."""
    arranged, _, signature = _leaves(owner, args, kwargs)
    cache: dict = owner.__dict__.setdefault("_lowered", {})
    try:
        found = cache.get(signature)
    except TypeError:  # an unhashable static value
        raise TypeError(f"{owner.__name__}.lower: a static argument is unhashable; static values are part of "
                        "the signature, so pass a hashable value (a tuple instead of a list)") from None
    if found is not None:
        return found
    with eager.no_grad():
        trace = trace_function(owner._trace_target, arranged, owner._static_positions(arranged), owner.__name__)
    why = _refusal(trace)
    if why is not None:
        raise ValueError(f"{owner.__name__}.lower: the staged path runs the forward alone, and this function "
                         f"cannot be: {why}. Call the compiled function itself, which handles it.")
    graph = run_pipeline(trace.graph, [], opt_level=owner.opt_level, passes=owner.passes, fast_math=owner.fast_math,
                         row_regions=row_regions(owner.backend), backend=owner.backend)
    lowered = cache[signature] = Lowered(owner, trace, graph, signature)
    return lowered


def _show(signature: tuple) -> str:
    parts = []
    for item in signature:
        if item[0] in ("tensor", "array"):
            parts.append(f"{item[0]}{list(item[1])}:{item[2]}")
        else:
            parts.append(repr(item[-1]))
    return "(" + ", ".join(parts) + ")"
