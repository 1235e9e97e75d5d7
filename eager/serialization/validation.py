"""The checks every loader runs before it allocates memory or makes a view.

A checkpoint is untrusted input: its pickle declares storages (a dtype and an element
count) and tensors viewing them (size, stride, offset), and its archive declares member
sizes. Each of those numbers is checked here against the bytes actually present and against
a memory budget before NumPy is asked for anything, so a hostile or damaged file can never
return bytes from outside its storage, never allocate more than the budget, and always fails
with a `RuntimeError` naming the member and what is wrong (PyTorch's type for these)."""
from __future__ import annotations

import os
import pickle
import pickletools
import struct
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

INT64_MAX = (1 << 63) - 1

# The default bound on what one `load` may allocate: 16 GiB, or the machine's physical memory
# when that is smaller (a file cannot make the loader ask for more than the host has).
DEFAULT_MAX_BYTES = 16 << 30


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def default_max_bytes() -> int:
    """DEFAULT_MAX_BYTES (module level, may be changed), capped by physical memory."""
    from . import DEFAULT_MAX_BYTES as configured  # noqa: PLC0415  (the package's, which users set)

    phys = _physical_memory()
    return int(min(configured, phys)) if phys else int(configured)


class Budget:
    """How many bytes one load may still allocate. Every storage, every inflated member and
    every tensor's logical size is charged before its memory is asked for."""

    def __init__(self, source: str, max_bytes: int | None) -> None:
        if max_bytes is None:
            max_bytes = default_max_bytes()
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes < 0:
            raise ValueError(f"eager.load: max_bytes must be a non-negative int, got {max_bytes!r}")
        self.source, self.limit, self.used = source, int(max_bytes), 0

    def charge(self, nbytes: int, what: str) -> None:
        if nbytes < 0 or nbytes > self.limit - self.used:
            raise RuntimeError(
                f"eager.load: {self.source}: {what} needs {nbytes} bytes, beyond the load's memory bound "
                f"({self.used} of max_bytes={self.limit} already used); pass a larger max_bytes= to "
                "eager.load (or set eager.serialization.DEFAULT_MAX_BYTES) if you trust the file")
        self.used += nbytes

    def check_logical(self, nbytes: int, what: str) -> None:
        """A view allocates nothing, but anything done with it allocates its logical size:
        a view larger than the whole bound (a stride-0 shape of 10^12 elements) is refused."""
        if nbytes > self.limit:
            raise RuntimeError(
                f"eager.load: {self.source}: {what} is {nbytes} bytes as a tensor, beyond the load's memory "
                f"bound (max_bytes={self.limit}); pass a larger max_bytes= to eager.load if you trust the file")


