"""The on-disk cache of generated modules.

One file per (IR text, backend, graphmode version, source fingerprint, array-library
version), named by the hash of those. The first line of a file is a header with the
SHA-256 of everything after it: a truncated or altered file fails the check and is
regenerated, never executed. Files are written atomically (a temporary file in the same
directory, then rename), so a reader sees a whole file or none.

The header is a checksum, not a signature: it proves a file whole, not who wrote it. What
keeps other users' code out is where it may come from, the rule ssh and Python's own
caches follow: the directory must be owned by the current user and writable by no one
else (it is created 0700), and so must each file (checked on the open file, then the
bytes read are the bytes hashed and run). A directory or file that breaks the rule, or a
directory that cannot be used at all (a file in its place, a path under a file, no
permission), turns the disk cache off for that directory in this process with one
warning; compiles then keep their code in memory. Nothing there is deleted or run.

Environment:
- GRAPHMODE_CACHE=0 turns the disk cache off;
- GRAPHMODE_CACHE_DIR moves it (default: the user cache directory, see `default_dir`);
- GRAPHMODE_CACHE_MAX_MB bounds its size (default 256): after each write, the least
  recently used files (by modification time, which a load refreshes) are deleted until the
  directory's cache files fit. Every file codegen writes counts (modules, bytecode, records,
  native sources and shared objects, probes).

Each sealed file also names its key in the header (`key=`): a file is used only under the
key it was written for, so two files swapped on disk are regenerated, not run for each
other's graph."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable
from pathlib import Path

HEADER = "# graphmode-codegen sha256="
FORMAT = "2"  # bump when the file layout changes (2: headers name the file's key)
DEFAULT_MAX_MB = 256.0
PREFIX = "gm_"  # cache files are gm_<backend>_<key>.py; eviction touches nothing else


class CodeCacheWarning(RuntimeWarning):
    """The disk cache could not be used (unsafe or unusable directory); code stays in memory."""


class Refused(Exception):
    """A cache file or directory that must not be used (owner or permissions)."""


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


def configured_dir() -> Path:
    return Path(os.environ.get("GRAPHMODE_CACHE_DIR") or default_dir())


# directories this process stopped using, and the warnings it already gave
_refused: dict = {}
_warned: set = set()
_state_lock = threading.Lock()


def warn_once(what: str, message: str) -> None:
    with _state_lock:
        if what in _warned:
            return
        _warned.add(what)
    warnings.warn(message, CodeCacheWarning, stacklevel=4)


def refuse(directory: Path, reason: str) -> None:
    """Stop using `directory` for the rest of this process, with one warning."""
    with _state_lock:
        _refused.setdefault(str(directory), reason)
    warn_once(f"dir:{directory}", f"graphmode: not using the code cache {directory}: {reason}; generated code is "
              "kept in memory for this process (set GRAPHMODE_CACHE_DIR to a private directory, or "
              "GRAPHMODE_CACHE=0 to silence this)")


def _check_owner(st: os.stat_result, what: str) -> None:
    """The rule for a cache directory or file: ours, and writable by no one else."""
    if not hasattr(os, "getuid"):  # Windows: per-user profile directories carry the protection
        return
    if st.st_uid != os.getuid():
        raise Refused(f"{what} is owned by uid {st.st_uid}, not by the current user (uid {os.getuid()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Refused(f"{what} is writable by its group or by others (mode {stat.S_IMODE(st.st_mode):04o})")


def directory() -> Path | None:
    """The cache directory, created private (0700) when missing; None when this process does
    not use it (disabled, refused before, unsafe or unusable: the last two warn once)."""
    if not enabled():
        return None
    path = configured_dir()
    if str(path) in _refused:
        return None
    try:
        if not path.is_dir():
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(path, 0o700)
        _check_owner(os.stat(path), "the directory")
        if not os.access(path, os.W_OK | os.X_OK | os.R_OK):
            raise Refused("the directory is not readable and writable by the current user")
    except Refused as exc:
        refuse(path, str(exc))
        return None
    except OSError as exc:  # a file in its place, a path under a file, no permission, read-only
        refuse(path, f"it cannot be used ({exc.strerror or exc})")
        return None
    return path


@functools.lru_cache(maxsize=1)
def graphmode_version() -> str:
    # the package's own constant (gmbase.version, which eager re-exports): asking
    # importlib.metadata scans sys.path (~2 ms per process)
    from .version import __version__  # noqa: PLC0415

    return __version__


# The packages whose code decides what the caches hold: gmbase (dtypes and promotion, the
# generator knobs), gmops (each op's abstract rule and VJP), eager, static (tracing, autodiff,
# the passes) and codegen (lowerings, generators, templates); gmnative: the native layer, C++ in csrc/.
FINGERPRINTED = ("gmbase", "gmnative", "gmops", "eager", "static", "codegen")
_SOURCE_SUFFIXES = (".py", ".j2", ".lark", ".cpp", ".h")
_fingerprint_lock = threading.Lock()
_fingerprint: str | None = None


def source_fingerprint() -> str:
    """A hash of the source of the packages (FINGERPRINTED): every .py, .j2, .lark and C++ file, by
    path and content. Both caches key on it (generated modules here, optimized graphs in
    static.trace_cache), so editing any code that shapes a cached artifact invalidates it:
    a pass, an op's VJP or abstract rule, a lowering, a template. Hashing codegen alone let a
    record built before an edit of static's passes or eager's VJPs be served after it.
    Contents, not file times: a file replaced with one of the same size and time is still
    seen. About 1.5 MB, read and hashed once per process (a few ms), on a helper thread from
    the first static.compile on (prefetch_fingerprint)."""
    global _fingerprint
    if _fingerprint is None:
        with _fingerprint_lock:
            if _fingerprint is None:
                _fingerprint = _hash_sources()
    return _fingerprint


def _hash_sources() -> str:
    """The fingerprint of the source files (see source_fingerprint): each file's relative
    path, length and content hash, in name order.

    A file's content hash is taken from the previous process's manifest (`_manifest_path`)
    when its size, modification time, change time and inode are those the manifest noted,
    and its change time is more than RACY_NS older than that manifest: reading and hashing
    1.6 MB of sources cost about 5 ms of the first compile of a process, stating them 0.3.
    The change time is set by the system on every write, rename or `os.utime`, so a file
    replaced with one of the same size and modification time is still seen; a file changed
    shortly before a manifest was made may change again within one tick of the clock, so it
    is hashed again until it is older (git's "racily clean" rule)."""
    roots = [(name, _package_dir(name)) for name in FINGERPRINTED]
    manifest = _manifest_path(roots)
    known, made_ns = _read_manifest(manifest)
    started_ns = time.time_ns()
    files: dict[str, list] = {}
    rehashed = False
    h = hashlib.sha256()
    for name, root in roots:
        if root is None:  # not installed as files (a zip): its version stands for it
            h.update(f"{name}: no source files\0".encode())
            continue
        for relative, path, st in _source_files(str(root), f"{name}/"):
            signature = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
            old = known.get(relative)
            if old is not None and old[:4] == signature and st.st_ctime_ns < made_ns - RACY_NS:
                digest = old[4]
            else:
                with open(path, "rb") as fh:
                    data = fh.read()
                signature[0] = len(data)
                digest = hashlib.sha256(data).hexdigest()
                rehashed = True
            files[relative] = [*signature, digest]
            h.update(f"{relative}\0{signature[0]}\0{digest}\0".encode())
    if manifest is not None and (rehashed or files != known):  # (a newer manifest trusts a racy file sooner)
        _write_manifest(manifest, started_ns, files)
    return h.hexdigest()[:16]


RACY_NS = 2_000_000_000  # a file changed less than this before a manifest was made is hashed again


def _source_files(directory: str, relative: str):
    """(relative path, path, stat) of each source file under `directory`, in name order
    (os.scandir: pathlib's objects doubled the time of ~130 small files)."""
    with os.scandir(directory) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        if entry.is_dir():
            if entry.name != "__pycache__":
                yield from _source_files(entry.path, f"{relative}{entry.name}/")
        elif entry.name.endswith(_SOURCE_SUFFIXES):
            yield f"{relative}{entry.name}", entry.path, os.stat(entry.path)


def _manifest_path(roots: list) -> Path | None:
    """Where the manifest of these package directories lives in the cache (None: no usable
    cache). One per set of directories: two installs sharing a cache keep their own."""
    where = directory()
    if where is None:
        return None
    tag = hashlib.sha256(repr([(name, str(root)) for name, root in roots]).encode()).hexdigest()[:16]
    return where / f"{PREFIX}sources_{tag}.py"


def _read_manifest(path: Path | None) -> tuple[dict, int]:
    """(relative path -> [size, mtime_ns, ctime_ns, inode, sha256], when it was made), or
    ({}, 0) when there is none or it cannot be trusted."""
    if path is None:
        return {}, 0
    try:
        text = read(path, path.name)
    except Refused:
        return {}, 0
    if text is None:
        return {}, 0
    try:
        record = json.loads(body(text))
        files, made_ns = record["files"], int(record["made_ns"])
        if record.get("format") != FORMAT or not isinstance(files, dict):
            return {}, 0
    except (ValueError, KeyError, TypeError):
        return {}, 0
    return files, made_ns


def _write_manifest(path: Path, made_ns: int, files: dict) -> None:
    try:
        write(path, seal(json.dumps({"format": FORMAT, "made_ns": made_ns, "files": files}), path.name))
    except OSError:
        pass  # hashed in full again next time


def _package_dir(name: str) -> Path | None:
    """The directory of top-level package `name`: beside this one (every install but a zip;
    asking importlib costs a sys.path scan), else where the import system finds it."""
    here = Path(__file__).parent.parent / name
    if (here / "__init__.py").is_file():
        return here
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.find_spec(name)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations and Path(locations[0]).is_dir() else None


def _reset_fingerprint_lock_in_child() -> None:
    # a fork while the helper thread held the lock would leave the child's copy locked forever
    # (and the thread that was computing it does not exist in the child)
    global _fingerprint_lock, _fingerprint_started
    _fingerprint_lock = threading.Lock()
    _fingerprint_started = _fingerprint is not None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_fingerprint_lock_in_child)


