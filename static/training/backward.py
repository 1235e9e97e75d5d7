"""`loss.backward()`, `autograd.grad` and `.grad` inside a traced function: the backward is
recorded into the same graph (static.autodiff) and each leaf's gradient accumulated into its
`.grad`, functionalized (a `.grad` that exists is a captured tensor updated in place and
written back after the call; one that is None becomes a new tensor the graph writes). A value
whose backward ran without retain_graph comes back from the compiled call with eager's freed
history (`FreedBackward`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from eager import _functional as F
from eager import autograd as _autograd
from eager._device import xp_of_array
from eager._grad_mode import enable_grad, no_grad
from eager._tensor import Tensor
from eager.autograd.graph import _FREED_MSG, HookMixin
from gmops import REGISTRY
from gmops.special import FULL_LIKE

from ..autodiff import vjp
from ..errors import TraceError
from ..ir import Value
from ..tracing.custom_function import customs_of
from ..tracing.tracer import BACKWARD_HOOK, Tracer, TraceState, current_state, inplace_on_captured, user_location
from .bindings import _NO_GRAD_FN, _Training, _training


# -- what a compiled step returns ------------------------------------------------------------------
class FreedBackward(HookMixin):
    """The grad_fn of a value a compiled function returns after a backward() inside it went
    through that value without retain_graph (the loss of a training step). Eager's loss keeps
    its grad_fn, with its graph freed: it requires grad, is no leaf, and a second backward
    raises eager's error. The compiled loss has the same status."""

    __slots__ = ("_hooks", "next_functions")
    _trace = None
    n_outputs = 1

    def __init__(self) -> None:
        self._hooks = None
        self.next_functions: tuple = ()

    def name(self) -> str:
        return "CompiledFunctionBackward"

    def __repr__(self) -> str:
        return f"<CompiledFunctionBackward object at {hex(id(self))}>"

    def apply(self, grads: list) -> list:
        raise RuntimeError(_FREED_MSG)

    def release(self) -> None:
        """Nothing is saved: the backward inside the compiled call already freed it."""


def with_freed_history(t):
    """`t` (a tensor made from a compiled call's output) with a FreedBackward grad_fn."""
    if isinstance(t, Tensor) and t.grad_fn is None:
        t._requires_grad = True
        t.grad_fn = FreedBackward()  # type: ignore[assignment]  # a node the engine runs like Node
        t._output_nr = 0
    return t


def freed_outputs(state: TraceState, outputs: list) -> list:
    """Positions of the outputs whose eager history goes through a graph a backward() inside
    the trace freed: the values it went through, and what grad mode computed from them
    afterwards by differentiable ops (`loss * 2`; not `loss.detach()`, not a comparison)."""
    freed = state.__dict__.get("freed_nodes")
    if not freed:
        return []
    tainted = {o for node in freed for o in node.outputs}
    no_grad = state.no_grad_nodes
    for node in state.graph.nodes:
        if node in freed or node in no_grad or node.op == "stop_gradient":
            continue
        op = REGISTRY.get(node.op)
        if op is not None and op.vjp is not None and any(v in tainted for v in node.inputs if isinstance(v, Value)):
            tainted.update(node.outputs)
    return [k for k, v in enumerate(outputs) if isinstance(v, Value) and v in tainted]


