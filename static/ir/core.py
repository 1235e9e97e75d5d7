"""The IR: a function is a `Graph` of typed SSA `Value`s produced by `Node`s.

Plain Python objects, printed as text (see `format_graph`) that `static.parse_ir` reads
back exactly. A node may carry a nested `body` graph (a fused region)."""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import TensorSpec

Type = TensorSpec  # a value's type: shape and dtype


def format_type(t: Type) -> str:
    text = _TYPE_TEXT.get(t)
    if text is None:
        text = f"{_dtypes.short_name(t.dtype)}[{','.join(map(str, t.shape))}]"
        if len(_TYPE_TEXT) >= 4096:
            _TYPE_TEXT.clear()
        _TYPE_TEXT[t] = text
    return text


# The text of each type seen (a graph's thousands of values share a few dozen types): printing
# a traced graph, which keys the compile caches, spent half its time spelling types.
_TYPE_TEXT: dict = {}


class Value:
    """An SSA value: a graph input or one result of a node.

    `users` lists the nodes whose operands include it (once per use), kept up to date by
    every assignment of a node's `inputs` and by `Node.drop`; a graph's outputs are not
    nodes and are not listed (see `Graph.replace_all_uses_with`)."""

    __slots__ = ("name", "type", "producer", "index", "users", "__weakref__")

    def __init__(self, name: str, type: Type, producer: "Node | None" = None, index: int = 0) -> None:
        self.name = name
        self.type = type
        self.producer = producer
        self.index = index
        self.users: list = []

    def replace_all_uses_with(self, new: Any) -> int:
        """Make every node reading this value read `new` (a Value or literal) instead.
        Returns how many nodes changed."""
        nodes = list({id(n): n for n in self.users}.values())
        for node in nodes:
            node.inputs = [new if v is self else v for v in node.inputs]
        return len(nodes)

    @property
    def shape(self) -> tuple:
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    def __repr__(self) -> str:
        return f"%{self.name}: {format_type(self.type)}"


@dataclass(eq=False, init=False)
class Node:
    """One op application. `inputs` are Values or Python scalar literals."""

    op: str
    inputs: list
    attrs: dict
    outputs: list = field(default_factory=list)
    body: "Graph | None" = None
    loc: str | None = None  # the user's file:line that produced it, when traced
    line: int | None = None  # the text line, when parsed

    def __init__(self, op: str, inputs: list, attrs: dict, outputs: list | None = None, body: "Graph | None" = None,
                 loc: str | None = None, line: int | None = None) -> None:
        # written straight into __dict__ (nodes are made by the thousand while tracing): only
        # `inputs` needs the bookkeeping of __setattr__
        self.__dict__.update(op=op, attrs=attrs, outputs=[] if outputs is None else outputs, body=body, loc=loc,
                             line=line)
        self.inputs = inputs

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "inputs":  # keep the operands' use lists up to date
            value = list(value)
            old = self.__dict__.get("inputs")
            if old:
                _remove_uses(self, old)
            for v in value:
                if type(v) is Value:
                    v.users.append(self)
        self.__dict__[name] = value

    def drop(self) -> None:
        """Detach the node from its operands (their `users` no longer list it): for a node
        leaving its graph."""
        _remove_uses(self, self.inputs)

    def input_values(self) -> list:
        return [v for v in self.inputs if isinstance(v, Value)]

    def __repr__(self) -> str:
        return format_node(self, "")


def _remove_uses(node: Node, operands: list) -> None:
    for v in operands:
        if isinstance(v, Value):
            for k, u in enumerate(v.users):
                if u is node:
                    del v.users[k]
                    break


def follow_replacements(mapping: dict, v: Any) -> Any:
    """What `v` reads after the replacements in `mapping` (old Value -> new Value or literal),
    chains followed (a -> b -> c); a cycle stops after 1000 steps rather than hanging."""
    seen = 0
    while isinstance(v, Value) and v in mapping and seen < 1000:
        v = mapping[v]
        seen += 1
    return v


