"""Algebraic simplification, as a table of named rules (see rules.py). Without fast_math
every rewrite gives the same value (x*1 -> x, neg(neg x) -> x, x**2 -> x*x,
transpose/reshape/expand chains, sums over size-1 axes, needless broadcasts of scalars).
With fast_math=True also value-changing ones (x*0 -> 0, x-x -> 0, x+0.0 -> x,
sum(expand(y)) -> y*n, reassociation of constants)."""
from __future__ import annotations

import math

from gmops import REGISTRY
from gmops._checks import broadcast_shapes

from ..ir import Graph, Value
from .rules import Rule, apply_rules, rule_table
from .simplify import splat_value


def _const(v):
    """The scalar a literal or a splat stands for, else None."""
    if isinstance(v, Value):
        return splat_value(v)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _is(v, number) -> bool:
    c = _const(v)
    return c is not None and c == number


def _is_additive_identity(v, out, fast_math: bool, negated: bool = False) -> bool:
    """Whether adding v (subtracting it, with negated) leaves every value as it is. For floats
    only -0.0 is: x + 0.0 turns x = -0.0 into +0.0 (IEEE 754), so x + 0.0 -> x and x - (-0.0)
    -> x are rewrites only under fast_math; x + (-0.0) -> x and x - 0.0 -> x always hold."""
    c = _const(v)
    if c is None or c != 0:
        return False
    if not out.type.dtype.is_floating_point or fast_math:
        return True
    negative_zero = math.copysign(1.0, float(c)) < 0
    return negative_zero != negated


def _producer(v, op=None):
    if isinstance(v, Value) and v.producer is not None and (op is None or v.producer.op == op):
        return v.producer
    return None


def _same_type(a, b) -> bool:
    return isinstance(a, Value) and isinstance(b, Value) and a.type == b.type


def _zeros_like_out(ctx, node, out) -> Value:
    zero = 0.0 if out.type.dtype.is_floating_point else 0
    return ctx.emit("full", [], {"shape": tuple(out.type.shape), "value": zero, "dtype": out.type.dtype}, node.loc)


def _mul_by_one(ctx, node, out):
    x, y = node.inputs
    if _is(y, 1) and _same_type(x, out):
        return x
    if _is(x, 1) and _same_type(y, out):
        return y
    return None


def _mul_by_zero(ctx, node, out):
    x, y = node.inputs
    return _zeros_like_out(ctx, node, out) if _is(x, 0) or _is(y, 0) else None


def _reassociate_constants(ctx, node, out):
    """(x * a) * b -> x * (a*b) for literals a, b (rounds once instead of twice)."""
    x, y = node.inputs
    if _const(y) is None or isinstance(y, Value):
        return None
    inner = _producer(x, "mul")
    if inner is not None and _const(inner.inputs[1]) is not None and not isinstance(inner.inputs[1], Value):
        return ctx.emit("mul", [inner.inputs[0], inner.inputs[1] * y], {}, node.loc)
    return None


def _add_zero(ctx, node, out):
    x, y = node.inputs
    if _is_additive_identity(y, out, ctx.fast_math) and _same_type(x, out):
        return x
    if _is_additive_identity(x, out, ctx.fast_math) and _same_type(y, out):
        return y
    return None


def _sub_zero(ctx, node, out):
    x, y = node.inputs
    return x if _is_additive_identity(y, out, ctx.fast_math, negated=True) and _same_type(x, out) else None


def _sub_self(ctx, node, out):
    x, y = node.inputs
    return _zeros_like_out(ctx, node, out) if x is y and isinstance(x, Value) else None


def _div_by_one(ctx, node, out):
    x, y = node.inputs
    return x if _is(y, 1) and _same_type(x, out) else None


def _pow_small(ctx, node, out):
    x, y = node.inputs
    if not isinstance(x, Value) or isinstance(y, Value) or not _same_type(x, out):
        return None
    if y == 1:
        return x
    if y == 2:
        return ctx.emit("mul", [x, x], {}, node.loc)
    return None


def _neg_neg(ctx, node, out):
    inner = _producer(node.inputs[0], "neg")
    return inner.inputs[0] if inner is not None and _same_type(inner.inputs[0], out) else None


def _transpose_transpose(ctx, node, out):
    a = node.attrs
    inner = _producer(node.inputs[0], "transpose")
    if inner is not None and {inner.attrs["dim0"], inner.attrs["dim1"]} == {a["dim0"], a["dim1"]}:
        return inner.inputs[0]
    return None


def _swap_last_two(ctx, v: Value, loc) -> Value:
    """v with its last two axes swapped: the operand of a transpose that did exactly that,
    else a new transpose (a view)."""
    n = len(v.type.shape)
    inner = _producer(v, "transpose")
    if inner is not None and {inner.attrs["dim0"] % n, inner.attrs["dim1"] % n} == {n - 2, n - 1}:
        return inner.inputs[0]
    return ctx.emit("transpose", [v], {"dim0": n - 2, "dim1": n - 1}, loc)


