"""`static.compile`: the public wrapper of a compiled function and its options.

A call goes: key of the arguments (static.jit.signature) -> the entry for that key, checked
(captured tensors, guarded Python values) or traced (static.jit.entry) -> run its executable,
write in-place updates back and wrap the outputs (static.jit.bridge); when the call records
gradients, through `CompiledFunction`, whose backward runs the compiled backward.

`Compiled` holds a function's state (options, its per-signature cache, the last call's fast
path); its methods are written by job in the modules beside this one and bound here: the
cache (`lookup`), the call path (`call`), looking inside (`introspect`: `explain`, `ir`,
`source`, `autograd_graphs`, `lower`); the options and argument binding are `options`."""
from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Iterable
from typing import Any

from . import call, dynamic_shapes, introspect, lookup
from .check import env_check
from .entry import Entry
from .introspect import AutogradGraphs
from .options import (
    _DEFAULTS,
    _TORCH_ONLY,
    BACKENDS,
    OPTIONS,
    _any_arguments,
    _check_options,
    _is_module,
    _KeywordCall,
    _kind_of,
    _positions_of,
    _signature_of,
    _StaticKeywords,
    options_of,
)

__all__ = ["AutogradGraphs", "BACKENDS", "Compiled", "OPTIONS", "compile", "options_of"]