# -- loss.backward() ------------------------------------------------------------------------------
def traced_backward(self: Tracer, gradient=None, retain_graph=None, create_graph: bool = False,
                    inputs=None) -> None:
    """Tensor.backward on a traced value (see the module docstring)."""
    state = self._state
    extra = _training(state)
    if gradient is None:
        if self.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if not self.is_floating_point():
            raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {self.dtype}")
        seed = FULL_LIKE(self, value=1.0)
    else:
        seed = gradient if isinstance(gradient, Tracer) else Tracer(state, state.capture(gradient))
        if tuple(seed.shape) != tuple(self.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(seed.shape)} and output[0] "
                               f"has a shape of {list(self.shape)}.")
    leaves: list[Any]  # captured tensors, then the input Values of arguments
    if inputs is not None:
        given = [inputs] if isinstance(inputs, (Tensor, Tracer)) else list(inputs)
        leaves = [t for t in given if isinstance(t, Tensor)]
    else:
        leaves = [obj for obj, _ in state.captured.values()
                  if isinstance(obj, Tensor) and obj._requires_grad and obj.grad_fn is None]
    values = [state.latest[id(t)] for t in leaves if id(t) in state.latest]
    leaves = [t for t in leaves if id(t) in state.latest]
    needed, walked = _ancestors(state, self._value)
    freed = state.__dict__.setdefault("freed_nodes", set())
    if freed & walked:
        raise RuntimeError(_FREED_MSG)
    if inputs is None:  # arguments of the compiled function that are leaves requiring grad
        for v in state.graph.inputs:
            if v in state.grad_leaves:
                leaves.append(v)
                values.append(v)
    else:
        for t in given:
            if isinstance(t, Tracer) and t._value in state.grad_leaves:
                leaves.append(t._value)
                values.append(t._value)
    pairs = [(t, v) for t, v in zip(leaves, values) if v in needed]
    if not pairs:
        raise RuntimeError(_NO_GRAD_FN)
    with enable_grad() if create_graph else no_grad():
        grads = vjp(state, [self._value], [seed], [v for _, v in pairs])
    with enable_grad() if create_graph else no_grad():
        for (p, _), g in zip(pairs, grads):
            if isinstance(p, Tensor):
                _accumulate(extra, p, g)
            else:
                _accumulate_argument(extra, p, g)
    if not (create_graph if retain_graph is None else retain_graph):
        # eager frees this graph: a second backward through it is an error, and the values it
        # computed (the loss a step returns) need no compiled backward of their own
        freed.update(walked)
        state.no_grad_nodes.update(walked)


def _ancestors(state: TraceState, out) -> tuple[set, set]:
    """The Values `out` depends on differentiably, and the nodes between (what eager's graph
    behind it would hold)."""
    need, walked = {out}, set()
    customs = customs_of(state)
    freed = state.__dict__.get("freed_nodes", ())
    for node in reversed(state.graph.nodes):
        if (node in state.no_grad_nodes and node not in freed) or not any(o in need for o in node.outputs):
            continue
        walked.add(node)
        if customs and node in customs:
            need.update(v for v in customs[node].inputs if v is not None)
            continue
        op = REGISTRY.get(node.op)
        if op is None or op.vjp is None:
            continue
        need.update(v for v in node.inputs if not isinstance(v, (bool, int, float)))
    return need, walked


def _accumulate(extra: _Training, p: Tensor, g: Tracer) -> None:
    """p.grad += g, or p.grad = g when it is None, as eager's AccumulateGrad does."""
    hooks = getattr(getattr(p, "_acc", None), "_hooks", None)
    if hooks is not None and (hooks.tensor or hooks.retain or hooks.pre or hooks.post):
        raise TraceError(f"{user_location()}: backward() reaches a leaf of shape {tuple(p.shape)} that has hooks "
                         f"(register_hook, register_post_accumulate_grad_hook): a compiled step would not run "
                         f"them; remove the hooks or run this step eagerly")
    extra.seen(p)
    extra.guard_read(p)  # None or a tensor, as the call found it: the other case is another graph
    _own_grad(extra.state, p)
    current = p._grad
    if g.dtype is not p.dtype:
        g = F.to_dtype(g, p.dtype)
    if current is None:
        holder = Tensor._make(p._data * 0)  # stands for the new tensor each call makes (CallPrep.fresh_grads)
        p._grad = holder
        extra.fresh_holders[id(holder)] = p
        inplace_on_captured(holder, g)
        return
    inplace_on_captured(current, F.add(current, g))


def _accumulate_argument(extra: _Training, v, g: Tracer) -> None:
    """x.grad += g for an argument x of the compiled function (a leaf requiring grad): the
    trace accumulates into a stand-in tensor, and each call points it at that call's
    argument's .grad (made when None) before the graph runs, which writes it back
    (CallPrep); eager's AccumulateGrad, functionalized."""
    state = extra.state
    buffer = extra.arg_grads.get(v)
    if buffer is None:
        buffer = extra.arg_grads[v] = Tensor._make(np.zeros(tuple(v.type.shape), dtype=v.type.dtype.np))
    if g.dtype is not v.type.dtype:
        g = F.to_dtype(g, v.type.dtype)
    inplace_on_captured(buffer, F.add(Tracer(state, state.capture(buffer)), g))


