"""codegen: graphmode's optimized IR -> NumPy or CuPy source, from jinja2 templates,
loaded as real modules and cached on disk.

    exe = codegen.build(graph, "numpy")     # or "cupy", or "auto"
    exe.run(arrays) -> list of arrays; exe.source(); exe.describe()

The pieces, one job each: lowering.py (every op, per backend), regions.py (what a fused
region computes), numpy_gen.py / cupy_gen.py (module emitters), templates/ (the module
skeletons), cache.py + loader.py (the disk cache and importing), runtime.py (what the
NumPy modules call: blocks, threads, scratch buffers)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from static.ir import Graph

    from .executable import CompiledGraph, generate_source
    from .lowering import TABLE, lowering_for, missing_ops
    from .native import NativeGraph

__all__ = ["build", "CompiledGraph", "generate_source", "TABLE", "lowering_for", "missing_ops"]

# Imported when first asked for: eager's native kernels (gmnative.kernels) import this
# package too, and a script that only runs eager code should not pay for the IR parser and
# the generators (about 50 ms).
_LAZY = {"CompiledGraph": "executable", "generate_source": "executable", "TABLE": "lowering",
         "lowering_for": "lowering", "missing_ops": "lowering"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'codegen' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def build(graph: Graph, backend: str = "auto", fast_math: bool = False,
          ir_text: str | None = None) -> CompiledGraph | NativeGraph:
    """Generate (or find in the cache) and load the module(s) running `graph`. `fast_math`
    reaches the native backend's compiler (-ffast-math when compiling, never when linking);
    the NumPy and CuPy modules have no such switch (the passes already saw it). `ir_text`
    is str(graph) where the caller has it already: the module's cache key is made from it."""
    from .executable import CompiledGraph  # noqa: PLC0415

    if backend in ("native", "auto"):  # native: C++ compiled for this CPU (native.py)
        from .native import NativeGraph, auto_backend  # noqa: PLC0415

        if backend == "native" or auto_backend() == "native":
            return NativeGraph(graph, fast_math=fast_math, requested=backend, ir_text=ir_text)
    return CompiledGraph(graph, backend, ir_text=ir_text)
