"""What a compiled function shows of itself for given arguments: the optimized graph (`ir`),
every stage (`explain`), the forward and backward graphs (`autograd_graphs`), the generated
source (`source`), and the first stage of `lower()`. These are methods of `Compiled`
(static.jit.compiled binds them), written here as functions of it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir import Graph
from ..passes import recording
from . import dynamic_shapes, graph_breaks
from .entry import Entry


def entry_for(self, args: tuple, kwargs: dict):
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
    from .explain_summary import summary  # noqa: PLC0415  (the one-screen opening: static/jit/explain_summary.py)

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
    compiled; `.as_text()` its IR, `.compile()` the executable (static/jit/stages.py)."""
    from .stages import lower as lower_stages  # noqa: PLC0415

    return lower_stages(self, args, kwargs)


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
