"""`optimizer.step()` and `zero_grad()` inside a traced function: the update is recorded into
the graph (eager.optim's own update traced once per parameter kind and replayed for the rest,
static.training.update_templates), state the first step makes becomes the caller's tensors,
Python numbers of optimizer state (Adam's step count) become 0-d tensors the graph updates,
and every numeric hyper-parameter of a param group is a 0-d input read at every call
(`FedNumber`), so a scheduler neither retraces nor goes stale."""
from __future__ import annotations

import functools
import numbers
from typing import Any

import numpy as np

from eager._grad_mode import no_grad
from eager._tensor import Tensor
from eager.nn.module import CLEAR_HOOK
from eager.optim import optimizer as _optimizer

from ..tracing.tracer import Tracer, TraceState, current_state, inplace_on_captured, user_location
from .bindings import _Training, _training
from .guards import _COMPARE, FedGuard, GroupGuard, OptimizerStateGuard, StateGuard, _is_number
from .update_templates import update_parameters


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
CLEAR_HOOK.fn = traced_clear_grad
