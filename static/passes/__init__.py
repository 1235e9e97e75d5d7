"""Optimization passes over the IR, and the pipelines `static.compile` runs:
simplify (dce, cse, fold, algebraic, stability) -> [autodiff, remat partition] -> fuse ->
memory plan. Each pass is a `GraphPass` object (a name, typed options, `apply(graph) ->
stats` editing the graph in place); a `Pipeline` runs them and reports every stage to an
instrumentation callback (`StageRecorder` collects what `explain` shows)."""
from __future__ import annotations

from ..ir import Graph, verify
from .manager import (PASSES, GraphPass, Instrument, Pipeline, StageRecorder, is_recording, pipeline_for, recording,
                      run_passes, summarize)
from .pool_masks import gate_pool_masks
from .remat import Split, partition
from .rewrite import clone, renumber
from .stability import stabilize_values

__all__ = ["PASSES", "GraphPass", "Pipeline", "StageRecorder", "Instrument", "Split", "run_pipeline",
           "optimize_joint", "stabilize_values", "partition", "recording"]


def run_pipeline(graph: Graph, stages: list, opt_level: int = 2, passes=None, fast_math: bool = False,
                 instrument: Instrument | None = None, row_regions: bool = False, backend: str | None = None) -> Graph:
    """The forward-only pipeline; returns a new graph (the traced one is left as shown).
    Stages go to `instrument` when given, else to `stages` (see `run_passes`). `row_regions`:
    fusion may make row regions (for a backend that runs them: static.executable.row_regions);
    `backend`: whose capabilities fusion follows (static.executable.capabilities)."""
    graph = clone(graph)
    simplify, lower = pipeline_for(opt_level, passes)
    options = {"fast_math": fast_math, "row_regions": row_regions, "backend": backend}
    run_passes(graph, simplify, stages, options, instrument=instrument)
    run_passes(graph, lower, stages, options, instrument=instrument)
    renumber(graph)
    verify(graph)
    return graph


def optimize_joint(joint: Graph, primal: list, seeds: list, n_forward_outputs: int, stages: list,
                   opt_level: int = 2, passes=None, fast_math: bool = False,
                   instrument: Instrument | None = None, row_regions: bool = False,
                   backend: str | None = None) -> tuple[Split, dict]:
    """Simplify forward and backward together, split them by a min-cut (or save everything
    the backward reads when remat is off), then fuse and plan each half."""
    simplify, lower = pipeline_for(opt_level, passes)
    options = {"fast_math": fast_math, "row_regions": row_regions, "backend": backend}
    run_passes(joint, simplify, stages, options, label="joint: ", instrument=instrument)
    remat_on = opt_level >= 2 and (passes is None or (isinstance(passes, dict) and passes.get("remat", True))
                                   or (not isinstance(passes, dict) and "remat" in passes))
    from ..jit.executable import capabilities  # noqa: PLC0415  (executable imports the passes' users)
    gated = gate_pool_masks(joint) if remat_on else 0  # the ReLU's mask from the pooled maxima (pool_masks.py)
    split, stats = partition(joint, primal, seeds, n_forward_outputs, recompute=remat_on,
                             image_columns=backend is not None and capabilities(backend).image_convolutions)
    if gated:
        stats["pool_masks_gated"] = gated
    stage = "partition" + (" (min-cut remat)" if remat_on else "")
    if instrument is not None:
        instrument(stage, split.forward, stats)
    else:
        stages.append((stage, f"{split.forward}\n\n{split.backward}" if is_recording() else None, summarize(stats)))
    for half, name in ((split.forward, "forward"), (split.backward, "backward")):
        verify(half)
        run_passes(half, lower, stages, options, label=f"{name}: ", instrument=instrument)
        if half is split.backward:
            _name_residuals_as_in_forward(split.forward, split.backward, len(split.residuals))
        renumber(half)
        verify(half)
    return split, stats


def _name_residuals_as_in_forward(forward: Graph, backward: Graph, n_saved: int) -> None:
    """The backward's inputs for saved values take the names the forward gives them, so the
    two modules (and their IR) read as one program: forward's %7 is backward's %7."""
    saved_outputs = forward.outputs[len(forward.outputs) - n_saved:] if n_saved else []
    wanted = [v.name for v in saved_outputs]
    others = {v.name for v in backward.inputs[n_saved:]}
    if len(set(wanted)) == len(wanted) and not others & set(wanted):
        for v, name in zip(backward.inputs[:n_saved], wanted):
            v.name = name
