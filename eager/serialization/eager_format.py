"""eager's own checkpoint format: a zip archive holding `manifest.json` and one `.npy` array
per storage.

The manifest gives the object's structure (dicts, lists, tuples, numbers, strings, None,
dtypes and devices), a table of storages (file, dtype, element count) and, for each tensor,
its storage, offset, shape and stride (elements), dtype, requires_grad and whether it is a
Parameter. Tensors that are views of one NumPy array are written as views of one storage and
come back as views of one array, so an in-place write to one is seen by the others (as
PyTorch's storages behave). Objects outside that set are pickled, with tensors, dtypes and
devices inside them referred to by persistent id (so a saved `nn.Module` keeps its tensors
in the archive as .npy files); `load` unpickles them only through the restricted unpickler
of `weights_only` loads (allowlist.py) unless `weights_only=False`.

Format version 1 (one contiguous .npy per tensor, plain pickles) is still read."""
from __future__ import annotations

import io
import json
import pickle
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
    int_tuple,
    member_info,
    open_member,
    prescan_pickle,
    read_into,
    read_member,
    unpickle_named,
    view,
)

FORMAT = "eager-checkpoint"
VERSION = 2
NPY_HEADER_MAX = 1 << 16  # an .npy header is at most this long (NumPy writes ~128 bytes)


# -- writing --------------------------------------------------------------------------------------------
def _root(arr: np.ndarray) -> np.ndarray:
    """The array that owns the memory `arr` views (through NumPy's bases, including the
    DummyArray that as_strided leaves between a view and its base)."""
    base = arr
    while True:
        up = base.base
        if isinstance(up, np.ndarray):
            base = up
        elif up is not None and isinstance(getattr(up, "base", None), np.ndarray) and type(up).__name__ == "DummyArray":
            base = up.base
        else:
            return base


def _as_view_of(arr: np.ndarray, root: np.ndarray) -> tuple | None:
    """(offset, strides) in elements that make `arr` from root's flat elements, or None when
    arr is not such a view (another dtype, negative or uneven strides, outside root)."""
    if root.dtype != arr.dtype or not root.flags.c_contiguous or arr.dtype.hasobject:
        return None
    item = arr.itemsize
    start = arr.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if start < 0 or start % item or any(s < 0 or s % item for s in arr.strides):
        return None
    offset, strides = start // item, tuple(s // item for s in arr.strides)
    if arr.size and offset + sum((n - 1) * s for n, s in zip(arr.shape, strides)) >= root.size:
        return None
    return offset, strides


