"""Custom `eager.autograd.Function`s inside traced code.

`Function.apply` on traced values runs the Function's `forward` on Tracers with grad mode
off (its ops are recorded, but no gradient flows through them, as in eager, where the
forward runs under no_grad). Each differentiable output then passes through an identity
node (`clone`) that stands for the Function in the graph: autodiff (static.autodiff) sees
those nodes as one op whose VJP is the Function's own `backward`, run on Tracers with a
ctx that holds what `forward` saved. So the Function differentiates like any op, inside
`static.grad`, a compiled call's backward, or twice (the backward's ops are recorded and
differentiated in turn, as eager does under create_graph=True)."""
from __future__ import annotations

from typing import Any

from eager import _functional as F
from eager._grad_mode import STATE, no_grad
from eager._tensor import Tensor
from eager.autograd import function as _function
from gmops import fit_grad
from gmops.special import FULL_LIKE

from ..ir import Node, Value
from .state import TraceState, current_state
from .tracer import Tracer


class TracedCtx:
    """The `ctx` a Function's forward and backward see during tracing."""

    def __init__(self, fn_cls, inputs: tuple) -> None:
        self._cls = fn_cls
        self.needs_input_grad = tuple(
            (isinstance(i, Tracer) and i.is_floating_point())
            or (isinstance(i, Tensor) and bool(i._requires_grad)) for i in inputs)
        self.saved: tuple[Any, ...] = ()  # what save_for_backward was given
        self.non_differentiable: set = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self.saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        return tuple(self.saved)

    def mark_non_differentiable(self, *tensors) -> None:
        self.non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        """Accepted for compatibility (in-place updates are functionalized by the tracer)."""

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def name(self) -> str:
        return f"{self._cls.__name__}Backward"


class CustomVJP:
    """One application of a Function in the graph: its inputs, the identity nodes that stand
    for its outputs (None where an output is not differentiable) and its ctx."""

    def __init__(self, fn_cls, ctx: TracedCtx, inputs: list, nodes: list, out_values: list) -> None:
        self.fn_cls, self.ctx = fn_cls, ctx
        self.inputs = inputs  # per forward argument: its Value, or None for a non-tensor
        self.nodes = nodes  # per forward output: its identity node, or None
        self.out_values = out_values  # per forward output: the Value the caller got (None: not a tensor)
        self.last = next(n for n in reversed(nodes) if n is not None)

    def reach(self, node, reaches: set) -> None:
        """static.autodiff.reached: the outputs depend on the inputs through the Function."""
        if any(isinstance(v, Value) and v in reaches for v in self.inputs):
            reaches.update(o for o in node.outputs if o.type.dtype.is_floating_point)

    def backward(self, state: TraceState, node, cot: dict, reaches: set) -> None:
        """static.autodiff.vjp: at the last identity node (all outputs' cotangents are then
        complete, as every use of an output comes after it), run the Function's backward."""
        if node is not self.last:
            return
        grads = []
        any_grad = False
        for n, v in zip(self.nodes, self.out_values):
            g = cot.get(n.outputs[0]) if n is not None else None
            any_grad |= g is not None
            if g is None and self.ctx.materialize_grads and v is not None:
                g = FULL_LIKE(Tracer(state, v), value=0.0 if v.type.dtype.is_floating_point else 0)
            grads.append(g)
        if not any_grad:
            return
        result = self.fn_cls.backward(self.ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        expected = len(self.inputs)
        if len(result) > expected and all(r is None for r in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(f"function {self.ctx.name()} returned an incorrect number of gradients (expected "
                               f"{expected}, got {len(result)})")
        for i, (v, g) in enumerate(zip(self.inputs, result)):
            if g is None or not isinstance(v, Value) or v not in reaches:
                if g is not None and v is None:
                    raise RuntimeError(f"function {self.ctx.name()} returned a gradient different than None at "
                                       f"position {i + 1}, but the corresponding forward input was not a Variable")
                continue
            if not isinstance(g, Tracer):
                g = Tracer(state, state.capture(g))
            if tuple(g.shape) != tuple(v.type.shape):
                try:
                    g = fit_grad(g, tuple(v.type.shape), v.type.dtype)
                except Exception:  # noqa: BLE001
                    g = None
                if g is None or tuple(g.shape) != tuple(v.type.shape):
                    raise RuntimeError(f"Function {self.ctx.name()} returned an invalid gradient at index {i} - "
                                       f"got {list(result[i].shape)} but expected shape compatible with "
                                       f"{list(v.type.shape)}")
            elif g.dtype is not v.type.dtype:
                g = F.to_dtype(g, v.type.dtype)
            cot[v] = g if v not in cot else cot[v] + g


def customs_of(state: TraceState) -> dict:
    """node -> CustomVJP for the identity nodes that stand for Functions (static.autodiff)."""
    return state.__dict__.get("custom_functions") or {}


def traced_apply(fn_cls, args: tuple, kwargs: dict):
    """eager's Function.apply while a function is traced (NotImplemented otherwise)."""
    state = next((a._state for a in args if isinstance(a, Tracer)), None) or current_state()
    if state is None or state.finished:
        return NotImplemented
    inputs = tuple(Tracer(state, state.capture(a)) if isinstance(a, Tensor) else a for a in args)
    ctx = TracedCtx(fn_cls, args)
    with no_grad():
        raw = fn_cls.forward(ctx, *inputs, **kwargs)
    single = not isinstance(raw, tuple)
    outputs = (raw,) if single else raw
    wrapped: list[Any] = []  # what the caller gets, one per output
    nodes: list[Node | None] = []  # the clone node of each differentiable output
    values: list[Value | None] = []  # each traced output's Value
    for o in outputs:
        if isinstance(o, Tensor):
            o = Tracer(state, state.capture(o))
        if not isinstance(o, Tracer):
            wrapped.append(o)
            nodes.append(None)
            values.append(None)
            continue
        if id(o) in ctx.non_differentiable or not o.is_floating_point():
            wrapped.append(o)
            nodes.append(None)
            values.append(o._value)
            continue
        out = F.clone(o)
        wrapped.append(out)
        nodes.append(out._value.producer)
        values.append(o._value)
    if STATE.enabled and any(n is not None for n in nodes):  # under no_grad eager records no node either
        # a saved output is the tensor the caller got, so the backward built from it can itself
        # be differentiated (as eager's Function does)
        ctx.saved = tuple(next((w for o, w in zip(outputs, wrapped) if s is o), s) for s in ctx.saved)
        record = CustomVJP(fn_cls, ctx, [a._value if isinstance(a, Tracer) else None for a in inputs], nodes,
                           values)
        customs = state.__dict__.setdefault("custom_functions", {})
        for n in nodes:
            if n is not None:
                customs[n] = record
    return wrapped[0] if single else tuple(wrapped)


_function.TRACE_HOOK.fn = traced_apply