def int_field(value: Any, what: str, source: str, lo: int = 0, hi: int = INT64_MAX) -> int:
    """`value` as an int in [lo, hi] (bools and other types refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise RuntimeError(f"eager.load: {source}: {what} must be an integer, got {type(value).__name__} "
                           f"{_short(value)}")
    value = int(value)
    if not lo <= value <= hi:
        raise RuntimeError(f"eager.load: {source}: {what} = {value} is out of range [{lo}, {hi}]")
    return value


def int_tuple(value: Any, what: str, source: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise RuntimeError(f"eager.load: {source}: {what} must be a tuple of ints, got {type(value).__name__} "
                           f"{_short(value)}")
    if len(value) > 64:
        raise RuntimeError(f"eager.load: {source}: {what} has {len(value)} dimensions (at most 64)")
    return tuple(int_field(v, f"{what}[{k}]", source) for k, v in enumerate(value))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_view(source: str, member: str, storage_numel: int, itemsize: int, offset: Any, size: Any,
               stride: Any, budget: Budget) -> tuple:
    """(offset, size, stride) as ints once proven to address only elements [0, storage_numel)
    of the storage (in elements of `itemsize` bytes): no negative offset, size or stride, no
    element beyond the end, and a logical size within the budget. Arithmetic is in Python
    ints, so no product overflows."""
    offset = int_field(offset, f"the storage offset of a tensor on {member}", source)
    size = int_tuple(size, f"the size of a tensor on {member}", source)
    stride = int_tuple(stride, f"the stride of a tensor on {member}", source)
    if len(size) != len(stride):
        raise RuntimeError(f"eager.load: {source}: a tensor on {member} has size {list(size)} but stride "
                           f"{list(stride)} (different lengths)")
    numel = 1
    for n in size:
        numel *= n
    budget.check_logical(numel * itemsize, f"a tensor of size {list(size)} on {member}")
    if numel == 0:
        if offset > storage_numel:
            raise RuntimeError(f"eager.load: {source}: an empty tensor on {member} has storage offset {offset}, "
                               f"beyond the storage's {storage_numel} elements")
        return offset, size, stride
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage_numel:
        raise RuntimeError(
            f"eager.load: {source}: a tensor of size {list(size)}, stride {list(stride)} and storage offset "
            f"{offset} on {member} reads element {last}, but the storage holds only {storage_numel} elements "
            "(out of bounds: the file is damaged or hostile)")
    return offset, size, stride


def view(storage: np.ndarray, offset: int, size: Sequence[int], stride: Sequence[int]) -> np.ndarray:
    """The view check_view proved in bounds: shares storage's memory (writes through it are
    seen by every other view, as PyTorch's tensors on one storage)."""
    if any(n == 0 for n in size):
        return np.empty(tuple(size), dtype=storage.dtype)
    item = storage.itemsize
    base = storage[offset:]
    return np.lib.stride_tricks.as_strided(base, tuple(size), tuple(s * item for s in stride))


def member_info(archive: zipfile.ZipFile, name: str, source: str) -> zipfile.ZipInfo:
    try:
        return archive.getinfo(name)
    except KeyError:
        raise RuntimeError(f"eager.load: {source} is damaged: the archive has no member {name}") from None


def open_member(archive: zipfile.ZipFile, name: str, source: str, budget: Budget,
                expected: int | None = None, charge: bool = True) -> tuple[Any, int]:
    """(open stream, declared size) of member `name`, once its declared size (the central
    directory's) is checked against `expected` and the budget: nothing is inflated before."""
    info = member_info(archive, name, source)
    declared = info.file_size
    if expected is not None and declared != expected:
        raise RuntimeError(f"eager.load: {source} is damaged: member {name} holds {declared} bytes, its "
                           f"record declares {expected}")
    if charge or declared > budget.limit:
        budget.charge(declared, f"member {name}")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise RuntimeError(f"eager.load: {source}: member {name} uses compression method {info.compress_type}, "
                           "which eager.load does not read (stored or deflated only)")
    try:
        return archive.open(info), declared
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise RuntimeError(f"eager.load: {source} is damaged: cannot read member {name} ({exc})") from None


CHUNK = 16 << 20  # bytes inflated at a time into an array: a member is never held twice in memory