def _transpose_of_matmul(ctx, node, out):
    """(a @ b)^T -> b^T @ a^T over the last two axes. A weight's gradient comes out of
    autodiff as the transpose of a matmul (the gradient of the transposed weight that `x @
    W.T` multiplies by); computed directly in the weight's layout, the optimizer's fused
    update reads it row by row instead of gathering it column by column. Each element is
    the same dot product; only the order BLAS sums it in may differ, as between any two
    calls of different layouts."""
    n = len(out.type.shape)
    inner = _producer(node.inputs[0], "matmul")
    if n < 2 or inner is None or {node.attrs["dim0"] % n, node.attrs["dim1"] % n} != {n - 2, n - 1}:
        return None
    a, b = inner.inputs
    if not (isinstance(a, Value) and isinstance(b, Value)) or len(a.type.shape) != n or len(b.type.shape) != n:
        return None  # broadcasting batch dims or vectors: left as they are
    return ctx.emit("matmul", [_swap_last_two(ctx, b, node.loc), _swap_last_two(ctx, a, node.loc)], {}, node.loc)


def _permute_permute(ctx, node, out):
    dims = node.attrs["dims"]
    inner = _producer(node.inputs[0], "permute")
    if inner is not None:
        composed = tuple(inner.attrs["dims"][d] for d in dims)
        if composed == tuple(range(len(composed))):
            return inner.inputs[0]
        return ctx.emit("permute", [inner.inputs[0]], {"dims": composed}, node.loc)
    if tuple(dims) == tuple(range(len(dims))):
        return node.inputs[0]
    return None


def _view_of_same_type(ctx, node, out):
    return node.inputs[0] if _same_type(node.inputs[0], out) else None


def _reshape_reshape(ctx, node, out):
    inner = _producer(node.inputs[0])
    if inner is not None and inner.op in ("reshape", "squeeze", "unsqueeze"):
        return ctx.emit("reshape", [inner.inputs[0]], {"shape": tuple(out.type.shape)}, node.loc)
    return None


def _sum_axes(node):
    x = node.inputs[0]
    dims = node.attrs["dims"]
    return range(len(x.type.shape)) if dims is None or not x.type.shape else dims  # 0-d: dim 0 is all


def _sum_of_size_one_axes(ctx, node, out):
    x = node.inputs[0]
    if x.type.dtype != out.type.dtype or not all(x.type.shape[d] == 1 for d in _sum_axes(node)):
        return None
    return x if _same_type(x, out) else ctx.emit("reshape", [x], {"shape": tuple(out.type.shape)}, node.loc)


def _sum_of_expand(ctx, node, out):
    """sum(expand(y)) over the broadcast axes -> y * n: n equal terms summed (in NumPy's
    order) round differently from one product, hence fast_math only."""
    x = node.inputs[0]
    axes = _sum_axes(node)
    inner = _producer(x, "expand")
    if x.type.dtype != out.type.dtype or inner is None:
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
    kept = y if lead == 0 else ctx.emit("reshape", [y], {"shape": tuple(
        1 for _ in range(lead)) + tuple(y.type.shape)}, node.loc)
    if tuple(kept.type.shape) != tuple(out.type.shape):
        kept = ctx.emit("reshape", [kept], {"shape": tuple(out.type.shape)}, node.loc)
    return kept if n == 1 else ctx.emit("mul", [kept, float(n) if out.type.dtype.is_floating_point else n],
                                        {}, node.loc)


def _drop_broadcasts(ctx, node, out):
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
    return ctx.emit(node.op, inputs, dict(node.attrs), node.loc)


def _slab(node) -> tuple | None:
    """(dim, start, stop) when node is an index_grad whose key is `start:stop` along one dim
    and the whole extent along every other (a gradient of split, chunk or a slice), else None."""
    if node is None or node.op != "index_grad" or node.attrs.get("n_index", 0):
        return None
    shape, key = tuple(node.attrs["shape"]), node.attrs["key"]
    if len(key) > len(shape):
        return None
    found = None
    for d, entry in enumerate(key):
        if entry[0] != "slice" or entry[3] not in (None, 1):
            return None
        start = 0 if entry[1] is None else entry[1]
        stop = shape[d] if entry[2] is None else entry[2]
        if (start, stop) == (0, shape[d]):
            continue
        if found is not None or not 0 <= start < stop <= shape[d]:
            return None
        found = (d, start, stop)
    return found or (0, 0, shape[0]) if shape else None


