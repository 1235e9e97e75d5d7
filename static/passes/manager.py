"""The pass manager: passes as objects (a `name` and typed options, xDSL's `ModulePass`
shape), and a pipeline that runs them in order, verifies the graph after each when asked
(verify_each_pass), and reports every stage to an instrumentation callback (what `explain` shows is one such callback)."""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar

from .. import logs
from ..ir import Graph, verify
from .algebraic import algebraic
from .decompose import decompose
from .fusion import fuse
from .memory import plan_memory
from .simplify import cse, dce, fold
from .stability import stability


@dataclass(frozen=True)
class GraphPass:
    """A pass: `apply(graph)` edits the graph in place and returns its stats (what changed).
    Options are the dataclass fields of the subclass; `name` is what pipelines call it."""

    name: ClassVar[str] = ""

    def apply(self, graph: Graph) -> dict:
        raise NotImplementedError

    def with_options(self, **options) -> "GraphPass":
        """This pass with the options it declares taken from `options` (others ignored)."""
        known = {f.name for f in dataclasses.fields(self)}
        return dataclasses.replace(self, **{k: v for k, v in options.items() if k in known})

    def __call__(self, graph: Graph, **options) -> dict:
        return self.with_options(**options).apply(graph)


@dataclass(frozen=True)
class DeadCodeElimination(GraphPass):
    name: ClassVar[str] = "dce"

    def apply(self, graph: Graph) -> dict:
        return dce(graph)


@dataclass(frozen=True)
class CommonSubexpressionElimination(GraphPass):
    name: ClassVar[str] = "cse"

    def apply(self, graph: Graph) -> dict:
        return cse(graph)


@dataclass(frozen=True)
class ConstantFolding(GraphPass):
    name: ClassVar[str] = "fold"

    def apply(self, graph: Graph) -> dict:
        return fold(graph)


@dataclass(frozen=True)
class Algebraic(GraphPass):
    name: ClassVar[str] = "algebraic"
    fast_math: bool = False  # also the rewrites that may change values (x*0 -> 0)

    def apply(self, graph: Graph) -> dict:
        return algebraic(graph, fast_math=self.fast_math)


@dataclass(frozen=True)
class Stability(GraphPass):
    name: ClassVar[str] = "stability"

    def apply(self, graph: Graph) -> dict:
        return stability(graph)


@dataclass(frozen=True)
class Decompose(GraphPass):
    name: ClassVar[str] = "decompose"

    def apply(self, graph: Graph) -> dict:
        return decompose(graph)


@dataclass(frozen=True)
class Fuse(GraphPass):
    name: ClassVar[str] = "fuse"
    max_ops: int | None = None  # the most ops one fused region may hold (None: fusion.MAX_FUSED_OPS)
    row_regions: bool = False  # also regions that reduce along rows and read the result back (fusion.Fuser)
    backend: str | None = None  # whose declared capabilities say which pointwise ops it can inline

    def apply(self, graph: Graph) -> dict:
        return fuse(graph, max_ops=self.max_ops, rows=self.row_regions, backend=self.backend)


@dataclass(frozen=True)
class PlanMemory(GraphPass):
    name: ClassVar[str] = "memory"

    def apply(self, graph: Graph) -> dict:
        return plan_memory(graph)


PASSES: dict[str, GraphPass] = {p.name: p for p in (
    DeadCodeElimination(), CommonSubexpressionElimination(), ConstantFolding(), Algebraic(), Stability(), Decompose(),
    Fuse(), PlanMemory())}
SIMPLIFY = ["dce", "cse", "fold", "algebraic", "stability", "fold", "algebraic", "cse", "dce"]
LOWER = ["decompose", "fuse", "memory"]


