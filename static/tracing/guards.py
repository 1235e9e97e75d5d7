"""Guards on the Python state a trace reads from outside the function.

A trace bakes every Python value it reads into the graph: a global `scale`, an entry of a
global config dict, a closure variable, a float attribute of a module (`self.eps`), the
function a global name holds (`ACT = F.tanh`), the submodule at `model.act`, a module's
hooks. Read again after the user changes it, the compiled graph would still use the old
value. As Dynamo does, each such value is recorded when the function is traced and compared
on every call; a change makes the call retrace (or find another entry traced for that state),
with the change as the reason.

Kinds of guard: objects (modules, optimizers, functions, classes, tensors inside containers)
by identity; atoms (numbers, strings, None) by value and type; containers (tuples, lists,
dicts, sets) by length and item, recursively, with no size or depth cut-off (a container that
holds itself is guarded by identity where it recurs); the instance dict of every module and
user object reached (so a monkey-patched `forward`, a swapped submodule, a hook added or
removed) and the class dict of every user class reached (`C.k`). What the trace itself wrote
(a list it appended to, an attribute it set) is not a guard but a side effect, handled by
`static.tracing.side_effects`. Tensors and arrays named directly are not guarded here: they are graph
inputs read at call time (see `tracing.named_sources`)."""
from __future__ import annotations

import inspect
import os
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .reach import Walk, names_read
from .state import LIBRARY_PACKAGES

_ATOMS = (bool, int, float, complex, str, bytes, type(None))
_SCALARS = frozenset((bool, int, float, str))
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # (static/tracing/guards.py)
_LIBRARY_DIRS = tuple(os.path.join(_ROOT, pkg) + os.sep for pkg in LIBRARY_PACKAGES)
_MISSING = object()
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks")
_OPTIMIZER_STATE = frozenset(("state", "param_groups", "defaults"))


