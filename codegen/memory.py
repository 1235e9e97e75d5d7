"""Which buffer a top-level result is written into.

A result that NumPy can write into an existing array (a ufunc's `out=`, a fused region's
outputs) may take over the buffer of a value that is dead by then. The graph's memory
plan (`graph.memory_plan.buffer_of`: Value -> buffer id), when there is one, says which.
How long values live is the planner's own analysis (`static.passes.memory.liveness`, kept
in the plan; computed by the same function when the memory pass did not run): this module
adds only what generated NumPy code needs on top, which results are fresh arrays of its
own (not views) and may be written over."""
from __future__ import annotations

from static.ir import Graph, Node, Value
from static.passes.memory import liveness

END = float("inf")


class BufferPlanner:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        plan = graph.memory_plan
        self.plan_of = dict(plan.buffer_of) if plan is not None else None
        live = plan.liveness if plan is not None and plan.liveness is not None else liveness(graph)
        self.base_of = live.base_of
        n = len(graph.nodes)
        self.last_use: dict = {b: (END if i >= n else i) for b, i in live.last_use.items()}
        self.owned: dict = {}  # base value -> "array" (any fresh array) or "region" (C-contiguous)
        self.free: list = []  # dead owned values, most recently freed last
        self.holder: dict = {}  # plan buffer id -> value currently in it

    def _base(self, v) -> set:
        if not isinstance(v, Value):
            return set()
        return {self.base_of.get(v, v)}

    # -- decisions ----------------------------------------------------------------------------
    def _dead(self, b: Value, i: int, node: Node, in_place_ok: bool) -> bool:
        last = self.last_use.get(b, -1)
        if last < i:
            return True
        if last == i and in_place_ok:
            # in place: the dying value must be a direct operand of the same shape (aligned)
            return b in node.inputs and all(b not in self._base(v) or v is b for v in node.input_values())
        return False

    def choose(self, i: int, node: Node, out: Value, kind: str, in_place_ok: bool) -> Value | None:
        """A dead value whose buffer `out` (of node i) can be written into, or None.
        kind: "array" for ufunc results, "region" for fused-region outputs (which need a
        C-contiguous buffer, so only take buffers of earlier region outputs)."""
        if len(out.type.shape) == 0:
            return None
        key = (tuple(out.type.shape), out.type.dtype)
        candidates = []
        if self.plan_of is not None:
            buf = self.plan_of.get(out)
            held = self.holder.get(buf)
            if held is not None:
                candidates = [held]
        else:
            candidates = list(reversed(self.free))
        for c in candidates:
            if c in self.graph.inputs or (tuple(c.type.shape), c.type.dtype) != key:
                continue
            if kind == "region" and self.owned.get(c) != "region":
                continue
            if c not in self.owned or not self._dead(c, i, node, in_place_ok):
                continue
            if c in self.free:
                self.free.remove(c)
            self.owned.pop(c, None)
            return c
        return None

    def produced(self, i: int, node: Node, owned: dict) -> None:
        """Record node i's results; `owned` maps those written into fresh (or reused)
        buffers of our own to "array" or "region"; the others may be views."""
        for o, kind in owned.items():
            if len(o.type.shape) > 0:
                self.owned[o] = kind
        for o in node.outputs:
            if self.plan_of is not None and o in self.plan_of:
                self.holder[self.plan_of[o]] = o
        for b in self.owned:
            if b not in self.free and self.last_use.get(b, -1) <= i:
                self.free.append(b)
