"""Decomposition: ops that are several passes over their operand (softmax, log_softmax,
logsumexp) or a chain of elementwise steps written as one library call (gelu,
softplus) become the fusible primitives their forward computes, in the same order and the
same dtype, so that the values stay those of eager and fusion can merge them with their
neighbours (a softmax becomes amax | exp(x - m) and its sum | the division, each joining
the pointwise ops around it). normalize and layer_norm are not decomposed: eager computes
their statistics row by row with a dot-product variance (fewer passes than mean ops), whose
rounding a chain of mean ops cannot reproduce, so they stay library calls of the op's own
forward and compiled values stay eager's to the bit. Runs in the lowering stage, right before fusion; rules as in
rules.py, one per op."""
from __future__ import annotations

import math

from eager import _dtypes

from ..ir import Graph, Value
from .ir_namespace import decompose_by_forward
from .rules import Rule, apply_rules, rule_table
from .simplify import cse, dce


def _dim(node) -> int:
    x = node.inputs[0]
    return node.attrs["dim"] % max(len(x.type.shape), 1)


def _finite_or_zero(ctx, m: Value, loc) -> Value:
    """where(isfinite(m), m, 0): m - m is 0 exactly when m is finite (inf - inf and nan
    give nan), so no isfinite op is needed."""
    finite = ctx.emit("eq", [ctx.emit("sub", [m, m], {}, loc), 0.0], {}, loc)
    return ctx.emit("where", [finite, m, 0.0], {}, loc)


def _logsumexp_keepdim(ctx, x: Value, dims, loc) -> Value:
    """log(sum(exp(x - m))) + m with m = amax(x), made 0 where not finite (eager's forward)."""
    m = _finite_or_zero(ctx, ctx.emit("amax", [x], {"dims": dims, "keepdim": True}, loc), loc)
    s = ctx.emit("sum", [ctx.emit("exp", [ctx.emit("sub", [x, m], {}, loc)], {}, loc)],
                 {"dims": dims, "keepdim": True}, loc)
    return ctx.emit("add", [ctx.emit("log", [s], {}, loc), m], {}, loc)


def _softmax(ctx, node, out):
    x, dims, loc = node.inputs[0], (_dim(node),), node.loc
    m = ctx.emit("amax", [x], {"dims": dims, "keepdim": True}, loc)
    e = ctx.emit("exp", [ctx.emit("sub", [x, m], {}, loc)], {}, loc)
    return ctx.emit("div", [e, ctx.emit("sum", [e], {"dims": dims, "keepdim": True}, loc)], {}, loc)


def _log_softmax(ctx, node, out):
    x = node.inputs[0]
    return ctx.emit("sub", [x, _logsumexp_keepdim(ctx, x, (_dim(node),), node.loc)], {}, node.loc)


def _logsumexp(ctx, node, out):
    x, dims, keepdim = node.inputs[0], node.attrs["dims"], node.attrs["keepdim"]
    if not x.type.shape or 0 in x.type.shape:
        return None  # 0-d or empty: the library call handles these edge shapes
    dims = tuple(range(len(x.type.shape))) if dims is None else tuple(dims)
    lse = _logsumexp_keepdim(ctx, x, dims, node.loc)
    if keepdim:
        return lse
    return ctx.emit("reshape", [lse], {"shape": tuple(out.type.shape)}, node.loc)


_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_GELU_K = math.sqrt(2.0 / math.pi)


def _gelu(ctx, node, out):
    """0.5 * x * (1 + erf(x / sqrt 2)), or with tanh's approximation, as the op's forward."""
    x, loc = node.inputs[0], node.loc
    if node.attrs.get("approximate", "none") == "tanh":
        cube = ctx.emit("mul", [ctx.emit("mul", [ctx.emit("mul", [x, 0.044715], {}, loc), x], {}, loc), x], {}, loc)
        inner = ctx.emit("mul", [ctx.emit("add", [x, cube], {}, loc), _GELU_K], {}, loc)
        shape = ctx.emit("tanh", [inner], {}, loc)
    else:
        shape = ctx.emit("erf", [ctx.emit("mul", [x, _INV_SQRT2], {}, loc)], {}, loc)
    return ctx.emit("mul", [ctx.emit("mul", [x, 0.5], {}, loc), ctx.emit("add", [shape, 1.0], {}, loc)], {}, loc)


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


RULES = [
    Rule("softmax", ("softmax",), _softmax, matches=_decomposable,
         doc="softmax x -> e / sum(e) with e = exp(x - amax x)"),
    Rule("log_softmax", ("log_softmax",), _log_softmax, matches=_decomposable, doc="log_softmax x -> x - logsumexp x"),
    Rule("logsumexp", ("logsumexp",), _logsumexp, matches=_decomposable,
         doc="logsumexp x -> log(sum(exp(x - m))) + m, m = amax x (0 where not finite)"),
    Rule("gelu", ("gelu",), _gelu, matches=_decomposable,
         doc="gelu x -> 0.5 x (1 + erf(x / sqrt 2)) (or its tanh form)"),
    Rule("softplus", ("softplus",), _by_forward, matches=_decomposable,
         doc="softplus x -> its record's forward on IR values: where(bx > t, x, (log1p(exp(-|bx|)) + max(bx, 0)) "
             "/ beta), bx = beta x"),
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