def _join_index_grads(ctx, node, out):
    """index_grad(a, [s:m] along d) + index_grad(b, [m:e] along d) -> index_grad(cat(a, b), [s:e]):
    the gradient of split's pieces joined by one copy instead of zero-filled buffers and
    an add; when the pieces cover the dim, the cat itself."""
    a, b = (_producer(v) for v in node.inputs)
    sa, sb = _slab(a), _slab(b)
    if sa is None or sb is None or sa[0] != sb[0] or a.attrs["shape"] != b.attrs["shape"]:
        return None
    if not _same_type(a.outputs[0], out) or not _same_type(b.outputs[0], out):
        return None
    if sb[2] == sa[1]:
        a, b, sa, sb = b, a, sb, sa
    if sa[2] != sb[1]:
        return None
    d, start, stop, shape = sa[0], sa[1], sb[2], tuple(out.type.shape)
    joined = ctx.emit("cat", [a.inputs[0], b.inputs[0]], {"dim": d}, node.loc)
    if (start, stop) == (0, shape[d]):
        return joined
    key = tuple(("slice", start, stop, None) if i == d else ("slice", None, None, None) for i in range(d + 1))
    return ctx.emit("index_grad", [joined], {"key": key, "shape": shape, "n_index": 0}, node.loc)


def _cat_of_cat(ctx, node, out):
    """cat(a, cat(b, c), d) along one dim -> cat(a, b, c, d): one copy of every piece."""
    dim, pieces, changed = node.attrs["dim"], [], False
    for v in node.inputs:
        inner = _producer(v, "cat")
        if inner is not None and inner.attrs["dim"] == dim:
            pieces += list(inner.inputs)
            changed = True
        else:
            pieces.append(v)
    return ctx.emit("cat", pieces, {"dim": dim}, node.loc) if changed else None


def _broadcasting_pointwise(node) -> bool:
    op = REGISTRY[node.op]
    return op.pointwise and bool(op.arity)  # not full: it has no operand to broadcast


RULES = [
    Rule("cat_of_cat", ("cat",), _cat_of_cat, doc="cat(a, cat(b, c)) along one dim -> cat(a, b, c)"),
    Rule("join_index_grads", ("add",), _join_index_grads,
         doc="index_grad(a, [s:m]) + index_grad(b, [m:e]) -> index_grad(cat(a, b), [s:e]) (split's gradient)"),
    Rule("mul_by_one", ("mul",), _mul_by_one, doc="x * 1 -> x"),
    Rule("mul_by_zero", ("mul",), _mul_by_zero, fast_math=True, doc="x * 0 -> 0 (wrong for inf, nan)"),
    Rule("reassociate_constants", ("mul",), _reassociate_constants, fast_math=True, doc="(x*a)*b -> x*(a*b)"),
    Rule("add_zero", ("add",), _add_zero, doc="x + (-0.0) -> x; x + 0.0 -> x under fast_math (signed zeros)"),
    Rule("sub_zero", ("sub",), _sub_zero, doc="x - 0.0 -> x; x - (-0.0) -> x under fast_math"),
    Rule("sub_self", ("sub",), _sub_self, fast_math=True, doc="x - x -> 0 (wrong for inf, nan)"),
    Rule("div_by_one", ("div",), _div_by_one, doc="x / 1 -> x"),
    Rule("pow_small", ("pow",), _pow_small, doc="x ** 1 -> x, x ** 2 -> x * x"),
    Rule("neg_neg", ("neg",), _neg_neg, doc="-(-x) -> x"),
    Rule("transpose_transpose", ("transpose",), _transpose_transpose, doc="a transpose undone"),
    Rule("transpose_of_matmul", ("transpose",), _transpose_of_matmul,
         doc="(a @ b)^T -> b^T @ a^T over the last two axes (a weight's gradient in its own layout)"),
    Rule("permute_permute", ("permute",), _permute_permute, doc="permutes composed; the identity dropped"),
    Rule("view_of_same_type", ("reshape", "expand", "squeeze", "unsqueeze"), _view_of_same_type,
         doc="a reshape/expand/squeeze/unsqueeze that changes nothing"),
    Rule("reshape_reshape", ("reshape",), _reshape_reshape, doc="reshape of a reshape: one reshape"),
    Rule("sum_of_size_one_axes", ("sum",), _sum_of_size_one_axes, doc="a sum over size-1 axes is a reshape"),
    Rule("sum_of_expand", ("sum",), _sum_of_expand, fast_math=True, doc="sum(expand(y)) -> y * n"),
    Rule("drop_broadcasts", None, _drop_broadcasts, matches=_broadcasting_pointwise,
         doc="an operand expand(y) that broadcasting reproduces: read y"),
]
RULE_TABLE = rule_table(RULES)


def algebraic(graph: Graph, fast_math: bool = False, **_) -> dict:
    return apply_rules(graph, RULES, fast_math)
