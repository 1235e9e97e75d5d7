"""What the compiler tells you while it works, through Python's `logging`.

In the spirit of `TORCH_LOGS` and `JAX_LOG_COMPILES`: each kind of message has a logger,
silent unless switched on, by the environment or from code:

    GRAPHMODE_LOGS=recompiles,cache python train.py      # or GRAPHMODE_LOGS=all
    static.set_logs(recompiles=True, stages=True)         # or static.set_logs("all")

| name         | logger                  | says                                                |
|--------------|-------------------------|-----------------------------------------------------|
| `recompiles` | `graphmode.recompiles`  | each new trace of a compiled function, with why     |
| `stages`     | `graphmode.stages`      | the IR after each optimization stage                |
| `source`     | `graphmode.source`      | where the generated module's source file is         |
| `cache`      | `graphmode.cache`       | code cache hits and misses, with the key            |
| `graph_breaks` | `graphmode.graph_breaks` | each graph break: its user line and reason        |

The switch sets the loggers' level to DEBUG and prints them on stderr; a program that
configures `logging` itself can instead set the levels of these loggers as it likes.
Code elsewhere logs with one line: `logs.recompiles.debug("...", ...)` (or, in a package
that must not import static, `logging.getLogger("graphmode.cache")`)."""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable

PARENT = "graphmode"
NAMES = ("recompiles", "stages", "source", "cache", "graph_breaks")
ENV = "GRAPHMODE_LOGS"

recompiles = logging.getLogger(f"{PARENT}.recompiles")
stages = logging.getLogger(f"{PARENT}.stages")
source = logging.getLogger(f"{PARENT}.source")
cache = logging.getLogger(f"{PARENT}.cache")
graph_breaks = logging.getLogger(f"{PARENT}.graph_breaks")  # each graph break: user line, reason (static.graph_breaks)

_handler: logging.Handler | None = None


def parse_spec(spec: str | Iterable[str] | None) -> set[str]:
    """'recompiles,cache' / 'all' / '' -> the set of names; ValueError naming a bad one."""
    if spec is None:
        return set()
    items = spec.replace(" ", ",").split(",") if isinstance(spec, str) else list(spec)
    chosen: set[str] = set()
    for item in (i.strip().lower() for i in items):
        if not item:
            continue
        if item == "all":
            chosen.update(NAMES)
        elif item in NAMES:
            chosen.add(item)
        else:
            raise ValueError(f"{ENV} / set_logs: unknown log {item!r}; use any of {', '.join(NAMES)}, or all")
    return chosen


def set_logs(spec: str | Iterable[str] | None = None, *, recompiles: bool = False, stages: bool = False,
             source: bool = False, cache: bool = False) -> None:
    """Switch compiler logs on (each call replaces the previous setting, as
    `torch._logging.set_logs` does). `spec` is the `GRAPHMODE_LOGS` form ("cache,stages",
    "all"); the keywords name logs one by one. `set_logs()` switches everything off."""
    chosen = parse_spec(spec)
    chosen.update(name for name, on in (("recompiles", recompiles), ("stages", stages), ("source", source),
                                        ("cache", cache)) if on)
    _apply(chosen)


def enabled() -> set[str]:
    """The names switched on now."""
    return {name for name in NAMES if logging.getLogger(f"{PARENT}.{name}").level == logging.DEBUG}


def _apply(chosen: set[str]) -> None:
    global _handler
    parent = logging.getLogger(PARENT)
    for name in NAMES:
        logging.getLogger(f"{PARENT}.{name}").setLevel(logging.DEBUG if name in chosen else logging.NOTSET)
    if chosen and _handler is None:
        _handler = logging.StreamHandler()  # None: the sys.stderr of each message's time
        _handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        parent.addHandler(_handler)
        parent.propagate = False  # a root handler would print each message a second time
    elif not chosen and _handler is not None:
        parent.removeHandler(_handler)
        parent.propagate = True
        _handler = None


def _from_environment() -> None:
    spec = os.environ.get(ENV, "")
    if not spec.strip():
        return
    try:
        _apply(parse_spec(spec))
    except ValueError as exc:  # a typo in the environment must not stop the program
        print(f"graphmode: warning: {exc}", file=sys.stderr)


_from_environment()
