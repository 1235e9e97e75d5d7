"""Memory planning: liveness analysis assigns each intermediate a buffer, reusing buffers
of values that are dead, and lets an elementwise op write over an operand that dies
there (in place). Graph inputs are never written. Views keep their base alive."""
from __future__ import annotations

from dataclasses import dataclass, field

from eager.ops import REGISTRY

from ..ir import Graph, Value
from .rewrite import nbytes


def aliases_operand(node) -> bool:
    """Whether the node's results may share its first operand's memory (a view, or an op
    that can return its operand itself): the op record's `aliases_operand`."""
    return node.body is None and REGISTRY[node.op].aliases_operand


# the same fact as a set of names, for code that has not moved to `aliases_operand` yet
VIEW_OPS = frozenset(name for name, op in REGISTRY.items() if op.aliases_operand)


@dataclass
class MemoryPlan:
    """Keyed by Value objects, not names: passes after this one may rename values."""

    buffer_of: dict = field(default_factory=dict)  # Value -> buffer id
    buffers: list = field(default_factory=list)  # buffer id -> (nbytes, dtype name, shape)
    in_place: list = field(default_factory=list)  # (result Value, operand Value) written in place
    peak_bytes: int = 0
    naive_bytes: int = 0

    def text(self) -> str:
        """The plan with today's value names, one line per decision (part of a cache key)."""
        lines = [f"%{v.name} -> buffer {b}" for v, b in self.buffer_of.items()]
        lines += [f"%{a.name} over %{b.name}" for a, b in self.in_place]
        return "\n".join(lines)

    def describe(self) -> str:
        return (f"{len(self.buffers)} buffers for {len(self.buffer_of)} intermediates, {len(self.in_place)} "
                f"in place; estimated peak {self.peak_bytes} bytes (without reuse {self.naive_bytes})")


def _is_elementwise(node) -> bool:
    if node.body is not None:
        return all(REGISTRY[n.op].pointwise for n in node.body.nodes)
    return REGISTRY[node.op].pointwise


def plan_memory(graph: Graph, **_) -> dict:
    inputs = set(graph.inputs)
    outputs = {v for v in graph.outputs if isinstance(v, Value)}
    base_of: dict = {}
    last_use: dict = {}
    for i, node in enumerate(graph.nodes):
        for v in node.input_values():
            last_use[base_of.get(v, v)] = i
        if aliases_operand(node):
            for o in node.outputs:
                base_of[o] = base_of.get(node.inputs[0], node.inputs[0])
    for v in outputs:
        last_use[base_of.get(v, v)] = len(graph.nodes)
    plan = MemoryPlan()
    free: dict = {}  # (nbytes, dtype) -> [buffer ids]
    live_bytes = peak = naive = 0
    owner: dict = {}  # buffer id -> value holding it
    planned: set = set()
    for i, node in enumerate(graph.nodes):
        dying = [v for v in dict.fromkeys(base_of.get(v, v) for v in node.input_values())
                 if last_use.get(v) == i and v not in inputs and v in planned]
        if not aliases_operand(node):
            for k, o in enumerate(node.outputs):
                key = (nbytes(o), o.type.dtype.name)
                naive += key[0]
                reuse = None
                if _is_elementwise(node) and k == 0:
                    reuse = next((d for d in dying if (nbytes(d), d.type.dtype.name) == key
                                  and tuple(d.type.shape) == tuple(o.type.shape)), None)
                if reuse is not None:
                    buf = plan.buffer_of[reuse]
                    dying.remove(reuse)
                    plan.in_place.append((o, reuse))
                elif free.get(key):
                    buf = free[key].pop()
                    live_bytes += key[0]
                else:
                    buf = len(plan.buffers)
                    plan.buffers.append((key[0], o.type.dtype.name, tuple(o.type.shape)))
                    live_bytes += key[0]
                plan.buffer_of[o] = buf
                planned.add(o)
                owner[buf] = o
                if last_use.get(o) is None:
                    last_use[o] = i  # dead result: its buffer is free right away
                    dying.append(o)
        peak = max(peak, live_bytes)
        for d in dying:
            buf = plan.buffer_of[d]
            if owner.get(buf) is d:
                free.setdefault((nbytes(d), d.type.dtype.name), []).append(buf)
                live_bytes -= nbytes(d)
    plan.peak_bytes, plan.naive_bytes = peak, naive
    graph.memory_plan = plan
    return {"buffers": len(plan.buffers), "in_place": len(plan.in_place), "peak_bytes": peak,
            "naive_bytes": naive}

