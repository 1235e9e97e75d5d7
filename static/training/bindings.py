"""PyTorch-style training steps inside compiled functions.

    @static.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

`loss.backward()` on a traced value records the backward into the same graph (static.autodiff)
and accumulates each leaf parameter's gradient into its `.grad`, functionalized: a `.grad`
that exists is a captured tensor updated in place (written back after the call); a `.grad`
that is None becomes a new tensor the graph writes. A leaf passed as an argument of the
compiled function gets its `.grad` the same way: each call points the graph at that call's
argument's `.grad` (made when None) and writes the accumulated gradient back. An optimizer's `step()` then reads those
gradients and updates parameters and its state in place, which the tracer already
functionalizes; state it creates on the first step becomes the caller's state, and Python
numbers it keeps per parameter (Adam's step count) and the learning rate of each group are
0-d inputs read at every call, so a steady loop neither retraces nor goes stale.

What a trace did to Python attributes (`p.grad = ...`, optimizer state entries) is redone
before every call of the compiled function (`CallPrep`), and a `.grad` the trace read before
changing it is guarded: setting it to None between calls retraces (at most one more
signature: the first step, where `.grad` is None, and the steady one)."""
from __future__ import annotations

import functools
import itertools
import numbers
import operator
from typing import Any

import numpy as np

from eager import _functional as F
from eager import autograd as _autograd
from eager._device import xp_of_array
from eager._grad_mode import enable_grad, no_grad
from eager._tensor import METADATA_VERSION, Tensor
from eager.autograd.graph import _FREED_MSG, HookMixin
from eager.nn.module import CLEAR_HOOK
from eager.ops import REGISTRY
from eager.ops.special import FULL_LIKE
from eager.optim import optimizer as _optimizer

from .autodiff import vjp
from .custom_function import customs_of
from .errors import TraceError
from .ir import Value
from .randomness import Replay, draws_of
from .tracer import BACKWARD_HOOK, Tracer, TraceState, current_state, inplace_on_captured, user_location
from .update_templates import update_parameters

_NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"


# -- what runs before each call -------------------------------------------------------------------
class CallPrep:
    """Done before every call of a compiled signature, in this order: the random draws of the
    trace (static.randomness), the Python numbers fed as 0-d inputs, the attribute bindings
    the trace made (`p.grad = t`, `opt.state[p][k] = t`).

    `fresh_grads` are the `.grad`s the call makes rather than finds (backward() reaching a
    parameter whose .grad is None, as after zero_grad(), or `p.grad = value`): eager makes a
    new tensor for each at every call, so a gradient kept from one step is not changed by the
    next. They are bound after the graph ran, each a new tensor over the graph's result
    (bridge.write_back, `rebind`), not a tensor of the trace's that every call overwrote;
    the call path that records gradients through the call still binds and writes that one."""

    __slots__ = ("replay", "feeds", "bindings", "rereads", "arg_grads", "fresh_grads")

    def __init__(self, replay: Replay | None, feeds: list, bindings: list, rereads: list,
                 arg_grads: list | None = None, fresh_grads: list | None = None) -> None:
        self.replay, self.feeds, self.bindings, self.rereads = replay, feeds, bindings, rereads
        self.arg_grads = arg_grads or []  # (captured entry, leaf index): the .grad of an argument
        # (update index, parameter, its .grad binder, the trace's holder tensor) per fresh grad
        self.fresh_grads = fresh_grads or []

    def rebinds(self) -> list:
        """(update index, parameter) of each fresh grad, for bridge.write_back."""
        return [(k, p) for k, p, _, _ in self.fresh_grads]

    def __call__(self, leaves=None, rebind: bool = False) -> None:
        """rebind: the call binds the fresh grads after the graph ran (write_back's `rebind`);
        otherwise the trace's holders are bound now and the write-back fills them."""
        if self.replay is not None:
            self.replay(leaves)  # (the call's sizes, for draws of a symbolic shape)
        # a captured entry that now holds another tensor moves eager's METADATA_VERSION: the
        # entry's next check reads every captured tensor again (static.entry's fast path)
        for entry, k in self.arg_grads:  # backward() reached an argument: its .grad is accumulated into
            g = _grad_buffer(leaves[k])
            if entry[0] is not g:
                entry[0] = g
                METADATA_VERSION[0] += 1
        for entry, p in self.rereads:  # the .grad the call finds (eager's backward makes a new one each time)
            g = p._grad
            if entry[0] is not g:
                entry[0] = g
                METADATA_VERSION[0] += 1
        for target, read in self.feeds:
            target._data = np.asarray(read(), dtype=target._data.dtype)
        for setter, value in self.bindings:
            setter(value)
        if not rebind:
            for _, _, setter, holder in self.fresh_grads:
                setter(holder)