class Compiled:
    """A function compiled per call signature. Call it like the original."""

    def __init__(self, fn: Callable, *, backend: str = "auto", static_argnums: int | Iterable[int] = (),
                 static_argnames: str | Iterable[str] = (), fallback: str | None = None, fullgraph: bool = False,
                 max_retraces: int = 8, opt_level: int = 2, passes: Iterable[str] | dict | None = None,
                 fast_math: bool = False, name: str | None = None, check: bool | None = None) -> None:
        _check_options(fn, backend, static_argnums, static_argnames, fallback, fullgraph, max_retraces, opt_level,
                       passes, fast_math)
        self._traceable = fn
        self.backend = backend
        self._signature = _signature_of(fn)
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        self.static_argnames = names
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        self._static_kwonly = frozenset(n for n in names if _kind_of(self._signature, n) == "keyword-only")
        self.static_argnums = tuple(dict.fromkeys(nums + _positions_of(self._signature, names, fn)))
        self.fallback = fallback
        self.fullgraph = fullgraph
        self.max_retraces = max_retraces
        self.opt_level = opt_level
        self.passes = passes
        self.fast_math = fast_math
        if check is not None and not isinstance(check, bool):
            raise TypeError(f"static.compile: check must be True or False, got {check!r}")
        # every call run compiled and eagerly, compared (static.jit.check); GRAPHMODE_CHECK=1 for a whole script
        self.check = env_check() if check is None else check
        self._last_entry: Entry | None = None
        self._refusals_said: set = set()  # the side effects already warned about (static.tracing.side_effects)
        functools.update_wrapper(self, fn if callable(fn) and hasattr(fn, "__name__") else type(fn),
                                 updated=())
        if name is not None:
            self.__name__ = self.__qualname__ = name
        self.__wrapped__ = fn
        self._module: Any = fn if _is_module(fn) else None  # its training mode is part of the key
        self._needs_binding = self._signature is not None and any(
            p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in self._signature.parameters.values())
        self._trace_target = _KeywordCall(fn, self._signature) \
            if self._needs_binding and self._signature is not None else fn
        self._cache: dict = {}
        self._alternates: dict = {}  # key -> earlier entries of that key whose guards failed (see _alternate)
        self._eager_keys: set = set()
        self.retraces: list = []  # why, for each trace after the first
        # seconds each signature took to build (trace, then the post-trace cache or autodiff,
        # passes and code generation), in order: what compiling cost, apart from running
        self.compile_seconds: list = []
        self._gave_up = False
        self._warned_fallback = False
        # the last call's signature, checked in generated code (static.jit.signature.fast_call)
        self._fast: Callable[[tuple], Any] | None = None
        self._fast_entry: Entry | None = None
        self._modes_version = -1
        self._modes_value: tuple = ()
        self._first_step_checked = False  # whether the first call looked for an optimizer's first step
        _fingerprint_early()
        if backend in ("auto", "native"):
            _probe_compiler_early(backend)

    def __getattr__(self, name: str):
        """A compiled module behaves like the module: its attributes, parameters(),
        named_parameters(), state_dict(), train()/eval() (the mode is part of the key), to()."""
        module = self.__dict__.get("_module")
        if module is None or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(module, name)

    @property
    def _graphmode_traceable(self):
        return self._traceable

    @property
    def __signature__(self):
        return self._signature

    def __repr__(self) -> str:
        return f"<static.compile of {self.__name__}: {len(self._cache)} signatures>"

    def __get__(self, instance, owner=None):
        """Decorating a method: `instance.method(x)` calls the compiled function with the
        instance as its first (static, hashable by identity) argument."""
        return self if instance is None else types.MethodType(self, instance)

    # -- arguments -------------------------------------------------------------------------------
    def _arguments(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments as one positional tuple: keywords bound to their positions, so
        that `f(x, lr=0.1)` and `f(x, 0.1)` are one signature (and static_argnums keep meaning
        positions). Keyword-only arguments and **kwargs travel as two trailing dicts (static
        ones as a hashable tuple of items), unpacked again by `_call_traceable`."""
        if not kwargs and not self._needs_binding:
            return args
        sig = self._signature
        if sig is None:
            raise TypeError(f"{self.__name__}: keyword arguments need an inspectable signature")
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if not self._needs_binding:
            return tuple(bound.args)
        keywords = dict(bound.kwargs)
        var_kw = next((p.name for p in sig.parameters.values() if p.kind == p.VAR_KEYWORD), None)
        if var_kw is not None:
            keywords.update(keywords.pop(var_kw, {}))
        static = tuple(sorted((k, v) for k, v in keywords.items() if k in self._static_kwonly))
        dynamic = {k: v for k, v in keywords.items() if k not in self._static_kwonly}
        return (*bound.args, dynamic, _StaticKeywords(static))

    def _call_traceable(self, args: tuple):
        """Run the wrapped function on arguments as `_arguments` arranged them."""
        return self._trace_target(*args)

    def _static_positions(self, args: tuple) -> tuple:
        if self._needs_binding and args and isinstance(args[-1], _StaticKeywords):
            return self.static_argnums + (len(args) - 1,)
        return self.static_argnums

    # -- the per-signature cache (static/jit/lookup.py) ----------------------------------------------
    _lookup = lookup.lookup
    _first_optimizer_step = lookup.first_optimizer_step
    _miss = lookup.miss
    _alternate = lookup.alternate
    entries = lookup.entries

    # -- calling (static/jit/call.py) ----------------------------------------------------------------
    __call__ = call.call
    _call_unchecked = call.call_unchecked
    _refused = call.refused
    _run = call.run
    _modes = call.modes
    _call_with_grad = call.call_with_grad

    # -- looking inside (static/jit/introspect.py) --------------------------------------------------
    _entry_for = introspect.entry_for
    ir = introspect.ir
    explain = introspect.explain
    autograd_graphs = introspect.autograd_graphs
    source = introspect.source
    lower = introspect.lower


for _name, _method in list(vars(Compiled).items()):  # the methods written in lookup, call and introspect
    if isinstance(_method, types.FunctionType) and _method.__module__ != __name__:
        _method.__name__, _method.__qualname__ = _name, f"Compiled.{_name}"  # (reprs, getattr by name)


def _fingerprint_early() -> None:
    """Start hashing the library's sources (the caches' key, codegen.cache.source_fingerprint)
    on a helper thread, so that it overlaps what runs before the first compiled call. From the
    first static.compile, not from the import of this module: the hash writes its manifest
    into the code cache, which a program that only imports static (`graphmode cache info`)
    must find as it was."""
    try:
        from gmbase import cache  # noqa: PLC0415
    except ImportError:
        return
    cache.prefetch_fingerprint()


def _probe_compiler_early(backend: str) -> None:
    """Start probing the C++ compiler on a helper thread when this function may run native
    code: the probe (a few compiler runs, once per machine: its record is cached) then overlaps
    the first call's tracing and passes."""
    try:
        from codegen import native  # noqa: PLC0415  (codegen fills the backend registry)
        from gmnative import build as native_build  # noqa: PLC0415
    except ImportError:
        return
    if backend == "native" or not native.native_disabled():
        native_build.prefetch_probe()


