"""Dead code elimination, common subexpression elimination and constant folding."""
from __future__ import annotations

import numpy as np

from gmops import REGISTRY

from ..ir import Graph, Value
from .rewrite import Namer, make_node, replace_uses


def dce(graph: Graph, **_) -> dict:
    """Drop nodes whose results nobody reads (and the results of loops nobody reads)."""
    if any(node.op == "scan" for node in graph.nodes):
        from ..control_flow import prune_loop_results  # noqa: PLC0415

        prune_loop_results(graph)
    live = {v for v in graph.outputs if isinstance(v, Value)}
    kept = []
    for node in reversed(graph.nodes):
        if any(o in live for o in node.outputs):
            kept.append(node)
            live.update(node.input_values())
    removed = len(graph.nodes) - len(kept)
    kept.reverse()
    graph.nodes = kept
    return {"removed": removed}


def _operand_key(v):
    return ("v", id(v)) if isinstance(v, Value) else ("lit", type(v).__name__, repr(v))


def _freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(x) for x in value)
    return (type(value).__name__, repr(value)) if isinstance(value, float) else value


def _loop_key(node) -> tuple:
    """A scan's operands and attributes, its saved carries and residuals aside (the body without
    the residual results its VJP's forward adds: static.control_flow.residual_body)."""
    attrs = dict(node.attrs)
    if attrs.get("residuals"):
        from ..control_flow import strip_residuals  # noqa: PLC0415

        attrs["body"] = strip_residuals(attrs["body"], attrs["residuals"])
    return (tuple(_operand_key(v) for v in node.inputs),
            tuple(sorted((k, _freeze(v)) for k, v in attrs.items() if k not in ("save", "residuals"))))


def merge_saved_loops(graph: Graph) -> int:
    """A scan that also saves its carries (the forward its VJP reruns, eager.ops.control_flow)
    computes everything the same scan without them does: the saved one takes the unsaved
    one's place (their operands are the same, so defined before it) and the unsaved one's
    uses read its leading results. Reverse mode then runs the loop forward once."""
    unsaved: dict = {}
    for i, node in enumerate(graph.nodes):
        if node.op == "scan" and not node.attrs.get("save"):
            unsaved.setdefault(_loop_key(node), i)
    if not unsaved:
        return 0
    moves: dict = {}
    for node in graph.nodes:
        if node.op == "scan" and node.attrs.get("save"):
            found = unsaved.get(_loop_key(node))
            if found is not None and found not in moves:
                moves[found] = node
    if not moves:
        return 0
    moved = {id(n) for n in moves.values()}
    mapping: dict = {}
    nodes = []
    for i, node in enumerate(graph.nodes):
        if i in moves:
            for old, new in zip(node.outputs, moves[i].outputs):
                mapping[old] = new
            nodes.append(moves[i])
        elif id(node) not in moved:
            nodes.append(node)
    graph.nodes = nodes
    replace_uses(graph, mapping)
    return len(moves)


def cse(graph: Graph, **_) -> dict:
    """One node per distinct (op, operands, attributes); commutative operands sorted."""
    seen: dict = {}
    mapping: dict = {}
    merged_loops = merge_saved_loops(graph)
    kept = []
    for node in graph.nodes:
        if mapping:
            node.inputs = [mapping.get(v, v) if isinstance(v, Value) else v for v in node.inputs]
        if node.body is not None or not REGISTRY[node.op].pure:
            kept.append(node)
            continue
        operands = [_operand_key(v) for v in node.inputs]
        if REGISTRY[node.op].commutative:
            operands.sort()
        key = (node.op, tuple(operands), tuple(sorted((k, _freeze(v)) for k, v in node.attrs.items())))
        prior = seen.get(key)
        if prior is not None and all(a.type == b.type for a, b in zip(prior.outputs, node.outputs)):
            for old, new in zip(node.outputs, prior.outputs):
                mapping[old] = new
            continue
        seen[key] = node
        kept.append(node)
    replace_uses(graph, mapping)
    removed = len(graph.nodes) - len(kept) + merged_loops
    graph.nodes = kept
    return {"merged": removed}


def splat_value(v):
    """The constant every element of v has, if v is a `full` splat; else None."""
    if isinstance(v, Value) and v.producer is not None and v.producer.op == "full":
        return v.producer.attrs["value"]
    return None


def _as_scalar(x):
    return x if not isinstance(x, Value) else splat_value(x)


def _foldable(op) -> bool:
    """Ops whose result on splats is a splat: pure pointwise ops, and views that only
    rearrange elements (every element of the result is the splat's value)."""
    return op.pure and not op.multi_output and (op.pointwise or (op.kind == "shape" and op.is_view))


def fold(graph: Graph, **_) -> dict:
    """Constant folding on splat constants: full_like(x) no longer reads x; elementwise ops
    of splats and literals, and shape ops of splats, become splats. Only splats are ever
    produced (O(1) storage), so no size cap is needed to bound constant memory."""
    namer = Namer(graph)
    mapping: dict = {}
    folded = 0
    new_nodes = []
    for node in graph.nodes:
        node.inputs = [mapping.get(v, v) if isinstance(v, Value) else v for v in node.inputs]
        out = node.outputs[0] if len(node.outputs) == 1 else None
        replacement = None
        if node.op == "full_like" and out is not None:
            replacement = make_node("full", [], {"shape": tuple(out.type.shape), "value": node.attrs["value"],
                                                 "dtype": out.type.dtype}, namer, node.loc)
        elif out is not None and node.body is None and node.op != "full":
            values = [_as_scalar(v) for v in node.inputs]
            has_tensor = any(isinstance(v, Value) for v in node.inputs)
            # a symbolic size as an operand (a mean's count, static.dynamic_shapes) is known
            # only at run time: folding it would fix the traced call's size
            symbolic = any(type(v) is not int and isinstance(v, int) and not isinstance(v, bool) for v in values)
            if has_tensor and not symbolic and all(x is not None for x in values):
                if _foldable(REGISTRY[node.op]):
                    value = _evaluate(node, values)
                    if value is not None:
                        replacement = make_node("full", [], {"shape": tuple(out.type.shape), "value": value,
                                                             "dtype": out.type.dtype}, namer, node.loc)
        if replacement is not None:
            mapping[out] = replacement.outputs[0]
            new_nodes.append(replacement)
            folded += 1
        else:
            new_nodes.append(node)
    graph.nodes = new_nodes
    replace_uses(graph, mapping)
    return {"folded": folded}


def _evaluate(node, scalars):
    """The op applied to one element of each splat, in the result dtype."""
    op = REGISTRY[node.op]
    out_type = node.outputs[0].type
    arrays = []
    for v, s in zip(node.inputs, scalars):
        if isinstance(v, Value):
            arrays.append(np.full((1,) * len(v.type.shape), s, dtype=v.type.dtype.np))
        else:
            arrays.append(s)
    attrs = dict(node.attrs)
    if op.kind == "shape":  # a view of a splat: the same value at every position
        return scalars[0] if isinstance(node.inputs[0], Value) else None
    try:
        with np.errstate(all="ignore"):
            result = np.asarray(op.forward(np, *arrays, **attrs), dtype=out_type.dtype.np)
    except Exception:  # an op that cannot run on size-1 stand-ins: leave it computed
        return None
    if result.size != 1:
        return None
    value = result.reshape(-1)[0].item()
    return value
