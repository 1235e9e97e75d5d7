"""One lazily built native unit of eager kernels (a csrc/ source compiled on first use), shared
by the kernel modules that keep their own library beside gmnative.kernels' (index_kernels,
softmax_kernels).

Why one place: each such module needs the same four steps (follow kernels' switch, build once
under a lock, fall back to None where no compiler or source, forget on reset) and they had
drifted into copies. `get` stays one dict lookup once loaded: the kernels are called per op.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from . import kernels as _kernels
from ._sources import read_source

T = TypeVar("T")


class LazyUnit(Generic[T]):
    """The unit built from the csrc/ files `sources` (in order, after the host prelude) as
    library `name`, wrapped by make(library, call, formats); None where it cannot run (no
    compiler, GRAPHMODE_EAGER_NATIVE=0)."""

    def __init__(self, sources: tuple[str, ...], name: str, make: Callable[[Any, Any, Any], T]) -> None:
        self._sources = sources
        self._name = name
        self._make = make
        self._state: dict = {}
        self._lock = threading.Lock()

    def get(self) -> T | None:
        """The loaded unit, built on first use; None where it cannot run."""
        if _kernels.kernels() is None:  # switched off (GRAPHMODE_EAGER_NATIVE=0, then kernels.reset()), no compiler
            return None
        found = self._state.get("unit", False)
        if found is not False:
            return found
        with self._lock:
            if "unit" not in self._state:
                self._state["unit"] = self._load()
        return self._state["unit"]

    def _load(self) -> T | None:
        from . import build  # noqa: PLC0415
        from .c_helpers import host_prelude  # noqa: PLC0415

        try:
            parts = [host_prelude(build.toolchain().vector_math), *(read_source(s) for s in self._sources)]
            source = "\n".join(parts)
            library = build.load_library(source, self._name)
            return self._make(library, build.caller(), build.formats)
        except (build.NativeCompileError, OSError, AttributeError):
            return None

    def reset(self) -> None:
        """Forget the loaded unit (the next use looks at GRAPHMODE_EAGER_NATIVE again)."""
        with self._lock:
            self._state.clear()
