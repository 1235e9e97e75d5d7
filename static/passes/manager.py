"""The pass manager: an ordered pipeline of named passes over a graph. Each pass reports
what it changed; the verifier runs after each; every stage is recorded for `explain`."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

from .. import logs
from ..ir import Graph, verify
from .algebraic import algebraic
from .fusion import fuse
from .memory import plan_memory
from .simplify import cse, dce, fold
from .stability import stability

PASSES: dict[str, Callable] = {
    "dce": dce,
    "cse": cse,
    "fold": fold,
    "algebraic": algebraic,
    "stability": stability,
    "fuse": fuse,
    "memory": plan_memory,
}
SIMPLIFY = ["dce", "cse", "fold", "algebraic", "stability", "fold", "algebraic", "cse", "dce"]
LOWER = ["fuse", "memory"]


def pipeline_for(opt_level: int, passes=None) -> tuple[list, list]:
    """(simplify passes, lowering passes) for an opt level, with `passes` applied: a list
    names exactly the passes to run, a dict switches named passes on or off."""
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


class _Recording(threading.local):
    on = False


_RECORDING = _Recording()


@contextmanager
def recording():
    """Record each stage's IR text (what `explain` shows). Off by default: printing every
    intermediate graph would cost more than the passes themselves."""
    prev, _RECORDING.on = _RECORDING.on, True
    try:
        yield
    finally:
        _RECORDING.on = prev


def is_recording() -> bool:
    return _RECORDING.on


def summarize(stats: dict) -> str:
    parts = []
    for k, v in stats.items():
        if isinstance(v, list):
            parts.append(f"{k}: {len(v)}")
        else:
            parts.append(f"{k}: {v}")
    return ", ".join(parts)


def run_passes(graph: Graph, names: list, stages: list, options: dict, label: str = "") -> Graph:
    record = _RECORDING.on
    previous = str(graph) if record else None
    for name in names:
        stats = PASSES[name](graph, **options)
        verify(graph)
        stage = f"{label}{name}"
        text = str(graph) if record else None
        stages.append((stage, "(no change)" if text == previous else text, summarize(stats)))
        logs.stages.debug("after %s (%s):\n%s", stage, summarize(stats) or "done", graph)
        previous = text
        why = stats.get("why_not_fused")
        if why:
            stages.append((f"{stage}: why not fused", "\n".join(f"  {w}" for w in why), ""))
    return graph