def _grad_buffer(x: Tensor) -> Tensor:
    """The `.grad` of an argument the call's backward() accumulates into: made (zeros) when it
    is None, as the tensor eager's AccumulateGrad would store."""
    g = x._grad
    if g is None:
        g = x._grad = Tensor._make(xp_of_array(x._data).zeros_like(x._data))
    elif tuple(g.shape) != tuple(x.shape) or g.dtype is not x.dtype:
        raise RuntimeError(f"the .grad of an argument of the compiled function has shape {list(g.shape)} and dtype "
                           f"{g.dtype}, but the argument has shape {list(x.shape)} and dtype {x.dtype}; the "
                           "compiled backward() accumulates into a .grad shaped like its tensor. Set it to None "
                           "before the call.")
    return g


def call_prep(state: TraceState, captured: list, input_leaves: list | None = None,
              updates: list | None = None) -> CallPrep | None:
    """What a finished trace needs done before each call (None: nothing). `input_leaves` maps
    the explicit graph inputs to the call's argument leaves; `updates` are the trace's update
    outputs (("captured", index) for a captured tensor)."""
    draws = draws_of(state)
    replay = Replay(draws, captured) if draws else None
    extra = state.__dict__.get("training")
    feeds = extra.feeds if extra is not None else []
    bindings = extra.final_bindings() if extra is not None else []
    fresh_grads = []
    if extra is not None and extra.fresh_holders:
        update_of = {id(captured[ref][0]): k for k, (kind, ref) in enumerate(updates or []) if kind == "captured"}
        kept = []
        for setter, value in bindings:
            owner = extra.fresh_holders.get(id(value))
            if owner is not None and id(value) in update_of:
                fresh_grads.append((update_of[id(value)], owner, setter, value))
            else:
                kept.append((setter, value))
        bindings = kept
    rereads = []
    if extra is not None and extra.read_grads:
        by_id = {id(entry[0]): entry for entry in captured}
        rereads = [(by_id[id(g)], p) for p, g in extra.read_grads if id(g) in by_id]
    arg_grads = []
    if extra is not None and extra.arg_grads and input_leaves is not None:
        by_id = {id(entry[0]): entry for entry in captured}
        explicit = {v: i for i, v in enumerate(state.graph.inputs[:len(input_leaves)])}
        arg_grads = [(by_id[id(buffer)], input_leaves[explicit[v]]) for v, buffer in extra.arg_grads.items()]
    if replay is None and not feeds and not bindings and not rereads and not arg_grads and not fresh_grads:
        return None
    return CallPrep(replay, feeds, bindings, rereads, arg_grads, fresh_grads)