_fingerprint_started = False


def prefetch_fingerprint() -> None:
    """Compute source_fingerprint on a helper thread, once (static.compiled calls this at the
    first static.compile): reading and hashing release the GIL, so it overlaps what the program does
    before its first compiled call instead of adding to a start from the disk cache."""
    global _fingerprint_started
    if not _fingerprint_started and _fingerprint is None and enabled():
        _fingerprint_started = True
        threading.Thread(target=source_fingerprint, name="graphmode-fingerprint", daemon=True).start()


def key(ir_text: str, backend: str, library_version: str) -> str:
    h = hashlib.sha256()
    for part in (FORMAT, graphmode_version(), source_fingerprint(), backend, library_version, ir_text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def path_for(cache_key: str, backend: str, where: Path | None = None) -> Path:
    return (where if where is not None else configured_dir()) / f"{PREFIX}{backend}_{cache_key[:40]}.py"


def seal(source: str, key: str = "") -> str:
    """The file text: a header line with the hash of the source and the key the file is
    stored under (the cache key of a generated module, a record's key, a manifest's name),
    then the source. The key makes a file answer only for what it was made for: two sealed
    files swapped or copied over each other on disk pass their hash check but not the key
    check, and are regenerated, never run for the other graph."""
    if any(c.isspace() for c in key):
        raise ValueError(f"gmbase.cache.seal: a key holds no whitespace, got {key!r}")
    tail = f" key={key}" if key else ""
    return f"{HEADER}{hashlib.sha256(source.encode()).hexdigest()}{tail}\n{source}"


def _fields(first: str) -> tuple[str, str]:
    """(sha256, key) of a header line's text after HEADER ('' for a missing key)."""
    digest_, _, rest = first.strip().partition(" ")
    key_ = rest[len("key="):] if rest.startswith("key=") else ""
    return digest_, key_


def unseal(text: str, key: str | None = None) -> str | None:
    """The source if the header's hash matches it (and, given `key`, the header names that
    key), else None."""
    first, sep, rest = text.partition("\n")
    if not sep or not first.startswith(HEADER):
        return None
    digest_, key_ = _fields(first[len(HEADER):])
    if hashlib.sha256(rest.encode()).hexdigest() != digest_ or (key is not None and key_ != key):
        return None
    return rest


def body(text: str) -> str:
    """The source of a text that `read` verified or `seal` made, without hashing it again
    (a generated module is read once per process, and its hash is most of the reading)."""
    return text.partition("\n")[2]


def digest(text: str) -> str:
    """The hash a sealed text's header gives for its source (read verified it)."""
    return _fields(text.partition("\n")[0][len(HEADER):])[0]


def _unseal_bytes(data: bytes, key: str | None) -> tuple[str, str] | None:
    """(source, key named by the header) if the header's hash matches the bytes after it
    (and names `key` when one is expected), else None."""
    first, sep, rest = data.partition(b"\n")
    if not sep or not first.startswith(HEADER.encode()):
        return None
    try:
        digest_, key_ = _fields(first[len(HEADER):].decode("ascii"))
    except UnicodeDecodeError:
        return None
    if hashlib.sha256(rest).hexdigest() != digest_ or (key is not None and key_ != key):
        return None
    try:
        return rest.decode("utf-8"), key_
    except UnicodeDecodeError:
        return None


def read(path: Path, key: str | None = None) -> str | None:
    """The verified file text (header included), or None if missing or failing the check:
    its hash, and with `key` the key it was sealed under (a file moved or copied over
    another's name is a miss). The checks run on the open file, and the hash on the very
    bytes returned; a file that is not ours or that others may write raises Refused."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink (O_NOFOLLOW), a directory, no permission
        raise Refused(f"{path.name} cannot be opened safely ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{path.name} is not a regular file")
        _check_owner(st, path.name)
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read()
    finally:
        if fd >= 0:
            os.close(fd)
    found = _unseal_bytes(data, key)
    if found is None:
        return None
    try:
        os.utime(path)  # a load makes the file recently used, for eviction
    except OSError:
        pass
    return seal(*found)


def write_atomic(path: Path, data: bytes, suffix: str = ".part") -> None:
    """Write `data` so that readers see the old file or the whole new one: a private
    temporary file (created 0600) beside `path`, renamed over it. No fsync: a file cut short
    by a crash fails its hash check when read."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write(path: Path, text: str) -> None:
    """Write a generated module atomically, then keep the directory within
    GRAPHMODE_CACHE_MAX_MB."""
    write_atomic(path, text.encode("utf-8"), ".py")
    evict(path.parent, keep=path)


STALE_TMP_S = 3600  # a temporary file of an interrupted write, older than this, is deleted by eviction


def max_bytes() -> int:
    """GRAPHMODE_CACHE_MAX_MB as bytes (default 256 MB); a value that is not a positive
    number warns once and uses the default."""
    raw = os.environ.get("GRAPHMODE_CACHE_MAX_MB", "").strip()
    mb = DEFAULT_MAX_MB
    if raw:
        try:
            mb = float(raw)
            if not mb > 0 or mb == float("inf"):
                raise ValueError
        except ValueError:
            warn_once(f"max:{raw}", f"graphmode: GRAPHMODE_CACHE_MAX_MB={raw!r} is not a positive number of "
                      f"megabytes; using {DEFAULT_MAX_MB:g}")
            mb = DEFAULT_MAX_MB
    return int(mb * 1024 * 1024)


def evict(where: Path, keep: "Path | Iterable[Path] | None" = None) -> list:
    """Delete the least recently used cache files of `where` until they fit in max_bytes()
    (never `keep`, the file or files just written). Returns the deleted paths.

    Every file codegen writes counts: generated modules and their kept bytecode, post-trace
    records, native C++ sources, sealed shared objects and compiler probes (all named
    gm_...), and temporary files of interrupted writes (.tmp-..., deleted once an hour old).
    Counting the Python modules alone let native builds grow the directory without bound."""
    limit = max_bytes()
    kept = {str(keep)} if isinstance(keep, Path) else {str(p) for p in keep} if keep is not None else set()
    files = []
    now_ns = time.time_ns()
    removed = []
    try:
        with os.scandir(where) as it:
            for entry in it:
                if not entry.name.startswith((PREFIX, ".tmp-")):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                if entry.name.startswith(".tmp-"):
                    if now_ns - st.st_mtime_ns > STALE_TMP_S * 1_000_000_000:
                        try:
                            os.unlink(entry.path)
                            removed.append(where / entry.name)
                        except OSError:
                            pass
                        continue
                files.append((st.st_mtime_ns, entry.name, st.st_size))
    except OSError:
        return removed
    total = sum(size for _, _, size in files)
    for _, name, size in sorted(files):
        if total <= limit:
            break
        path = where / name
        if str(path) in kept:
            continue
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed.append(path)
    return removed
