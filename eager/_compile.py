"""`eager.compile`: torch.compile's signature as a front door onto `static.compile`, so that a
PyTorch script run with `import eager as torch` compiles where it asked to.

torch.compile never breaks a program that runs eagerly: what it cannot capture runs
eagerly (a graph break). The same holds here: without `fullgraph=True`, a function that
cannot be traced runs eagerly, with one warning (static.compile's fallback="eager"). The
static package is imported at the first call, not with eager, which it builds on."""
from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any

from . import _dynamo
from ._dynamo import config
from ._dynamo import testing as _testing

# torch.compile's modes choose autotuning and CUDA graphs: no counterpart here, and no
# effect on the numbers, so each is accepted and compiles as the default does
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# torch's backends that run the captured graph eagerly (for debugging): the function as it is
EAGER_BACKENDS = ("eager", "aot_eager")
# torch's default backend: graphmode's default code generation
TORCH_DEFAULT_BACKEND = "inductor"


def compile(model: Callable | None = None, *, fullgraph: bool = False,  # noqa: A001  (torch's name)
            dynamic: bool | None = None, backend: str = TORCH_DEFAULT_BACKEND, mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False) -> Any:
    """Compile a function or module, as torch.compile does (mirrors its signature).

    Args:
        model: the function or eager.nn.Module; omitted, a decorator is returned.
        fullgraph: True: a function that cannot be traced whole raises TraceError; False
            (PyTorch's default): it runs eagerly, with one warning.
        dynamic: None (automatic, PyTorch's default): a dimension that changes between calls
            is traced once more as a symbol, and that trace serves every later size; True:
            every dimension is a symbol from the first call; False: every size is its own
            trace. eager.compiler.mark_dynamic marks one dimension; eager._dynamo.config's
            automatic_dynamic_shapes and assume_static_by_default set the default.
        backend: "inductor" (PyTorch's default) compiles with graphmode's default code
            generation ("auto": C on the CPU when a compiler is found, else NumPy; CuPy on
            a GPU); "eager" and "aot_eager" return the function unchanged; a graphmode
            backend ("auto", "numpy", "native", "cupy", "interpret") is used as given.
        mode: one of PyTorch's modes; they choose autotuning and CUDA graphs there and do
            not change results, so each compiles as the default does.
        options: static.compile's own options by name (opt_level, passes, fast_math,
            max_retraces, static_argnums, ...); PyTorch's inductor options are refused.
        disable: True returns the function unchanged, as PyTorch does.

    Returns, for a function, what static.compile returns: a wrapper that keeps the
    function's name and signature, with explain(), ir() and source() to see what the
    compiler made of it. For an eager.nn.Module, PyTorch's OptimizedModule
    (eager._dynamo.eval_frame): an nn.Module holding the model as `_orig_mod` (state_dict
    keys carry that prefix), whose calls run the compiled forward."""
    if mode not in MODES:
        raise RuntimeError(f"eager.compile: unrecognized mode={mode!r}; valid modes: "
                           f"{', '.join(repr(m) for m in MODES[1:])}")
    counter = None
    if isinstance(backend, _testing.CompileCounter):  # torch._dynamo.testing.CompileCounter: counts compiles
        counter = backend
        backend = getattr(backend, "backend", TORCH_DEFAULT_BACKEND)
        if backend in EAGER_BACKENDS:  # PyTorch's counter with "eager" still captures graphs: so does this one
            backend = TORCH_DEFAULT_BACKEND
    if not isinstance(backend, str):
        raise TypeError(f"eager.compile: backend must be a string, got {type(backend).__name__}: callables "
                        "(custom torch.compile backends) receive FX graphs, which graphmode does not make "
                        "(eager._dynamo.testing.CompileCounter is accepted, to count compiles)")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"eager.compile: options must be a dict of static.compile options, got "
                        f"{type(options).__name__}")
    if dynamic not in (None, True, False):
        raise TypeError(f"eager.compile: dynamic must be None, True or False, got {dynamic!r}")
    if disable:
        return model if model is not None else (lambda fn: fn)
    if backend in EAGER_BACKENDS:
        # a module still comes back wrapped, as PyTorch's: its state_dict keys carry `_orig_mod.`
        if _is_module(model):
            return _optimized(model, model, functools.partial(compile, backend=backend))
        return model if model is not None else (lambda fn: fn)
    if model is None:  # @eager.compile(...) with options: the decorator
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=counter or backend, mode=mode,
                                  options=options, disable=disable)
    if getattr(model, "_graphmode_disabled", False):  # marked with eager.compiler.disable
        return model
    # looked up at run time: static builds on eager, so no eager module imports it statically
    static_compile = importlib.import_module("static").compile

    kwargs: dict[str, Any] = {"backend": "auto" if backend == TORCH_DEFAULT_BACKEND else backend,
                              "fullgraph": fullgraph,
                              "dynamic": config.dynamic_default() if dynamic is None else dynamic,
                              # torch's cache_size_limit counts signatures, max_retraces those after the first
                              "max_retraces": max(config.cache_size_limit - 1, 0)}
    if not fullgraph:
        kwargs["fallback"] = "eager"
    for name, value in (options or {}).items():
        if name in ("fullgraph", "backend"):
            raise TypeError(f"eager.compile: give {name} as eager.compile's own argument, not in options")
        kwargs[name] = value
    try:
        made = _dynamo.register(static_compile(model, **kwargs))
        made = counter.attach(made) if counter is not None else made
        if _is_module(model):  # a copy of the compiled module (copy.deepcopy) is compiled alike
            return _optimized(model, made, functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic,
                                                             backend=counter or backend, mode=mode,
                                                             options=options))
        return made
    except TypeError as exc:
        if "unexpected option" in str(exc):
            raise TypeError(f"eager.compile: options: {exc} (PyTorch's inductor options have no counterpart "
                            "here)") from None
        raise


def _is_module(obj: Any) -> bool:
    """Whether `obj` is an eager.nn.Module (nn is loaded lazily: an object can be one only once it is)."""
    module = sys.modules.get("eager.nn.module")
    return module is not None and isinstance(obj, module.Module)


def _optimized(mod: Any, compiled: Any, recompile: Callable[[Any], Any]) -> Any:
    """torch.compile(module)'s result: an OptimizedModule holding the module as `_orig_mod`;
    `recompile` compiles another module with the same options (for its copies and pickles)."""
    from ._dynamo.eval_frame import OptimizedModule  # noqa: PLC0415  (loads nn, which a module's owner has)

    return OptimizedModule(mod, compiled, recompile)