class _Training:
    """What one trace records about gradients and optimizer state."""

    def __init__(self, state: TraceState) -> None:
        self.state = state
        self.start: dict = {}  # id(param) -> (param, its .grad when first seen)
        self.guarded: set = set()
        self.cleared: set = set()  # ids of params whose .grad a zero_grad in the trace set to None
        self.feeds: list = []  # (placeholder tensor, read) for Python numbers made 0-d inputs
        self.grad_owners: dict = {}  # id(param) -> param whose .grad the trace may have set
        self.state_slots: dict = {}  # (id(state dict), key) -> (state dict, key)
        self.read_grads: list = []  # (param, .grad) for a .grad the call found: re-read at every call
        self.arg_grads: dict = {}  # argument's input Value -> the tensor standing for its .grad in the trace
        self.fresh_holders: dict = {}  # id(holder) -> its parameter: a .grad the call makes (CallPrep.fresh_grads)

    def seen(self, p: Tensor) -> None:
        """Note p.grad as the call finds it (before this trace's code changes it), guarded."""
        key = id(p)
        if key not in self.start:
            self.start[key] = (p, p._grad)
        self.grad_owners[key] = p

    def restore_grads(self) -> None:
        """After a failed trace: every .grad as the call found it (a trace rebinds them to
        tensors its graph would write, which no graph will now)."""
        for p, g in self.start.values():
            p._grad = g

    def guard_read(self, p: Tensor) -> None:
        """The trace read p.grad as it was when the call started: a call must find the same."""
        p0, g0 = self.start[id(p)]
        if p._grad is None and id(p) in self.cleared:
            return  # a zero_grad in this trace set it to None, whatever the call found
        if p._grad is g0 and id(p) not in self.guarded:
            self.guarded.add(id(p))
            self.state.guards.append(GradGuard(p, g0))
            if g0 is not None:
                self.read_grads.append((p, g0))

    def final_bindings(self) -> list:
        out = []
        for key, p in self.grad_owners.items():
            start = self.start.get(key, (p, None))[1]
            if p._grad is not start:
                out.append((_grad_setter(p), self._bound_grad(p._grad)))
        for d, k in self.state_slots.values():
            out.append((_item_setter(d, k), d[k]))
        return out


    def _bound_grad(self, g):
        """What a call binds as a `.grad` the trace set: a tensor made inside the function
        (`p.grad = eager.zeros_like(p)`) is a constant of the graph, so each call binds a fresh
        copy of it, as eager makes a new one each call. (A write into it after the binding is
        redirected into a caller's tensor by `_own_grad`; one that was not cannot be returned.)"""
        state = self.state
        if g is None or not state.is_created(g):
            return g
        if id(g) in state.captured and state.latest[id(g)] is not state.captured[id(g)][1]:
            raise TraceError(f"{user_location()}: a .grad set inside the function to a tensor made there is then "
                             "updated in place outside backward(); the compiled graph cannot hand that value back as "
                             "the .grad. Update it out of place (p.grad = p.grad * s) or set it before the call.")
        return _FreshCopy(g)


