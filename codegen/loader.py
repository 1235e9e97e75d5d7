"""Loading generated source as a module.

With the disk cache on, the source lives in a cache file and is imported with importlib
from that file, so tracebacks point at its real lines. The loader executes exactly the
text whose hash it checked (no bytecode cache in between). With the cache off, the source
is compiled from memory under a `<graphmode ...>` name registered with linecache.
Modules are also memoized per process, and one lock per key makes concurrent compiles of
one graph generate and load it once."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import linecache
import logging
import threading
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import cache


@dataclass
class Loaded:
    module: types.ModuleType
    source: str  # the generated source (without the cache header)
    path: Path | None  # the cache file it was imported from
    origin: str  # "generated", "disk cache" or "memory"


class _VerifiedLoader(importlib.machinery.SourceFileLoader):
    """A source loader that runs the already verified text of its file."""

    def __init__(self, fullname: str, path: str, text: str) -> None:
        super().__init__(fullname, path)
        self._text = text

    def get_data(self, path):  # noqa: D401 - importlib API
        if str(path) == self.path:
            return self._text.encode("utf-8")
        return super().get_data(path)

    def path_stats(self, path):
        raise OSError("graphmode modules are never loaded from bytecode caches")


_memo: dict = {}
_locks: dict = {}
_guard = threading.Lock()


def _lock_for(key: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault(key, threading.Lock())


def _module_name(key: str, backend: str) -> str:
    return f"graphmode_generated.{backend}_{key[:16]}"


def _from_file(path: Path, text: str, name: str) -> types.ModuleType:
    loader = _VerifiedLoader(name, str(path), text)
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _from_memory(source: str, name: str) -> types.ModuleType:
    filename = f"<graphmode {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - our own generated code
    return module


def load(key: str, backend: str, generate: Callable[[], str]) -> Loaded:
    """The module for `key`: from this process's memo, the disk cache, or `generate()`."""
    found = _memo.get(key)
    if found is not None:
        return found
    with _lock_for(key):
        found = _memo.get(key)
        if found is not None:
            return found
        name = _module_name(key, backend)
        if cache.enabled():
            path = cache.path_for(key, backend)
            text = cache.read(path)
            origin = "disk cache"
            if text is None:  # missing, truncated or altered: regenerate, never run it
                text = cache.seal(generate())
                cache.write(path, text)
                origin = "generated"
            loaded = Loaded(_from_file(path, text, name), cache.unseal(text), path, origin)
            logging.getLogger("graphmode.cache").debug("%s: %s module %s", "miss" if origin == "generated" else "hit",
                                                       backend, path)
            logging.getLogger("graphmode.source").debug("%s module source: %s", backend, path)
        else:
            source = generate()
            loaded = Loaded(_from_memory(source, name), source, None, "generated")
        _memo[key] = loaded
        return loaded


def forget() -> None:
    """Drop the per-process memo (tests use it to exercise the disk cache)."""
    with _guard:
        _memo.clear()
