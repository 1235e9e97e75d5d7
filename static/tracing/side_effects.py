"""Python side effects of a traced function: found at the end of tracing, replayed after each
compiled call with real values, or refused.

A trace runs the user's Python once. What that Python did to the world outside the function
(a list it appended to, an attribute or a global it set, a `print`) would happen once, at
trace time, and hold tracers, where eager does it at every call with tensors. So:

- before the trace, the guards' snapshot of what the function reads (static.tracing.guards) and a copy
  of the globals of the user functions it reaches are taken; `print` and Python's and NumPy's
  random functions are watched while it runs;
- after the trace, each difference is a write of the trace. Writes this module can repeat
  exactly are undone and become *replays*, run after every call (the first included) with the
  tracers they hold replaced by the call's values: items appended to a list, an attribute, a
  dict item or a global set to a value holding tracers, a `print`;
- other writes (a counter `self.calls += 1`, a global rebound to a new number, a scheduler
  stepped inside the function, a draw from `random`) are undone too and *refuse* the trace:
  the signature runs eagerly (with one warning naming the write and the user's line;
  `fullgraph=True` raises), which gives eager's behaviour by construction;
- a tracer found anywhere else reachable from the function's globals after that is an error
  naming where it was found: a traced value never escapes into user data.
"""
from __future__ import annotations

import builtins
import contextlib
import dataclasses
import random
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import guards as _guards
from .state import user_location
from .tracer import Tracer

_RANDOM_FUNCTIONS = ("random", "uniform", "gauss", "normalvariate", "randint", "randrange", "choice", "choices",
                     "shuffle", "sample", "betavariate", "expovariate", "gammavariate", "lognormvariate",
                     "triangular", "vonmisesvariate", "paretovariate", "weibullvariate", "getrandbits")
_NP_RANDOM_FUNCTIONS = ("rand", "randn", "random", "random_sample", "normal", "uniform", "randint", "choice",
                        "permutation", "shuffle", "standard_normal", "binomial", "poisson", "exponential")


@dataclass
class Watch:
    """What is recorded while the function runs: prints (replayed) and reasons to refuse."""

    prints: list = field(default_factory=list)  # (args, kwargs, location)
    refusals: list = field(default_factory=list)
    calls: list = field(default_factory=list)  # (before the graph?, bound method, args, kwargs): sched.step()
    undo: list = field(default_factory=list)
    depth: int = 0


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[None]:
    """`print` recorded instead of printed (replayed after each call with real values), and
    Python's and NumPy's global random functions noted (a draw at trace time would be one
    number for every call)."""
    saved_print = builtins.print
    saved_random = {name: getattr(random, name) for name in _RANDOM_FUNCTIONS if hasattr(random, name)}
    saved_np = {name: getattr(np.random, name) for name in _NP_RANDOM_FUNCTIONS if hasattr(np.random, name)}

    def traced_print(*args: Any, **kwargs: Any) -> None:
        watch.prints.append((args, kwargs, user_location()))

    states = (random.getstate(), np.random.get_state())  # a trace's draws are undone: the eager run makes them

    def drawing(module: str, name: str, fn):
        def draw(*args: Any, **kwargs: Any) -> Any:
            watch.refusals.append(f"{user_location()}: {module}.{name}() draws a Python random number, which a "
                                  "compiled graph would hold as one constant for every call (draw with eager's "
                                  "random functions, eager.rand/randn, which compiled code draws at every call)")
            return fn(*args, **kwargs)
        return draw

    builtins.print = traced_print
    schedulers = _scheduler_steps()
    for cls, fn in schedulers:
        setattr(cls, "step", _watched_step(watch, fn))  # noqa: B010
    for name, fn in saved_random.items():
        setattr(random, name, drawing("random", name, fn))
    for name, fn in saved_np.items():
        setattr(np.random, name, drawing("numpy.random", name, fn))
    try:
        yield
    finally:
        builtins.print = saved_print
        for cls, fn in schedulers:
            setattr(cls, "step", fn)  # noqa: B010
        for name, fn in saved_random.items():
            setattr(random, name, fn)
        for name, fn in saved_np.items():
            setattr(np.random, name, fn)
        if any("random" in why for why in watch.refusals):
            random.setstate(states[0])
            np.random.set_state(states[1])