@dataclass(eq=False)
class Graph:
    """A function: named inputs, nodes in execution order, outputs.

    `memory_plan` is what the memory pass decided (a `static.passes.memory.MemoryPlan`, keyed
    by this graph's Values), None before it runs; code generators read it, so it is part of
    what a generated module is cached under (`codegen.executable.generator_input`)."""

    name: str = "f"
    inputs: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    memory_plan: Any = None

    def __str__(self) -> str:
        return format_graph(self)

    def __repr__(self) -> str:
        return f"<static.Graph @{self.name}: {len(self.inputs)} inputs, {len(self.nodes)} nodes>"

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "nodes" and "nodes" in self.__dict__:  # nodes leaving the graph drop their uses
            kept = {id(n) for n in value}
            for n in self.__dict__["nodes"]:
                if id(n) not in kept:
                    n.drop()
        object.__setattr__(self, name, value)

    def users(self) -> dict:
        """Value -> the nodes of this graph that read it, in program order, once each."""
        out: dict = {}
        for node in self.nodes:
            for v in dict.fromkeys(node.input_values()):
                out.setdefault(v, []).append(node)
        return out

    def renumber(self) -> "Graph":
        """%0, %1, ... in program order across the graph and its bodies (body inputs too),
        so names are unique everywhere; the graph's own inputs keep their names."""
        taken = {v.name for v in self.inputs}
        counter = itertools.count()

        def fresh() -> str:
            while True:
                name = str(next(counter))
                if name not in taken:
                    return name

        def walk(g: "Graph", top: bool) -> None:
            if not top:
                for v in g.inputs:
                    v.name = fresh()
            for node in g.nodes:
                if node.body is not None:
                    walk(node.body, False)
                for o in node.outputs:
                    o.name = fresh()

        walk(self, True)
        return self

    def replace_all_uses_with(self, mapping: dict) -> None:
        """Make every operand and output that is a key of `mapping` (old Value -> new Value or
        literal) read its replacement instead, following chains (a -> b -> c). Bodies read
        the outer values through their node's operands, so they need no rewriting."""
        if not mapping:
            return
        for node in self.nodes:
            node.inputs = [follow_replacements(mapping, v) for v in node.inputs]
        self.outputs = [follow_replacements(mapping, v) for v in self.outputs]

    def count_nodes(self) -> int:
        return sum(1 + (n.body.count_nodes() if n.body is not None else 0) for n in self.nodes)


# -- text form ---------------------------------------------------------------------------------
def spell_float(v: float, *, nan: str, inf: str, neg_inf: str) -> str:
    """A float as source text in some language: the IR, Python and C spell the non-finite
    values differently (given here) and agree on the finite ones, which keep a decimal point
    or exponent so that they read back as floats (the IR printer and both code generators
    share this)."""
    if math.isnan(v):
        return nan
    if math.isinf(v):
        return inf if v > 0 else neg_inf
    r = repr(float(v))
    return r if any(c in r for c in ".en") else r + ".0"


def format_literal(v) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return spell_float(v, nan="nan", inf="inf", neg_inf="-inf")
    if isinstance(v, str):
        return json.dumps(v)  # every escape the parser's JSON string literal reads back
    if isinstance(v, _dtypes.dtype):
        return _dtypes.short_name(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_literal(x) for x in v) + "]"
    raise TypeError(f"cannot print attribute value {v!r} of type {type(v).__name__} in IR text")


def format_operand(v) -> str:
    return f"%{v.name}" if isinstance(v, Value) else format_literal(v)


def format_node(node: Node, indent: str = "", body: bool = True) -> str:
    """The node's IR text (the one node formatter: the printer, generated-code comments and
    graph drawings all call it); body=False leaves a fused node's body out (one line)."""
    # (lists rather than generators into join, and Values spelled inline: a traced graph's
    # text keys the compile caches, so this runs once per node of every trace)
    lhs = ", ".join([f"%{o.name}" for o in node.outputs])
    text = f"{indent}{lhs} = {node.op}"
    if node.inputs:
        text += " " + ", ".join([f"%{v.name}" if isinstance(v, Value) else format_literal(v) for v in node.inputs])
    if node.attrs:
        attrs = node.attrs
        text += " {" + ", ".join([f"{k} = {format_literal(attrs[k])}" for k in sorted(attrs)]) + "}"
    text += " : " + ", ".join([format_type(o.type) for o in node.outputs])
    if body and node.body is not None:
        text += " " + format_body(node.body, indent)
    return text


def _signature(g: Graph) -> str:
    return ", ".join(f"%{v.name}: {format_type(v.type)}" for v in g.inputs)


def format_body(body: Graph, indent: str) -> str:
    inner = indent + "  "
    lines = ["{", f"{inner}^body({_signature(body)}):"]
    lines += [format_node(n, inner) for n in body.nodes]
    lines.append(f"{inner}yield " + ", ".join(format_operand(v) for v in body.outputs))
    lines.append(indent + "}")
    return "\n".join(lines)


def format_graph(g: Graph) -> str:
    results = ", ".join(format_type(v.type) if isinstance(v, Value) else "literal" for v in g.outputs)
    if len(g.outputs) != 1:
        results = f"({results})"
    lines = [f"func @{g.name}({_signature(g)}) -> {results} {{"]
    lines += [format_node(n, "  ") for n in g.nodes]
    lines.append("  return " + ", ".join(format_operand(v) for v in g.outputs))
    lines.append("}")
    return "\n".join(lines)


def half_in_float32(node: Node) -> bool:
    """Whether `node` computes in float32 and rounds its result to float16 once, as eager does
    (`gmbase.dtypes.HALF_SCALAR_IN_FLOAT32`, the same table): `mul`/`div` of float16
    tensors with a Python number. Casting the number to float16 first would turn
    `t / 70000.0` into a division by inf. The interpreter and every generator ask this."""
    if node.op not in _dtypes.HALF_SCALAR_IN_FLOAT32 or not node.outputs or node.outputs[0].type.dtype.np != np.float16:
        return False
    values = [v for v in node.inputs if isinstance(v, Value)]
    return any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in node.inputs) and all(
        v.type.dtype.np == np.float16 for v in values)
