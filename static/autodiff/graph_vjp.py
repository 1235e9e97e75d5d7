"""Reverse-mode autodiff on a trace: the VJP rules of the ops, the same functions eager's
engine calls, run on Tracers, so the backward is recorded into the same graph as the
forward (a joint graph). Gradients flow only where requested inputs reach."""
from __future__ import annotations

from gmops import REGISTRY, fit_grad
from gmops.special import FULL_LIKE

from ..ir import Value
from ..passes.stability import stabilize_values
from ..tracing.custom_function import customs_of
from ..tracing.state import TraceState
from ..tracing.tracer import Tracer


class TraceCtx:
    """The ctx a VJP rule reads (see eager.ops._registry), over graph values."""

    def __init__(self, state: TraceState, node, needs: list) -> None:
        self._state, self._node, self._needs = state, node, needs
        self.attrs = node.attrs

    @property
    def n_inputs(self) -> int:
        return len(self._node.inputs)

    def needs(self, i: int) -> bool:
        return self._needs[i]

    def input(self, i: int):
        v = self._node.inputs[i]
        return Tracer(self._state, v) if isinstance(v, Value) else v

    @property
    def out(self):
        return Tracer(self._state, self._node.outputs[0])

    def in_shape(self, i: int) -> tuple:
        return tuple(self._node.inputs[i].type.shape)

    def in_dtype(self, i: int):
        return self._node.inputs[i].type.dtype

    @property
    def out_shape(self) -> tuple:
        return tuple(self._node.outputs[0].type.shape)


def _differentiable(v) -> bool:
    return isinstance(v, Value) and v.type.dtype.is_floating_point


def _stable_forms(state: TraceState, outputs: list) -> list:
    """Rewrite unstable forms (log(softmax x), log(sigmoid x), ...) before differentiating,
    so the backward is derived from the stable form too (see static.passes.stability)."""
    return stabilize_values(state.graph, outputs)


def reached(state: TraceState, wrt: list, nodes: list | None = None) -> set:
    """The Values that depend differentiably on `wrt`: through ops with a VJP rule, recorded
    with grad mode on (a no_grad() region of the traced function cuts the path, as in eager)."""
    reaches = {v for v in wrt if _differentiable(v)}
    customs = customs_of(state)  # the nodes that stand for custom autograd.Functions
    for node in state.graph.nodes if nodes is None else nodes:
        if node in state.no_grad_nodes:
            continue
        if customs and node in customs:
            customs[node].reach(node, reaches)
            continue
        op = REGISTRY.get(node.op)
        if op is None or op.vjp is None:
            continue
        if any(isinstance(v, Value) and v in reaches for v in node.inputs):
            reaches.update(o for o in node.outputs if _differentiable(o))
    return reaches


def _hooked(hooks: dict, v, g):
    """The gradient of `v` after the hooks registered on it (each may return a replacement)."""
    for hook in list(hooks.get(v, {}).values()):
        out = hook(g)
        if out is not None:
            g = out
    return g


def vjp(state: TraceState, outputs: list, seeds: list, wrt: list, nodes: list | None = None) -> list:
    """Cotangents of `wrt` (Values) given `seeds` (Tracers) for `outputs` (Values).
    An input that no output depends on gets zeros. `nodes`, when given, are the only nodes
    walked (forward mode differentiates one node's VJP this way, static.autodiff.forward)."""
    if nodes is None:
        outputs = _stable_forms(state, outputs)
    # the backward appends to the graph; walk the forward only (or just the nodes given: a
    # rewrite to stable forms there would add nodes outside them)
    nodes = list(state.graph.nodes) if nodes is None else list(nodes)
    reaches = reached(state, wrt, nodes)
    cot: dict = {}
    for out, seed in zip(outputs, seeds):
        if out in reaches:
            cot[out] = seed if out not in cot else cot[out] + seed
    customs = customs_of(state)
    hooks = state.__dict__.get("value_hooks")
    for node in reversed(nodes):
        if customs and node in customs:  # a custom Function: its own backward is the VJP
            customs[node].backward(state, node, cot, reaches)
            continue
        grads_out = [cot.get(o) for o in node.outputs]
        if all(g is None for g in grads_out):
            continue
        if hooks:  # Tensor.register_hook on a traced value: its gradient, complete, goes through the hooks
            grads_out = [_hooked(hooks, o, g) if g is not None else g for o, g in zip(node.outputs, grads_out)]
            for o, g in zip(node.outputs, grads_out):
                if g is not None:
                    cot[o] = g
        op = REGISTRY[node.op]
        needs = [isinstance(v, Value) and v in reaches for v in node.inputs]
        if op.vjp is None or not any(needs):
            continue
        ctx = TraceCtx(state, node, needs)
        # the backward's nodes cite the user's line of the forward op they differentiate (not
        # the line that happened to start the trace), so the generated code is the same
        # whoever asks for it
        outer, state.location = state.location, node.loc
        try:
            raw = op.vjp(ctx, tuple(grads_out) if op.multi_output else grads_out[0])
            for v, g, need in zip(node.inputs, raw, needs):
                if g is None or not need:
                    continue
                g = fit_grad(g, tuple(v.type.shape), v.type.dtype)
                cot[v] = g if v not in cot else cot[v] + g
        finally:
            state.location = outer
    result = []
    for v in wrt:
        g = cot.get(v)
        if g is not None and hooks:
            g = _hooked(hooks, v, g)
        if g is None:
            g = FULL_LIKE(Tracer(state, v), value=0.0 if v.type.dtype.is_floating_point else 0)
        result.append(g)
    return result