class Same:
    """An object in a snapshot: equal to another `Same` of the very same object."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is Same and other.obj is self.obj

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(self.obj)

    def __repr__(self) -> str:
        obj = self.obj
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        return f"<{type(obj).__name__} {name}>" if isinstance(name, str) else f"<a {type(obj).__name__} object>"


def _frozen(value: Any, active: set | None = None) -> Any:
    """A snapshot that compares equal to the value's as long as it is unchanged: atoms by type
    and value, containers item by item (any size, any depth), anything else by identity;
    a tensor or array inside a container by its place only (it is a graph input re-read there
    at every call: `tracing.named_sources`)."""
    if isinstance(value, _ATOMS) or isinstance(value, np.generic):
        return (type(value), value)
    if active is not None and _is_array(value):
        return _TENSOR_SLOT
    kind = type(value)
    if kind in (tuple, list, dict, set, frozenset) or (isinstance(value, (tuple, list, dict))
                                                       and not hasattr(value, "_data")):
        if active is None:
            active = set()
        if id(value) in active:
            return Same(value)  # a container that holds itself: its identity where it recurs
        active.add(id(value))
        try:
            if isinstance(value, dict):
                items: Any = tuple((_frozen(k, active), _frozen(v, active)) for k, v in list(value.items()))
                return (kind, items, Same(value) if kind is not dict else None)
            if isinstance(value, (set, frozenset)):
                return (kind, frozenset(_frozen(v, active) for v in value))
            return (kind, tuple(_frozen(v, active) for v in value))
        finally:
            active.discard(id(value))
    return Same(value)


_TENSOR_SLOT = ("tensor",)  # a tensor's place in a container snapshot


def _plain(frozen) -> Any:
    """The value a snapshot describes, for messages."""
    if type(frozen) is Same:
        return frozen
    if frozen is _TENSOR_SLOT or frozen == _TENSOR_SLOT:
        return Same(_TensorMark())
    kind, body = frozen[0], frozen[1]
    if issubclass(kind, dict):
        return {_plain(k): _plain(v) for k, v in body}
    if issubclass(kind, (set, frozenset)):
        return {_plain(v) for v in body}
    if kind is list:
        return [_plain(v) for v in body]
    if issubclass(kind, tuple):
        return tuple(_plain(v) for v in body)
    return body


class _TensorMark:
    __name__ = "tensor"


def _describe(frozen) -> str:
    text = repr(_plain(frozen))
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass
class Guard:
    """One Python value the trace read: where from, how to read it again, and its snapshot."""

    what: str  # "global 'scale'", "attribute 'eps' of module LayerNorm", ...
    read: Callable[[], Any]
    snapshot: Any

    def changed(self) -> str | None:
        """None while the value is as traced; otherwise the reason a call must retrace."""
        try:
            now = self.read()
        except (KeyError, AttributeError, ValueError, NameError, IndexError):
            return f"{self.what} no longer exists"
        snap = self.snapshot
        if type(snap) is Same:
            if now is snap.obj:
                return None
            return f"{self.what} now holds another object ({_describe(snap)} -> {_describe(_frozen(now))})"
        if type(now) is snap[0] and snap[0] in _SCALARS:
            if now == snap[1]:
                return None
        else:
            frozen = _frozen(now)
            if frozen == self.snapshot:  # the snapshots carry types: 1, 1.0 and True differ
                return None
        return f"{self.what} changed {_describe(snap)} -> {_describe(_frozen(now))}"


@dataclass
class Attributes:
    """The plain-data attributes of one object: a module's float `eps` or int `groups`, the
    fields of a user's config object, the attributes of the instance a method is bound to."""

    module: Any
    snapshot: tuple
    class_snapshot: "ClassAttributes | None" = None
    size: int = -1  # how many entries the instance dict had (a new one, such as a forward set on it, changes it)
    mode_in_key: bool = False

    def changed(self) -> str | None:
        """The attributes as traced, compared one by one (the common number or string
        without building a snapshot: this runs on every call)."""
        d = self.module.__dict__
        for name, frozen in self.snapshot:
            value = d.get(name, _MISSING)
            kind = type(value)
            if type(frozen) is Same:
                if value is frozen.obj:
                    continue
            elif kind is frozen[0] and kind in _SCALARS:
                if value == frozen[1]:
                    continue
            elif name in _HOOK_DICTS:
                if value is not _MISSING and _hooks_frozen(value) == frozen:
                    continue
            elif name == "_modules":
                if value is not _MISSING and _registry_frozen(value) == frozen:
                    continue
            elif _frozen(value) == frozen:
                continue
            if name in _HOOK_DICTS:
                return f"the {name[1:-1].replace('_', ' ')} of {self._kind()} changed (a hook added or removed)"
            if name == "_modules":
                return f"a submodule of {self._kind()} was replaced, added or removed"
            after = "(unset)" if value is _MISSING else _describe(_frozen(value))
            return f"attribute {name!r} of {self._kind()} changed {_describe(frozen)} -> {after}"
        if len(d) != self.size:
            names = {name for name, _ in self.snapshot}
            added = [n for n in d if n not in names and (not n.startswith("_") or n in _HOOK_DICTS)
                     and not (n == "training" and self.mode_in_key) and n not in _OPTIMIZER_STATE]
            if added:
                return f"attribute {added[0]!r} of {self._kind()} was set (it was not when traced)"
        if self.class_snapshot is not None:
            return self.class_snapshot.changed()
        return None

    def matches(self, name: str, value: Any, frozen: Any) -> bool:
        """Whether attribute `name` now holding `value` is as its snapshot `frozen`."""
        if type(frozen) is Same:
            return value is frozen.obj
        if name in _HOOK_DICTS:
            return isinstance(value, dict) and _hooks_frozen(value) == frozen
        if name == "_modules":
            return isinstance(value, dict) and _registry_frozen(value) == frozen
        return _frozen(value) == frozen

    def _kind(self) -> str:
        name = type(self.module).__name__
        return f"module {name}" if is_module(self.module) else f"the {name} object"


@dataclass
class ArrayGuard:
    """The values of a tensor the trace depends on by value (a boolean mask read from outside
    the function, whose True positions were baked into the graph)."""

    what: str
    obj: Any
    snapshot: np.ndarray

    def changed(self) -> str | None:
        data = getattr(self.obj, "_data", self.obj)
        now = data if isinstance(data, np.ndarray) else data.get()
        if now.shape == self.snapshot.shape and np.array_equal(now, self.snapshot,
                                                               equal_nan=self.snapshot.dtype.kind in "fc"):
            return None
        return f"{self.what} changed its values"


