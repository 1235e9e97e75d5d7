"""What runs a graph: a backend, looked up by name in one registry.

A backend is a factory `factory(graph, name) -> executable`, where the executable has
`run(arrays) -> list`, `describe() -> str` and `source() -> str`. The reference interpreter
is the backend "interpret"; `codegen` provides "numpy", "cupy" and "auto" (NumPy code for
NumPy arrays, CuPy code for CuPy arrays). A factory given as "module:attribute" is imported
the first time a graph asks for it, so that `import static` never imports codegen, and
codegen imports nothing of static but `static.ir`. Adding a backend is one call:

    static.register_backend("native", "codegen:build")

Asking for a backend by name that cannot load is an error naming the cause (a missing
dependency, or another module called `codegen` shadowing this one); only "auto" falls back
to the interpreter, with one warning per process."""
from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..interpreter import run_graph
from ..ir import Graph

Factory = Callable[..., Any]  # factory(graph, name, fast_math=False) -> executable


class BackendError(RuntimeError):
    """A backend asked for by name cannot be used (unknown, or failed to load)."""


class BackendFallbackWarning(RuntimeWarning):
    """backend="auto" runs the reference interpreter because no code generator loads."""


class InterpretedGraph:
    """Runs a graph with the reference interpreter."""

    def __init__(self, graph: Graph, xp=None) -> None:
        self.graph, self.xp = graph, xp  # None: the array module of the arrays it is given

    def run(self, arrays: list) -> list:
        return run_graph(self.graph, arrays, self.xp)

    def describe(self) -> str:
        return (f"backend: interpret - the reference interpreter runs the {len(self.graph.nodes)} nodes of "
                f"@{self.graph.name} one by one with each op's forward")

    def source(self) -> str:
        return ""


@dataclass
class _Backend:
    name: str
    target: Factory | str  # a factory, or "module:attribute" naming one
    loaded: Factory | None = None

    def load(self) -> Factory:
        """The factory, importing its module on first use; BackendError saying why not."""
        if self.loaded is not None:
            return self.loaded
        if callable(self.target):
            self.loaded = self.target
            return self.loaded
        module_name, _, attr = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise BackendError(f"backend {self.name!r} cannot load: importing {module_name} failed: "
                               f"{type(exc).__name__}: {exc}") from exc
        factory = getattr(module, attr, None)
        if not callable(factory):
            where = getattr(module, "__file__", None) or "a namespace package"
            raise BackendError(f"backend {self.name!r} cannot load: module {module_name} ({where}) has no "
                               f"{attr}(); is another module named {module_name!r} on sys.path shadowing "
                               "graphmode's? Rename that file or fix sys.path")
        self.loaded = factory
        return factory


_REGISTRY: dict[str, _Backend] = {}
_warned_fallback = False


