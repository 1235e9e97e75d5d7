"""Optimization passes over the IR, and the pipelines `static.compile` runs:
simplify (dce, cse, fold, algebraic, stability) -> [autodiff, remat partition] -> fuse ->
memory plan. Each pass is a function `graph -> stats` that edits the graph in place."""
from __future__ import annotations

from ..ir import Graph, verify
from .manager import PASSES, is_recording, pipeline_for, recording, run_passes, summarize
from .remat import Split, partition
from .rewrite import clone, renumber
from .stability import stabilize_values

__all__ = ["PASSES", "Split", "run_pipeline", "optimize_joint", "stabilize_values", "partition", "recording"]


def run_pipeline(graph: Graph, stages: list, opt_level: int = 2, passes=None, fast_math: bool = False) -> Graph:
    """The forward-only pipeline; returns a new graph (the traced one is left as shown)."""
    graph = clone(graph)
    simplify, lower = pipeline_for(opt_level, passes)
    options = {"fast_math": fast_math}
    run_passes(graph, simplify, stages, options)
    run_passes(graph, lower, stages, options)
    renumber(graph)
    verify(graph)
    return graph


def optimize_joint(joint: Graph, primal: list, seeds: list, n_forward_outputs: int, stages: list,
                   opt_level: int = 2, passes=None, fast_math: bool = False) -> tuple[Split, dict]:
    """Simplify forward and backward together, split them by a min-cut (or save everything
    the backward reads when remat is off), then fuse and plan each half."""
    simplify, lower = pipeline_for(opt_level, passes)
    options = {"fast_math": fast_math}
    run_passes(joint, simplify, stages, options, label="joint: ")
    remat_on = opt_level >= 2 and (passes is None or (isinstance(passes, dict) and passes.get("remat", True))
                                   or (not isinstance(passes, dict) and "remat" in passes))
    split, stats = partition(joint, primal, seeds, n_forward_outputs, recompute=remat_on)
    stages.append(("partition" + (" (min-cut remat)" if remat_on else ""),
                   f"{split.forward}\n\n{split.backward}" if is_recording() else None, summarize(stats)))
    for half, name in ((split.forward, "forward"), (split.backward, "backward")):
        verify(half)
        run_passes(half, lower, stages, options, label=f"{name}: ")
        renumber(half)
        verify(half)
    return split, stats
