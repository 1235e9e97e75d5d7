"""Decomposition: ops that are several passes over their operand (softmax, log_softmax,
logsumexp) or a chain of elementwise steps written as one library call (gelu,
softplus) become the fusible primitives their forward computes, in the same order and the
same dtype, so that the values stay those of eager and fusion can merge them with their
neighbours (a softmax becomes amax | exp(x - m) and its sum | the division, each joining
the pointwise ops around it). normalize and layer_norm are not decomposed: eager computes
their statistics row by row with a dot-product variance (fewer passes than mean ops), whose
rounding a chain of mean ops cannot reproduce, so they stay library calls of the op's own
forward and compiled values stay eager's to the bit. Runs in the lowering stage, right before fusion; rules as in
rules.py, one per op.

No decomposition is written here: each is the op record's own forward run on IR values
(`ir_namespace.decompose_by_forward`), so a formula lives in its record only."""
from __future__ import annotations

from gmbase import dtypes as _dtypes

from ..ir import Graph, Value
from .ir_namespace import decompose_by_forward
from .rules import Rule, apply_rules, rule_table
from .simplify import cse, dce


def _by_forward(ctx, node, out):
    """The op's own forward run on IR values (ir_namespace): its decomposition is written once,
    in its record, so it cannot drift from eager's computation."""
    return decompose_by_forward(ctx, node)


def _decomposable(node) -> bool:
    """Float operands, not empty; not float16, which eager computes in float32 and rounds once
    (the library call does the same; decomposed, each step would round to float16)."""
    x = node.inputs[0]
    return (isinstance(x, Value) and x.type.dtype.is_floating_point and x.type.dtype is not _dtypes.float16
            and 0 not in x.type.shape)


def _not_0d(node) -> bool:
    """A reduction of a 0-d operand stays the library call (its forward reduces over no axis)."""
    return _decomposable(node) and bool(node.inputs[0].type.shape)


# Each op's decomposition is its record's forward (gmops) run on IR values: the steps the forward
# computes, in its order and dtype, and nothing written here a second time.
RULES = [
    Rule("softmax", ("softmax",), _by_forward, matches=_not_0d,
         doc="softmax x -> e / sum(e) with e = exp(x - amax x) (the record's forward on IR values)"),
    Rule("log_softmax", ("log_softmax",), _by_forward, matches=_not_0d,
         doc="log_softmax x -> (x - m) - log(sum(exp(x - m))) (the record's forward on IR values)"),
    Rule("logsumexp", ("logsumexp",), _by_forward, matches=_not_0d,
         doc="logsumexp x -> log(sum(exp(x - m))) + m, m = amax x (0 where not finite) (the record's forward)"),
    Rule("gelu", ("gelu",), _by_forward, matches=_decomposable,
         doc="gelu x -> (erf(x / sqrt 2) + 1) x 0.5, or its tanh form (the record's forward on IR values)"),
    Rule("softplus", ("softplus",), _by_forward, matches=_decomposable,
         doc="softplus x -> where(bx > t, x, (log1p(exp(-|bx|)) + max(bx, 0)) / beta), bx = beta x "
             "(the record's forward on IR values)"),
]
RULE_TABLE = rule_table(RULES)


def decompose(graph: Graph, **_) -> dict:
    """Apply the rules, then merge the steps they share with the graph: a decomposed gelu's
    erf(x / sqrt 2) is the one its VJP computes, so the joint graph computes it once."""
    stats = apply_rules(graph, RULES)
    if stats["rewritten"]:
        stats["merged"] = cse(graph)["merged"]
        dce(graph)  # the decomposed nodes: nothing reads them any more
    return stats
