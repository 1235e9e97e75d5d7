"""Forward mode on a trace: tangents pushed through the recorded nodes in program order.

Why a second mode: static.jvp's default construction is the VJP of the VJP (the pullback is
linear in its cotangent, so differentiating it once more, seeded with the tangents, gives
J t). That needs every op on the path to have a reverse-mode derivative, and a while_loop has
none (its trip count is data, so there is no fixed-length history to run backwards; JAX's
has none either). JAX's while_loop has a forward-mode rule instead: the tangent is carried
along as extra carries, through a loop whose body is the body's JVP. This module walks the
trace's nodes forwards and gives each node that some tangent reaches its tangent outputs:

- an op that declares a forward rule on its record (`OpDef.extra["jvp"]`: the control-flow
  ops `while_loop`, `scan` and `cond`, whose rules build a loop or choice over the bodies'
  JVPs, `static.control_flow.jvp_bodies`) runs it;
- every other op gets its JVP from its own VJP by the same double-VJP construction, applied
  to that one node: a zero placeholder cotangent u for its outputs, its VJP rule (J^T u,
  linear in u), then the reverse pass over just the nodes that VJP recorded, seeded with
  the input tangents, gives J t.

So the tangents of a while_loop, or of a scan whose body holds one, are defined, and the
other ops keep the derivatives their VJPs give. `jvp` is used by static.jvp (and so jacfwd)
when the path from the primals to the outputs holds a control-flow op; other functions keep
the whole-function double VJP, which is what the passes are tuned for.
"""
from __future__ import annotations

from typing import Any

from gmops import REGISTRY, fit_grad
from gmops.special import FULL_LIKE

from ..errors import TraceError
from ..ir import Value
from ..passes.stability import stabilize_values
from ..tracing.custom_function import customs_of
from ..tracing.state import TraceState
from ..tracing.tracer import Tracer
from .graph_vjp import TraceCtx
from .graph_vjp import vjp as reverse


def _float(v: Any) -> bool:
    return isinstance(v, Value) and v.type.dtype.is_floating_point


def forward_rule(op_name: str) -> Any:
    """The forward-mode rule an op declares on its record (None when it has none)."""
    op = REGISTRY.get(op_name)
    return None if op is None else op.extra.get("jvp")


def needs_forward(state: TraceState, primals: list) -> bool:
    """Whether a node with a forward rule (a loop or a choice) depends on `primals`: then
    static.jvp pushes tangents forwards (`jvp`) rather than through the double VJP."""
    reach = {v for v in primals if _float(v)}
    for node in state.graph.nodes:
        if node in state.no_grad_nodes:
            continue
        if any(isinstance(v, Value) and v in reach for v in node.inputs):
            if forward_rule(node.op) is not None:
                return True
            reach.update(o for o in node.outputs if _float(o))
    return False


def _zeros(state: TraceState, v: Value) -> Any:
    return FULL_LIKE(Tracer(state, v), value=0.0 if v.type.dtype.is_floating_point else 0)


def _by_double_vjp(state: TraceState, node: Any, tangents: list) -> list:
    """One node's output tangents from its VJP rule: J t = d/du <J^T u, t> at u = 0."""
    op = REGISTRY[node.op]
    if op.vjp is None:  # (a node without a derivative: no tangent flows through it, as no gradient does)
        return [None] * len(node.outputs)
    if not any(_float(o) for o in node.outputs):  # (a comparison, an index: nothing to carry a tangent)
        return [None] * len(node.outputs)
    placeholders = [_zeros(state, o) if _float(o) else None for o in node.outputs]
    needs = [t is not None for t in tangents]
    ctx = TraceCtx(state, node, needs)
    start = len(state.graph.nodes)
    raw = op.vjp(ctx, tuple(placeholders) if op.multi_output else placeholders[0])
    pulled, seeds = [], []
    for v, g, t in zip(node.inputs, raw, tangents):
        if g is None or t is None:
            continue
        pulled.append(fit_grad(g, tuple(v.type.shape), v.type.dtype)._value)
        seeds.append(t)
    if not pulled:
        return [None] * len(node.outputs)
    live = [p for p in placeholders if p is not None]
    recorded = list(state.graph.nodes[start:])
    pushed = reverse(state, pulled, seeds, [p._value for p in live], nodes=recorded)
    it = iter(pushed)
    return [next(it) if p is not None else None for p in placeholders]


def jvp(state: TraceState, outputs: list, primals: list, tangents: list, recomputed: dict | None = None) -> list:
    """Tangents of `outputs` (Values of `state`'s graph) given `tangents` (Tracers, or batched
    values under vmap) of `primals` (Values), pushed forwards through the nodes recorded so
    far. An output no tangent reaches gets zeros. `recomputed`, when given, collects the
    values a forward rule computed again beside their tangents (a loop's results, from the
    loop that carries the tangents: Value -> Tracer), so a caller returning them runs one
    loop, not two."""
    outputs = stabilize_values(state.graph, outputs)
    nodes = list(state.graph.nodes)  # the tangents' nodes are appended: walk the primal nodes only
    tan: dict = {}
    for p, t in zip(primals, tangents):
        if _float(p):
            tan[p] = t if p not in tan else tan[p] + t
    customs = customs_of(state)
    for node in nodes:
        if node in state.no_grad_nodes:
            continue
        t_in = [tan.get(v) if isinstance(v, Value) else None for v in node.inputs]
        if all(t is None for t in t_in):
            continue
        if customs and node in customs:
            raise TraceError(f"{node.loc}: static.jvp through a custom autograd.Function in a function that also "
                             "holds a while_loop, scan or cond is not supported; differentiate them separately")
        rule = forward_rule(node.op)
        # the tangent's nodes cite the user's line of the op they differentiate
        outer, state.location = state.location, node.loc
        try:
            if rule is not None:
                ctx = TraceCtx(state, node, [t is not None for t in t_in])
                t_out = rule(ctx, t_in)
                if recomputed is not None:
                    recomputed.update(zip(node.outputs, getattr(ctx, "primals", ())))
            else:
                t_out = _by_double_vjp(state, node, t_in)
        finally:
            state.location = outer
        for o, t in zip(node.outputs, t_out):
            if t is not None and _float(o):
                tan[o] = fit_grad(t, tuple(o.type.shape), o.type.dtype)
    return [tan[o] if o in tan else _zeros(state, o) for o in outputs]
