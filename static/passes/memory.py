"""Memory planning: liveness analysis assigns each intermediate a buffer, reusing buffers
of values that are dead, and lets an elementwise op write over an operand that dies
there (in place). Graph inputs are never written. Views keep their base alive."""
from __future__ import annotations

from dataclasses import dataclass, field

from gmops import REGISTRY

from ..ir import Graph, Node, Value
from .rewrite import nbytes


def aliases_operand(node: Node) -> bool:
    """Whether the node's results may share its first operand's memory (a view, or an op
    that can return its operand itself): the op record's `aliases_operand`."""
    return node.body is None and bool(REGISTRY[node.op].aliases_operand)


# the same fact as a set of names, for code that has not moved to `aliases_operand` yet
VIEW_OPS = frozenset(name for name, op in REGISTRY.items() if op.aliases_operand)


@dataclass
class MemoryPlan:
    """Keyed by Value objects, not names: passes after this one may rename values."""

    buffer_of: dict[Value, int] = field(default_factory=dict)
    buffers: list[tuple[int, str, tuple[int, ...]]] = field(default_factory=list)  # by id: (nbytes, dtype, shape)
    in_place: list[tuple[Value, Value]] = field(default_factory=list)  # (result, operand) written in place
    peak_bytes: int = 0
    naive_bytes: int = 0
    liveness: "Liveness | None" = None  # the analysis the plan was made from (codegen reuses it)

    def text(self) -> str:
        """The plan with today's value names, one line per decision (part of a cache key)."""
        lines = [f"%{v.name} -> buffer {b}" for v, b in self.buffer_of.items()]
        lines += [f"%{a.name} over %{b.name}" for a, b in self.in_place]
        return "\n".join(lines)

    def describe(self) -> str:
        return (f"{len(self.buffers)} buffers for {len(self.buffer_of)} intermediates, {len(self.in_place)} "
                f"in place; estimated peak {self.peak_bytes} bytes (without reuse {self.naive_bytes})")


def _is_elementwise(node: Node) -> bool:
    if node.body is not None:
        return all(REGISTRY[n.op].pointwise for n in node.body.nodes)
    return REGISTRY[node.op].pointwise


@dataclass
class Liveness:
    """Which buffer each value lives in and how long: `base_of` maps a value that may share
    another's memory (a view, an identity, a fused output that is one of its inputs) to the
    value owning that memory; `last_use` maps an owning value to the index of the last node
    reading it, directly or through a view (len(graph.nodes) for graph outputs). The one
    liveness analysis: the planner below and the NumPy generator's buffer reuse both read it."""

    base_of: dict[Value, Value] = field(default_factory=dict)
    last_use: dict[Value, int] = field(default_factory=dict)

    def base(self, v: Value) -> Value:
        return self.base_of.get(v, v)


def _aliased_operands(node: Node) -> list[tuple[Value, Value]]:
    """(result, operand) pairs where the result may be the operand's memory."""
    if node.body is not None:  # a body yielding one of its inputs hands that operand out
        position = {p: k for k, p in enumerate(node.body.inputs)}
        return [(o, node.inputs[position[y]]) for o, y in zip(node.outputs, node.body.outputs)
                if isinstance(y, Value) and y in position and isinstance(node.inputs[position[y]], Value)]
    if aliases_operand(node) and node.inputs and isinstance(node.inputs[0], Value):
        return [(o, node.inputs[0]) for o in node.outputs]
    return []


def liveness(graph: Graph) -> Liveness:
    live = Liveness()
    for i, node in enumerate(graph.nodes):
        for v in node.input_values():
            live.last_use[live.base(v)] = i
        for o, operand in _aliased_operands(node):
            live.base_of[o] = live.base(operand)
    for v in graph.outputs:
        if isinstance(v, Value):
            live.last_use[live.base(v)] = len(graph.nodes)
    return live


def plan_memory(graph: Graph, **_: object) -> dict[str, int]:
    inputs = set(graph.inputs)
    live = liveness(graph)
    base_of, last_use = live.base_of, dict(live.last_use)
    plan = MemoryPlan(liveness=live)
    free: dict[tuple[int, str], list[int]] = {}  # (nbytes, dtype) -> free buffer ids
    live_bytes = peak = naive = 0
    owner: dict[int, Value] = {}  # buffer id -> value holding it
    planned: set[Value] = set()
    for i, node in enumerate(graph.nodes):
        dying: list[Value] = [v for v in dict.fromkeys(base_of.get(v, v) for v in node.input_values())
                              if last_use.get(v) == i and v not in inputs and v in planned]
        if not aliases_operand(node):
            for k, o in enumerate(node.outputs):
                if o in base_of:
                    continue  # a fused output that is one of its inputs: no memory of its own
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

