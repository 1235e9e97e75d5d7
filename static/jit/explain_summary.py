"""The one-screen summary `explain()` opens with.

`Compiled.explain()` prints every stage of the pipeline, which for a small MLP training
step is thousands of lines: right for finding what a pass did, wrong for the first
question, "what did compiling make of my function?". This module answers that one in about
twenty lines, from what the signature's build left behind (the stage notes the passes
wrote, the final graphs, the executables and where their code came from), before the
stage-by-stage detail:

- how many kernels run and how many ops were fused into them;
- what the backward keeps from the forward (saved bytes) and what it recomputes instead;
- the backend that runs each graph and where its code came from (generated now, or the
  disk cache), and whether the traced graph itself came from the post-trace cache;
- graph breaks (a signature that runs eagerly) and the guards a call checks.
"""
from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from typing import Any

from ..ir import Graph

__all__ = ["summary", "SUMMARY_TITLE"]

SUMMARY_TITLE = "== summary =="


def _note_numbers(note: str) -> dict[str, int]:
    """'saved_values: 1, saved_bytes: 262144' -> {'saved_values': 1, 'saved_bytes': 262144}."""
    return {k: int(v) for k, v in re.findall(r"(\w+): (-?\d+)", note or "")}


def _stage_totals(stages: Iterable[Any], name_suffix: str) -> dict[str, int]:
    """The numbers of every stage whose name ends in `name_suffix` ('fuse', 'memory', ...), added."""
    totals: dict[str, int] = {}
    for name, _graph, *note in stages:
        if name == name_suffix or name.endswith(": " + name_suffix) or name.startswith(name_suffix + " "):
            for k, v in _note_numbers(note[0] if note else "").items():
                totals[k] = totals.get(k, 0) + v
    return totals


def _count(graph: Graph | None, op: str) -> int:
    return 0 if graph is None else sum(1 for n in graph.nodes if n.op == op)


def _fused_ops(graph: Graph | None) -> int:
    if graph is None:
        return 0
    return sum(len(n.body.nodes) for n in graph.nodes if n.op == "fused" and n.body is not None)


def format_bytes(n: int | None) -> str:
    """Binary units, 3 significant digits ('-' when there is no memory plan); the one
    spelling of a byte count in explain()'s summary and static.compare's tables."""
    if n is None:
        return "-"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def backend_of(executable: Any) -> str:
    """The backend an executable runs: native, numpy, cupy or interpret."""
    kind = type(executable).__name__
    if kind == "NativeGraph":
        return "native"
    if kind == "InterpretedGraph":
        return "interpret"
    loaded = getattr(executable, "_loaded", None)
    if isinstance(loaded, dict) and loaded:
        return ", ".join(loaded)
    backend = getattr(executable, "backend", None)
    return "numpy" if backend == "auto" else str(backend or kind)


def code_origin(executable: Any) -> str:
    """Where the executable's generated module came from ('generated', 'disk cache', ...)."""
    loaded = getattr(executable, "_loaded", None)
    if isinstance(loaded, dict):
        origins = [getattr(v, "origin", None) for v in loaded.values()]
    else:
        origins = [getattr(loaded, "origin", None)]
    named = [str(o) for o in origins if o]
    if type(executable).__name__ == "InterpretedGraph":
        return "nothing generated (the interpreter runs the IR op by op)"
    return ", ".join(dict.fromkeys(named)) or "not generated yet"


def _guard_text(guard: Any) -> str:
    """A guard in a few words: what it reads ('global 'scale'', 'attributes of Linear')."""
    what = getattr(guard, "what", None)
    if what:
        return str(what)
    module = getattr(guard, "module", None)
    if module is not None:
        return f"attributes of {type(module).__name__}"
    text = str(guard)
    return text if len(text) <= 40 else text[:37] + "..."


