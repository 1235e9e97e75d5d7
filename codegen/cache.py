"""The on-disk cache of generated modules.

One file per (IR text, backend, graphmode version, codegen fingerprint, array-library
version), named by the hash of those. The first line of a file is a header with the
SHA-256 of everything after it: a truncated or altered file fails the check and is
regenerated, never executed. Files are written atomically (a temporary file in the same
directory, then rename), so a reader sees a whole file or none; the directory is created
private (0700). GRAPHMODE_CACHE=0 turns the disk cache off; GRAPHMODE_CACHE_DIR moves it."""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile
from importlib import resources
from pathlib import Path

HEADER = "# graphmode-codegen sha256="
FORMAT = "1"  # bump when the file layout changes


def enabled() -> bool:
    return os.environ.get("GRAPHMODE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def default_dir() -> Path:
    """The user cache directory: $XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on
    macOS, %LOCALAPPDATA% on Windows; graphmode/ inside it."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "graphmode"


def directory() -> Path:
    """The cache directory (created, mode 0700, when missing)."""
    path = Path(os.environ.get("GRAPHMODE_CACHE_DIR") or default_dir())
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
    return path


@functools.lru_cache(maxsize=1)
def graphmode_version() -> str:
    # the package's own constant: asking importlib.metadata scans sys.path (~2 ms per process)
    from eager import __version__  # noqa: PLC0415

    return __version__


@functools.lru_cache(maxsize=1)
def codegen_fingerprint() -> str:
    """A hash of codegen's own code and templates: editing the generator invalidates
    what it generated before."""
    h = hashlib.sha256()
    pkg = resources.files("codegen")
    for sub in (pkg, pkg / "templates"):
        for entry in sorted(sub.iterdir(), key=lambda p: p.name):
            if entry.name.endswith((".py", ".j2")) and entry.is_file():
                h.update(entry.name.encode())
                h.update(entry.read_bytes())
    return h.hexdigest()[:16]


def key(ir_text: str, backend: str, library_version: str) -> str:
    h = hashlib.sha256()
    for part in (FORMAT, graphmode_version(), codegen_fingerprint(), backend, library_version, ir_text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def path_for(cache_key: str, backend: str) -> Path:
    return directory() / f"gm_{backend}_{cache_key[:40]}.py"


def seal(source: str) -> str:
    """The file text: a header line with the hash of the source, then the source."""
    return f"{HEADER}{hashlib.sha256(source.encode()).hexdigest()}\n{source}"


def unseal(text: str) -> str | None:
    """The source if the header's hash matches it, else None."""
    first, sep, rest = text.partition("\n")
    if not sep or not first.startswith(HEADER):
        return None
    if hashlib.sha256(rest.encode()).hexdigest() != first[len(HEADER):].strip():
        return None
    return rest


def read(path: Path) -> str | None:
    """The verified file text (header included), or None if missing or failing the check."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text if unseal(text) is not None else None


def write(path: Path, text: str) -> None:
    """Write atomically: readers see the old file, or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)  # no fsync: a file cut short by a crash fails the hash check
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
