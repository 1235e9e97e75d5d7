"""Guards on the Python values a trace reads from outside the function.

A trace bakes every Python number it reads into the graph as a constant: a global `scale`,
an entry of a global config dict, a closure variable, a float attribute of a module
(`self.eps`). Read again after the user changes it, the compiled graph would still use the
old value. As Dynamo does, each such value is recorded when the function is traced and
compared on every call; a change makes the call retrace, with the change as the reason.

What is guarded: the globals and closure cells that the function's code (and the code of the
user functions, decorators' inner functions and modules it reaches) names, when they hold
plain Python data (numbers, strings, None, and small tuples and dicts of those; lists are
left out: they are the usual accumulators a function appends to, which would retrace every
call); and
the plain-data attributes of every module reached. Tensors are not guarded here: they are
graph inputs read at call time (see `tracing.named_sources`)."""
from __future__ import annotations

import inspect
import os
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .reach import Walk, names_read

_ATOMS = (bool, int, float, complex, str, bytes, type(None))
_SCALARS = frozenset((bool, int, float, str))
_MAX_ITEMS = 64  # a larger container is not plain configuration: left unguarded (cheap calls)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = tuple(os.path.join(_ROOT, pkg) + os.sep for pkg in ("eager", "static", "codegen"))
_MISSING = object()


def _frozen(value: Any, depth: int = 0) -> Any:
    """A snapshot of plain data that compares equal to the value as long as it is unchanged;
    _MISSING for anything else (not guarded)."""
    if isinstance(value, _ATOMS) or isinstance(value, np.generic):
        return (type(value), value)
    if depth > 3:
        return _MISSING
    if isinstance(value, tuple) and len(value) <= _MAX_ITEMS:
        items = tuple(_frozen(v, depth + 1) for v in value)
        return _MISSING if _MISSING in items else (type(value), items)
    if isinstance(value, dict) and len(value) <= _MAX_ITEMS:
        try:
            items = tuple((k, _frozen(v, depth + 1)) for k, v in value.items())
        except TypeError:
            return _MISSING
        return _MISSING if any(v is _MISSING for _, v in items) else (dict, items)
    return _MISSING


def _plain(frozen) -> Any:
    """The value a snapshot describes, for messages."""
    kind, body = frozen
    if kind is dict:
        return {k: _plain(v) for k, v in body}
    if kind is tuple:
        return kind(_plain(v) for v in body)
    return body


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
        except (KeyError, AttributeError, ValueError, NameError):
            return f"{self.what} no longer exists"
        frozen = _frozen(now)
        if frozen == self.snapshot:  # the snapshots carry types: 1, 1.0 and True differ
            return None
        if frozen is _MISSING:
            return f"{self.what} changed to a {type(now).__name__}"
        return f"{self.what} changed {_plain(self.snapshot)!r} -> {_plain(frozen)!r}"


@dataclass
class Attributes:
    """The plain-data attributes of one object: a module's float `eps` or int `groups`, the
    fields of a user's config object, the attributes of the instance a method is bound to."""

    module: Any
    snapshot: tuple

    def changed(self) -> str | None:
        """The attributes that held plain data when traced, compared one by one (the common
        number or string without building a snapshot: this runs on every call)."""
        d = self.module.__dict__
        for name, frozen in self.snapshot:
            value = d.get(name, _MISSING)
            kind = type(value)
            if kind is frozen[0] and kind in _SCALARS:
                if value == frozen[1]:
                    continue
            elif _frozen(value) == frozen:
                continue
            now = _frozen(value)
            after = "(unset)" if value is _MISSING else f"a {kind.__name__}" if now is _MISSING else repr(_plain(now))
            return f"attribute {name!r} of {self._kind()} changed {_plain(frozen)!r} -> {after}"
        return None

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
        if now.shape == self.snapshot.shape and np.array_equal(now, self.snapshot):
            return None
        return f"{self.what} changed its values"


def _module_attrs(module, mode_in_key: bool = False) -> tuple:
    """The plain-data attributes of `module` that a trace may have read. `training` is among
    them unless the compiled function is the module itself (its modes are in the call key): a
    module reached through a closure or a global switched to eval() must retrace."""
    out = []
    for name, value in module.__dict__.items():
        if (name == "training" and mode_in_key) or name.startswith("_"):  # "_": bookkeeping
            continue
        frozen = _frozen(value)
        if frozen is not _MISSING:
            out.append((name, frozen))
    return tuple(out)


def is_module(value) -> bool:
    return hasattr(value, "named_parameters") and hasattr(value, "forward") and hasattr(value, "modules")


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


def collect(fn) -> list:
    """The guards of everything `fn` reads by name: see the module docstring."""
    guards: list = []
    walk = Walk(fn)
    for f in walk:
        if is_module(f):
            mode_in_key = f is fn  # a compiled module's modes are in its call key
            for m in f.modules():
                if m is f or walk.first_visit(m):
                    guards.append(Attributes(m, _module_attrs(m, mode_in_key)))
                    walk.push(getattr(type(m), "forward", None))
            continue
        if is_plain_object(f):
            guards.append(Attributes(f, _module_attrs(f)))
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
            if read.kind == "global":
                if hasattr(value, "_graphmode_traceable"):  # another compiled function, inlined when traced
                    walk.push(value._graphmode_traceable)
                    continue
                follow = is_module(value) or _is_user_function(value) or is_plain_object(value)
            else:
                follow = is_module(value) or is_plain_object(value) or (callable(value) and not isinstance(value, type))
            if follow:
                walk.push(value)
                continue
            frozen = _frozen(value)
            if frozen is not _MISSING:
                what = "global" if read.kind == "global" else "closure variable"
                guards.append(Guard(f"{what} {read.name!r}", read.read, frozen))
    return guards


def first_change(guards: list) -> str | None:
    """The reason the first changed guard gives, or None when every value is as traced."""
    for g in guards:
        why = g.changed()
        if why is not None:
            return why
    return None