def register_backend(name: str, factory: Factory | str, *, replace: bool = False) -> None:
    """Make `static.compile(backend=name)` use `factory(graph, name, fast_math=False) -> executable`.

    `factory` may be "module:attribute", imported on first use. Registering a name twice
    is an error unless `replace=True` (tests use it to install fakes)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_backend: name must be a non-empty string, got {name!r}")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise TypeError(f"register_backend({name!r}): factory must be callable or 'module:attribute', "
                        f"got {factory!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"register_backend: backend {name!r} is already registered (pass replace=True)")
    _REGISTRY[name] = _Backend(name, factory)


def unregister_backend(name: str) -> None:
    """Remove a backend (tests that registered one clean up with this)."""
    _REGISTRY.pop(name, None)


def backend_names() -> tuple[str, ...]:
    """Every registered backend name, "auto" and "interpret" included."""
    return tuple(_REGISTRY)


def load_backend(name: str) -> Factory:
    """The factory for `name`; BackendError when it is unknown or cannot load."""
    backend = _REGISTRY.get(name)
    if backend is None:
        raise BackendError(f"unknown backend {name!r}; registered: {', '.join(_REGISTRY)}")
    return backend.load()


def backend_available(name: str) -> bool:
    """Whether `name` is registered and loads (without building anything)."""
    try:
        load_backend(name)
    except BackendError:
        return False
    return True


@dataclass(frozen=True)
class Capabilities:
    """What a backend's generated code can do, declared by the backend: facts of the backend,
    where op records hold facts of the ops (a pointwise op is fusible; whether a backend can
    spell it inside a fused region is the backend's to say).

    inline: "module:function", the predicate on an op record saying whether the backend can
      put that fusible pointwise op inside a fused region (imported when first asked, so
      static imports no generator); None: every fusible op (the reference interpreter).
    row_regions: fusion may make regions that reduce along their last axis and read the
      result back (passes.fusion.Fuser): the native backend runs each as one kernel per row;
      the others would run one op at a time, slower than the regions they replace.
    image_convolutions: the backend runs a convolution traced image by image (unfold, one
      product per image) as kernels that make each image's columns in cache, forward and
      weight gradient each alone (codegen/native_gen/conv_images_split.py): the remat split
      then saves the convolution's input rather than its columns (passes.remat)."""

    inline: str | None = None
    row_regions: bool = False
    image_convolutions: bool = False


# what a graph built for no named backend assumes: ops with a C expression inline (the
# strictest built-in backends'), no row regions
DEFAULT_CAPABILITIES = Capabilities(inline="codegen.lowering:c_inlinable")
_CAPABILITIES: dict[str, Capabilities] = {}


def declare_capabilities(name: str, capabilities: Capabilities) -> None:
    """Declare what backend `name` can do (see Capabilities); undeclared backends get
    DEFAULT_CAPABILITIES."""
    _CAPABILITIES[name] = capabilities


def capabilities(backend: str | None) -> Capabilities:
    """The declared capabilities of `backend`; "auto" has those of the backend it runs
    (codegen.native.auto_backend: native where a C++ compiler answers, else numpy)."""
    if backend is None:
        return DEFAULT_CAPABILITIES
    if backend == "auto":
        try:
            from codegen.native import auto_backend  # noqa: PLC0415
        except ImportError:
            return _CAPABILITIES["interpret"]
        backend = auto_backend()
    return _CAPABILITIES.get(backend, DEFAULT_CAPABILITIES)


_PREDICATES: dict[str, Callable[[Any], bool]] = {}


def inline_predicate(backend: str | None) -> Callable[[Any], bool] | None:
    """The backend's `inline` predicate, imported on first use; None: every fusible op."""
    target = capabilities(backend).inline
    if target is None:
        return None
    found = _PREDICATES.get(target)
    if found is None:
        module, _, attribute = target.partition(":")
        try:
            found = _PREDICATES[target] = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError):  # no code generator: only the interpreter can run the graph,
            return None  # and building for the backend raises BackendError naming the cause
    return found


def row_regions(backend: str) -> bool:
    """Whether fusion makes row regions for `backend` (its declared capabilities)."""
    return capabilities(backend).row_regions


def build_executable(graph: Graph, backend: str, fast_math: bool = False, ir_text: str | None = None):
    """The executable for `graph` on `backend`. "auto" falls back to the interpreter, with
    one BackendFallbackWarning per process, when its code generator cannot load. `fast_math`
    lets a backend that compiles (native) use faster, less exact arithmetic. `ir_text`, the
    graph's text where the caller has it, reaches factories that take it (codegen keys its
    modules by that text: a graph read from the disk cache need not be printed again)."""
    global _warned_fallback
    try:
        factory = load_backend(backend)
    except BackendError as exc:
        if backend != "auto":
            raise
        if not _warned_fallback:
            _warned_fallback = True
            warnings.warn(f"static: {exc}; running the reference interpreter instead (slow). "
                          "Ask for backend='interpret' to silence this.", BackendFallbackWarning, stacklevel=3)
        return InterpretedGraph(graph)
    if ir_text is not None and _takes_ir_text(factory):
        return factory(graph, backend, fast_math=fast_math, ir_text=ir_text)
    return factory(graph, backend, fast_math=fast_math)


_TAKES_IR_TEXT: dict = {}


def _takes_ir_text(factory: Factory) -> bool:
    """Whether the factory has an `ir_text` parameter (registered factories need not)."""
    found = _TAKES_IR_TEXT.get(factory)
    if found is None:
        try:
            found = "ir_text" in inspect.signature(factory).parameters
        except (TypeError, ValueError):
            found = False
        _TAKES_IR_TEXT[factory] = found
    return found


def _interpret(graph: Graph, _name: str, fast_math: bool = False) -> InterpretedGraph:
    return InterpretedGraph(graph)


register_backend("interpret", _interpret)
register_backend("auto", "codegen:build")
register_backend("numpy", "codegen:build")
register_backend("cupy", "codegen:build")
register_backend("native", "codegen:build")
declare_capabilities("interpret", Capabilities(inline=None))
declare_capabilities("numpy", Capabilities(inline="codegen.lowering:inlinable"))
declare_capabilities("cupy", Capabilities(inline="codegen.lowering:c_inlinable"))
declare_capabilities("native", Capabilities(inline="codegen.lowering:c_inlinable", row_regions=True,
                                            image_convolutions=True))
