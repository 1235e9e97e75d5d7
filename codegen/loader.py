"""Loading generated source as a module.

With the disk cache on, the source lives in a cache file and is imported with importlib
from that file, so tracebacks point at its real lines. The loader executes exactly the
text whose hash it checked (no bytecode cache in between). With the cache off, the source
is compiled from memory under a `<graphmode ...>` name registered with linecache.
Modules are also memoized per process, weakly: a module is freed with the last compiled
graph that uses it. A lock per key makes concurrent compiles of one graph generate and load
it once. When the disk cache cannot be used (see `cache`), code is kept in memory."""
from __future__ import annotations

import base64
import importlib.machinery
import importlib.util
import linecache
import logging
import marshal
import threading
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gmbase import cache


@dataclass
class Loaded:
    module: types.ModuleType
    source: str  # the generated source (without the cache header)
    path: Path | None  # the cache file it was imported from
    origin: str  # "generated", "disk cache" or "memory"


class _VerifiedLoader(importlib.machinery.SourceFileLoader):
    """A source loader that runs the already verified text of its file.

    Compiling a large generated module costs more than every other step of a disk-cache hit,
    so its code object is kept beside it (`_code_path`), sealed like the source and tied to
    the exact text, file path and Python bytecode version it was compiled from: anything else
    is compiled again from the verified text, never trusted."""

    def __init__(self, fullname: str, path: str, text: str) -> None:
        super().__init__(fullname, path)
        self._text = text

    def get_code(self, fullname):  # noqa: D102 - importlib API
        if len(self._text) < KEEP_CODE_FROM:
            return super().get_code(fullname)
        stamp = _code_stamp(self.path, self._text)
        code = _cached_code(Path(self.path), stamp)
        if code is None:
            code = super().get_code(fullname)
            if code is not None:
                _keep_code(Path(self.path), stamp, code)
        return code

    def get_data(self, path):  # noqa: D401 - importlib API
        if str(path) == self.path:
            return self._text.encode("utf-8")
        return super().get_data(path)

    def path_stats(self, path):
        raise OSError("graphmode modules are never loaded from bytecode caches")


KEEP_CODE_FROM = 32 * 1024  # source characters: a smaller module compiles in a few milliseconds


def _code_path(path: Path) -> Path:
    """Where a module's code object is kept: a cache file of its own (gm_...py, so that the
    cache's size limit and `graphmode cache clear` count it), next to the module."""
    return path.with_name(f"{cache.PREFIX}bytecode_{path.name[len(cache.PREFIX):]}")


def _code_stamp(path: str, text: str) -> str:
    """What a kept code object is tied to: the bytecode version, the hash of the source (the
    header of the sealed text, which `cache.read` checked against it) and the file."""
    return f"{importlib.util.MAGIC_NUMBER.hex()} {cache.digest(text)} {path}"


def _cached_code(path: Path, stamp: str) -> types.CodeType | None:
    try:
        text = cache.read(_code_path(path), _code_path(path).name)
    except cache.Refused:
        return None
    body = cache.body(text) if text is not None else None  # (read checked its hash)
    if body is None:
        return None
    first, _, data = body.partition("\n")
    if first != stamp:  # compiled from other text, at another path or by another Python
        return None
    try:
        code = marshal.loads(base64.b64decode(data))
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


def _keep_code(path: Path, stamp: str, code: types.CodeType) -> None:
    try:
        body = f"{stamp}\n{base64.b64encode(marshal.dumps(code)).decode('ascii')}"
        cache.write(_code_path(path), cache.seal(body, _code_path(path).name))
    except (OSError, ValueError):
        pass  # compiled again next time


# key -> Loaded, weakly: a module lives as long as something (a compiled graph) holds its
# Loaded record, and goes when the last compiled function using it is dropped.
_memo: "weakref.WeakValueDictionary[str, Loaded]" = weakref.WeakValueDictionary()
_guard = threading.Lock()
# codegen must not import static: the loggers by name (static.logs switches them on)
_CACHE_LOG = logging.getLogger("graphmode.cache")
_SOURCE_LOG = logging.getLogger("graphmode.source")
_LOCKS = tuple(threading.RLock() for _ in range(64))  # striped: one key always maps to one lock


def _lock_for(key: str) -> "threading.RLock":
    return _LOCKS[hash(key) % len(_LOCKS)]


def _module_name(key: str, backend: str) -> str:
    return f"graphmode_generated.{backend}_{key[:16]}"


def _from_file(path: Path, text: str, name: str) -> types.ModuleType:
    loader = _VerifiedLoader(name, str(path), text)
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    assert spec is not None  # given a loader, importlib always makes a spec
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _drop_lines(filename: str, lines: list) -> None:
    """Forget a dropped module's source in linecache (unless a newer module took the name)."""
    entry = linecache.cache.get(filename)
    if entry is not None and len(entry) > 2 and entry[2] is lines:  # a lazy entry is a 1-tuple
        del linecache.cache[filename]


def _from_memory(source: str, name: str) -> tuple[types.ModuleType, Callable[[], None]]:
    filename = f"<graphmode {name}>"
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - our own generated code
    return module, lambda: _drop_lines(filename, lines)


def _source_for(key: str, backend: str, generate: Callable[[], str]) -> tuple[str, Path | None, str]:
    """(sealed text, cache file or None, origin): from the disk cache when this process may
    use it, else freshly generated (and written there when possible)."""
    where = cache.directory()
    if where is None:
        return cache.seal(generate(), key), None, "generated"
    path = cache.path_for(key, backend, where)
    try:
        text = cache.read(path, key)  # the file must be sealed for this very key, not only whole
    except cache.Refused as exc:
        cache.refuse(where, str(exc))
        return cache.seal(generate(), key), None, "generated"
    if text is not None:
        return text, path, "disk cache"
    # missing, truncated, altered, or another graph's module under this name (files swapped or
    # copied over each other): regenerate, never run it
    text = cache.seal(generate(), key)
    try:
        cache.write(path, text)
    except OSError as exc:  # the directory went away, a full disk, ...
        cache.refuse(where, f"writing {path.name} failed ({exc.strerror or exc})")
        return text, None, "generated"
    return text, path, "generated"


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
        text, path, origin = _source_for(key, backend, generate)
        source = cache.body(text)  # read back verified, or sealed here
        if path is not None:
            loaded = Loaded(_from_file(path, text, name), source, path, origin)
        else:
            module, drop = _from_memory(source, name)
            loaded = Loaded(module, source, None, origin)
            weakref.finalize(loaded, drop)
        _CACHE_LOG.debug("%s: %s module %s", "hit" if origin == "disk cache" else "miss", backend, path or "(memory)")
        if path is not None:
            _SOURCE_LOG.debug("%s module source: %s", backend, path)
        _memo[key] = loaded
        return loaded


def live() -> int:
    """How many generated modules this process holds (those of compiled graphs still alive)."""
    return len(_memo)


def forget() -> None:
    """Drop the per-process memo (tests use it to exercise the disk cache)."""
    with _guard:
        _memo.clear()
