"""Small tools every pass shares: fresh names, use lists, replacing a value everywhere,
building a node with its result types from the op's abstract rule, copying graphs."""
from __future__ import annotations

import itertools

from gmops import REGISTRY, TensorSpec

from ..ir import Graph, Node, Value
from ..ir.core import follow_replacements


class Namer:
    """Fresh value names that collide with nothing in the graph (bodies included)."""

    def __init__(self, graph: Graph) -> None:
        self.taken = set(all_names(graph))
        self._counter = itertools.count()

    def __call__(self) -> str:
        while True:
            name = f"t{next(self._counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name


def all_names(graph: Graph):
    for v in graph.inputs:
        yield v.name
    for node in graph.nodes:
        for o in node.outputs:
            yield o.name
        if node.body is not None:
            yield from all_names(node.body)


def users(graph: Graph) -> dict:
    """Value -> the nodes that read it (`Graph.users`)."""
    return graph.users()


def replace_uses(graph: Graph, mapping: dict) -> None:
    """Rewrite every operand and output through `mapping` (old Value -> new Value or literal,
    chains followed), as `Graph.replace_all_uses_with` does, touching only the nodes that read
    a replaced value (its `users`): reassigning every node's operands re-linked each use list
    of the graph once per call, a tenth of the passes' time on a training step."""
    if not mapping:
        return

    def resolve(v):
        return follow_replacements(mapping, v)

    readers: dict = {}
    for old in mapping:
        if isinstance(old, Value):
            for node in old.users:
                readers[id(node)] = node
    for node in readers.values():
        node.inputs = [resolve(v) for v in node.inputs]
    graph.outputs = [resolve(v) for v in graph.outputs]


def make_node(op: str, inputs: list, attrs: dict, namer: Namer, loc=None) -> Node:
    """A new node whose result types come from the op's abstract rule."""
    specs = [v.type if isinstance(v, Value) else v for v in inputs]
    result = REGISTRY[op].abstract(*specs, **attrs)
    types = [result] if isinstance(result, TensorSpec) else list(result)
    node = Node(op=op, inputs=list(inputs), attrs=dict(attrs), loc=loc)
    node.outputs = [Value(namer(), t, node, i) for i, t in enumerate(types)]
    return node


def clone(graph: Graph, mapping: dict | None = None) -> Graph:
    """A copy with new Value and Node objects (types and attributes are immutable and
    shared), so passes never change what earlier stages showed."""
    mapping = {} if mapping is None else mapping
    out = Graph(name=graph.name)
    for v in graph.inputs:
        mapping[v] = Value(v.name, v.type)
        out.inputs.append(mapping[v])
    for node in graph.nodes:
        new = Node(op=node.op, inputs=[mapping.get(v, v) if isinstance(v, Value) else v for v in node.inputs],
                   attrs=dict(node.attrs), loc=node.loc, line=node.line)
        if node.body is not None:
            new.body = clone(node.body, mapping)
        new.outputs = [Value(o.name, o.type, new, i) for i, o in enumerate(node.outputs)]
        mapping.update(zip(node.outputs, new.outputs))
        out.nodes.append(new)
    out.outputs = [mapping.get(v, v) if isinstance(v, Value) else v for v in graph.outputs]
    return out


def renumber(graph: Graph) -> Graph:
    """%0, %1, ... in program order across the graph and its bodies (`Graph.renumber`)."""
    return graph.renumber()


def nbytes(v: Value) -> int:
    n = v.type.dtype.itemsize
    for s in v.type.shape:
        n *= s
    return n


def rewrite_each(graph: Graph, rewriter) -> dict:
    """Offer every node, in order, to `rewriter.rewrite(node)`, which returns a Value equal to
    the node's result (built from nodes it appended to `rewriter.emitted`) or None. Later
    nodes read the replacement; the replaced node stays for DCE. Returns old -> new."""
    mapping: dict = {}
    new_nodes = []
    for node in graph.nodes:
        if mapping:
            node.inputs = [mapping.get(v, v) if isinstance(v, Value) else v for v in node.inputs]
        rewriter.emitted = []
        replacement = rewriter.rewrite(node)
        new_nodes.append(node)
        if replacement is not None and replacement is not node.outputs[0]:
            new_nodes.extend(rewriter.emitted)  # operands of new nodes all precede `node`
            mapping[node.outputs[0]] = replacement
    graph.nodes = new_nodes
    return mapping