def pipeline_for(opt_level: int, passes=None) -> tuple[list, list]:
    """(simplify pass names, lowering pass names) for an opt level, with `passes` applied: a
    list names exactly the passes to run, a dict switches named passes on or off."""
    simplify = SIMPLIFY if opt_level >= 1 else []
    lower = LOWER if opt_level >= 2 else []
    if isinstance(passes, dict):
        unknown = set(passes) - set(PASSES) - {"remat"}
        if unknown:
            raise ValueError(f"unknown pass name(s) {sorted(unknown)}; known: {sorted(PASSES) + ['remat']}")
        simplify = [p for p in simplify if passes.get(p, True)]
        lower = [p for p in lower if passes.get(p, True)]
    elif passes is not None:
        names = list(passes)
        unknown = set(names) - set(PASSES) - {"remat"}
        if unknown:
            raise ValueError(f"unknown pass name(s) {sorted(unknown)}; known: {sorted(PASSES) + ['remat']}")
        simplify = [p for p in SIMPLIFY if p in names]
        lower = [p for p in LOWER if p in names]
    return simplify, lower


# An instrumentation callback: (stage label, the graph after it, its stats) -> None. It may
# read the graph (print it, count nodes) but never change it.
Instrument = Callable[[str, Graph, dict], None]


@dataclass
class Pipeline:
    """Passes run in order, the verifier after each (when verify_each_pass), every stage
    reported to `instrument`."""

    passes: list
    instrument: Instrument | None = None

    def run(self, graph: Graph, label: str = "") -> Graph:
        each = verify_each_pass()
        for p in self.passes:
            stats = p.apply(graph)
            if each:
                verify(graph)
            if self.instrument is not None:
                self.instrument(f"{label}{p.name}", graph, stats)
            if logs.stages.isEnabledFor(logging.DEBUG):
                logs.stages.debug("after %s%s (%s):\n%s", label, p.name, summarize(stats) or "done", graph)
        return graph


def verify_each_pass() -> bool:
    """Whether the verifier runs after every pass (GRAPHMODE_VERIFY=each, which the test suite
    sets, or while `explain` records the stages), naming the pass that broke a graph. Otherwise
    it runs on the traced graph and on each pipeline's result only: a dozen full checks of a
    training step's graph were a tenth of its compile time."""
    return _RECORDING.on or os.environ.get("GRAPHMODE_VERIFY", "").strip().lower() in ("each", "1", "all")


def summarize(stats: dict) -> str:
    parts = []
    for k, v in stats.items():
        if isinstance(v, list):
            parts.append(f"{k}: {len(v)}")
        elif isinstance(v, dict):
            if v:
                parts.append(f"{k}: " + ", ".join(f"{name} ({n})" for name, n in v.items()))
        else:
            parts.append(f"{k}: {v}")
    return ", ".join(parts)


class StageRecorder:
    """The instrumentation `explain` uses: appends (stage, IR text or "(no change)", stats
    summary) to `stages`, and a "why not fused" stage after a fusion that rejected pairs.
    With text=False only the summaries are kept (printing each graph costs more than the
    passes themselves)."""

    def __init__(self, stages: list, text: bool, previous: str | None = None) -> None:
        self.stages = stages
        self.text = text
        self.previous = previous

    def __call__(self, stage: str, graph: Graph, stats: dict) -> None:
        text = str(graph) if self.text else None
        self.stages.append((stage, "(no change)" if text is not None and text == self.previous else text,
                            summarize(stats)))
        self.previous = text
        why = stats.get("why_not_fused")
        if why:
            self.stages.append((f"{stage}: why not fused", "\n".join(f"  {w}" for w in why), ""))


# -- the thread-local switch `explain` used before pipelines took a callback -------------------
class _Recording(threading.local):
    on = False


_RECORDING = _Recording()


@contextmanager
def recording():
    """Record each stage's IR text for code that calls `run_pipeline`/`optimize_joint`
    without an instrument (kept for that code; new code passes a `StageRecorder`)."""
    prev, _RECORDING.on = _RECORDING.on, True
    try:
        yield
    finally:
        _RECORDING.on = prev


def is_recording() -> bool:
    return _RECORDING.on


def run_passes(graph: Graph, names: list, stages: list, options: dict, label: str = "",
               instrument: Instrument | None = None) -> Graph:
    """Run the named passes with `options` (each pass takes the ones it declares). Stages go
    to `instrument`, or, without one, are appended to `stages` as `explain` reads them."""
    if instrument is None:
        record = _RECORDING.on
        instrument = StageRecorder(stages, text=record, previous=str(graph) if record else None)
    Pipeline([PASSES[n].with_options(**options) for n in names], instrument).run(graph, label)
    return graph
