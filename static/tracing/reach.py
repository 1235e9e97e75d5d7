"""The walk over what a traced function can read by name.

Two questions are asked of the same reach: which Python values a trace bakes in (the guards,
`static.tracing.guards.collect`) and which tensors it reads from outside (the named captured inputs,
`static.tracing.function.named_sources`). Both start at the function, follow what it wraps, the instance
and function of a bound method, and the globals and closure cells its code names; they differ
only in what they record and which values they follow further. This module holds the walk;
the callers hold those decisions."""
from __future__ import annotations

import dis
import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import CodeType
from typing import Any


class Walk:
    """A worklist over objects, each visited once (by identity).

    Iterating yields every new object pushed so far or while iterating; `None` is passed
    over. Before an object is yielded, what it wraps (`__wrapped__`, as `functools.wraps`
    leaves it) is pushed, and a bound method is replaced by its instance and function. The
    caller decides what else to follow, with `push`."""

    def __init__(self, root: Any) -> None:
        self._todo: list[Any] = [root]
        self._seen: set[int] = set()

    def push(self, *objs: Any) -> None:
        self._todo.extend(objs)

    def first_visit(self, obj: Any) -> bool:
        """Mark `obj` as visited; True when it had not been (for objects the caller handles
        itself, such as a module's submodules)."""
        if id(obj) in self._seen:
            return False
        self._seen.add(id(obj))
        return True

    def __iter__(self) -> Iterator[Any]:
        while self._todo:
            f = self._todo.pop()
            if f is None or not self.first_visit(f):
                continue
            self._todo.append(getattr(f, "__wrapped__", None))
            if inspect.ismethod(f):
                self._todo += [f.__self__, f.__func__]
                continue
            yield f


@dataclass(frozen=True)
class NameRead:
    """One name a function's code reads from outside: a global or a closure variable."""

    kind: str  # "global" or "closure"
    name: str
    value: Any
    read: Callable[[], Any]  # reads the name again, where the function reads it


# The bytecode's global loads, read straight from co_code: dis.get_instructions builds an
# Instruction object per instruction (about 1 ms for a training step's functions, a fifth of
# tracing a small function from the disk cache). Since Python 3.11 LOAD_GLOBAL's argument
# carries a flag in its low bit (push NULL first) and the name index above it; inline cache
# entries follow some instructions as CACHE (opcode 0) units, which load nothing.
_LOAD_GLOBAL = dis.opmap["LOAD_GLOBAL"]
_LOAD_NAME = dis.opmap["LOAD_NAME"]
_EXTENDED_ARG = dis.EXTENDED_ARG
_GLOBAL_INDEX_SHIFT = 1 if sys.version_info >= (3, 11) else 0


def global_loads(code: CodeType) -> set[str]:
    """The names `code` itself (not the code nested in it) loads with LOAD_GLOBAL or LOAD_NAME."""
    raw, names = code.co_code, code.co_names
    found = set()
    extended = 0
    for at in range(0, len(raw), 2):
        op, arg = raw[at], raw[at + 1] | extended
        if op == _EXTENDED_ARG:
            extended = arg << 8
            continue
        extended = 0
        if op == _LOAD_GLOBAL:
            found.add(names[arg >> _GLOBAL_INDEX_SHIFT])
        elif op == _LOAD_NAME:
            found.add(names[arg])
    return found


@functools.lru_cache(maxsize=4096)
def code_names(code: CodeType) -> frozenset[str]:
    """The global names `code` and the code nested in it load. Read from the bytecode's
    LOAD_GLOBAL/LOAD_NAME instructions, not from co_names, which also holds every attribute
    name: `opt.step()` named a global `step`, so a training loop's `for step in range(...)`
    at module level retraced the compiled step on every iteration."""
    names = global_loads(code)
    for const in code.co_consts:
        if isinstance(const, CodeType):  # nested functions, lambdas, comprehensions
            names |= code_names(const)
    return frozenset(names)


def names_read(f: Any) -> Iterator[NameRead]:
    """The globals that `f`'s code names and that exist, then its non-empty closure cells."""
    code = f.__code__
    gl = getattr(f, "__globals__", {})
    for name in code_names(code):
        if name in gl:
            yield NameRead("global", name, gl[name], functools.partial(gl.__getitem__, name))
    for name, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        yield NameRead("closure", name, value, functools.partial(getattr, cell, "cell_contents"))
    # default values (`def step(x, model=model, opt=opt)`): read like closure cells, and read
    # again through the function (a new __defaults__ is seen)
    defaults = getattr(f, "__defaults__", None) or ()
    if defaults:
        names = code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]
        for i, (name, value) in enumerate(zip(names, defaults)):
            yield NameRead("closure", name, value, functools.partial(_default, f, i))
    for name, value in (getattr(f, "__kwdefaults__", None) or {}).items():
        yield NameRead("closure", name, value, functools.partial(_kwdefault, f, name))


def _default(f: Any, i: int) -> Any:
    return f.__defaults__[i]


def _kwdefault(f: Any, name: str) -> Any:
    return f.__kwdefaults__[name]