def summary(owner: Any, ran: Any, recorded: Any) -> str:
    """The summary section: `ran` is the signature's Entry that calls use (its executables
    say where their code came from), `recorded` the same signature rebuilt with its stages
    recorded (what the passes did)."""
    stages = recorded.stages
    grad = recorded.grad
    traced = stages[0][1] if stages else None
    lines = [SUMMARY_TITLE]
    name = getattr(owner, "__name__", "fn")
    if grad is not None:
        forward, backward = grad.split.forward, grad.split.backward
        graphs = [("forward", forward, ran.forward), ("backward", backward, ran.grad.backward if ran.grad else None)]
        lines.append(f"@{name}: forward and backward compiled together (an argument requires grad), then split")
    else:
        graphs = [("forward", recorded.graph, ran.forward)]
        updates = len(getattr(ran.trace, "updates", ()) or ())
        lines.append(f"@{name}: a training step: backward() and {updates} update(s) of parameters, gradients and "
                     "optimizer state traced into one graph" if updates else
                     f"@{name}: one graph, no separate backward (no argument of the call requires grad; "
                     "gradients asked for with static.grad or value_and_grad are computed inside it)")
    n_traced = len(traced.nodes) if traced is not None else 0
    final = [g for _, g, _ in graphs]
    kernels = sum(_count(g, "fused") for g in final)
    fused_ops = sum(_fused_ops(g) for g in final)
    lines.append(f"  ops          {n_traced} traced -> {sum(len(g.nodes) for g in final)} after optimization "
                 f"({' + '.join(f'{k} {len(g.nodes)}' for k, g, _ in graphs)})")
    lines.append(f"  kernels      {kernels} fused kernel{'s' if kernels != 1 else ''} running {fused_ops} ops; "
                 f"{sum(len(g.nodes) for g in final) - kernels} other top-level op(s) run as library calls")
    simplified = {k: v for stage in ("dce", "cse", "fold", "algebraic", "stability")
                  for k, v in _stage_totals(stages, stage).items() if v}
    if simplified:
        lines.append("  simplified   " + ", ".join(f"{k} {v}" for k, v in simplified.items()))
    part = _stage_totals(stages, "partition")
    if grad is not None:
        lines.append(f"  saved        {len(grad.split.residuals)} value(s), {format_bytes(part.get('saved_bytes'))} kept "
                     f"for the backward (without recomputation: {format_bytes(part.get('saved_bytes_without_remat'))})")
        lines.append(f"  recomputed   {part.get('recomputed_ops', 0)} op(s) recomputed in the backward instead of "
                     "saved")
    memory = _stage_totals(stages, "memory")
    if memory:
        lines.append(f"  memory       {memory.get('buffers', 0)} buffer(s), {memory.get('in_place', 0)} written in "
                     f"place, peak {format_bytes(memory.get('peak_bytes'))} of intermediates (naive "
                     f"{format_bytes(memory.get('naive_bytes'))})")
    for label, _graph, executable in graphs:
        if executable is None:
            continue
        lines.append(f"  {label:<12} backend {backend_of(executable)}; code: {code_origin(executable)}")
    origins = [code_origin(ex) for _, _, ex in graphs if ex is not None]
    if origins and all(o == "disk cache" for o in origins):
        cache_line = ("the generated code came from the disk cache, and so did the optimized graphs: no pass ran "
                      "for this signature in this process (GRAPHMODE_LOGS=stages printed nothing for it); the "
                      "stages below were rebuilt for explain()")
    elif origins and all(o == "memory" for o in origins):
        cache_line = "the generated code was already loaded in this process"
    else:
        cache_line = "built in this process; the next process finds it in the disk cache (GRAPHMODE_CACHE_DIR)"
    lines.append(f"  cache        {cache_line}")
    trace = ran.trace
    guards = list(getattr(trace, "guards", []) or [])
    eager_keys = len(getattr(owner, "_eager_keys", ()) or ())
    retraces = len(getattr(owner, "retraces", []) or [])
    lines.append(f"  breaks       {'none: the whole function is one graph' if not eager_keys else ''}"
                 f"{f'{eager_keys} signature(s) run eagerly (see the warnings)' if eager_keys else ''}; "
                 f"{len(getattr(owner, '_cache', {}) or {})} signature(s) compiled, {retraces} retrace(s)")
    shown = ", ".join(_guard_text(g) for g in guards[:4])
    lines.append("  guards       shapes, dtypes and grad mode of the arguments"
                 + (f"; {len(guards)} Python value(s) read while tracing: {shown}" if guards else
                    "; no Python value read while tracing")
                 + (", ..." if len(guards) > 4 else ""))
    lines.append("  below        each stage's IR (== name ==  (what it changed)), how it runs, the generated source")
    return "\n".join(_wrapped(line) for line in lines)


WIDTH = 110  # the summary fits a terminal and a page's code block


def _wrapped(line: str) -> str:
    """A long summary line folded under its value's column (15 spaces, after the label)."""
    if len(line) <= WIDTH:
        return line
    indent = " " * (15 if line.startswith("  ") else 2)
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_long_words=False,
                                   break_on_hyphens=False))
