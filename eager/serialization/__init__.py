"""`eager.save` / `eager.load`: tensors, state dicts, nested containers and (with
`weights_only=False` or allowlisted classes) whole modules, in a file a user can trust.

`load` reads eager's own format (eager_format) and PyTorch's `torch.save` files, both its
zip format and its legacy stream (torch_format). A checkpoint is untrusted input: before
anything is allocated or viewed, every storage is checked against the bytes the file holds,
every tensor view against its storage (size, stride, offset, dtype), every archive member's
declared size against the load's memory bound (`max_bytes=`, default DEFAULT_MAX_BYTES,
capped by the machine's memory), so a hostile file can neither read memory outside its
storages nor make the loader allocate beyond the bound (validation).

Errors, as PyTorch raises them:
- a damaged, truncated, foreign or hostile file: `RuntimeError` naming the file, the member
  and what is wrong;
- a pickle naming a class or function that a `weights_only` load does not reconstruct:
  `pickle.UnpicklingError` (PyTorch's type; it is a RuntimeError too) naming the global and
  how to allowlist it (`add_safe_globals`, the `safe_globals` context manager) or to load
  with `weights_only=False`."""
from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from typing import Any

from . import allowlist as _safe_globals_module
from . import eager_format, torch_format, validation
from .allowlist import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from .eager_format import FORMAT, VERSION
from .validation import Budget

DEFAULT_MAX_BYTES = validation.DEFAULT_MAX_BYTES

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_MAX_BYTES", "FORMAT", "VERSION"]

_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


def save(obj: Any, f: Any, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Write obj (tensors, state dicts, nested dicts/lists/tuples of them and of numbers, any
    picklable object such as a whole nn.Module) to f, a path or a binary file object.
    Tensors that view one array are written once, as views of one storage."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            eager_format.save(obj, fh)
    else:
        eager_format.save(obj, f)


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = True,
         mmap: bool | None = None, max_bytes: int | None = None, **pickle_load_args: Any) -> Any:
    """Read what `save` or PyTorch's `torch.save` wrote.

    map_location, as in torch.load: None (each tensor where it was saved), a device or
    string (all there), a dict {saved location: new location}, or a callable
    `(storage, location) -> storage` (`lambda storage, loc: storage` keeps everything on
    the CPU). weights_only (default True, as PyTorch 2.6+): only containers, numbers,
    tensors, dtypes, devices and allowlisted globals are unpickled. max_bytes bounds what
    this load may allocate (default DEFAULT_MAX_BYTES, capped by physical memory)."""
    weights_only = True if weights_only is None else bool(weights_only)
    if isinstance(f, (str, os.PathLike)):
        source = os.fspath(f)
        budget = Budget(source, max_bytes)
        with open(f, "rb") as fh:
            return _load(fh, weights_only, map_location, source, budget)
    source = str(getattr(f, "name", "the file object"))
    budget = Budget(source, max_bytes)
    return _load(f, weights_only, map_location, source, budget)


def _seekable(fh: Any, budget: Budget) -> Any:
    try:
        if fh.seekable():
            return fh
    except (AttributeError, OSError, ValueError):
        pass
    data = fh.read(budget.limit + 1)  # a stream: read it whole, within the bound
    if len(data) > budget.limit:
        budget.charge(len(data), "the stream")
    return io.BytesIO(data)


def _size(fh: Any) -> int:
    here = fh.tell()
    end = fh.seek(0, os.SEEK_END)
    fh.seek(here)
    return int(end - here)


_DAMAGE = (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
           RecursionError, MemoryError, OverflowError, struct.error, UnicodeDecodeError, zipfile.BadZipFile,
           zipfile.LargeZipFile, NotImplementedError, LookupError, OSError)


def _load(fh: Any, weights_only: bool, map_location: Any, source: str, budget: Budget) -> Any:
    try:
        fh = _seekable(fh, budget)
        start = fh.tell()
        head = fh.read(8)
        fh.seek(start)
        if torch_format.is_legacy(head):
            return torch_format.load_legacy(fh, _size(fh), source, budget, map_location, weights_only)
        validation.check_directory(fh, source, budget)
        try:
            archive = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, struct.error) as exc:
            raise RuntimeError(f"eager.load: {source} is not an eager checkpoint or is truncated: it is not a "
                               f"complete zip archive ({exc}); save it again with eager.save") from None
        with archive:
            validation.check_archive(archive, source, budget)
            names = archive.namelist()
            if "manifest.json" in names:
                return eager_format.load(archive, source, budget, map_location, weights_only)
            pickles = sorted((n for n in names if n.endswith("/data.pkl") or n == "data.pkl"), key=len)
            if pickles:
                return torch_format.load_zip(archive, pickles[0][:-len("data.pkl")], source, budget, map_location,
                                             weights_only)
            raise RuntimeError(f"eager.load: {source} is not an eager checkpoint: no manifest.json (nor a "
                               "PyTorch data.pkl)")
    except _safe_globals_module.WeightsOnlyError:
        raise
    except RuntimeError:
        raise
    except _DAMAGE as exc:
        raise RuntimeError(f"eager.load: {source} is damaged: {type(exc).__name__}: {_short(str(exc))}") from None


def _short(text: str) -> str:
    return text if len(text) <= 300 else text[:297] + "..."
