"""Numerical-stability rewrites, as PyTensor does them:
log(softmax x) -> log_softmax x; log(sum(exp x)) -> logsumexp x;
log(exp(x) / sum(exp x)) -> x - logsumexp x; log(sigmoid x) -> -softplus(-x);
log(1 + x) -> log1p x; exp(x) - 1 -> expm1 x.
They run on the forward before autodiff (so the backward is derived from the stable
form) and again on the joint graph. Each is a named rule (see rules.py)."""
from __future__ import annotations

from ..ir import Graph, Value
from .algebraic import _is, _producer, _same_type
from .ir_namespace import run_composite
from .rewrite import rewrite_each
from .rules import Rule, RuleContext, apply_rules, rule_table


def _log_of(op):
    """Rules on log(op(...)): the producer of log's operand, when it is `op`."""
    return lambda node: _producer(node.inputs[0], op) is not None


def _log_softmax(ctx, node, out):
    inner = node.inputs[0].producer
    return ctx.emit("log_softmax", [inner.inputs[0]], dict(inner.attrs), node.loc)


def _logsumexp(ctx, node, out):
    inner = node.inputs[0].producer
    e = _producer(inner.inputs[0], "exp")
    return None if e is None else ctx.emit("logsumexp", [e.inputs[0]], dict(inner.attrs), node.loc)


def _log_sigmoid(ctx, node, out):
    """eager's logsigmoid composite (-softplus(-x)) run on IR values: its stable form is written
    once, in eager.nn.functional."""
    from eager.nn.functional import logsigmoid  # noqa: PLC0415  (eager's nn loads on first use)

    result = run_composite(ctx, node.loc, logsigmoid, node.inputs[0].producer.inputs[0])
    return result if result is not None and result.type == out.type else None


def _log1p(ctx, node, out):
    a, b = node.inputs[0].producer.inputs
    if _is(b, 1) and _same_type(a, out):
        return ctx.emit("log1p", [a], {}, node.loc)
    if _is(a, 1) and _same_type(b, out):
        return ctx.emit("log1p", [b], {}, node.loc)
    return None


def _log_of_normalized_exp(ctx, node, out):
    num, den = node.inputs[0].producer.inputs
    e, s = _producer(num, "exp"), _producer(den, "sum")
    if e is None or s is None or s.inputs[0] is not num or not s.attrs["keepdim"]:
        return None
    x = e.inputs[0]
    lse = ctx.emit("logsumexp", [x], dict(s.attrs), node.loc)
    result = ctx.emit("sub", [x, lse], {}, node.loc)
    return result if result.type == out.type else None


def _expm1(ctx, node, out):
    a, b = node.inputs
    e = _producer(a, "exp")
    return ctx.emit("expm1", [e.inputs[0]], {}, node.loc) if e is not None and _is(b, 1) and _same_type(a, out) \
        else None


RULES = [
    Rule("log_softmax", ("log",), _log_softmax, matches=_log_of("softmax"), doc="log(softmax x) -> log_softmax x"),
    Rule("logsumexp", ("log",), _logsumexp, matches=_log_of("sum"), doc="log(sum(exp x)) -> logsumexp x"),
    Rule("log_sigmoid", ("log",), _log_sigmoid, matches=_log_of("sigmoid"), doc="log(sigmoid x) -> -softplus(-x)"),
    Rule("log1p", ("log",), _log1p, matches=_log_of("add"), doc="log(1 + x) -> log1p x"),
    Rule("log_of_normalized_exp", ("log",), _log_of_normalized_exp, matches=_log_of("div"),
         doc="log(exp(x) / sum(exp x)) -> x - logsumexp x"),
    Rule("expm1", ("sub",), _expm1, doc="exp(x) - 1 -> expm1 x"),
]
RULE_TABLE = rule_table(RULES)


def stability(graph: Graph, **_) -> dict:
    return apply_rules(graph, RULES)


def stabilize_values(graph: Graph, values: list) -> list:
    """Rewrite the graph in place mid-trace (no outputs set yet) and return what `values`
    now map to. Used right before autodiff so the backward follows the stable forms."""
    mapping = rewrite_each(graph, RuleContext(graph, RULES, fast_math=False))

    def resolve(v):
        while isinstance(v, Value) and v in mapping:
            v = mapping[v]
        return v

    return [resolve(v) for v in values]
