"""Rewrite rules: small named (pattern, replacement, condition) records, applied node by node.

A rule names the ops it looks at (`ops`; None: any op its `matches` predicate accepts) and
a `rewrite(ctx, node, out)` that returns a Value equal to the node's result (building new
nodes with `ctx.emit`), or None when its condition does not hold. A rule that changes values
(x*0 -> 0 is wrong for inf and nan) sets `fast_math=True` and runs only when asked.

Each rule is testable alone (`apply_rules(graph, [rule])`), and a pass is a list of rules
(see algebraic.py and stability.py), as PyTensor registers node rewriters and tinygrad
matches patterns."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..ir import Graph, Node, Value
from .rewrite import Namer, make_node, replace_uses, rewrite_each


@dataclass(frozen=True)
class Rule:
    name: str
    ops: tuple | None  # the node ops it looks at; None: those `matches` accepts
    rewrite: Callable  # (ctx, node, out) -> Value | None
    fast_math: bool = False  # the rewrite may change values: only under fast_math
    matches: Callable | None = None  # (node) -> bool, for rules over a class of ops
    doc: str = ""

    def applies_to(self, node: Node) -> bool:
        if self.ops is not None and node.op not in self.ops:
            return False
        return self.matches is None or self.matches(node)


class RuleContext:
    """What a rule sees besides the node: fresh names, `emit` for new nodes, the options."""

    def __init__(self, graph: Graph, rules: list, fast_math: bool) -> None:
        self.namer = Namer(graph)
        self.fast_math = fast_math
        self.rules = [r for r in rules if fast_math or not r.fast_math]
        self.emitted: list = []
        self.fired: dict = {}  # rule name -> times it rewrote a node
        self.graph_outputs = {id(v) for v in graph.outputs if isinstance(v, Value)}

    def emit(self, op: str, inputs: list, attrs: dict, loc=None) -> Value:
        node = make_node(op, inputs, attrs, self.namer, loc)
        self.emitted.append(node)
        return node.outputs[0]

    def rewrite(self, node: Node):
        """The first rule's replacement for node (rules in table order), or None."""
        if len(node.outputs) != 1 or node.body is not None:
            return None
        out = node.outputs[0]
        if not out.users and id(out) not in self.graph_outputs:
            return None  # dead (replaced by an earlier round, left for DCE): its rewrite would be dead too
        for rule in self.rules:
            if rule.applies_to(node):
                mark = len(self.emitted)
                result = rule.rewrite(self, node, out)
                if result is not None and result is not out:
                    self.fired[rule.name] = self.fired.get(rule.name, 0) + 1
                    return result
                del self.emitted[mark:]  # a rule that gave up leaves nothing behind
        return None


def apply_rules(graph: Graph, rules: list, fast_math: bool = False) -> dict:
    """Offer every node to the rules (replaced nodes stay for DCE). Returns the stats:
    how many nodes were rewritten, and by which rule."""
    ctx = RuleContext(graph, rules, fast_math)
    mapping = rewrite_each(graph, ctx)
    replace_uses(graph, mapping)
    return {"rewritten": len(mapping), "rules": dict(ctx.fired)}


def rule_table(rules: list) -> dict:
    """name -> rule, refusing two rules of one name."""
    table: dict = {}
    for r in rules:
        if r.name in table:
            raise ValueError(f"two rewrite rules are named {r.name!r}")
        table[r.name] = r
    return table
