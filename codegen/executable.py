"""What `build` returns: a graph's generated module(s), ready to run.

backend="numpy" and "cupy" generate (or find in the cache) one module each; "auto" runs
the NumPy module unless the arrays given to run() are CuPy arrays, and generates the CuPy
module the first time that happens."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gmbase import cache, settings
from static.ir import Graph

from . import loader, runtime  # noqa: F401  (runtime: what every generated module

# imports; loaded with the package so that a first compile does not pay for it)

BACKENDS = ("auto", "numpy", "cupy")


def _library_version(backend: str) -> str:
    if backend == "numpy":
        return f"numpy-{np.__version__}"
    try:
        import cupy  # noqa: PLC0415

        return f"cupy-{cupy.__version__}"
    except Exception:  # noqa: BLE001 - no CuPy (or a broken one): generation does not need it
        return "cupy-none"


def generator_input(graph: Graph, ir_text: str | None = None) -> str:
    """Everything the generators read, as text: the IR, each node's source location (cited in
    the generated code) and the memory plan. The cache key is made from this, so two graphs
    that would generate different code never share a cached module. `ir_text` is str(graph)
    where the caller has it already (printing a large graph costs milliseconds)."""
    parts = [str(graph) if ir_text is None else ir_text, "# locations"]
    stack = list(graph.nodes)
    while stack:
        node = stack.pop(0)
        parts.append(node.loc or "-")
        if node.body is not None:
            stack[:0] = node.body.nodes
    plan = graph.memory_plan
    parts.append("# memory plan\n" + (plan.text() if plan is not None else "none"))
    return "\n".join(parts)


def generate_source(graph: Graph, backend: str) -> tuple[str, str]:
    """(source, description) of the module for graph on backend 'numpy' or 'cupy'."""
    if backend == "numpy":
        from .numpy_gen import generate  # noqa: PLC0415
    elif backend == "cupy":
        from .cupy_gen import generate  # noqa: PLC0415
    else:
        raise ValueError(f"codegen: no generator for backend {backend!r}")
    return generate(graph)


def _is_cupy(a) -> bool:
    return type(a).__module__.startswith("cupy")


class CompiledGraph:
    """run(arrays) -> list of arrays, describe() and source() of the generated code."""

    def __init__(self, graph: Graph, backend: str = "auto", ir_text: str | None = None) -> None:
        """ir_text: str(graph), where the caller has it (the post-trace cache keeps it in its
        record), so a graph read from the disk cache is not printed again to find its module."""
        if backend not in BACKENDS:
            raise ValueError(f"codegen: unknown backend {backend!r}; use one of {BACKENDS}")
        self.graph = graph
        self.backend = backend
        self.ir_text = str(graph) if ir_text is None else ir_text
        self.key_text = generator_input(graph, self.ir_text)
        from .render import entry_name  # noqa: PLC0415  (render imports static.ir only)

        self.entry = entry_name(graph)  # the module's entry function: forward or backward
        self._loaded: dict = {}
        self._descriptions: dict = {}
        self._forward: Callable[..., list] | None = None
        if backend in ("auto", "numpy"):
            self._forward = getattr(self._load("numpy").module, self.entry)

    def _load(self, which: str) -> loader.Loaded:
        found = self._loaded.get(which)
        if found is None:
            key = cache.key(self.key_text, which, _library_version(which) + settings.fingerprint(which))

            def generate() -> str:
                src, desc = generate_source(self.graph, which)
                self._descriptions[which] = desc
                return src

            found = loader.load(key, which, generate)
            self._loaded[which] = found
        return found

    def run(self, arrays: list) -> list:
        if self.backend == "cupy" or (self.backend == "auto" and any(
                type(a) is not np.ndarray and _is_cupy(a) for a in arrays)):
            return getattr(self._load("cupy").module, self.entry)(*arrays)
        assert self._forward is not None  # set in __init__ for "auto" and "numpy"
        return self._forward(*arrays)

    def source(self, which: str | None = None) -> str:
        """The generated module's source (NumPy's unless the backend is CuPy)."""
        which = which or ("cupy" if self.backend == "cupy" else "numpy")
        if which in self._loaded:
            return self._loaded[which].source
        return generate_source(self.graph, which)[0]

    def describe(self) -> str:
        parts = []
        for which in self._loaded or {("cupy" if self.backend == "cupy" else "numpy"): None}:
            loaded = self._loaded.get(which)
            doc = (loaded.module.__doc__ or "").strip().split("\n\n")[1] if loaded and loaded.module.__doc__ else ""
            where = f"{loaded.path}" if loaded and loaded.path else "memory (GRAPHMODE_CACHE=0)"
            origin = loaded.origin if loaded else "not generated yet"
            parts.append(f"backend: {which} (requested {self.backend!r}) - generated module of @{self.graph.name}, "
                         f"{origin}, loaded from {where}.\n{doc}")
        if self.backend == "auto":
            parts.append("auto: NumPy module for NumPy arrays; a CuPy module is generated when run() gets CuPy arrays.")
            from .native import auto_note  # noqa: PLC0415  (whether backend='native' could run, or why not)

            parts.append(auto_note())
        return "\n".join(parts)
