"""Reading files written by PyTorch's `torch.save`: the zip format (PyTorch >= 1.6) and the
legacy stream (`_use_new_zipfile_serialization=False`).

The pickle is read by a restricted unpickler (see allowlist): storages are named by
persistent ids `('storage', <dtype>Storage, key, location, numel)` and tensors are views of
them (`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`). Every storage
is checked against the bytes present (and the load's memory budget) before it is allocated,
every view against its storage before it is made (validation.check_view), and tensors on
one storage stay views of one array, so an in-place write to one is seen by the others, as
in PyTorch."""
from __future__ import annotations

import io
import pickle
import struct
import sys
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .._device import device as _device
from .._tensor import Tensor
from . import allowlist as _safe
from .validation import (
    Budget,
    check_view,
    int_field,
    member_info,
    open_member,
    prescan_pickle,
    read_into,
    read_member,
    unpickle_named,
    view,
)

# storage class -> element dtype (bfloat16 widens to float32: eager has no bfloat16 tensors)
STORAGES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "LongStorage": "int64",
    "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "BFloat16Storage": "bfloat16",
}
UNSUPPORTED_STORAGES = ("ComplexFloatStorage", "ComplexDoubleStorage", "QInt8Storage", "QUInt8Storage",
                        "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage", "UntypedStorage")
TORCH_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
                "float16": "float16", "half": "float16", "int64": "int64", "long": "int64", "int32": "int32",
                "int": "int32", "int16": "int16", "short": "int16", "int8": "int8", "uint8": "uint8",
                "bool": "bool"}
