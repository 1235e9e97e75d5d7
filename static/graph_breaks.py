"""Graph breaks: what a trace meets that needs real data or real Python (`.item()`, `bool()`
of a tensor, `print`, a function marked with disable()).

`break_graph(fn, args, kwargs, reason)` is called where the trace meets such a call. It
raises TraceError naming the reason and the user's line: `static.compile(fallback="eager")`
(eager.compile's default without fullgraph=True) then runs the function eagerly."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import TraceError


def break_graph(fn: Callable, args: tuple, kwargs: dict, reason: str) -> Any:
    """The trace cannot go through `fn(*args, **kwargs)`: TraceError saying why."""
    raise TraceError(f"graph break: {reason}")