class _Writer:
    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self.tensors: dict[int, dict] = {}
        self.keep: list = []  # what ids were taken of, alive until the archive is written
        self.storages: list = []
        self.storage_ids: dict[int, int] = {}
        self.n_pickles = 0

    def encode(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if obj is None or isinstance(obj, (bool, int, float, str)):
            if isinstance(obj, float) and not np.isfinite(obj):
                return {"float": repr(obj)}
            return obj
        if isinstance(obj, _dtypes.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, _device):
            return {"device": str(obj)}
        if isinstance(obj, dict) and all(isinstance(k, (str, int)) for k in obj):  # (subclasses as their base)
            return {"dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()],
                    "ordered": isinstance(obj, OrderedDict)}
        if isinstance(obj, list):
            return {"list": [self.encode(v) for v in obj]}
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):  # (a namedtuple is pickled, keeping its type)
            return {"tuple": [self.encode(v) for v in obj]}
        if isinstance(obj, np.ndarray) and obj.dtype.kind in "biuf":
            return {"ndarray": self._array(obj)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item())
        return self._pickle(obj)

    def _array(self, arr: np.ndarray) -> str:
        name = f"data/{len(self.archive.namelist())}.npy"
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)  # keeps 0-d
        self.archive.writestr(name, buf.getvalue())
        return name

    def _storage(self, data: np.ndarray, record: dict) -> tuple:
        """(storage index, offset, strides): data's own memory when it is a view of a plain
        array, else a contiguous copy of its own. The storages are written by `finish`."""
        root = _root(data)
        placed = _as_view_of(data, root)
        if placed is None:
            root = np.ascontiguousarray(data)
            placed = (0, tuple(int(s) // data.itemsize for s in root.strides) if root.size else
                      tuple(0 for _ in root.shape))
        key = id(root)
        if key not in self.storage_ids:
            self.keep.append(root)
            self.storage_ids[key] = len(self.storages)
            self.storages.append({"root": root.reshape(-1), "records": []})
        offset, strides = placed
        reach = offset + sum((n - 1) * s for n, s in zip(data.shape, strides)) + 1 if data.size else offset
        self.storages[self.storage_ids[key]]["records"].append((record, offset, reach if data.size else None))
        return self.storage_ids[key], offset, strides

    def finish(self) -> list:
        """Write each storage: the span of its root array that the saved tensors reach (not
        the whole root: a view of a large buffer writes only what its tensors can read), with
        the tensors' offsets made relative to it. Returns the manifest's storage table."""
        table = []
        for entry in self.storages:
            root, records = entry["root"], entry["records"]
            reached = [(o, r) for _, o, r in records if r is not None]
            lo = min((o for o, _ in reached), default=0)
            hi = max((r for _, r in reached), default=0)
            span = root[lo:hi] if hi > lo else root[:0]
            for record, offset, reach in records:
                record["offset"] = int(offset - lo) if reach is not None else 0
            table.append({"file": self._array(span), "dtype": _dtypes.from_numpy(span.dtype).name,
                          "numel": int(span.size)})
        return table

    def _tensor(self, t: Tensor) -> dict:
        from ..nn.parameter import Parameter  # noqa: PLC0415

        key = id(t)
        if key not in self.tensors:
            self.keep.append(t)
            data = t._data if isinstance(t._data, np.ndarray) else t._data.get()
            data = np.asarray(data)
            record: dict = {"tensor": len(self.tensors)}
            storage, offset, stride = self._storage(data, record)
            record.update({"storage": storage, "offset": int(offset), "shape": list(t.shape), "stride": list(stride),
                           "dtype": t.dtype.name, "requires_grad": bool(t.requires_grad),
                           "parameter": isinstance(t, Parameter), "device": str(t.device)})
            self.tensors[key] = record
            return self.tensors[key]
        return {"tensor": self.tensors[key]["tensor"]}

    def _pickle(self, obj: Any) -> dict:
        name = f"objects/{self.n_pickles}.pkl"
        self.n_pickles += 1
        refs: list = []
        writer = self

        class Pickler(pickle.Pickler):
            def persistent_id(self, value: Any) -> Any:  # tensors, dtypes, devices: by reference
                if isinstance(value, (Tensor, _dtypes.dtype, _device)):
                    refs.append(writer.encode(value))
                    return len(refs) - 1
                return None

        buf = io.BytesIO()
        Pickler(buf, protocol=4).dump(obj)
        self.archive.writestr(name, buf.getvalue())
        return {"pickle": name, "type": f"{type(obj).__module__}.{type(obj).__qualname__}", "refs": refs}


def save(obj: Any, fh: Any) -> None:
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as archive:
        writer = _Writer(archive)
        root = writer.encode(obj)
        storages = writer.finish()
        archive.writestr("manifest.json", json.dumps({"format": FORMAT, "version": VERSION, "root": root,
                                                      "storages": storages}))


# -- reading --------------------------------------------------------------------------------------------
def read_npy(archive: zipfile.ZipFile, name: str, source: str, budget: Budget,
             dtype: np.dtype | None = None, numel: int | None = None) -> np.ndarray:
    """An .npy member as a writable array, its header checked before its data is read: the
    dtype and element count it declares (and the caller's, when given) must match the bytes
    the member holds. np.load would allocate the header's shape first."""
    info = member_info(archive, name, source)
    if numel is not None and dtype is not None:
        expected = numel * dtype.itemsize
        if not expected <= info.file_size <= expected + NPY_HEADER_MAX:
            raise RuntimeError(f"eager.load: {source} is damaged: member {name} holds {info.file_size} bytes, too "
                               f"few or too many for {numel} elements of {dtype}")
    fh, declared = open_member(archive, name, source, budget, charge=False)
    with fh:
        try:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, found = np.lib.format.read_array_header_1_0(fh)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, found = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"unknown .npy version {version}")
            header = fh.tell()
        except Exception as exc:  # noqa: BLE001 - NumPy's header parser (tokenize, literal_eval) raises many types
            raise RuntimeError(f"eager.load: {source} is damaged: member {name} is not a readable .npy array "
                               f"({exc})") from None
        if found.hasobject or found.kind not in "biuf" or fortran:
            raise RuntimeError(f"eager.load: {source}: member {name} holds a {found} array"
                               f"{' in Fortran order' if fortran else ''}, which is not a tensor's storage")
        count = 1
        for n in shape:
            count *= int(n)
        if declared - header != count * found.itemsize:
            raise RuntimeError(f"eager.load: {source} is damaged: member {name} declares {list(shape)} of {found} "
                               f"({count * found.itemsize} bytes) but holds {declared - header} bytes of data")
        if dtype is not None and found.newbyteorder("=") != dtype:
            raise RuntimeError(f"eager.load: {source} is damaged: member {name} holds {found}, the manifest says "
                               f"{dtype}")
        if numel is not None and count != numel:
            raise RuntimeError(f"eager.load: {source} is damaged: member {name} holds {count} elements, the "
                               f"manifest says {numel}")
        budget.charge(count * found.itemsize, f"member {name} ({count} elements of {found})")
        out = np.empty(count, found)
        read_into(fh, out, source, name, declared - header)
    if not found.isnative:
        out = out.astype(found.newbyteorder("="))
    return out.reshape(shape)