def read_into(fh: Any, out: np.ndarray, source: str, name: str, rest: int) -> None:
    """Fill C-contiguous `out` from the stream, chunk by chunk; the stream must then be at
    its end (`rest`: the bytes the member declares after what was read before)."""
    view = out.reshape(-1).view(np.uint8).data  # (a memoryview of the bytes)
    n = len(view)
    if rest != n:
        raise RuntimeError(f"eager.load: {source} is damaged: member {name} holds {rest} bytes of data, {n} expected")
    pos = 0
    try:
        while pos < n:
            chunk = fh.read(min(CHUNK, n - pos))
            if not chunk:
                raise RuntimeError(f"eager.load: {source} is damaged: member {name} ends after {pos} of its {n} bytes")
            view[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
        if fh.read(1):
            raise RuntimeError(f"eager.load: {source} is damaged: member {name} holds more than its {n} bytes")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise RuntimeError(f"eager.load: {source} is damaged: cannot read member {name} ({exc})") from None


def read_member(archive: zipfile.ZipFile, name: str, source: str, budget: Budget,
                expected: int | None = None, charge: bool = True) -> bytes:
    """The bytes of member `name`, never more than its declared size: the central directory's
    size is checked against `expected` and the budget before anything is inflated, and the
    inflater is asked for that many bytes only (a member that inflates to more, or to other
    bytes than its CRC, is damaged)."""
    fh, declared = open_member(archive, name, source, budget, expected, charge)
    out = np.empty(declared, np.uint8)
    with fh:
        read_into(fh, out, source, name, declared)
    return out.tobytes()


def prescan_pickle(stream: Any, source: str, what: str) -> None:
    """Walk one pickle's opcodes (pickletools, pure Python, nothing built) from the stream's
    position to its STOP, then rewind: a length that runs past the data, a truncated or
    unknown opcode, or a memo index beyond the pickle's own size is refused before the C
    unpickler sees it. The C unpickler sizes its memo table by the largest index it is
    given (LONG_BINPUT 0x7ffffff of an 11-byte pickle made it allocate 2 GB and spend 10 s)
    and allocates a declared bytes length before reading it."""
    start = stream.tell()
    size = stream.seek(0, 2) - start
    stream.seek(start)
    try:
        for opcode, arg, _ in pickletools.genops(stream):
            if opcode.name in ("PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET") and (
                    not isinstance(arg, int) or not 0 <= arg <= size):
                raise RuntimeError(f"eager.load: {source} is damaged or hostile: {what} uses memo index {arg}, beyond "
                                   f"its own {size} bytes")
    except RuntimeError:
        raise
    except Exception as exc:  # noqa: BLE001 - pickletools reports damage with ValueError and others
        raise RuntimeError(f"eager.load: {source} is damaged: {what} is not a readable pickle ({exc})") from None
    finally:
        stream.seek(start)


def unpickle_named(unpickler: Any, source: str, member: str) -> Any:
    """unpickler.load(), every failure a RuntimeError naming the member (a weights_only
    refusal, already PyTorch's UnpicklingError and a RuntimeError, passes as it is)."""
    try:
        return unpickler.load()
    except RuntimeError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError,
            RecursionError, MemoryError, OverflowError, struct.error, UnicodeDecodeError, LookupError) as exc:
        raise RuntimeError(f"eager.load: {source} is damaged: member {member} does not unpickle "
                           f"({type(exc).__name__}: {str(exc)[:200]})") from None


ENTRY_COST = 1024  # bytes of memory zipfile spends per member it lists (a ZipInfo and its name), at most


def check_directory(fh: Any, source: str, budget: Budget) -> None:
    """Before zipfile lists the archive: the member count and central directory size its end
    record declares, against the budget (zipfile builds an object per member, about ten
    times the directory's bytes). Nothing to say when there is no end record: zipfile then
    reports the file as not an archive."""
    here = fh.tell()
    try:
        end = zipfile._EndRecData(fh)  # type: ignore[attr-defined]  # (zipfile's own reader of the end record)
    except (OSError, ValueError, struct.error, EOFError):
        end = None
    finally:
        fh.seek(here)
    if not end:
        return
    entries, size = int(end[4]), int(end[5])
    if entries * ENTRY_COST > budget.limit or size > budget.limit:
        raise RuntimeError(f"eager.load: {source}: the archive lists {entries} members in a {size}-byte directory, "
                           f"beyond the load's memory bound (max_bytes={budget.limit}); pass a larger max_bytes= to "
                           "eager.load if you trust the file")


def check_archive(archive: zipfile.ZipFile, source: str, budget: Budget) -> None:
    """Whole-archive checks before any member is read: no member declares more than the
    budget, nor do all members together (a bomb of many small members is refused as one of
    a large one)."""
    total = 0
    for info in archive.infolist():
        if info.file_size > budget.limit:
            budget.charge(info.file_size, f"member {info.filename}")
        total += info.file_size
    if total > budget.limit:
        raise RuntimeError(f"eager.load: {source}: the archive's members declare {total} bytes in all, beyond the "
                           f"load's memory bound (max_bytes={budget.limit}); pass a larger max_bytes= to eager.load "
                           "if you trust the file")