def _own_grad(state: TraceState, p: Tensor) -> None:
    """A `.grad` set inside the function to a tensor made there (`p.grad = zeros_like(p)`) is a
    constant of the graph, whose updates stay inside it: before gradients accumulate into it,
    it is replaced by a tensor of the caller's holding its current value, which the graph
    writes and each call binds as the .grad."""
    g = p._grad
    if g is None or not state.is_created(g):
        return
    holder = Tensor._make(g._data.copy())
    inplace_on_captured(holder, Tracer(state, state.capture(g)))
    p._grad = holder
    _training(state).fresh_holders[id(holder)] = p


def traced_grad_assign(p: Tensor, value: Tracer) -> None:
    """`p.grad = value` with a traced value (`p.grad = p.grad * 0.5`): p's .grad becomes a
    tensor of the caller's that the graph writes, bound before each call (final_bindings)."""
    if tuple(value.shape) != tuple(p.shape):
        raise RuntimeError(f"assigned grad has data of a different size: {tuple(value.shape)} "
                           f"vs the tensor's {tuple(p.shape)}")
    if value.dtype is not p.dtype:
        raise RuntimeError(f"assigned grad has data of a different type: {value.dtype} vs the tensor's {p.dtype}")
    extra = _training(value._state)
    extra.seen(p)
    holder = Tensor._make(xp_of_array(p._data).zeros_like(p._data))
    inplace_on_captured(holder, value)
    p._grad = holder
    extra.fresh_holders[id(holder)] = p


def traced_read_grad(x: Tracer) -> Tracer:
    """`x.grad` inside the function, x an argument that is a leaf requiring grad: the value
    backward() accumulated into it (the call's .grad plus this call's gradients). Before a
    backward() reached it, its value is whatever the call finds (None or a tensor), which one
    graph cannot stand for: refused."""
    state = x._state
    extra = state.__dict__.get("training")
    buffer = extra.arg_grads.get(x._value) if extra is not None else None
    if buffer is None:
        raise TraceError(f"{user_location()}: reading the .grad of an argument of the compiled function before a "
                         "backward() inside it reached that argument; the value depends on the call (None or the "
                         "gradient accumulated so far). Read it after the call, or pass it in as an argument.")
    return Tracer(state, state.capture(buffer))


BACKWARD_HOOK.fn = traced_backward  # Tracer.backward calls it: the training state lives here
BACKWARD_HOOK.read_grad = traced_read_grad
BACKWARD_HOOK.assign_grad = traced_grad_assign


def traced_grad(outputs: list, inputs: list, grad_outputs: list, create_graph: bool, allow_unused: bool,
                materialize_grads: bool) -> tuple:
    """`eager.autograd.grad` of traced values: the gradients recorded into the graph (the VJP of
    the traced ops, as `backward()` records it), returned rather than accumulated. An input may
    be an argument, a value computed in the function, or a tensor it reads (a parameter)."""
    state = current_state()
    if state is None or state.finished:
        raise RuntimeError("autograd.grad of a traced value outside its trace")
    outs = [o if isinstance(o, Tracer) else Tracer(state, state.capture(o)) for o in outputs]
    if grad_outputs and any(g is not None for g in grad_outputs):
        seeds = [g if isinstance(g, Tracer) else Tracer(state, state.capture(g)) if g is not None
                 else FULL_LIKE(o, value=1.0) for o, g in zip(outs, grad_outputs)]
    else:
        for o in outs:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
        seeds = [FULL_LIKE(o, value=1.0) for o in outs]
    wrt = []
    for t in inputs:
        if isinstance(t, Tracer):
            wrt.append(t._value)
        elif isinstance(t, Tensor):
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            wrt.append(state.capture(t))
            wrt[-1] = state.latest.get(id(t), wrt[-1])
        else:
            raise TypeError(f"autograd.grad: inputs must be tensors, got {type(t).__name__}")
    needed: set = set()
    for o in outs:
        needed |= _ancestors(state, o._value)[0]
    for v in wrt:
        if v not in needed and not (allow_unused or materialize_grads):
            raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
    with enable_grad() if create_graph else no_grad():
        grads = vjp(state, [o._value for o in outs], seeds, wrt)
    return tuple(g if v in needed or materialize_grads else None for g, v in zip(grads, wrt))


_autograd.GRAD_HOOK.fn = traced_grad  # eager.autograd.grad on traced values calls it