class _FreshCopy:
    """A binding value made anew at every call (a copy of a constant of the trace)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor


def _grad_setter(p: Tensor):
    def set_grad(value) -> None:
        p._grad = Tensor._make(value.tensor._data.copy()) if isinstance(value, _FreshCopy) else value
    return set_grad


def _item_setter(d: dict, k):
    return lambda value: d.__setitem__(k, value)


def _training(state: TraceState) -> _Training:
    extra = state.__dict__.get("training")
    if extra is None:
        extra = state.__dict__["training"] = _Training(state)
        state.on_failure.append(extra.restore_grads)
    return extra


def note_start(state: TraceState, fn, sources) -> None:
    """At the start of a trace: the .grad of each leaf tensor the function can reach (its
    sources, as (name, getter) pairs, and the parameters of the modules and optimizers that
    the functions it calls reach), before its code (a module's zero_grad) changes them."""
    tensors = []
    for _, read in sources:
        try:
            t = read()
        except Exception:  # noqa: BLE001  (a name that went away)
            continue
        tensors.append(t)
        state.shared.getters[id(t)] = read  # an alias read by a name is guarded (static.shared_memory)
    for owner in _reachable_owners(fn):
        if hasattr(owner, "param_groups"):
            tensors += [p for g in owner.param_groups for p in g["params"]]
        elif hasattr(owner, "parameters"):
            tensors += list(owner.parameters())
    extra = None
    for t in tensors:
        if isinstance(t, Tensor) and t._requires_grad and t.grad_fn is None:
            extra = extra or _training(state)
            extra.start.setdefault(id(t), (t, t._grad))


def _reachable_owners(fn, limit: int = 64) -> list:
    """Modules and optimizers named by the function or by the Python functions it names
    (globals and closures, followed a few levels): whose gradients a step may clear."""
    found: list[Any] = []  # the modules and optimizers
    seen: set[int] = set()  # ids of the objects looked at
    todo = [fn]
    while todo and len(seen) < limit:
        f = todo.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        if isinstance(f, type):
            continue  # a class (a module's or an optimizer's): not an instance with state
        if hasattr(f, "param_groups") or (hasattr(f, "named_parameters") and hasattr(f, "forward")):
            found.append(f)
            continue
        if hasattr(f, "optimizer") and hasattr(f, "last_epoch"):  # a learning-rate scheduler (static.check saves it)
            found.append(f)
            todo.append(f.optimizer)
            continue
        todo.append(getattr(f, "__self__", None))  # a bound method's instance: `static.compile(opt.step)`
        f = getattr(f, "__func__", f)
        todo.append(getattr(f, "__wrapped__", None))
        code = getattr(f, "__code__", None)
        if code is None:
            continue
        values = [getattr(f, "__globals__", {}).get(n) for n in code.co_names]
        values += list(getattr(f, "__defaults__", None) or ()) + list((getattr(f, "__kwdefaults__", None) or {}).values())
        for cell in getattr(f, "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:
                continue
        todo += [v for v in values if callable(v) or hasattr(v, "param_groups") or hasattr(v, "last_epoch")]
    return found


def first_step_pending(fn) -> bool:
    """Whether an optimizer the function reaches (static.compiled's first-call rule) has a
    parameter that requires grad and no state yet, whose first step makes that state from the
    gradient (`Optimizer._first_state_reads_gradient`: SGD's momentum buffer, an optimizer
    that does not define `_initial_state`): that first step is a graph of its own. State that
    does not depend on the gradient is made before the trace reads it (`_make_first_state`):
    no first step pending. Nothing is allocated to answer."""
    for owner in _reachable_owners(fn):
        state = getattr(owner, "state", None)
        if not hasattr(owner, "param_groups") or not isinstance(state, dict):
            continue
        reads_gradient = getattr(owner, "_first_state_reads_gradient", None)
        for group in owner.param_groups:
            if reads_gradient is not None and not reads_gradient(group):
                continue
            for p in group["params"]:
                if isinstance(p, Tensor) and p._requires_grad and not state.get(p):
                    return True
    return False


class GradGuard:
    """A `.grad` the trace read: the call must find None where the trace did, and a tensor
    where it did (which tensor does not matter: it is re-read at every call)."""

    def __init__(self, param: Tensor, grad) -> None:
        self.param, self.was_none = param, grad is None
        self.what = "the .grad of a parameter"

    def changed(self) -> str | None:
        if (self.param._grad is None) == self.was_none:
            return None
        if self.was_none:
            return "the .grad of a parameter was None when traced and is a tensor now"
        return "the .grad of a parameter was a tensor when traced and is None now"


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


# -- optimizer.step() -----------------------------------------------------------------------------
def traced_step(opt, closure=None):
    """Optimizer.step while a function is traced (NotImplemented otherwise)."""
    state = current_state()
    if state is None or state.finished:
        return NotImplemented
    extra = _training(state)
    loss = opt._closure_loss(closure)
    _make_first_state(state, opt)
    slots: list = []
    state_guards: list = []
    for group in opt.param_groups:
        for p in group["params"]:
            extra.seen(p)
            if p._grad is not None:
                extra.guard_read(p)
            state_guards.append(StateGuard(opt, p))
            s = opt.state.get(p)
            if s:
                for k, v in list(s.items()):
                    if isinstance(v, numbers.Number) and not isinstance(v, bool):
                        s[k] = _dynamic_number(extra, s, k, v)
    # state tensors as the step found them: an entry the step rebinds to a new value (Adamax's
    # exp_inf, Adam's max_exp_avg_sq) is written back into the same tensor, which the next
    # call's graph reads, instead of into a new one no later call would see
    found = {(id(s), k): v for s in opt.state.values() for k, v in s.items() if isinstance(v, Tensor)}
    groups_lr = _feed_hyperparameters(state, extra, opt)
    outer = state.location
    if outer is None and _library_update(opt):
        # every op of a library optimizer's update cites the user's `opt.step()` line: found
        # once here, not by a stack walk per recorded op (a third of tracing an AdamW step)
        state.location = user_location()
    try:
        with no_grad():
            if _library_update(opt):  # one parameter's update traced per kind, replayed for the rest
                update_parameters(state, opt)
            else:
                for group in opt.param_groups:
                    opt._update_group(group)
    finally:
        state.location = outer
        for group, k, v in groups_lr:
            group[k] = v
    for s in opt.state.values():
        for k, v in list(s.items()):
            if isinstance(v, Tracer):  # state made from traced values: a tensor of the caller's
                holder = found.get((id(s), k))
                if holder is None or tuple(holder.shape) != tuple(v.shape) or holder.dtype != v.dtype:
                    holder = Tensor._make(np.zeros(tuple(v.shape), dtype=v.dtype.np))
                inplace_on_captured(holder, v)
                s[k] = holder
                slots.append((s, k))
            elif isinstance(v, Tensor) and state.is_created(v):
                _adopt(state, v)
    for s, k in slots:
        extra.state_slots[(id(s), k)] = (s, k)
    for g in state_guards:
        g.seal()
    if state_guards:  # one guard per optimizer step: a call checks them in one loop
        state.guards.append(OptimizerStateGuard(opt, state_guards))
    return loss


def _make_first_state(state: TraceState, opt) -> None:
    """The state a parameter's first step creates, made now as the caller's tensors (as eager
    makes it at this point of its step: for the parameters that have a gradient) when it does
    not depend on the gradient (`Optimizer._initial_state`). The update then reads it as it
    reads a later step's state, so the first call traces the steady graph: one trace and one
    signature for a training loop, compiled from its first call. Undone if the trace fails."""
    for group in opt.param_groups:
        for p in group["params"]:
            if p._grad is None or opt.state.get(p):
                continue
            made = opt._initial_state(p, group)
            if made:  # None: the update makes it from the gradient, in the graph; {}: no state
                opt.state[p] = made = _optimizer.StateDict(made)  # (versioned: OptimizerStateGuard)
                state.on_failure.append(functools.partial(_forget_state, opt, p, made))


def _forget_state(opt, p: Tensor, made: dict) -> None:
    if opt.state.get(p) is made:
        del opt.state[p]


def _library_update(opt) -> bool:
    """Whether the optimizer's update is eager.optim's own code (no frame of the user's in it,
    so each op's user line is the one that called step())."""
    return all(cls is object or cls.__module__.startswith("eager.") for cls in type(opt).__mro__)


def _adopt(state: TraceState, t: Tensor) -> None:
    """A tensor made while tracing that outlives the trace (optimizer state): the caller's
    state, whose updates are written back, rather than a constant of the trace."""
    ids = state._created_ids
    state.is_created(t)
    ids.pop(id(t), None)
    state.created[:] = [c for c in state.created if c is not t]
    state._created_ids = {id(c): None for c in state.created}


def _dynamic_number(extra: _Training, s: dict, k, v) -> Tensor:
    """A Python number of optimizer state (Adam's step count): a 0-d tensor of the caller's,
    updated by the graph and kept as a tensor, as PyTorch keeps it."""
    t = Tensor._make(np.asarray(v, dtype=np.float64))
    extra.state_slots[(id(s), k)] = (s, k)
    return t


def _number_input(extra: _Training, d: dict, k, v) -> Tensor:
    """A hyper-parameter (a group's learning rate, which a scheduler changes): a 0-d input
    read from the group at every call."""
    t = Tensor._make(np.asarray(v, dtype=np.float64))
    extra.feeds.append((t, lambda: d[k]))
    return t


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _feed_hyperparameters(state: TraceState, extra: _Training, opt) -> list:
    """Every numeric hyper-parameter of every group (lr, momentum, dampening, betas, eps,
    weight_decay, alpha, lr_decay, ...) as a 0-d input read from the group at every call
    (`FedNumber`): schedulers that cycle momentum or beta1 (OneCycleLR, CyclicLR) change them
    every step, and a graph that baked them in would drift from eager. What the update's
    Python code decides from them (`if momentum != 0`) is guarded, not baked; the other group
    entries (nesterov, amsgrad, maximize, a tuple's length) are guarded by value. Returns
    (group, key, value) to put back after the step."""
    restore = []
    for group in opt.param_groups:
        fixed = []
        for k, v in list(group.items()):
            if k == "params":
                continue
            if _is_number(v):
                restore.append((group, k, v))
                group[k] = _fed(state, extra, group, k, None, v)
            elif isinstance(v, tuple) and v and all(_is_number(x) for x in v):
                restore.append((group, k, v))
                group[k] = tuple(_fed(state, extra, group, k, i, x) for i, x in enumerate(v))
                fixed.append((k, (tuple, len(v))))
            elif not isinstance(v, Tensor):
                fixed.append((k, v))
        state.guards.append(GroupGuard(opt, group, tuple(fixed)))
    return restore


def _fed(state: TraceState, extra: _Training, group: dict, k, i, v) -> "FedNumber":
    read = (lambda: group[k]) if i is None else (lambda: group[k][i])
    t: Any = Tensor._make(np.asarray(v, dtype=np.float64))
    t.__class__ = FedNumber  # the same layout as Tensor: a class change, no copy
    t._fed = (state, f"{k}[{i}]" if i is not None else k, read, v, set(), group)
    extra.feeds.append((t, read))
    return t


_COMPARE = {"__eq__": lambda a, b: a == b, "__ne__": lambda a, b: a != b, "__lt__": lambda a, b: a < b,
            "__le__": lambda a, b: a <= b, "__gt__": lambda a, b: a > b, "__ge__": lambda a, b: a >= b}


class FedNumber(Tensor):
    """A hyper-parameter fed as a 0-d input (see `_feed_hyperparameters`). Arithmetic on it
    records ops reading the input; a comparison with a Python number (`momentum != 0`,
    `weight_decay > 0`) answers with the traced value's answer as a Python bool, and a guard
    checks at every call that the value still answers the same way (a branch the update took
    is part of the graph). float()/int() bake the value: guarded by equality."""

    _fed: tuple

    def _decide(self, name: str, other):
        state, what, read, value, seen, group = self._fed
        result = _COMPARE[name](value, other)
        if (name, other) not in seen:
            seen.add((name, other))
            state.guards.append(FedGuard(what, read, name, other, result, group))
        return result

    def __bool__(self) -> bool:
        return self._decide("__ne__", 0)

    def __float__(self) -> float:
        self._decide("__eq__", self._fed[3])
        return float(self._fed[3])

    def __int__(self) -> int:
        self._decide("__eq__", self._fed[3])
        return int(self._fed[3])

    __hash__ = Tensor.__hash__


def _comparison(name: str):
    def compare(self, other):
        if _is_number(other):
            return self._decide(name, other)
        return getattr(Tensor, name)(self, other)
    compare.__name__ = name
    return compare


for _name in _COMPARE:
    setattr(FedNumber, _name, _comparison(_name))


class FedGuard:
    """A branch the traced update took on a fed hyper-parameter: `momentum != 0` was True."""

    __slots__ = ("what", "read", "op", "other", "result", "group", "version")

    def __init__(self, what: str, read, op: str, other, result: bool, group: dict | None = None) -> None:
        self.what, self.read, self.op, self.other, self.result = what, read, op, other, result
        self.group = group  # the param group `read` reads from
        self.version = -1  # eager.optim's PARAM_GROUPS_VERSION when the check last passed (-1: never)

    def changed(self) -> str | None:
        """None while the value takes the traced branch; not read again while no param
        group changed since it last did (as GroupGuard)."""
        if self.version == _optimizer.PARAM_GROUPS_VERSION[0]:
            return None
        version = _optimizer.PARAM_GROUPS_VERSION[0]
        self.version = -1
        why = self._compare()
        if why is None and type(self.group) is _optimizer.ParamGroup:
            self.version = version
        return why

    def _compare(self) -> str | None:
        try:
            now = self.read()
        except (KeyError, IndexError, TypeError):
            return f"the optimizer's {self.what} no longer exists"
        if not _is_number(now):
            return f"the optimizer's {self.what} changed to a {type(now).__name__}"
        if _COMPARE[self.op](now, self.other) == self.result:
            return None
        sign = {"__eq__": "==", "__ne__": "!=", "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">="}[self.op]
        return (f"the optimizer's {self.what} changed to {now!r}: the traced update took the branch where "
                f"'{self.what} {sign} {self.other!r}' is {self.result}")


class GroupGuard:
    """The entries of a param group that are not fed numbers (nesterov, amsgrad, maximize,
    the parameters themselves): a change is a different update."""

    __slots__ = ("opt", "group", "fixed", "params", "version", "index", "n_groups")

    def __init__(self, opt, group: dict, fixed: tuple) -> None:
        self.opt, self.group, self.fixed = opt, group, fixed
        self.params = list(group["params"])
        # where the group is in `opt.param_groups` (a list rebound, a group replaced or added:
        # the step the trace recorded updates other groups than eager's would)
        self.n_groups = len(opt.param_groups)
        self.index = next(i for i, g in enumerate(opt.param_groups) if g is group)
        self.version = -1  # eager.optim's PARAM_GROUPS_VERSION when the check last passed (-1: never)

    def changed(self) -> str | None:
        """None while the group is as traced. While eager.optim's PARAM_GROUPS_VERSION has not
        moved since the last check that passed, and the group was then an eager.optim
        ParamGroup whose `params` a ParamList (both move it on any change), not read again."""
        if self.version == _optimizer.PARAM_GROUPS_VERSION[0]:
            return None
        version = _optimizer.PARAM_GROUPS_VERSION[0]
        self.version = -1
        why = self._compare()
        g = self.group
        if why is None and type(g) is _optimizer.ParamGroup and type(g.get("params")) is _optimizer.ParamList \
                and type(self.opt.param_groups) is _optimizer.ParamList:
            self.version = version
        return why

    def _compare(self) -> str | None:
        g = self.group
        groups = self.opt.param_groups
        if len(groups) != self.n_groups or groups[self.index] is not g:
            return (f"{type(self.opt).__name__}'s param_groups changed (a group added, removed or replaced): "
                    "the traced step updates the groups it found")
        for k, v in self.fixed:
            now = g.get(k, _GONE)
            if type(v) is tuple and len(v) == 2 and v[0] is tuple:
                if isinstance(now, tuple) and len(now) == v[1]:
                    continue
            elif now is v or (type(now) is type(v) and now == v):
                continue
            return f"{type(self.opt).__name__}'s param group entry {k!r} changed {v!r} -> {now!r}"
        ps = g["params"]
        if len(ps) != len(self.params) or not all(map(operator.is_, ps, self.params)):
            return f"{type(self.opt).__name__}'s param group holds other parameters"
        return None


_GONE = object()


def traced_clear_grad(p: Tensor, set_to_none: bool) -> None:
    """Before a zero_grad (a module's or an optimizer's) clears p's gradient inside a trace:
    note its .grad as the call found it (the clearing itself runs as in eager: it only rebinds
    attributes). Set to None, the .grad no longer depends on what the call found, so a later
    backward() accumulating into it needs no guard on it: the first call of a loop, which finds
    None, and the later ones, which find the last step's gradient, are one signature."""
    state = current_state()
    if state is None or state.finished:
        return
    extra = _training(state)
    extra.seen(p)
    if set_to_none:
        extra.cleared.add(id(p))


_optimizer.TRACE_HOOK.fn = traced_step
_autograd.GRAD_HOOK.fn = traced_grad
CLEAR_HOOK.fn = traced_clear_grad


class OptimizerStateGuard:
    """The `StateGuard`s of one optimizer step, checked in one loop (a call checks them all:
    one Python call per parameter was most of a 50-parameter step's guard cost)."""

    __slots__ = ("opt", "guards", "items", "fast", "state", "keys", "dicts", "flat_keys", "flat_values", "version")

    def __init__(self, opt, guards: list) -> None:
        self.opt, self.guards = opt, guards
        self.items = [(g.param, g.keys, g.tensors) for g in guards]
        # the fast check's expectations (when every parameter had its state before the step: a
        # first step's state makes the next call retrace, which the per-parameter guards say):
        # the optimizer's state dict, its parameters and their state dicts, in order (compared
        # by identity: iterating a dict hashes nothing, where a lookup by tensor calls Python's
        # __hash__ per parameter), then those dicts' keys and tensors, flat
        self.fast = all(g.keys for g in guards)
        self.state = opt.state
        self.keys = list(opt.state)
        self.dicts = list(opt.state.values())
        live = [d for d in self.dicts if d]
        self.flat_keys = list(itertools.chain.from_iterable(live))
        self.flat_values = list(itertools.chain.from_iterable(map(dict.values, live)))
        self.version = -1  # eager.optim's OPTIMIZER_VERSION when the check last passed (-1: never)

    def changed(self) -> str | None:
        """None while the optimizer's state is as the step found it: the same state dicts
        holding the same keys and tensors.

        While eager.optim's OPTIMIZER_VERSION has not moved since the last check that passed
        (and every state dict then was an eager.optim StateDict, which moves it on any change,
        as rebinding `opt.state` does), nothing was replaced: no dict is read. Otherwise they
        are compared with C-level loops (map, chain); on any difference, each parameter's own
        guard says what changed (or that nothing that matters did)."""
        if self.version == _optimizer.OPTIMIZER_VERSION[0]:
            return None
        version = _optimizer.OPTIMIZER_VERSION[0]
        self.version = -1
        why = self._compare()
        if why is None:
            state = self.opt.state
            if type(state) is _optimizer.StateDict and all(type(d) is _optimizer.StateDict for d in state.values()):
                self.version = version
        return why

    def _compare(self) -> str | None:
        state = self.opt.state
        if self.fast and state is self.state and len(state) == len(self.keys):
            dicts = list(state.values())
            if all(map(operator.is_, dicts, self.dicts)) and all(map(operator.is_, state, self.keys)):
                live = list(filter(None, dicts))
                if list(itertools.chain.from_iterable(live)) == self.flat_keys:
                    values = list(itertools.chain.from_iterable(map(dict.values, live)))
                    if len(values) == len(self.flat_values) and all(map(operator.is_, values, self.flat_values)):
                        return None
        get = self.opt.state.get
        for p, keys, tensors in self.items:
            s = get(p)
            if s is None:
                if not keys:
                    continue
            elif len(s) == len(keys) and tuple(s) == keys and all(map(operator.is_, s.values(), tensors)):
                continue
            for g in self.guards:  # the reason, from the parameter's own guard
                why = g.changed()
                if why is not None:
                    return why
        return None


class StateGuard:
    """Which state entries an optimizer holds for a parameter: the first step creates them
    (a different graph), so a call that finds others than the trace did retraces."""

    def __init__(self, opt, param: Tensor) -> None:
        self.opt, self.param = opt, param
        self.keys = tuple(opt.state.get(param, {}))
        self.what = "the optimizer state of a parameter"
        self.tensors: tuple = ()

    def seal(self) -> None:
        """After the step: the state tensors the graph reads and writes, guarded by identity
        (opt.load_state_dict, or a state made anew, puts other tensors there)."""
        state = self.opt.state.get(self.param, {})
        # the entries the step found (one it made, a first step's, makes the next call retrace:
        # its graph is the first step's), as the tensors they hold now
        self.tensors = tuple(state.get(k) for k in self.keys)

    def changed(self) -> str | None:
        state = self.opt.state.get(self.param)
        if state is None:
            if not self.keys:
                return None
        elif tuple(state) == self.keys and all(a is b for a, b in zip(state.values(), self.tensors)):
            return None
        if tuple(state or ()) == self.keys:
            return (f"{type(self.opt).__name__}'s state of a parameter holds other tensors (load_state_dict, or "
                    "state made again)")
        return f"{type(self.opt).__name__}'s state of a parameter changed (its first step creates it)"