def _hooks_frozen(hooks: dict) -> tuple:
    return (_HOOKS, tuple(Same(h) for h in hooks.values()))


class _HOOKS:
    """The kind of a hooks dict's snapshot: the hooks by identity, in order."""


def _module_attrs(module, mode_in_key: bool = False) -> tuple:
    """The attributes of `module` (or of a user object) that a trace may have read: every
    public one (numbers by value, objects by identity, containers item by item), the
    submodules and the hooks. `training` is among them unless the compiled function is the
    module itself (its modes are in the call key): a module reached through a closure or a
    global switched to eval() must retrace (or find its eval entry)."""
    out = []
    d = module.__dict__
    optimizer = hasattr(module, "param_groups")  # a user's optimizer class: its state and groups are
    for name, value in list(d.items()):          # the training step's (static.training guards them)
        if name == "training" and mode_in_key or optimizer and name in _OPTIMIZER_STATE:
            continue
        if name in _HOOK_DICTS:
            if isinstance(value, dict):
                out.append((name, _hooks_frozen(value)))
            continue
        if name == "_modules":
            out.append((name, _registry_frozen(value)))
            continue
        if name.startswith("_"):  # bookkeeping: parameters and buffers are re-read inputs
            continue
        out.append((name, _frozen(value)))
    return tuple(out)


class _REGISTRY:
    """The kind of a module's submodule registry in a snapshot."""


def _registry_frozen(value) -> tuple:
    return (_REGISTRY, tuple((k, Same(m)) for k, m in value.items()))


@dataclass
class ClassAttributes:
    """The class dict of a user's class the trace reached: a class attribute (`C.k`,
    `self.k` found on the class) and the methods (a monkey-patched `Model.forward`)."""

    cls: type
    snapshot: tuple
    size: int

    def changed(self) -> str | None:
        d = self.cls.__dict__
        if len(d) != self.size:
            return f"the class {self.cls.__qualname__} gained or lost an attribute"
        for name, frozen in self.snapshot:
            value = d.get(name, _MISSING)
            if type(frozen) is Same:
                if value is frozen.obj:
                    continue
            elif _frozen(value) == frozen:
                continue
            after = "(unset)" if value is _MISSING else _describe(_frozen(value))
            return f"class attribute {name!r} of {self.cls.__qualname__} changed {_describe(frozen)} -> {after}"
        return None


def class_attributes(cls: type) -> "ClassAttributes | None":
    """The guard on a user class's dict (None for graphmode's and the standard library's)."""
    if not is_user_class(cls):
        return None
    return ClassAttributes(cls, tuple((k, _frozen(v) if not isinstance(v, (types.FunctionType, property,
                                                                             staticmethod, classmethod))
                                       else Same(v)) for k, v in cls.__dict__.items()
                                      if k not in ("__dict__", "__weakref__", "__doc__")), len(cls.__dict__))


def is_user_class(cls) -> bool:
    if not isinstance(cls, type) or cls.__module__ == "builtins":
        return False
    module = inspect.getmodule(cls)
    filename = getattr(module, "__file__", None) or ""
    return bool(filename) and not filename.startswith(_LIBRARY_DIRS) and "site-packages" not in filename \
        and not filename.startswith(_STDLIB)


def is_module(value) -> bool:
    return not isinstance(value, type) and hasattr(value, "named_parameters") and hasattr(value, "forward") \
        and hasattr(value, "modules")


def is_plain_object(value) -> bool:
    """An instance of a class defined outside graphmode and the standard library's C types,
    with instance attributes: a config object, or the instance behind a bound method.
    Tensors and arrays are inputs, not guarded values."""
    cls = type(value)
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)) \
            or not hasattr(value, "__dict__") or cls.__module__ == "builtins" or hasattr(value, "__array_priority__") \
            or hasattr(value, "_data") or hasattr(value, "__cuda_array_interface__"):
        return False
    module = inspect.getmodule(cls)
    filename = getattr(module, "__file__", None) or ""
    return not filename.startswith(_LIBRARY_DIRS) and "site-packages" not in filename \
        and not filename.startswith(_STDLIB)