class Reader:
    def __init__(self, archive: zipfile.ZipFile, manifest: dict, weights_only: bool, map_location: Any,
                 source: str, budget: Budget) -> None:
        self.archive, self.weights_only, self.map_location = archive, weights_only, map_location
        self.source, self.budget = source, budget
        self.tensors: dict[int, Tensor] = {}
        self.storage_table = manifest.get("storages", [])
        if not isinstance(self.storage_table, list):
            self.fail("its storage table is not a list")
        self.storages: dict = {}

    def fail(self, what: str) -> None:
        raise RuntimeError(f"eager.load: {self.source} has a malformed manifest: {what}")

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or len(node) == 0:
            self.fail(f"unexpected {type(node).__name__} {_short(node)}")
        if "tensor" in node:
            return self._tensor(node)
        if "dict" in node:
            pairs = self._list(node, "dict")
            items = []
            for pair in pairs:
                if not isinstance(pair, list) or len(pair) != 2:
                    self.fail(f"a dict entry is {_short(pair)}, not a [key, value] pair")
                key = self.decode(pair[0])
                if not isinstance(key, (str, int, float, bool, type(None), tuple)):
                    self.fail(f"a dict key is a {type(key).__name__}")
                items.append((key, self.decode(pair[1])))
            return OrderedDict(items) if node.get("ordered") else dict(items)
        if "list" in node:
            return [self.decode(v) for v in self._list(node, "list")]
        if "tuple" in node:
            return tuple(self.decode(v) for v in self._list(node, "tuple"))
        if "float" in node:
            text = node["float"]
            if text not in ("inf", "-inf", "nan"):
                self.fail(f"float {_short(text)} (only inf, -inf and nan are spelled as text)")
            return float(text)
        if "dtype" in node:
            return self._dtype(node["dtype"])
        if "device" in node:
            try:
                return _device(node["device"])
            except (TypeError, ValueError, RuntimeError) as exc:
                self.fail(f"device {_short(node['device'])} ({exc})")
        if "ndarray" in node:
            return read_npy(self.archive, self._name(node["ndarray"]), self.source, self.budget)
        if "pickle" in node:
            return self._unpickle(node)
        self.fail(f"unknown entry {sorted(map(str, node))[:5]}")

    def _list(self, node: dict, key: str) -> list:
        value = node[key]
        if not isinstance(value, list):
            self.fail(f"{key} is a {type(value).__name__}, not a list")
        return value

    def _name(self, value: Any) -> str:
        if not isinstance(value, str):
            self.fail(f"a member name is {_short(value)}")
        return value

    def _dtype(self, name: Any) -> _dtypes.dtype:
        try:
            return _dtypes.from_name(name)
        except (KeyError, TypeError):
            self.fail(f"unknown dtype {_short(name)}")
            raise  # (fail raised)

    def _storage(self, index: Any) -> tuple:
        index = int_field(index, "a tensor's storage index", self.source, 0, len(self.storage_table) - 1)
        if index not in self.storages:
            entry = self.storage_table[index]
            if not isinstance(entry, dict):
                self.fail(f"storage {index} is {_short(entry)}")
            dt = self._dtype(entry.get("dtype"))
            numel = int_field(entry.get("numel"), f"the element count of storage {index}", self.source)
            name = self._name(entry.get("file"))
            arr = read_npy(self.archive, name, self.source, self.budget, dt.np, numel).reshape(-1)
            self.storages[index] = (arr, name)
        return self.storages[index]

    def _tensor(self, node: dict) -> Tensor:
        from ..nn.parameter import Parameter  # noqa: PLC0415

        key = int_field(node["tensor"], "a tensor index", self.source)
        if key in self.tensors:
            return self.tensors[key]
        if len(node) == 1:
            self.fail(f"tensor {key} is referred to before it is described")
        dt = self._dtype(node.get("dtype"))
        shape = int_tuple(node.get("shape"), f"the shape of tensor {key}", self.source)
        if "storage" in node:
            arr, member = self._storage(node["storage"])
            if arr.dtype != dt.np:
                self.fail(f"tensor {key} is {dt.name} but its storage {member} holds {arr.dtype}")
            offset, size, stride = check_view(self.source, member, arr.size, arr.itemsize, node.get("offset"),
                                              shape, node.get("stride"), self.budget)
            data = view(arr, offset, size, stride)
        else:  # version 1: one contiguous array per tensor
            numel = 1
            for n in shape:
                numel *= n
            self.budget.check_logical(numel * dt.itemsize, f"tensor {key}")
            name = self._name(node.get("file"))
            data = read_npy(self.archive, name, self.source, self.budget, dt.np, numel).reshape(shape)
        t = Tensor._make(data)
        dev = self._target_device(node.get("device", "cpu"), data)
        if dev != "cpu":
            t = t.to(dev)
        requires_grad = node.get("requires_grad", False)
        if not isinstance(requires_grad, bool):
            self.fail(f"requires_grad of tensor {key} is {_short(requires_grad)}")
        if requires_grad and not dt.is_floating_point:
            self.fail(f"tensor {key} is {dt.name} and marked requires_grad")
        if node.get("parameter"):
            t = Parameter(t, requires_grad=requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        self.tensors[key] = t
        return t

    def _target_device(self, saved: Any, array: np.ndarray) -> str:
        from .torch_format import place  # noqa: PLC0415

        if not isinstance(saved, str):
            self.fail(f"device {_short(saved)}")
        try:
            return place(saved, self.map_location, array, self.source).location
        except (TypeError, ValueError, RuntimeError) as exc:
            if str(exc).startswith(("eager.load", "Attempting")):
                raise
            raise RuntimeError(f"eager.load: {self.source}: cannot place a tensor saved on {saved!r} ({exc})") from None

    def _unpickle(self, node: dict) -> Any:
        name = self._name(node["pickle"])
        refs = node.get("refs")
        if refs is not None and not isinstance(refs, list):
            self.fail(f"the references of {name} are not a list")
        data = read_member(self.archive, name, self.source, self.budget)
        reader = self

        class Unpickler(_safe.Restricted):
            def lookup(self, module: str, qualname: str) -> Any:
                found = (_safe.BASE.get((module, qualname)) or _safe.eager_internal(module, qualname)
                         or _safe.user_allowed(module, qualname))
                if found is not None:
                    return found
                if not reader.weights_only:
                    return _safe.import_global(module, qualname)
                raise _safe.refusal(reader.source, module, qualname)

            def resolve(self, pid: Any) -> Any:
                if refs is None or isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < len(refs):
                    raise RuntimeError(f"eager.load: {reader.source}: {name} refers to object {_short(pid)}, "
                                       "which its manifest does not list")
                return reader.decode(refs[pid])

        stream = io.BytesIO(data)
        prescan_pickle(stream, self.source, name)
        return unpickle_named(Unpickler(stream, self.weights_only), self.source, name)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load(archive: zipfile.ZipFile, source: str, budget: Budget, map_location: Any, weights_only: bool) -> Any:
    raw = read_member(archive, "manifest.json", source, budget)
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise RuntimeError(f"eager.load: {source} is damaged: unreadable manifest ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RuntimeError(f"eager.load: {source} is not an eager checkpoint (unknown manifest format)")
    version = manifest.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise RuntimeError(f"eager.load: {source} has a malformed manifest: version {_short(version)}")
    if version > VERSION:
        raise RuntimeError(f"eager.load: {source} was written by a newer eager (format version {version} > "
                           f"{VERSION}); upgrade to read it")
    if "root" not in manifest:
        raise RuntimeError(f"eager.load: {source} has a malformed manifest: no root object")
    return Reader(archive, manifest, weights_only, map_location, source, budget).decode(manifest["root"])
