"""What runs a graph: generated code from `codegen` when a backend is available for it,
the reference interpreter otherwise (and for backend='interpret')."""
from __future__ import annotations

from .interpreter import run_graph
from .ir import Graph


class InterpretedGraph:
    """Runs a graph with the reference interpreter."""

    def __init__(self, graph: Graph, xp=None) -> None:
        self.graph, self.xp = graph, xp  # None: the array module of the arrays it is given

    def run(self, arrays: list) -> list:
        return run_graph(self.graph, arrays, self.xp)

    def describe(self) -> str:
        return (f"backend: interpret - the reference interpreter runs the {len(self.graph.nodes)} nodes of "
                f"@{self.graph.name} one by one with each op's forward")

    def source(self) -> str:
        return ""


def build_executable(graph: Graph, backend: str, fast_math: bool = False):
    if backend != "interpret":
        try:
            from codegen import build  # noqa: PLC0415
        except ImportError:
            build = None
        if build is not None:
            return build(graph, backend, fast_math=fast_math)
    return InterpretedGraph(graph)
