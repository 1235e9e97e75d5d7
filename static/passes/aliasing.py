"""Which values of a graph may share memory with its inputs.

View ops (reshape, transpose, basic indexing, ...) can return a view of their operand
instead of a copy, so a graph output or a residual saved for the backward may be the
caller's buffer itself. The compiled call needs to know: an output that aliases an input
shares that input's version counter (as an eager view does), and a residual that aliases an
input makes the backward check that the input was not changed in place in between."""
from __future__ import annotations

from ..ir import Graph, Value
from .memory import VIEW_OPS


def alias_sets(graph: Graph) -> dict[Value, frozenset]:
    """Value -> indices of the graph inputs whose buffer it may share (the input itself, or a
    view of it)."""
    alias = {v: frozenset((i,)) for i, v in enumerate(graph.inputs)}
    for node in graph.nodes:
        if node.op in VIEW_OPS and node.inputs and isinstance(node.inputs[0], Value):
            for out in node.outputs:
                alias[out] = alias.get(node.inputs[0], frozenset())
    return alias


def aliased_inputs(graph: Graph, values: list) -> list[int]:
    """Indices of the inputs whose buffers any of `values` may share."""
    alias = alias_sets(graph)
    return sorted(set().union(*(alias.get(v, ()) for v in values)))


def output_aliases(graph: Graph, n_outputs: int) -> list[tuple]:
    """Per output among the first `n_outputs`, the inputs it may share memory with (empty for
    fresh results)."""
    alias = alias_sets(graph)
    return [tuple(sorted(alias.get(v, ()))) if isinstance(v, Value) else () for v in graph.outputs[:n_outputs]]


def input_free_outputs(graph: Graph, n_outputs: int) -> list[int]:
    """Positions among the first `n_outputs` outputs whose value depends on no input (a
    constant the function returns). Generated code may hand back the same buffer for them on
    every call; the caller copies them so that every call returns fresh outputs."""
    depends: set = set(graph.inputs)
    for node in graph.nodes:
        if any(isinstance(v, Value) and v in depends for v in node.inputs):
            depends.update(node.outputs)
    return [i for i, v in enumerate(graph.outputs[:n_outputs]) if isinstance(v, Value) and v not in depends]
