"""Numerical-stability rewrites, as PyTensor does them:
log(softmax x) -> log_softmax x; log(sum(exp x)) -> logsumexp x;
log(exp(x) / sum(exp x)) -> x - logsumexp x; log(sigmoid x) -> -softplus(-x);
log(1 + x) -> log1p x; exp(x) - 1 -> expm1 x.
They run on the forward before autodiff (so the backward is derived from the stable
form) and again on the joint graph."""
from __future__ import annotations

from ..ir import Graph, Value
from .algebraic import _is, _producer, _same_type
from .rewrite import Namer, make_node, replace_uses, rewrite_each


class _Stabilizer:
    def __init__(self, graph: Graph) -> None:
        self.namer = Namer(graph)
        self.emitted: list = []

    def emit(self, op, inputs, attrs, loc) -> Value:
        node = make_node(op, inputs, attrs, self.namer, loc)
        self.emitted.append(node)
        return node.outputs[0]

    def rewrite(self, node):
        if len(node.outputs) != 1:
            return None
        out, loc = node.outputs[0], node.loc
        if node.op == "log":
            arg = node.inputs[0]
            inner = _producer(arg)
            if inner is None:
                return None
            if inner.op == "softmax":
                return self.emit("log_softmax", [inner.inputs[0]], dict(inner.attrs), loc)
            if inner.op == "sum" and _producer(inner.inputs[0], "exp") is not None:
                x = inner.inputs[0].producer.inputs[0]
                return self.emit("logsumexp", [x], dict(inner.attrs), loc)
            if inner.op == "sigmoid":
                neg_x = self.emit("neg", [inner.inputs[0]], {}, loc)
                sp = self.emit("softplus", [neg_x], {"beta": 1.0, "threshold": 20.0}, loc)
                return self.emit("neg", [sp], {}, loc)
            if inner.op == "add":
                a, b = inner.inputs
                if _is(b, 1) and _same_type(a, out):
                    return self.emit("log1p", [a], {}, loc)
                if _is(a, 1) and _same_type(b, out):
                    return self.emit("log1p", [b], {}, loc)
            if inner.op == "div":
                num, den = inner.inputs
                e, s = _producer(num, "exp"), _producer(den, "sum")
                if e is not None and s is not None and s.inputs[0] is num and s.attrs["keepdim"]:
                    x = e.inputs[0]
                    lse = self.emit("logsumexp", [x], dict(s.attrs), loc)
                    result = self.emit("sub", [x, lse], {}, loc)
                    return result if result.type == out.type else None
        if node.op == "sub":
            a, b = node.inputs
            e = _producer(a, "exp")
            if e is not None and _is(b, 1) and _same_type(a, out):
                return self.emit("expm1", [e.inputs[0]], {}, loc)
        return None


def stability(graph: Graph, **_) -> dict:
    mapping = rewrite_each(graph, _Stabilizer(graph))
    replace_uses(graph, mapping)
    return {"rewritten": len(mapping)}


def stabilize_values(graph: Graph, values: list) -> list:
    """Rewrite the graph in place mid-trace (no outputs set yet) and return what `values`
    now map to. Used right before autodiff so the backward follows the stable forms."""
    mapping = rewrite_each(graph, _Stabilizer(graph))

    def resolve(v):
        while isinstance(v, Value) and v in mapping:
            v = mapping[v]
        return v

    return [resolve(v) for v in values]