def _scheduler_steps() -> list:
    """(class, its own step) of eager's learning-rate schedulers and their subclasses."""
    try:
        from eager.optim import lr_scheduler  # noqa: PLC0415
    except ImportError:
        return []
    found, todo = [], [lr_scheduler.LRScheduler]
    while todo:  # the class and every subclass (a user's too) that defines its own step()
        c = todo.pop()
        todo += c.__subclasses__()
        if "step" in c.__dict__:
            found.append((c, c.__dict__["step"]))
    return found


def _watched_step(watch: Watch, step):
    """A scheduler's step() called while tracing: run now (the rest of the function sees the
    new learning rate, as in eager), undone after the trace and replayed at every call: before
    the graph when no optimizer step was traced before it (that step then reads the stepped
    learning rate, fed at call time), else after it."""
    def watched(self, *args: Any, **kwargs: Any) -> Any:
        from .state import current_state  # noqa: PLC0415

        state = current_state()
        if watch.depth or state is None or state.finished:
            return step(self, *args, **kwargs)  # a scheduler a SequentialLR steps, or no trace
        if holds_tracer(args) or holds_tracer(kwargs):
            watch.refusals.append(f"{user_location()}: {type(self).__name__}.step() is given a traced value (a "
                                  "metric computed by the function); its decision needs the value, which compiled "
                                  "code has only after the call: step the scheduler outside the compiled function")
            return None
        extra = state.__dict__.get("training")
        before = not (extra is not None and extra.feeds)
        saved = dict(self.__dict__)
        groups = [(g, dict(g)) for g in getattr(getattr(self, "optimizer", None), "param_groups", ())]

        def restore() -> None:
            self.__dict__.clear()
            self.__dict__.update(saved)
            for g, items in groups:
                g.clear()
                g.update(items)

        watch.undo.append(restore)
        watch.calls.append((before, getattr(self, "step"), args, kwargs))  # noqa: B009  (the bound method)
        watch.depth += 1
        try:
            return step(self, *args, **kwargs)
        finally:
            watch.depth -= 1
    watched.__wrapped__ = step  # type: ignore[attr-defined]
    return watched


def holds_tracer(value: Any, depth: int = 0) -> bool:
    if isinstance(value, Tracer):
        return True
    if depth > 20:
        return False
    if isinstance(value, dict):
        return any(holds_tracer(v, depth + 1) for v in list(value.values()))
    if isinstance(value, (list, tuple, set)):
        return any(holds_tracer(v, depth + 1) for v in list(value))
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return any(holds_tracer(getattr(value, f, None), depth + 1) for f in fields)
    return False


def holds_tracer_deep(value: Any, depth: int = 0) -> bool:
    """holds_tracer, looking into the attributes of objects too (a result the output
    flattening could not take apart)."""
    if holds_tracer(value):
        return True
    if depth > 5 or isinstance(value, type) or not hasattr(value, "__dict__") or hasattr(value, "_data"):
        return False
    return any(holds_tracer_deep(v, depth + 1) for v in list(vars(value).values()))


