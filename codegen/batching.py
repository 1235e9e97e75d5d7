"""Batching of independent 0-d ops (NumPy backend): a small SLP vectorizer.

0-d graphs run as statements on NumPy scalars. An arithmetic operator on two scalars
costs ~35 ns, but a ufunc such as `np.cos` called on one scalar costs ~100 ns, nearly all
of it call overhead. When many such calls are independent of one another, as the
`cos(x_i)` of a backward pass through a loop of `sin(x_i)` are (they read only forward
values), one array call does them all:

    v1099, v1104, ... = np.cos(np.array([v69, v68, ...], dtype=np.float32))

The elements come out as NumPy scalars of the same dtype, and a ufunc gives the same bits
on one element as on many (checked in tests/codegen/test_batching.py), so the batched
module computes exactly what the unbatched one does.

Only ops whose scalar form is a function call are batched (an infix `*` is already as
cheap as an element of a batch), and only groups of at least settings.MIN_BATCH ops.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gmbase import settings
from gmops import REGISTRY
from static.ir import Graph, Node, Value


@dataclass(eq=False)
class Batch:
    """Independent 0-d ops of one kind, computed by one array call."""

    op: str
    members: list = field(default_factory=list)  # Nodes, in emission order
    operands: list = field(default_factory=list)  # per member: the Value it reads, resolved
    ready: int = -1  # position of the last operand's statement (the batch goes right after it)
    first_use: float = float("inf")  # earliest position that reads a member's result

    @property
    def first(self) -> Node:
        return self.members[0]


@dataclass
class Plan:
    """Where the batches go: `of` maps each batched node to its batch; `after` maps a node
    to the batches emitted right after its statement(s) (None: before the first statement)."""

    of: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)


class _Schedule:
    """The order the module's statements are emitted in: top-level nodes, with the bodies of
    inline regions statement by statement (and their results bound after them). Values are
    resolved through region boundaries to the statement that computes them."""

    def __init__(self, graph: Graph, inline_bodies: dict) -> None:
        self.alias: dict = {}  # body input or inline region output -> the Value it stands for
        self.produced: dict = {v: -1 for v in graph.inputs}
        self.first_use: dict = {}
        self.anchor: list = []  # position -> the node whose emission ends at it
        self.nodes: list = []  # (position, node) of the ops, in order
        self.literal: set = set()  # body inputs bound to literals
        for node in graph.nodes:
            if node.body is not None and inline_bodies.get(node):
                for p, operand in zip(node.body.inputs, node.inputs):
                    if isinstance(operand, Value):
                        self.alias[p] = operand
                    else:
                        self.literal.add(p)  # a literal, only in scope inside the region
                for n in node.body.nodes:
                    self._statement(n, n)
                self._reads([y for y in node.body.outputs if isinstance(y, Value)], node)  # the bindings
                for o, y in zip(node.outputs, node.body.outputs):
                    if isinstance(y, Value):
                        self.alias[o] = y
                    else:
                        self.produced[o] = len(self.anchor) - 1
            else:
                self._statement(node, node)
        self._reads(graph.outputs, None)

    def resolve(self, v):
        while v in self.alias:
            v = self.alias[v]
        return v

    def _reads(self, values, anchor) -> int:
        pos = len(self.anchor)
        self.anchor.append(anchor)
        for v in values:
            if isinstance(v, Value):
                self.first_use.setdefault(self.resolve(v), pos)
        return pos

    def _statement(self, node: Node, anchor: Node) -> None:
        pos = self._reads(node.inputs, anchor)
        for o in node.outputs:
            self.produced[o] = pos
        self.nodes.append((pos, node))


def plan(graph: Graph, inline_bodies: dict) -> Plan:
    """Group independent 0-d calls of one op into batches.

    inline_bodies maps each region node whose body is emitted statement by statement, in
    order, where the region stands (0-d regions, unfused ones, small ones) to True; other
    regions are single statements. A batch goes right after the statement that computes
    the last of its operands, so an op can join it while all operands so far are ready
    before the first statement that reads one of the batch's results. An op that reads a
    result of a batch still being formed closes that batch first."""
    sched = _Schedule(graph, inline_bodies)
    result = Plan()
    open_batches: dict = {}  # kind -> the batch still accepting members
    open_members: dict = {}  # output Value -> its open batch
    closed: list = []

    def close(batch: Batch) -> None:
        for kind, b in list(open_batches.items()):
            if b is batch:
                del open_batches[kind]
        for n in batch.members:
            open_members.pop(n.outputs[0], None)
        if len(batch.members) >= settings.MIN_BATCH:  # else each op stays a statement of its own
            for n in batch.members:
                sched.produced[n.outputs[0]] = batch.ready  # available once the batch has run
            closed.append(batch)

    for _pos, n in sched.nodes:
        if not _batchable(n):
            continue
        operand = sched.resolve(n.inputs[0])
        if operand in sched.literal:
            continue
        if operand in open_members:
            close(open_members[operand])
        ready = sched.produced.get(operand, -1)
        use = sched.first_use.get(n.outputs[0], float("inf"))
        kind = (n.op, repr(sorted(n.attrs.items())), operand.type.dtype.name, n.outputs[0].type.dtype.name)
        batch = open_batches.get(kind)
        if batch is not None and max(batch.ready, ready) >= min(batch.first_use, use):
            close(batch)
            batch = None
        if batch is None:
            batch = open_batches[kind] = Batch(n.op)
        batch.members.append(n)
        batch.operands.append(operand)
        batch.ready = max(batch.ready, ready)
        batch.first_use = min(batch.first_use, use)
        open_members[n.outputs[0]] = batch
    for batch in list(open_batches.values()):
        close(batch)
    for batch in closed:  # in the order they closed: a batch reading another's results comes after it
        for n in batch.members:
            result.of[n] = batch
        anchor = sched.anchor[batch.ready] if batch.ready >= 0 else None
        result.after.setdefault(anchor, []).append(batch)
    return result


def _batchable(node: Node) -> bool:
    """A unary op the record marks batchable, whose 0-d spelling is a call (not an operator)."""
    from .lowering import lowering_for  # noqa: PLC0415

    op = REGISTRY.get(node.op)
    return (node.body is None and op is not None and op.batchable and lowering_for(node.op).numpy.scalar is None
            and len(node.inputs) == 1 and isinstance(node.inputs[0], Value)
            and len(node.outputs) == 1
            and all(len(v.type.shape) == 0 for v in (node.inputs[0], node.outputs[0])))
