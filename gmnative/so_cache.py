"""The on-disk cache of shared objects: keys from the source, flags, compiler and the host's
instruction set (so_key), sealed files (a header naming the key and the SHA-256 of the bytes:
seal/unseal/read_verified) in a directory only this user can write, and private copies to
load from, so nothing can change between the check and the load.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from .toolchain import Toolchain

FORMAT = "2"
HEADER = b"graphmode-native "
# -- the on-disk cache ------------------------------------------------------------------------
def uses_threads(source: str) -> bool:
    """Whether a translation unit has an OpenMP parallel region (the generator emits one only
    for loops big enough to share): without one it compiles with -fopenmp-simd, not -fopenmp."""
    return "#pragma omp parallel" in source


def so_key(source: str, tc: Toolchain, fast_math: bool = False) -> str:
    h = hashlib.sha256()
    threads = uses_threads(source)
    for part in (FORMAT, " ".join(tc.command), tc.fingerprint(), " ".join(tc.compile_flags(fast_math, threads)),
                 " ".join(tc.link_flags(threads)), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _private_dir_problem(path: Path) -> str | None:
    """Why `path` is not safe to load code from (None: it is ours and nobody else can write it)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot stat {path}: {exc}"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by other users"
    return None


def seal(key: str, data: bytes) -> bytes:
    return HEADER + f"key={key} sha256={hashlib.sha256(data).hexdigest()}\n".encode() + data


def unseal(key: str, blob: bytes) -> bytes | None:
    """The shared object's bytes if the header names `key` and its hash matches, else None."""
    first, sep, rest = blob.partition(b"\n")
    if not sep or not first.startswith(HEADER):
        return None
    fields_ = dict(part.split("=", 1) for part in first[len(HEADER):].decode("ascii", "replace").split() if "=" in part)
    if fields_.get("key") != key or fields_.get("sha256") != hashlib.sha256(rest).hexdigest():
        return None
    return rest


def read_verified(path: Path, key: str) -> bytes | None:
    """The cached shared object at path: read once through one descriptor whose owner and
    mode are checked, then its hash; None when missing, foreign, writable by others or bad."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            blob = fh.read()
    finally:
        os.close(fd)
    return unseal(key, blob)


_scratch_dir: Path | None = None
_scratch_lock = threading.Lock()


def _scratch() -> Path:
    """A private (0700) temporary directory of this process for compiling and loading."""
    global _scratch_dir
    with _scratch_lock:
        if _scratch_dir is None or not _scratch_dir.is_dir():
            _scratch_dir = Path(tempfile.mkdtemp(prefix="graphmode-native-"))
            import atexit  # noqa: PLC0415

            atexit.register(_remove_scratch, str(_scratch_dir), os.getpid())
        return _scratch_dir


def _remove_scratch(path: str, owner_pid: int) -> None:
    if os.getpid() == owner_pid:  # not from a forked child: the parent may still compile there
        shutil.rmtree(path, ignore_errors=True)


def _private_copy(data: bytes, suffix: str = ".so") -> str:
    fd, tmp = tempfile.mkstemp(dir=_scratch(), suffix=suffix)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return tmp