class Effects:
    """The side effects of one trace (see the module docstring): `replays` run after each
    call; `tracers` are the traced values they hold, returned by the graph as extra outputs;
    `refused` is why the signature runs eagerly instead (None: it compiles)."""

    def __init__(self) -> None:
        self.replays: list = []  # (kind, target, key, value) with tracers inside value
        self.tracers: list = []
        self._index: dict = {}
        self.refused: str | None = None
        self.undo: list = []
        self.before: list = []  # (bound method, args, kwargs) run before the graph at every call

    def refuse(self, why: str) -> None:
        if self.refused is None:
            self.refused = why

    def add(self, kind: str, target: Any, key: Any, value: Any) -> None:
        self._collect(value)
        self.replays.append((kind, target, key, value))

    def _collect(self, value: Any, depth: int = 0) -> None:
        if isinstance(value, Tracer):
            if id(value) not in self._index:
                self._index[id(value)] = len(self.tracers)
                self.tracers.append(value)
        elif depth < 20:
            if isinstance(value, dict):
                for v in value.values():
                    self._collect(v, depth + 1)
            elif isinstance(value, (list, tuple)):
                for v in value:
                    self._collect(v, depth + 1)

    def template(self) -> "Replays | None":
        if not self.replays and not self.before:
            return None
        return Replays([(kind, target, key, self._slots(value)) for kind, target, key, value in self.replays],
                       len(self.tracers), self.before)

    def _slots(self, value: Any) -> Any:
        """The value with each tracer replaced by a `_Slot` naming its extra output."""
        if isinstance(value, Tracer):
            return _Slot(self._index[id(value)])
        if isinstance(value, list):
            return [self._slots(v) for v in value]
        if isinstance(value, tuple) and type(value) is tuple:
            return tuple(self._slots(v) for v in value)
        if isinstance(value, dict) and type(value) is dict:
            return {k: self._slots(v) for k, v in value.items()}
        return value


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _fill(value: Any, outs: list) -> Any:
    if type(value) is _Slot:
        return outs[value.index]
    if type(value) is list:
        return [_fill(v, outs) for v in value]
    if type(value) is tuple:
        return tuple(_fill(v, outs) for v in value)
    if type(value) is dict:
        return {k: _fill(v, outs) for k, v in value.items()}
    return value


class Replays:
    """Replays of a trace's side effects, given each call's values of the traced ones."""

    def __init__(self, steps: list, n_values: int, before: list | None = None) -> None:
        self.steps, self.n_values = steps, n_values
        self.before = before or []

    def run_before(self) -> None:
        """The calls replayed before the graph runs (a scheduler stepped before the optimizer)."""
        for method, args, kwargs in self.before:
            method(*args, **kwargs)

    def __call__(self, values: list) -> None:
        for kind, target, key, value in self.steps:
            real = _fill(value, values)
            if kind == "append":
                target.extend(real)
            elif kind == "setattr":
                setattr(target, key, real)
            elif kind == "setitem":
                target[key] = real
            elif kind == "print":
                args, kwargs = real
                builtins.print(*args, **kwargs)
            elif kind == "call":
                args, kwargs = real
                target(*args, **kwargs)


_ABSENT = object()


def snapshot_globals(fns: list) -> list:
    """(globals dict, copy) of every user function the trace may run."""
    out, seen = [], set()
    for f in fns:
        gl = getattr(f, "__globals__", None)
        if isinstance(gl, dict) and id(gl) not in seen and gl.get("__name__") not in ("builtins",):
            seen.add(id(gl))
            out.append((gl, dict(gl)))
    return out


def user_functions(fn) -> list:
    """The user functions a trace of `fn` may run, found as the guards find them."""
    from .reach import Walk  # noqa: PLC0415

    out = []
    walk = Walk(fn)
    for f in walk:
        if _guards.is_module(f):
            for m in f.modules():
                forward = m.__dict__.get("forward") or getattr(type(m), "forward", None)
                walk.push(forward)
                for name in ("_forward_hooks", "_forward_pre_hooks"):
                    for h in (m.__dict__.get(name) or {}).values():
                        walk.push(h[0] if isinstance(h, tuple) else h)
            continue
        if isinstance(f, types.FunctionType) and _guards._is_user_function(f):
            out.append(f)
            for cell in f.__closure__ or ():
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue
                if callable(v):
                    walk.push(v)
            for name in f.__code__.co_names:
                v = f.__globals__.get(name)
                if isinstance(v, types.FunctionType) or _guards.is_module(v):
                    walk.push(v)
        elif _guards.is_plain_object(f) and callable(f):
            walk.push(getattr(type(f), "__call__", None))  # noqa: B004
        elif hasattr(f, "_graphmode_traceable"):
            walk.push(f._graphmode_traceable)
    return out


