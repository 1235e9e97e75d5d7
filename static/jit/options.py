"""`static.compile`'s options, checked when given (at decoration), and how a call's arguments
are arranged into one positional tuple (keywords bound to their positions; keyword-only and
**kwargs ones travelling as two trailing dicts), so that `f(x, lr=0.1)` and `f(x, 0.1)` are
one signature and static_argnums keep meaning positions."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..passes.manager import pipeline_for

if TYPE_CHECKING:
    from .compiled import Compiled

BACKENDS = ("auto", "numpy", "cupy", "native", "interpret")
OPTIONS = ("backend", "static_argnums", "static_argnames", "fallback", "fullgraph", "max_retraces", "opt_level",
           "passes", "fast_math", "check")
_TORCH_ONLY = {
    "mode": "torch.compile's modes choose autotuning and CUDA graphs; static.compile has opt_level=0, 1 or 2 "
            "and passes= to choose the optimizations",
    "options": "pass the options as keyword arguments of static.compile",
    "disable": "call the original function (compiled.__wrapped__) to run it eagerly",
}


def _check_options(fn, backend, static_argnums, static_argnames, fallback, fullgraph, max_retraces, opt_level,
                   passes, fast_math, check=None) -> None:
    """Every option checked when it is given (at decoration), with what would be valid."""
    if check is not None and not isinstance(check, bool):
        raise TypeError(f"static.compile: check must be True, False or None (GRAPHMODE_CHECK decides), got {check!r}")
    if not callable(fn):
        raise TypeError(f"static.compile expects a function or an eager.nn.Module to compile, got "
                        f"{type(fn).__name__} {fn!r}")
    if backend not in BACKENDS:
        raise ValueError(f"static.compile: unknown backend {backend!r}; use one of {', '.join(map(repr, BACKENDS))}")
    if fallback not in (None, "eager"):
        raise ValueError(f"static.compile: fallback must be None or 'eager', got {fallback!r}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"static.compile: fullgraph must be True or False, got {fullgraph!r}")
    if fullgraph and fallback == "eager":
        raise ValueError("static.compile: fullgraph=True never falls back to eager; it cannot be combined with "
                         "fallback='eager'")
    if isinstance(max_retraces, bool) or not isinstance(max_retraces, int):
        raise TypeError(f"static.compile: max_retraces must be a non-negative int, got "
                        f"{type(max_retraces).__name__} {max_retraces!r}")
    if max_retraces < 0:
        raise ValueError(f"static.compile: max_retraces must be a non-negative int, got {max_retraces}")
    if isinstance(opt_level, bool) or opt_level not in (0, 1, 2):
        raise ValueError(f"static.compile: opt_level must be 0, 1 or 2, got {opt_level!r}")
    if not isinstance(fast_math, bool):
        raise TypeError(f"static.compile: fast_math must be True or False, got {fast_math!r}")
    if isinstance(passes, str):
        raise TypeError(f"static.compile: passes must be a list of pass names (passes=[{passes!r}]) or a dict "
                        f"switching passes on and off, not the string {passes!r}")
    if passes is not None:
        if not isinstance(passes, dict):
            passes = _strings(passes, list, "passes must be a list of pass names or a dict",
                              "passes must name passes by string")
        try:
            pipeline_for(opt_level, passes)
        except ValueError as exc:
            raise ValueError(f"static.compile: {exc}") from None
    _check_argnums(fn, static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
    _strings(names, tuple, "static_argnames must be a name or a sequence of names", "static_argnames must be strings")


def _strings(value: Any, collect: type, not_a_sequence: str, not_strings: str) -> Any:
    """`value` collected into a `collect` (list or tuple) of strings; otherwise the TypeError
    of the static.compile option, saying which of the two it is not."""
    try:
        items = collect(value)
    except TypeError:
        raise TypeError(f"static.compile: {not_a_sequence}, got {type(value).__name__}") from None
    if not all(isinstance(item, str) for item in items):
        raise TypeError(f"static.compile: {not_strings}, got {items!r}")
    return items


def _check_argnums(fn, static_argnums) -> None:
    nums = (static_argnums,) if isinstance(static_argnums, int) and not isinstance(static_argnums, bool) \
        else static_argnums
    if isinstance(nums, (str, bytes)) or not isinstance(nums, Iterable):
        raise TypeError(f"static.compile: static_argnums must be an int or a sequence of ints, got "
                        f"{type(static_argnums).__name__} {static_argnums!r}")
    nums = tuple(nums)
    bad = [n for n in nums if isinstance(n, bool) or not isinstance(n, int)]
    if bad:
        raise TypeError(f"static.compile: static_argnums must be ints, got {bad[0]!r} in {static_argnums!r}")
    sig = _signature_of(fn)
    if sig is None or not nums:
        return
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return  # *args: any position may exist
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    for i in nums:
        if not -n <= i < n:
            name = getattr(fn, "__name__", None) or f"{type(fn).__name__}.forward"  # (a module has no __name__)
            shown = ", ".join(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
            raise ValueError(f"static.compile: static_argnums={static_argnums!r} refers to position {i}, but "
                             f"{name}({shown}) accepts {n} positional argument(s); positions count from 0, "
                             "negative ones from the end")


def _signature_of(fn) -> inspect.Signature | None:
    try:
        return inspect.signature(fn.forward if _is_module(fn) else fn)
    except (TypeError, ValueError):
        return None


def _kind_of(sig: inspect.Signature | None, name: str) -> str | None:
    if sig is None or name not in sig.parameters:
        return None
    return "keyword-only" if sig.parameters[name].kind == inspect.Parameter.KEYWORD_ONLY else "positional"


def _positions_of(sig: inspect.Signature | None, names: tuple, fn) -> tuple:
    """Positions of the positional parameters named in static_argnames."""
    if not names:
        return ()
    if sig is None:
        raise ValueError(f"static.compile: static_argnames={names!r} needs an inspectable signature of "
                         f"{getattr(fn, '__name__', fn)!r}")
    params = list(sig.parameters.values())
    has_var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
    out = []
    for n in names:
        if n not in sig.parameters:
            if has_var_kw:
                continue
            raise ValueError(f"static.compile: static_argnames names {n!r}, which is not a parameter of "
                             f"{getattr(fn, '__name__', 'the function')}{sig}")
        p = sig.parameters[n]
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            out.append(params.index(p))
    return tuple(out)


def _is_module(obj) -> bool:
    return hasattr(obj, "named_parameters") and hasattr(obj, "forward") and callable(obj)


class _KeywordCall:
    """The function as tracing calls it when it has keyword-only parameters or **kwargs: the
    arguments arrive as `_arguments` arranges them (positional ones, then a dict of the
    keyword ones, then the static keyword ones) and are passed on by name."""

    def __init__(self, fn: Callable, sig: inspect.Signature) -> None:
        self.fn = fn
        self.__wrapped__ = fn  # captured tensors keep their names and call-time sources
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        positional = [p for p in sig.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
        extra = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in ("kwargs", "static_kwargs")]
        if positional and positional[-1].kind == inspect.Parameter.VAR_POSITIONAL:
            positional = positional[:-1]
        self.__signature__ = inspect.Signature(
            [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY, default=inspect.Parameter.empty) for p in positional]
            + extra)

    def __call__(self, *args):
        if args and isinstance(args[-1], _StaticKeywords):
            return self.fn(*args[:-2], **args[-2], **dict(args[-1].items))
        return self.fn(*args)


class _StaticKeywords:
    """Keyword arguments named in static_argnames: hashed by value, part of the cache key."""

    __slots__ = ("items",)

    def __init__(self, items: tuple) -> None:
        self.items = items

    def __hash__(self) -> int:
        return hash(self.items)

    def __eq__(self, other) -> bool:
        return isinstance(other, _StaticKeywords) and other.items == self.items

    def __repr__(self) -> str:
        return f"static keywords {dict(self.items)!r}"


def _any_arguments(*args: Any, **kwargs: Any) -> None:
    """Stands for the function not given yet when options are checked."""


_DEFAULTS = dict(backend="auto", static_argnums=(), static_argnames=(), fallback=None, fullgraph=False,
                 max_retraces=8, opt_level=2, passes=None, fast_math=False, check=None)


def options_of(c: Compiled) -> dict:
    """The options a compiled function was made with (to compile a transform of it alike)."""
    return dict(backend=c.backend, static_argnums=c.static_argnums, static_argnames=c.static_argnames,
                fallback=c.fallback, fullgraph=c.fullgraph, max_retraces=c.max_retraces, opt_level=c.opt_level,
                passes=c.passes, fast_math=c.fast_math, check=c.check)
