"""What a training trace binds outside the graph: the `.grad` of each parameter and argument
and the optimizer state it reaches, as implicit inputs and outputs of the graph.

At the start of a trace the `.grad`s the function can reach are noted as the call finds them
(`note_start`); while it runs, `_Training` records which it read (guarded: `GradGuard`), set
or made; at its end `call_prep` turns that into what each call does before the graph runs
(`CallPrep`: random draws replayed, Python numbers fed as 0-d inputs, `.grad` and state
entries bound). `first_step_pending` answers static.jit's first-call rule."""
from __future__ import annotations

from typing import Any

import numpy as np

from eager._device import xp_of_array
from eager._tensor import METADATA_VERSION, Tensor

from ..errors import TraceError
from ..tracing.randomness import Replay, draws_of
from ..tracing.tracer import TraceState, user_location
from .guards import GradGuard

_NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"


# -- what runs before each call -------------------------------------------------------------------
class CallPrep:
    """Done before every call of a compiled signature, in this order: the random draws of the
    trace (static.tracing.randomness), the Python numbers fed as 0-d inputs, the attribute bindings
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
        # entry's next check reads every captured tensor again (static.jit.entry's fast path)
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
        state.shared.getters[id(t)] = read  # an alias read by a name is guarded (static.tracing.shared_memory)
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
        if hasattr(f, "optimizer") and hasattr(f, "last_epoch"):  # a learning-rate scheduler (static.jit.check saves it)
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
    """Whether an optimizer the function reaches (static.jit.compiled's first-call rule) has a
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