_STDLIB = os.path.dirname(os.__file__) + os.sep


def _is_user_function(value) -> bool:
    """A plain Python function outside graphmode's own packages (its globals are the user's)."""
    if not isinstance(value, types.FunctionType):
        return False
    return not value.__code__.co_filename.startswith(_LIBRARY_DIRS)


def attributes(obj, mode_in_key: bool = False) -> Attributes:
    """The guard on an object's instance dict, with its class's dict when that is a user's."""
    return Attributes(obj, _module_attrs(obj, mode_in_key), class_attributes(type(obj)), len(obj.__dict__),
                      mode_in_key)


def _follows(value, kind: str) -> bool:
    if kind == "global":
        return is_module(value) or _is_user_function(value) or is_plain_object(value)
    return is_module(value) or is_plain_object(value) or (callable(value) and not isinstance(value, type))


def collect(fn) -> list:
    """The guards of everything `fn` reads by name: see the module docstring."""
    guards: list = []
    walk = Walk(fn)
    for f in walk:
        if is_module(f):
            mode_in_key = f is fn  # a compiled module's modes are in its call key
            for m in f.modules():
                if m is f or walk.first_visit(m):
                    guards.append(attributes(m, mode_in_key))
                    forward = m.__dict__.get("forward")  # a forward set on the instance (monkey-patched)
                    walk.push(forward if forward is not None else getattr(type(m), "forward", None))
                    for name in _HOOK_DICTS:  # the hooks run as part of the call: what they read too
                        for h in (m.__dict__.get(name) or {}).values():
                            walk.push(h[0] if isinstance(h, tuple) else h)
                    _push_objects(walk, m.__dict__)
            continue
        if is_plain_object(f):
            guards.append(attributes(f))
            _push_objects(walk, f.__dict__)
            if not callable(f):
                continue
        code = getattr(f, "__code__", None)
        if code is not None and code.co_filename.startswith(_LIBRARY_DIRS):
            continue  # graphmode's own code: its module constants are not the user's values
        if code is None:
            if not isinstance(f, type) and callable(f):
                walk.push(getattr(type(f), "__call__", None))  # noqa: B004  (the method to scan, not a test)
                walk.push(getattr(f, "fn", None))  # a transform object keeps the function it wraps
            continue
        for read in names_read(f):
            value = read.value
            what = f"global {read.name!r}" if read.kind == "global" else f"closure variable {read.name!r}"
            if isinstance(value, types.ModuleType) or _is_array(value):
                continue  # a Python module (np, F); a tensor named directly is an input re-read per call
            if read.kind == "global" and hasattr(value, "_graphmode_traceable"):  # another compiled function
                walk.push(value._graphmode_traceable)
                guards.append(Guard(what, read.read, Same(value)))
                continue
            if _follows(value, read.kind):
                walk.push(value)
                guards.append(Guard(what, read.read, Same(value)))
                continue
            if isinstance(value, type):
                found = class_attributes(value)
                if found is not None:
                    guards.append(found)
            frozen = _frozen(value)
            guards.append(Guard(what, read.read, frozen))
            if type(frozen) is not Same:
                _push_objects(walk, value)
    return guards


def _is_array(value) -> bool:
    return hasattr(value, "_data") and hasattr(value, "shape") or isinstance(value, np.ndarray) \
        or hasattr(value, "__cuda_array_interface__")


def _push_objects(walk: Walk, value, depth: int = 0) -> None:
    """Follow the modules, user objects and user functions held in a container (a global dict
    of models, a module's list of scales holds none): their attributes are read too."""
    if depth > 50:
        return
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple, set)) else ()
    for v in list(items):
        if is_module(v) or is_plain_object(v) or _is_user_function(v):
            walk.push(v)
        elif isinstance(v, (list, tuple, dict, set)):
            _push_objects(walk, v, depth + 1)


def first_change(guards: list) -> str | None:
    """The reason the first changed guard gives, or None when every value is as traced."""
    for g in guards:
        why = g.changed()
        if why is not None:
            return why
    return None
