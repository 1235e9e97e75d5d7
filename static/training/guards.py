"""The guards a training step adds to its entry: a `.grad` the trace read (None or a tensor),
the optimizer state of each parameter (which entries, which tensors), a param group's other
entries, and the branches the traced update took on a fed hyper-parameter. Each skips its
check while eager.optim's version counters say nothing it reads changed."""
from __future__ import annotations

import itertools
import numbers
import operator

from eager._tensor import Tensor
from eager.optim import optimizer as _optimizer


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


_COMPARE = {"__eq__": lambda a, b: a == b, "__ne__": lambda a, b: a != b, "__lt__": lambda a, b: a < b,
            "__le__": lambda a, b: a <= b, "__gt__": lambda a, b: a > b, "__ge__": lambda a, b: a >= b}


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