OTHER_DTYPES = ("complex64", "cfloat", "complex128", "cdouble", "uint16", "uint32", "uint64", "float8_e4m3fn",
                "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "qint8", "quint8", "qint32", "quint4x2")
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001


class StorageType:
    """What `torch.<X>Storage` stands for in a pickle: its element type."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.wide = STORAGES[name] == "bfloat16"  # stored as 2-byte bfloat16, held as float32
        self.dtype = np.dtype(np.uint16) if self.wide else np.dtype(STORAGES[name])

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class Storage:
    """A loaded storage, as `map_location`'s callable receives it (PyTorch passes an
    UntypedStorage): the callable may return it, `storage.cpu()` or `storage.cuda(k)`;
    tensors built on it go to the device it names."""

    def __init__(self, array: np.ndarray, location: str) -> None:
        self.array, self.location = array, location

    @property
    def device(self) -> _device:
        return _device(self.location)

    @property
    def is_cuda(self) -> bool:
        return self.location.startswith("cuda")

    def nbytes(self) -> int:
        return int(self.array.nbytes)

    def size(self) -> int:
        return int(self.array.size)

    def __len__(self) -> int:
        return int(self.array.size)

    def cpu(self) -> "Storage":
        return Storage(self.array, "cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> "Storage":
        index = device.index if isinstance(device, _device) else device
        return Storage(self.array, "cuda" if index is None else f"cuda:{int(index)}")

    def to(self, device: Any = None, *args: Any, **kwargs: Any) -> "Storage":
        return Storage(self.array, str(_device(device) if not isinstance(device, _device) else device))

    def __repr__(self) -> str:
        return f"Storage(numel={self.array.size}, dtype={self.array.dtype}, location={self.location!r})"


def place(storage_location: str, map_location: Any, array: np.ndarray, source: str) -> Storage:
    """Where a storage goes, as torch.load decides it: map_location None (the saved place),
    a str or device (everything there), a dict (saved place -> new place) or a callable
    `(storage, location) -> storage or None`."""
    loc = map_location
    if loc is None:
        target = storage_location
    elif callable(loc) and not isinstance(loc, (str, _device, dict)):
        result = loc(Storage(array, "cpu"), storage_location)  # (PyTorch hands it the CPU copy)
        if result is None:
            target = storage_location
        elif isinstance(result, Storage):
            return _checked_place(result, source)
        elif isinstance(result, Tensor):  # (a callable returning a tensor-like: take its device)
            target = str(result.device)
        else:
            raise RuntimeError(f"eager.load: map_location returned a {type(result).__name__}; it must return the "
                               "storage it was given (moved with .cpu()/.cuda()) or None")
    elif isinstance(loc, dict):
        target = str(loc.get(storage_location, storage_location))
    else:
        target = str(loc)
    return _checked_place(Storage(array, _location(target)), source)


def _location(text: str) -> str:
    return str(_device(text))


def _checked_place(storage: Storage, source: str) -> Storage:
    if storage.is_cuda:
        from .._device import cuda_is_available  # noqa: PLC0415

        if not cuda_is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but CUDA is not available. "
                               "If you are running on a CPU-only machine, please use eager.load with "
                               "map_location='cpu' (or map_location=lambda storage, loc: storage) to map your "
                               f"storages to the CPU ({source}).")
    return storage


def _on_device(t: Tensor, storage: Storage) -> Tensor:
    return t if storage.location == "cpu" else t.to(storage.location)


class Unpickler(_safe.Restricted):
    """The restricted unpickler of a torch.save pickle; storages come from `storage_for`."""

    def __init__(self, fh: Any, loader: "_Loader") -> None:
        super().__init__(fh, loader.weights_only)
        self.loader = loader

    def buildable(self, inst: Any) -> bool:
        return not isinstance(inst, (Tensor, _Held, Storage, StorageType))

    def lookup(self, module: str, name: str) -> Any:
        loader = self.loader
        found = _safe.BASE.get((module, name)) or _TORCH.get((module, name))
        if found is not None:
            return found
        if module == "torch":
            if name in STORAGES:
                return StorageType(name)
            if name in UNSUPPORTED_STORAGES:
                raise RuntimeError(f"eager.load: {loader.source}: the file holds a torch.{name}, a type eager has no "
                                   "tensors of (convert it to a real dtype with PyTorch before saving)")
            if name in ("bfloat16", "complex32"):  # a dtype saved as a value: eager's placeholder of it
                return getattr(_dtypes, name)
            if name in TORCH_DTYPES:  # a dtype saved as a value: eager's
                return _dtypes.from_name(TORCH_DTYPES[name])
            if name in OTHER_DTYPES:
                raise RuntimeError(f"eager.load: {loader.source}: the file names the dtype torch.{name}, which eager "
                                   "has no tensors of")
        allowed = _safe.user_allowed(module, name)
        if allowed is not None:
            return allowed
        if not loader.weights_only:
            eager_obj = _safe._resolve_eager(module, name)
            if eager_obj is not None:
                return eager_obj
            if not (module == "torch" or module.startswith("torch.")):
                return _safe.import_global(module, name)
        raise _safe.refusal(loader.source, module, name)

    def resolve(self, pid: Any) -> Any:
        return self.loader.storage_for(pid)


def _rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                    backward_hooks: Any = None, metadata: Any = None) -> Tensor:
    if not isinstance(storage, _Held):
        raise pickle.UnpicklingError(f"_rebuild_tensor_v2 expects a storage, got {type(storage).__name__}")
    return storage.loader.tensor(storage, storage_offset, size, stride, bool(requires_grad))


def _rebuild_tensor_v3(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
                       backward_hooks: Any, dtype: Any, metadata: Any = None) -> Tensor:
    t = _rebuild_tensor(storage, storage_offset, size, stride, requires_grad)
    if isinstance(dtype, _dtypes.dtype) and dtype is not t.dtype:
        raise RuntimeError(f"eager.load: {storage.loader.source}: a tensor of dtype {dtype.name} is stored "
                           f"as {t.dtype.name} (a reinterpreting view), which eager.load does not read")
    return t


def _rebuild_parameter(data: Any, requires_grad: Any = True, backward_hooks: Any = None, *args: Any) -> Tensor:
    from ..nn.parameter import Parameter  # noqa: PLC0415

    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError(f"_rebuild_parameter expects a tensor, got {type(data).__name__}")
    return Parameter(data, requires_grad=bool(requires_grad))


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, backward_hooks: Any, state: Any) -> Tensor:
    return _rebuild_parameter(data, requires_grad)


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    if func not in (_rebuild_tensor, _rebuild_tensor_v3, _rebuild_parameter) or not isinstance(args, tuple):
        raise pickle.UnpicklingError("_rebuild_from_type_v2 with another rebuild function is not allowed")
    from ..nn.parameter import Parameter  # noqa: PLC0415

    t = func(*args)
    if new_type is _parameter_type and not isinstance(t, Parameter):
        t = _rebuild_parameter(t, t.requires_grad)
    return t


def _torch_size(dims: Any = ()) -> tuple:
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, int) for d in dims):
        raise pickle.UnpicklingError(f"torch.Size({dims!r}) is not a tuple of ints")
    return tuple(dims)


def _torch_device(spec: Any = "cpu", index: Any = None) -> _device:
    return _device(spec, index) if index is not None else _device(spec)


def _tensor_type() -> None:  # (stands for torch.Tensor in _rebuild_from_type_v2)
    return None


def _parameter_type() -> None:  # (stands for torch.nn.Parameter in _rebuild_from_type_v2)
    return None


_TORCH = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch", "Tensor"): _tensor_type,
    ("torch.nn.parameter", "Parameter"): _parameter_type,
    ("torch", "Size"): _torch_size,
    ("torch", "device"): _torch_device,
}


class _Held:
    """A storage as the pickle sees it (what persistent_load returns)."""

    __slots__ = ("loader", "key", "array", "placed", "member")

    def __init__(self, loader: "_Loader", key: str, array: np.ndarray, placed: Storage, member: str) -> None:
        self.loader, self.key, self.array, self.placed, self.member = loader, key, array, placed, member


class _Loader:
    """State shared by one load: the budget, the storages read so far, the options."""

    def __init__(self, source: str, budget: Budget, map_location: Any, weights_only: bool) -> None:
        self.source, self.budget, self.map_location, self.weights_only = source, budget, map_location, weights_only
        self.storages: dict = {}

    def parse_pid(self, pid: Any) -> tuple:
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"):
            raise RuntimeError(f"eager.load: {self.source}: unknown persistent id {_short(pid)} (expected "
                               "('storage', type, key, location, numel))")
        kind, key, location, numel = pid[1:5]
        if not isinstance(kind, StorageType):
            raise RuntimeError(f"eager.load: {self.source}: storage {_short(key)} has type {_short(kind)}, not a "
                               "torch storage type")
        if not isinstance(key, (str, int)) or not isinstance(location, str):
            raise RuntimeError(f"eager.load: {self.source}: malformed storage id {_short(pid)}")
        if len(pid) == 6 and pid[5] is not None:
            raise RuntimeError(f"eager.load: {self.source}: storage {key} is a view of another storage (a format "
                               "of PyTorch before 0.4), which eager.load does not read")
        numel = int_field(numel, f"the element count of storage {key}", self.source)
        return kind, str(key), location, numel

    def element_dtype(self, kind: StorageType) -> tuple:
        """(dtype of the bytes on disk, dtype held in memory)."""
        return kind.dtype, (np.dtype(np.float32) if kind.wide else kind.dtype)

    def storage_for(self, pid: Any) -> _Held:
        raise NotImplementedError

    def tensor(self, held: _Held, offset: Any, size: Any, stride: Any, requires_grad: bool) -> Tensor:
        arr = held.array
        offset, size, stride = check_view(self.source, held.member, arr.size, arr.itemsize, offset, size, stride,
                                          self.budget)
        t = Tensor._make(view(arr, offset, size, stride))
        t = _on_device(t, held.placed)
        if requires_grad:
            if not t.dtype.is_floating_point:
                raise RuntimeError(f"eager.load: {self.source}: a {t.dtype.name} tensor on {held.member} is marked "
                                   "requires_grad (only floating point tensors can require gradients)")
            t.requires_grad_(True)
        return t


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _widen_bfloat16(raw: np.ndarray) -> np.ndarray:
    return (raw.astype(np.uint32) << 16).view(np.float32)


class _ZipLoader(_Loader):
    def __init__(self, archive: zipfile.ZipFile, prefix: str, *args: Any) -> None:
        super().__init__(*args)
        self.archive, self.prefix = archive, prefix

    def storage_for(self, pid: Any) -> _Held:
        kind, key, location, numel = self.parse_pid(pid)
        if key in self.storages:
            held = self.storages[key]
            if held.array.size != numel:
                raise RuntimeError(f"eager.load: {self.source}: storage {key} is declared with {held.array.size} "
                                   f"and {numel} elements")
            return held
        disk, memory = self.element_dtype(kind)
        member = f"{self.prefix}data/{key}"
        info = member_info(self.archive, member, self.source)
        nbytes = numel * disk.itemsize
        if info.file_size != nbytes:
            raise RuntimeError(f"eager.load: {self.source} is damaged: member {member} holds {info.file_size} bytes, "
                               f"but its storage declares {numel} elements of {disk} ({nbytes} bytes)")
        self.budget.charge(numel * memory.itemsize, f"storage {member} ({numel} elements of {memory})")
        fh, _ = open_member(self.archive, member, self.source, self.budget, nbytes, charge=False)
        raw = np.empty(numel, disk)
        with fh:
            read_into(fh, raw, self.source, member, nbytes)
        array = _widen_bfloat16(raw) if memory != disk else raw
        held = _Held(self, key, array, place(location, self.map_location, array, self.source), member)
        self.storages[key] = held
        return held


class _LegacyLoader(_Loader):
    """The pre-1.6 stream: storages are allocated while the pickle is read (after checking
    that the rest of the file can hold them) and filled from the stream afterwards."""

    def __init__(self, remaining: int, *args: Any) -> None:
        super().__init__(*args)
        self.remaining = remaining
        self.kinds: dict = {}

    def storage_for(self, pid: Any) -> _Held:
        kind, key, location, numel = self.parse_pid(pid)
        if key in self.storages:
            return self.storages[key]
        disk, memory = self.element_dtype(kind)
        nbytes = numel * disk.itemsize
        if nbytes > self.remaining:
            raise RuntimeError(f"eager.load: {self.source} is damaged: storage {key} declares {numel} elements of "
                               f"{disk} ({nbytes} bytes) but only {self.remaining} bytes of the file remain")
        self.remaining -= nbytes
        self.budget.charge(numel * memory.itemsize, f"storage {key} ({numel} elements of {memory})")
        array = np.zeros(numel, dtype=memory)
        held = _Held(self, key, array, place(location, self.map_location, array, self.source), f"storage {key}")
        self.storages[key] = held
        self.kinds[key] = disk
        return held

    def fill(self, fh: Any, keys: Any) -> None:
        if not isinstance(keys, list) or set(map(str, keys)) != set(self.storages) or len(keys) != len(self.storages):
            raise RuntimeError(f"eager.load: {self.source} is damaged: its storage key list {_short(keys)} does not "
                               f"name the storages its pickle uses ({sorted(self.storages)})")
        for key in map(str, keys):
            held, disk = self.storages[key], self.kinds[key]
            head = fh.read(8)
            if len(head) != 8:
                raise RuntimeError(f"eager.load: {self.source} is truncated: storage {key} has no size header")
            (count,) = struct.unpack("<q", head)
            if count != held.array.size:
                raise RuntimeError(f"eager.load: {self.source} is damaged: storage {key} holds {count} elements, "
                                   f"its pickle declares {held.array.size}")
            data = fh.read(count * disk.itemsize)
            if len(data) != count * disk.itemsize:
                raise RuntimeError(f"eager.load: {self.source} is truncated: storage {key} has {len(data)} of its "
                                   f"{count * disk.itemsize} bytes")
            raw = np.frombuffer(data, dtype=disk)
            held.array[...] = _widen_bfloat16(raw) if disk != held.array.dtype else raw
            # tensors were made as views of held.array before the data arrived; a tensor moved to
            # another device was copied too early: copy again
        if any(h.placed.location != "cpu" for h in self.storages.values()):
            raise RuntimeError(f"eager.load: {self.source}: a legacy-format file maps storages to another device; "
                               "load it with map_location='cpu' and move the tensors afterwards")


def _unpickle(data: bytes, loader: _Loader, member: str) -> Any:
    stream = io.BytesIO(data)
    prescan_pickle(stream, loader.source, member)
    return adopt_modules(unpickle_named(Unpickler(stream, loader), loader.source, member))


def adopt_modules(obj: Any) -> Any:
    """A PyTorch module pickled whole (torch.save(model)) comes back as eager's class at the
    same path with torch's instance dict: its registries become eager's (`_parameters`,
    `_buffers`, `_modules` as eager's registry dicts, `_non_persistent_buffers_set` as
    `_non_persistent`) and the hook tables eager reads are made when missing, for every
    module reachable from `obj`."""
    from ..nn.module import Module, _Registry  # noqa: PLC0415

    seen: set = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Module):
            d = item.__dict__
            for key in ("_parameters", "_buffers", "_modules"):
                value = d.get(key)
                if not isinstance(value, _Registry):
                    d[key] = _Registry(value.items() if isinstance(value, dict) else ())
            if "_non_persistent" not in d:
                d["_non_persistent"] = set(d.pop("_non_persistent_buffers_set", ()) or ())
            for key in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks"):
                if not isinstance(d.get(key), dict):
                    d[key] = OrderedDict()
            d.setdefault("training", True)
            stack.extend(v for v in d["_modules"].values() if v is not None)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return obj


def load_zip(archive: zipfile.ZipFile, prefix: str, source: str, budget: Budget, map_location: Any,
             weights_only: bool) -> Any:
    order = f"{prefix}byteorder"
    if order in archive.namelist():
        byteorder = read_member(archive, order, source, budget).strip()
        if byteorder not in (b"little", b"big"):
            raise RuntimeError(f"eager.load: {source} is damaged: {order} says {byteorder[:20]!r}")
        if byteorder != sys.byteorder.encode():
            raise RuntimeError(f"eager.load: {source} was written on a {byteorder.decode()}-endian machine, which "
                               "eager.load does not read on this one")
    data = read_member(archive, f"{prefix}data.pkl", source, budget)
    loader = _ZipLoader(archive, prefix, source, budget, map_location, weights_only)
    return _unpickle(data, loader, f"{prefix}data.pkl")


def is_legacy(head: bytes) -> bool:
    """A legacy torch.save stream starts with the pickled magic number (protocol 2+: PROTO
    then LONG1 of 10 bytes)."""
    return head[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05") and head[2:4] == b"\x8a\x0a"


def load_legacy(fh: Any, size: int, source: str, budget: Budget, map_location: Any, weights_only: bool) -> Any:
    if size > budget.limit:
        budget.charge(size, "the file")
    data = fh.read()
    stream = io.BytesIO(data)

    def header(what: str) -> Any:
        prescan_pickle(stream, source, f"the {what}")
        try:
            return Unpickler(stream, _LegacyLoader(0, source, budget, None, True)).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as exc:
            raise RuntimeError(f"eager.load: {source} is damaged: unreadable {what} ({exc})") from None

    if header("magic number") != MAGIC_NUMBER:
        raise RuntimeError(f"eager.load: {source} is not a PyTorch file (wrong magic number)")
    if header("protocol version") != LEGACY_PROTOCOL:
        raise RuntimeError(f"eager.load: {source}: unsupported PyTorch legacy protocol version")
    info = header("system info")
    if isinstance(info, dict) and info.get("little_endian") is False:
        raise RuntimeError(f"eager.load: {source} was written on a big-endian machine, which eager.load does not read")
    start = stream.tell()
    loader = _LegacyLoader(len(data) - start, source, budget, map_location, weights_only)
    prescan_pickle(stream, source, "the object's pickle")
    obj = adopt_modules(unpickle_named(Unpickler(stream, loader), source, "the object's pickle"))
    keys = header("storage key list")
    loader.fill(stream, keys)
    return obj
