"""`torch._dynamo.testing` here: `CompileCounter`, the backend PyTorch's own tests pass to
torch.compile to count how often it compiled (`frame_count`: graphs made, one per trace of a
signature and per compiled piece around a graph break; `op_count`: their ops). Given as
eager.compile's backend it compiles with graphmode's default backend and counts."""
from __future__ import annotations

import weakref
from typing import Any

# every CompileCounter made, so that reset() can keep their counts
_COUNTERS: "weakref.WeakSet[CompileCounter]" = weakref.WeakSet()


def keep_counts() -> None:
    """Called by eager._dynamo.reset() before it empties the compiled functions' caches."""
    for counter in list(_COUNTERS):
        counter._keep_counts()


class CompileCounter:
    """Counts the compiles of the functions eager.compile made with it as their backend."""

    def __init__(self) -> None:
        self._compiled: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._base_frames = 0
        self._base_ops = 0
        _COUNTERS.add(self)

    def _keep_counts(self) -> None:
        """Before torch._dynamo.reset() forgets the compiled entries: what they counted stays
        counted (PyTorch's counter only grows; the next compile adds to it)."""
        self._base_frames -= sum(_frames(c) for c in self._compiled)
        self._base_ops -= sum(_ops(c) for c in self._compiled)

    def attach(self, compiled: Any) -> Any:
        self._compiled.add(compiled)
        return compiled

    @property
    def frame_count(self) -> int:
        return sum(_frames(c) for c in self._compiled) - self._base_frames

    @property
    def op_count(self) -> int:
        return sum(_ops(c) for c in self._compiled) - self._base_ops

    def clear(self) -> None:
        """Start counting from zero (PyTorch's CompileCounter.clear)."""
        self._base_frames = self._base_ops = 0
        self._base_frames = self.frame_count
        self._base_ops = self.op_count

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        raise TypeError("CompileCounter is a backend of eager.compile here: pass it as backend=, "
                        "it is not called on FX graphs")


class CompileCounterWithBackend(CompileCounter):
    """A CompileCounter that compiles with the named backend (`"eager"` counts and runs the
    function as it is in PyTorch; here every backend name compiles, see eager.compile)."""

    def __init__(self, backend: str) -> None:
        super().__init__()
        self.backend = backend


def _pieces(c: Any) -> list:
    state = c.__dict__.get("_graph_breaks")
    out = []
    for split in (state.splits.values() if state is not None else ()):
        out += [p for p in (split.prefix, split.rest, *(split.branches or ())) if p is not None]
    return out


def _frames(c: Any) -> int:
    return len(getattr(c, "compile_seconds", ())) + sum(_frames(p) for p in _pieces(c))


def _ops(c: Any) -> int:
    own = 0
    for entry in (c.entries() if hasattr(c, "entries") else ()):
        graph = getattr(entry, "graph", None)
        if graph is not None:
            own += sum(len(n.body.nodes) if n.body is not None else 1 for n in graph.nodes)
    return own + sum(_ops(p) for p in _pieces(c))
