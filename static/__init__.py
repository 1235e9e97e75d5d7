"""static: trace the same functions eager runs into a typed SSA IR, differentiate,
optimize and run them compiled.

    import static
    @static.compile
    def loss(x, w): return (eager.tanh(x * x) * w).sum()
    print(loss.explain(x, w))

The public names below are imported on first use (PEP 562 module `__getattr__`), so
that `import static.ir` - what `codegen` needs - loads the IR and the op set only, not
the tracer, the passes or the compiled-function machinery.
"""
from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from .autodiff.transforms import grad, value_and_grad  # noqa: F401
    from .autodiff.vjp_jvp import jvp, vjp  # noqa: F401
    from .compare import compare  # noqa: F401
    from .control_flow import cond, fori_loop, scan, switch, while_loop  # noqa: F401
    from .errors import IRParseError, IRVerifyError, TraceError  # noqa: F401
    from .interpreter import run_graph  # noqa: F401
    from .ir import Graph, Node, Value, parse_ir  # noqa: F401
    from .ir.verify import verify  # noqa: F401  (the function, not static.ir's submodule of that name)
    from .jit.compiled import Compiled, compile  # noqa: A004, F401
    from .jit.executable import BackendError, register_backend  # noqa: F401
    from .logs import set_logs  # noqa: F401
    from .module_call import functional_call  # noqa: F401
    from .tracing.function import trace  # noqa: F401
    from .vmap import hessian, jacfwd, jacrev, vmap  # noqa: F401

# public name -> the submodule that defines it
_LAZY = {
    "Compiled": "jit.compiled", "compile": "jit.compiled", "grad": "autodiff.transforms",
    "value_and_grad": "autodiff.transforms", "vjp": "autodiff.vjp_jvp", "jvp": "autodiff.vjp_jvp",
    "IRParseError": "errors", "IRVerifyError": "errors", "TraceError": "errors",
    "Graph": "ir", "Node": "ir", "Value": "ir", "parse_ir": "ir", "verify": "ir",
    "trace": "tracing.function", "run_graph": "interpreter", "compare": "compare",
    "register_backend": "jit.executable", "BackendError": "jit.executable", "set_logs": "logs",
    "functional_call": "module_call",
    "cond": "control_flow", "switch": "control_flow", "while_loop": "control_flow", "fori_loop": "control_flow",
    "scan": "control_flow", "vmap": "vmap", "jacrev": "vmap", "jacfwd": "vmap", "hessian": "vmap",
}
# submodules reachable as attributes without importing them first (`static.passes`); the
# modules that moved into tracing/ and jit/ keep their old names as the same module objects
# (static/tracer.py is static.tracing.tracer, static/compiled.py static.jit.compiled, ...)
_SUBMODULES = frozenset({"api", "autodiff", "control_flow", "compare", "errors", "interpreter", "ir", "jit", "logs",
                         "module_call", "passes", "tracing", "training", "update_templates",
                         # old names of the modules now in tracing/ and jit/
                         "bridge", "check", "compiled", "custom_function", "dynamic_shapes", "entry", "executable",
                         "explain_summary", "graph_breaks", "guards", "pytree", "randomness", "reach", "shared_memory",
                         "side_effects", "signature", "stages", "symbolic", "trace_cache", "trace_function",
                         "trace_record", "trace_state", "tracer"})

__all__ = ["Compiled", "compile", "grad", "value_and_grad", "IRParseError", "IRVerifyError", "TraceError",
           "Graph", "Node", "Value", "parse_ir", "verify", "trace", "run_graph", "compare", "register_backend",
           "BackendError", "set_logs", "functional_call", "vjp", "jvp",
           "cond", "switch", "while_loop", "fori_loop", "scan", "vmap", "jacrev", "jacfwd", "hessian"]


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is not None:
        value = getattr(importlib.import_module(f".{where}", __name__), name)
        if name not in _SHADOWED:  # served by _StaticModule
            globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API only (what `__all__` lists): the lazy machinery, the typing imports and
    the submodules already imported are not for users, and tab completion should not offer them."""
    return sorted(__all__)


def _shadowed(name: str) -> property:
    """A module attribute that stays the function `name` (defined in `_LAZY[name]`) even after
    the submodule or subpackage of that name is imported (the import system binds a
    submodule on its package)."""
    key = f"_{name}_override"

    def get(self: types.ModuleType) -> Any:
        override = self.__dict__.get(key)
        return override if override is not None else getattr(importlib.import_module(f".{_LAZY[name]}", __name__),
                                                              name)

    def set_(self: types.ModuleType, value: Any) -> None:
        if not isinstance(value, types.ModuleType):  # a monkeypatch; the import system's binding is ignored
            self.__dict__[key] = value

    def delete(self: types.ModuleType) -> None:
        self.__dict__.pop(key, None)

    return property(get, set_, delete)


class _StaticModule(types.ModuleType):
    """The module's class: `static.compare` is a function that shares its name with the
    submodule defining it (and `static.vmap`)."""

    compare = _shadowed("compare")
    vmap = _shadowed("vmap")


_SHADOWED = frozenset({"compare", "vmap"})


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _StaticModule