def after_trace(pre_guards: list, globals_before: list, watch: Watch) -> tuple[list, Effects]:
    """Compare the state after the trace with the snapshots taken before it: the guards to
    keep (those of values the trace did not write) and the trace's effects. Every write is
    undone here (a replay redoes it after the graph ran; a refused trace's eager call redoes
    it)."""
    effects = Effects()
    kept: list = []
    for why in watch.refusals:
        effects.refuse(why)
    for g in pre_guards:
        if g.changed() is None:
            kept.append(g)
            continue
        replacement = _written(g, effects)
        if replacement is not None:
            kept.append(replacement)
    for gl, before in globals_before:
        for name, value in list(gl.items()):
            old = before.get(name, _ABSENT)
            if value is old:
                continue
            module = gl.get("__name__", "?")
            if holds_tracer(value):
                effects.add("setitem", gl, name, value)
            else:
                effects.refuse(f"the function sets the global {name!r} of {module} to a new value (a Python side "
                               "effect a compiled graph would run only once)")
            _restore(effects, gl, name, old)
        for name in before:
            if name not in gl:
                effects.refuse(f"the function deletes the global {name!r}")
                gl[name] = before[name]
    for args, kwargs, where in watch.prints:
        effects.add("print", None, where, (list(args), dict(kwargs)))
    for before, method, args, kwargs in watch.calls:
        if before:
            effects.before.append((method, args, kwargs))
        else:
            effects.add("call", method, None, (list(args), dict(kwargs)))
    for undo in reversed(effects.undo):
        undo()
    for undo in reversed(watch.undo):
        undo()
    return kept, effects


def _restore(effects: Effects, d: dict, name: str, old: Any) -> None:
    if old is _ABSENT:
        effects.undo.append(lambda: d.pop(name, None))
    else:
        effects.undo.append(lambda: d.__setitem__(name, old))


def _old_value(frozen) -> Any:
    """The object a snapshot stood for, when the snapshot can give it back (an atom or an
    object by identity); _ABSENT otherwise."""
    if type(frozen) is _guards.Same:
        return frozen.obj
    if not isinstance(frozen[0], type):
        return _ABSENT
    if frozen[0] in (bool, int, float, complex, str, bytes, type(None)) or issubclass(frozen[0], np.generic):
        return frozen[1]
    return _ABSENT


