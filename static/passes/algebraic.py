"""Algebraic simplification. Without fast_math every rewrite gives the same value
(x*1 -> x, neg(neg x) -> x, x**2 -> x*x, transpose/reshape/expand chains, sums over
size-1 axes, needless broadcasts of scalars). With fast_math=True also value-changing ones
(x*0 -> 0, x-x -> 0, sum(expand(y)) -> y*n, reassociation of constants)."""
from __future__ import annotations

from eager.ops import REGISTRY
from eager.ops._checks import broadcast_shapes

from ..ir import Graph, Value
from .rewrite import Namer, make_node, replace_uses, rewrite_each
from .simplify import splat_value


def _const(v):
    """The scalar a literal or a splat stands for, else None."""
    if isinstance(v, Value):
        return splat_value(v)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _is(v, number) -> bool:
    c = _const(v)
    return c is not None and c == number


def _producer(v, op=None):
    if isinstance(v, Value) and v.producer is not None and (op is None or v.producer.op == op):
        return v.producer
    return None


def _same_type(a, b) -> bool:
    return isinstance(a, Value) and isinstance(b, Value) and a.type == b.type


class _Rewriter:
    def __init__(self, graph: Graph, fast_math: bool) -> None:
        self.namer = Namer(graph)
        self.fast_math = fast_math
        self.emitted: list = []

    def emit(self, op, inputs, attrs, loc=None) -> Value:
        node = make_node(op, inputs, attrs, self.namer, loc)
        self.emitted.append(node)
        return node.outputs[0]

    def rewrite(self, node):
        """A Value equal to the node's result, or None to keep the node."""
        out = node.outputs[0] if len(node.outputs) == 1 else None
        if out is None or node.body is not None:
            return None
        ins, op, a = node.inputs, node.op, node.attrs
        if op in ("mul", "add", "sub", "div", "pow"):
            return self._arith(node, out)
        if op == "neg":
            inner = _producer(ins[0], "neg")
            if inner is not None and _same_type(inner.inputs[0], out):
                return inner.inputs[0]
        if op == "transpose":
            inner = _producer(ins[0], "transpose")
            if inner is not None and {inner.attrs["dim0"], inner.attrs["dim1"]} == {a["dim0"], a["dim1"]}:
                return inner.inputs[0]
        if op == "permute":
            inner = _producer(ins[0], "permute")
            if inner is not None:
                composed = tuple(inner.attrs["dims"][d] for d in a["dims"])
                if composed == tuple(range(len(composed))):
                    return inner.inputs[0]
                return self.emit("permute", [inner.inputs[0]], {"dims": composed}, node.loc)
            if tuple(a["dims"]) == tuple(range(len(a["dims"]))):
                return ins[0]
        if op in ("reshape", "expand", "squeeze", "unsqueeze") and _same_type(ins[0], out):
            return ins[0]
        if op == "reshape":
            inner = _producer(ins[0])
            if inner is not None and inner.op in ("reshape", "squeeze", "unsqueeze"):
                return self.emit("reshape", [inner.inputs[0]], {"shape": tuple(out.type.shape)}, node.loc)
        if op == "sum":
            return self._sum(node, out)
        if REGISTRY[op].kind == "elementwise" and op not in ("full", "full_like"):
            return self._drop_broadcasts(node, out)
        return None

    def _arith(self, node, out):
        x, y = node.inputs
        op = node.op
        if op == "mul":
            if _is(y, 1) and _same_type(x, out):
                return x
            if _is(x, 1) and _same_type(y, out):
                return y
            if self.fast_math and (_is(x, 0) or _is(y, 0)):
                return self.emit("full", [], {"shape": tuple(out.type.shape), "value": 0.0 if out.type.dtype.is_floating_point else 0,
                                              "dtype": out.type.dtype}, node.loc)
            if self.fast_math and _const(y) is not None and not isinstance(y, Value):
                inner = _producer(x, "mul")
                if inner is not None and _const(inner.inputs[1]) is not None and not isinstance(inner.inputs[1], Value):
                    return self.emit("mul", [inner.inputs[0], inner.inputs[1] * y], {}, node.loc)
        if op == "add":
            if _is(y, 0) and _same_type(x, out):
                return x
            if _is(x, 0) and _same_type(y, out):
                return y
        if op == "sub":
            if _is(y, 0) and _same_type(x, out):
                return x
            if self.fast_math and x is y and isinstance(x, Value):
                return self.emit("full", [], {"shape": tuple(out.type.shape), "value": 0.0 if out.type.dtype.is_floating_point else 0,
                                              "dtype": out.type.dtype}, node.loc)
        if op == "div" and _is(y, 1) and _same_type(x, out):
            return x
        if op == "pow" and isinstance(x, Value) and not isinstance(y, Value):
            if y == 1 and _same_type(x, out):
                return x
            if y == 2 and _same_type(x, out):
                return self.emit("mul", [x, x], {}, node.loc)
        return self._drop_broadcasts(node, out)

    def _sum(self, node, out):
        x = node.inputs[0]
        dims = node.attrs["dims"]
        axes = range(len(x.type.shape)) if dims is None else dims
        if x.type.dtype != out.type.dtype:
            return None
        if all(x.type.shape[d] == 1 for d in axes):
            return x if _same_type(x, out) else self.emit("reshape", [x], {"shape": tuple(out.type.shape)}, node.loc)
        inner = _producer(x, "expand")
        if inner is None:
            return None
        y = inner.inputs[0]
        lead = len(x.type.shape) - len(y.type.shape)
        broadcast_axes = {i for i in range(len(x.type.shape))
                          if i < lead or (y.type.shape[i - lead] == 1 and x.type.shape[i] != 1)}
        if set(axes) != broadcast_axes:
            return None
        n = 1
        for d in axes:
            n *= x.type.shape[d]
        if not self.fast_math:
            return None  # n equal terms summed (in NumPy's order) round differently from one product
        kept = y if lead == 0 else self.emit("reshape", [y], {"shape": tuple(
            1 for _ in range(lead)) + tuple(y.type.shape)}, node.loc)
        if tuple(kept.type.shape) != tuple(out.type.shape):
            kept = self.emit("reshape", [kept], {"shape": tuple(out.type.shape)}, node.loc)
        return kept if n == 1 else self.emit("mul", [kept, float(n) if out.type.dtype.is_floating_point else n],
                                             {}, node.loc)

    def _drop_broadcasts(self, node, out):
        """An operand expand(y) that broadcasting alone reproduces: read y directly."""
        changed = False
        inputs = list(node.inputs)
        for i, v in enumerate(inputs):
            inner = _producer(v, "expand")
            if inner is None:
                continue
            candidate = inputs[:i] + [inner.inputs[0]] + inputs[i + 1:]
            shapes = [c.type.shape for c in candidate if isinstance(c, Value)]
            if shapes and broadcast_shapes(node.op, *shapes) == tuple(out.type.shape):
                inputs = candidate
                changed = True
        if not changed:
            return None
        return self.emit(node.op, inputs, dict(node.attrs), node.loc)


def algebraic(graph: Graph, fast_math: bool = False, **_) -> dict:
    mapping = rewrite_each(graph, _Rewriter(graph, fast_math))
    replace_uses(graph, mapping)
    return {"rewritten": len(mapping)}