def compile(fn: Callable | None = None, *, backend: str = "auto",  # noqa: A001  (the public name is compile)
            static_argnums: int | Iterable[int] = (), static_argnames: str | Iterable[str] = (),
            fallback: str | None = None, fullgraph: bool = False, max_retraces: int = 8, opt_level: int = 2,
            passes: Iterable[str] | dict | None = None, fast_math: bool = False, check: bool | None = None,
            **unsupported: Any) -> Any:
    """Compile `fn` (a function, or an eager.nn.Module) per call signature.

    Use as `@static.compile`, `@static.compile(option=...)` or `static.compile(fn, ...)`. The
    function is traced on the first call with each new signature (shapes, dtypes, devices,
    pytree structure, requires_grad, static values, grad mode, training mode); the graph is
    optimized and run as generated code on later calls with that signature.

    Args:
        fn: the function or module. Omitted: returns a decorator with these options.
        backend: "auto" (generated code for the inputs' device: native C when a C++ compiler
            is found, else NumPy, on the CPU; CuPy on a GPU), "numpy", "native", "cupy", or
            "interpret" (the reference interpreter).
        static_argnums: positions of arguments that are compile-time constants (hashable; a
            new value retraces), as in jax.jit. Negative positions count from the end.
        static_argnames: parameter names of such arguments (positional or keyword-only).
        fallback: None (a function that cannot be traced raises TraceError) or "eager" (it
            runs eagerly instead, with one warning).
        fullgraph: True never falls back to eager: an untraceable function raises, and so does
            a call past the retrace limit (torch.compile's fullgraph=True).
        max_retraces: how many new signatures after the first are traced before further new
            ones run eagerly (with a warning naming what changed). A non-negative int.
        opt_level: 0 (no passes), 1 (simplifications), 2 (also fusion, memory planning and the
            rematerializing forward/backward split).
        passes: a list naming exactly the passes to run, or a dict switching named passes
            on (True) or off (False).
        fast_math: allow rewrites that change rounding or special values (x + 0.0 -> x).
        check: run every call both compiled and eagerly on the same state and raise
            `static.CheckError` at the first difference, naming the value, the largest
            difference, the IR line and the user's line (static.jit.check). None: the
            environment variable GRAPHMODE_CHECK decides (off unless set to 1).
        dynamic: (a keyword, as torch.compile's) None: a dimension that changes between calls
            is traced once more as a symbol, and that trace serves every later size
            (static.jit.dynamic_shapes); True: every dimension is a symbol from the first call;
            False: each new size is its own trace.

    Returns a `Compiled` wrapper that keeps the wrapped function's name, docstring and
    signature (`__wrapped__` is the original), with `explain()`, `ir()`, `source()` and
    `autograd_graphs()` to look inside."""
    dynamic = unsupported.pop("dynamic", None)  # torch.compile's: static.jit.dynamic_shapes
    if dynamic not in (None, True, False):
        raise TypeError(f"static.compile: dynamic must be None (automatic), True or False, got {dynamic!r}")
    if unsupported:
        name = next(iter(unsupported))
        hint = _TORCH_ONLY.get(name)
        raise TypeError(f"static.compile got an unexpected option {name!r}" + (f" ({hint})" if hint else "")
                        + f"; valid options: {', '.join(OPTIONS)}")
    options = dict(backend=backend, static_argnums=static_argnums, static_argnames=static_argnames,
                   fallback=fallback, fullgraph=fullgraph, max_retraces=max_retraces, opt_level=opt_level,
                   passes=passes, fast_math=fast_math, check=check)
    if fn is None:
        _check_options(_any_arguments, **options)  # checked now, at decoration, not at the first call
        if dynamic is not None:
            return lambda f: dynamic_shapes.with_mode(_compile_with(f, options), dynamic)
        return functools.partial(_compile_with, options=options)
    return dynamic_shapes.with_mode(_compile_with(fn, options), dynamic)


def _compile_with(fn, options: dict) -> Compiled:
    if isinstance(fn, Compiled):
        given = {k: v for k, v in options.items() if v != _DEFAULTS[k]}
        if not given:
            return fn
        return Compiled(fn._traceable, **{**options_of(fn), **given})
    if _is_module(fn):
        return Compiled(fn, name=type(fn).__name__, **options)
    return Compiled(fn, **options)


compile.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # the documented options only
    [p for p in inspect.signature(compile).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD],
    return_annotation=inspect.signature(compile).return_annotation)