def _written(g, effects: Effects):
    """Classify the write a changed guard shows; the guard to keep in its place (or None)."""
    if isinstance(g, _guards.Guard):
        try:
            now = g.read()
        except Exception:  # noqa: BLE001
            effects.refuse(f"the function deletes {g.what}")
            return None
        snap = g.snapshot
        if type(snap) is not _guards.Same and snap[0] in (list, dict) and type(now) is snap[0]:
            if _container_write(now, snap, g.what, effects):
                return _guards.Guard(g.what, g.read, _guards.Same(now))
            return None
        return None  # a rebound name: the globals' comparison classifies it
    if isinstance(g, _guards.Attributes):
        obj = g.module
        d = obj.__dict__
        for name, frozen in g.snapshot:
            value = d.get(name, _ABSENT)
            if value is not _ABSENT and g.matches(name, value, frozen):
                continue
            where = f"attribute {name!r} of {g._kind()}"
            if type(frozen) is not _guards.Same and frozen[0] in (list, dict) and type(value) is frozen[0]:
                _container_write(value, frozen, where, effects)
                continue
            if value is not _ABSENT and holds_tracer(value):
                effects.add("setattr", obj, name, value)
            else:
                effects.refuse(f"the function sets {where} ({_guards._describe(frozen)} -> "
                               f"{'(deleted)' if value is _ABSENT else _guards._describe(_guards._frozen(value))}), "
                               "a Python side effect a compiled graph would run only once (keep such state "
                               "outside the compiled function, or in a tensor buffer updated in place)")
            old = _old_value(frozen)
            if old is not _ABSENT:
                effects.undo.append(lambda o=obj, n=name, v=old: object.__setattr__(o, n, v))
        written = {n for n, frozen in g.snapshot if not (n in d and g.matches(n, d[n], frozen))}
        names = {n for n, _ in g.snapshot} | (_guards._OPTIMIZER_STATE if hasattr(obj, "param_groups") else set())
        added = 0
        for name in list(d):
            if name not in names and not name.startswith("_") and not (name == "training"):
                added += 1
                value = d[name]
                if holds_tracer(value):
                    effects.add("setattr", obj, name, value)
                    effects.undo.append(lambda o=obj, n=name: o.__dict__.pop(n, None))
                else:
                    effects.refuse(f"the function sets a new attribute {name!r} of {g._kind()}, a Python side "
                                   "effect a compiled graph would run only once")
                    effects.undo.append(lambda o=obj, n=name: o.__dict__.pop(n, None))
        # what the function writes is its effect, not a value it depends on: no guard on it
        return dataclasses.replace(g, snapshot=tuple((n, f) for n, f in g.snapshot if n not in written),
                                   size=g.size + added)
    effects.refuse(f"the function changes {getattr(g, 'what', None) or g.changed()}")
    return None


def _same(value, frozen) -> bool:
    """Whether a container's item is as its snapshot (taken inside the container)."""
    if type(frozen) is _guards.Same:
        return value is frozen.obj
    return _guards._frozen(value, set()) == frozen


def _container_write(now, snap, what: str, effects: Effects) -> bool:
    """A list that grew at its end (appends: replayed) or a dict whose items were set to values
    holding tracers (replayed); other changes refuse. True when replayed."""
    old = snap[1]
    if type(now) is list:
        n = len(old)
        if len(now) >= n and all(_guards._frozen(now[i], set()) == old[i] for i in range(n)):
            added = now[n:]
            effects.add("append", now, None, list(added))
            effects.undo.append(lambda: now.__delitem__(slice(n, None)))
            return True
        effects.refuse(f"the function changes the items of {what} (not only appends), a Python side effect a "
                       "compiled graph would run only once")
        restore = [_old_value(v) for v in old]
        if all(v is not _ABSENT for v in restore):
            effects.undo.append(lambda: now.__setitem__(slice(None), restore))
        return False
    before = {}
    for k, v in old:
        before[_old_value(k)] = v
    ok = True
    for k, v in list(now.items()):
        prev = before.get(k, _ABSENT)
        if prev is not _ABSENT and _same(v, prev):
            continue
        if holds_tracer(v):
            effects.add("setitem", now, k, v)
        else:
            effects.refuse(f"the function sets item {k!r} of {what} to a new value, a Python side effect a "
                           "compiled graph would run only once")
            ok = False
        old_v = _old_value(prev) if prev is not _ABSENT else _ABSENT
        if prev is _ABSENT:
            effects.undo.append(lambda k=k: now.pop(k, None))
        elif old_v is not _ABSENT:
            effects.undo.append(lambda k=k, o=old_v: now.__setitem__(k, o))
    for k in before:
        if k not in now:
            effects.refuse(f"the function deletes item {k!r} of {what}")
            ok = False
    return ok


def escaped(roots: list) -> str | None:
    """Where a tracer is still reachable from user data after the trace (None: nowhere)."""
    for what, value in roots:
        if holds_tracer(value):
            return what
    return None
