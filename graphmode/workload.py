"""The workload a command runs: a .py file or importable module defining `workload(size) ->
(fn, args)`, loaded with its errors turned into one-line CLIErrors (the user's to fix), and
the sizes given on the command line parsed. Also the exit statuses every command returns.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

USAGE_ERROR, DISAGREE, INTERRUPTED = 2, 1, 130
WORKLOAD_FAILED, TOOL_MISSING, BROKEN_PIPE = 3, 4, 141


class CLIError(Exception):
    """A problem the user can fix: printed as one line, exit status `code`."""

    def __init__(self, message: str, code: int = USAGE_ERROR) -> None:
        super().__init__(message)
        self.code = code


# -- workloads --------------------------------------------------------------------------------------
@dataclass
class Workload:
    """A loaded TARGET: where it came from, its default sizes and its factories."""

    name: str
    description: str
    sizes: tuple
    make: Callable[[Any], tuple]
    peer: Callable | None

    def build(self, size: Any, label: str) -> tuple[Callable, tuple]:
        """(fn, args) for one size, checked so that a wrong return is one clear line."""
        result = self.make(size)
        if (not isinstance(result, (tuple, list)) or len(result) != 2 or not callable(result[0])
                or not isinstance(result[1], (tuple, list))):
            raise CLIError(f"{self.name}: workload({label}) must return (fn, args) with args a tuple; got "
                           f"{type(result).__name__}")
        return result[0], tuple(result[1])


def load_workload(target: str) -> Workload:
    """Import TARGET (a .py path, or a module name importable from the current directory)."""
    path = Path(target)
    if target.endswith(".py") or os.sep in target or "/" in target:
        if not path.is_file():
            raise CLIError(f"no such file: {target}")
        module = _import_file(path)
        name = path.stem
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # as `python -m` does
        try:
            spec = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise CLIError(f"no such file or module: {target}")
        module = _run_import(lambda: importlib.import_module(target), target)
        name = target.rsplit(".", 1)[-1]
    make = getattr(module, "workload", None)
    if not callable(make):
        raise CLIError(f"{target} has no workload: define workload(size) -> (fn, args) in it "
                       "(see examples/workloads/)")
    doc = (inspect.getdoc(module) or "").strip().splitlines()
    sizes = getattr(module, "SIZES", ("1e4",))
    sizes = (sizes,) if isinstance(sizes, (str, int, float)) else tuple(sizes)
    peer = getattr(module, "peer", None)
    return Workload(name, doc[0] if doc else name, tuple(str(s) for s in sizes), make,
                    peer if callable(peer) else None)


def _import_file(path: Path):
    """Run a workload file as a module; its directory goes on sys.path, as for a script."""
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(f"graphmode_workload_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot load {path} as Python")
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as import does: dataclasses and pickling look it up there
    try:
        _run_import(lambda: loader.exec_module(module), str(path))
    except CLIError:
        del sys.modules[spec.name]
        raise
    return module


def _run_import(load: Callable, target: str):
    try:
        return load()
    except SyntaxError as exc:
        raise CLIError(f"{target}: syntax error at line {exc.lineno}: {exc.msg}") from exc
    except Exception as exc:  # noqa: BLE001  (the user's module failed while importing)
        raise CLIError(f"importing {target} failed: {_one_line(exc)}") from exc


# -- sizes ----------------------------------------------------------------------------------------
def parse_size(token: str) -> int | tuple[int, ...]:
    """'1e6' -> 1000000; '32x64x64x10' -> (32, 64, 64, 10)."""
    text = token.strip().lower().replace("_", "")
    parts = text.split("x")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise CLIError(f"size {token!r} does not parse: use a number such as 1e6 or a shape such as "
                           "32x64x64x10") from None
        if not math.isfinite(value) or value != int(value) or value < 1:
            raise CLIError(f"size {token!r} does not parse: each number must be a whole number of at least 1")
        values.append(int(value))
    return values[0] if len(values) == 1 else tuple(values)


def parse_sizes(text: str | Sequence[str]) -> list[tuple[str, Any]]:
    """(label, value) for each comma-separated size."""
    tokens = [t.strip() for t in (text.split(",") if isinstance(text, str) else text)]
    tokens = [t for t in tokens if t]
    if not tokens:
        raise CLIError("no sizes given: use e.g. --sizes 1e4,1e6")
    return [(t, parse_size(t)) for t in tokens]


def _size_for_one(ns: argparse.Namespace, workload: Workload) -> tuple[str, Any]:
    """The size `ir` and `graph` use: --size, or the workload's smallest default."""
    if ns.size:
        return parse_sizes(ns.size)[0]
    return parse_sizes(workload.sizes)[0]


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
