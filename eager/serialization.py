"""`eager.save` / `eager.load`: tensors, state dicts and nested containers in a file a user
can trust.

The format is a zip archive holding `manifest.json` (the object's structure: dicts, lists,
tuples, numbers, strings, None, dtypes and devices, and for each tensor its dtype, shape,
requires_grad and whether it is a Parameter) and one `.npy` array per tensor. Nothing is
unpickled unless asked: objects outside that set are written as pickles (so `save` takes
what `torch.save` takes) and `load` refuses them unless `weights_only=False`, as PyTorch's
`weights_only=True` default does. A truncated or foreign file raises a RuntimeError naming
the file and what it expected.

Files written by PyTorch's `torch.save` (its zip format, PyTorch >= 1.6) are read too, by a
restricted unpickler that knows only tensors, Parameters, OrderedDicts and plain containers
(what `torch.load(weights_only=True)` accepts), never arbitrary classes."""
from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from collections import OrderedDict
from typing import Any

import numpy as np

from . import _dtypes
from ._device import device as _device
from ._tensor import Tensor

FORMAT = "eager-checkpoint"
VERSION = 1


class _Writer:
    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self.tensors: dict[int, int] = {}
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
        if isinstance(obj, (dict, OrderedDict)) and all(isinstance(k, (str, int)) for k in obj):
            return {"dict": [[self.encode(k), self.encode(v)] for k, v in obj.items()],
                    "ordered": isinstance(obj, OrderedDict)}
        if isinstance(obj, list):
            return {"list": [self.encode(v) for v in obj]}
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return {"tuple": [self.encode(v) for v in obj]}
        if isinstance(obj, np.ndarray) and obj.dtype.kind in "biuf":
            return {"ndarray": self._array(obj)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item())
        return self._pickle(obj)

    def _array(self, arr: np.ndarray) -> str:
        name = f"data/{len(self.archive.namelist())}.npy"
        buf = io.BytesIO()
        np.save(buf, arr if arr.flags.c_contiguous else arr.copy(order="C"), allow_pickle=False)  # keeps 0-d
        self.archive.writestr(name, buf.getvalue())
        return name

    def _tensor(self, t: Tensor) -> dict:
        from .nn.parameter import Parameter  # noqa: PLC0415

        data = t._data if isinstance(t._data, np.ndarray) else t._data.get()
        key = id(t)
        if key not in self.tensors:
            self.tensors[key] = len(self.tensors)
            name = self._array(np.asarray(data))
        else:
            name = None
        return {"tensor": self.tensors[key], "file": name, "dtype": t.dtype.name, "shape": list(t.shape),
                "requires_grad": bool(t.requires_grad), "parameter": isinstance(t, Parameter),
                "device": str(t.device)}

    def _pickle(self, obj: Any) -> dict:
        name = f"objects/{self.n_pickles}.pkl"
        self.n_pickles += 1
        self.archive.writestr(name, pickle.dumps(obj))
        return {"pickle": name, "type": f"{type(obj).__module__}.{type(obj).__qualname__}"}


def save(obj: Any, f: Any, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Write obj (tensors, state dicts, nested dicts/lists/tuples of them and of numbers) to
    f, a path or a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _save(obj, fh)
    else:
        _save(obj, f)


def _save(obj: Any, fh) -> None:
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as archive:
        writer = _Writer(archive)
        root = writer.encode(obj)
        archive.writestr("manifest.json", json.dumps({"format": FORMAT, "version": VERSION, "root": root}))


class _Reader:
    def __init__(self, archive: zipfile.ZipFile, weights_only: bool, map_location: Any, source: str) -> None:
        self.archive, self.weights_only, self.map_location, self.source = archive, weights_only, map_location, source
        self.tensors: dict[int, Tensor] = {}

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict):
            raise RuntimeError(f"eager.load: {self.source} has a malformed manifest (unexpected {type(node).__name__})")
        if "tensor" in node:
            return self._tensor(node)
        if "dict" in node:
            items = [(self.decode(k), self.decode(v)) for k, v in node["dict"]]
            return OrderedDict(items) if node.get("ordered") else dict(items)
        if "list" in node:
            return [self.decode(v) for v in node["list"]]
        if "tuple" in node:
            return tuple(self.decode(v) for v in node["tuple"])
        if "float" in node:
            return float(node["float"])
        if "dtype" in node:
            return _dtypes.from_name(node["dtype"])
        if "device" in node:
            return _device(node["device"])
        if "ndarray" in node:
            return self._array(node["ndarray"])
        if "pickle" in node:
            if self.weights_only:
                raise pickle.UnpicklingError(
                    f"Weights only load failed: {self.source} contains a {node.get('type', 'Python')} object, which "
                    "load() does not unpickle by default (it could run arbitrary code). If you trust the file, "
                    "call eager.load(..., weights_only=False).")
            return pickle.loads(self.archive.read(node["pickle"]))
        raise RuntimeError(f"eager.load: {self.source} has a malformed manifest entry {sorted(node)}")

    def _array(self, name: str) -> np.ndarray:
        try:
            return np.load(io.BytesIO(self.archive.read(name)), allow_pickle=False)
        except (KeyError, ValueError, OSError, zipfile.BadZipFile) as exc:
            raise RuntimeError(f"eager.load: {self.source} is damaged: cannot read {name} ({exc})") from None

    def _tensor(self, node: dict) -> Tensor:
        from .nn.parameter import Parameter  # noqa: PLC0415

        key = node["tensor"]
        if key in self.tensors:
            return self.tensors[key]
        arr = self._array(node["file"])
        dt = _dtypes.from_name(node["dtype"])
        if arr.dtype != dt.np or list(arr.shape) != list(node["shape"]):
            raise RuntimeError(f"eager.load: {self.source} is damaged: tensor {key} holds "
                               f"{arr.dtype}{list(arr.shape)}, the manifest says {dt.name}{node['shape']}")
        t = Tensor._make(arr)
        dev = self._target_device(node.get("device", "cpu"))
        if dev is not None and str(dev) != "cpu":
            t = t.to(dev)
        if node.get("parameter"):
            t = Parameter(t, requires_grad=node["requires_grad"])
        elif node["requires_grad"]:
            t.requires_grad_(True)
        self.tensors[key] = t
        return t

    def _target_device(self, saved: str):
        loc = self.map_location
        if loc is None:
            from ._device import cuda_is_available  # noqa: PLC0415

            if saved.startswith("cuda") and not cuda_is_available():
                raise RuntimeError("Attempting to deserialize object on a CUDA device but CUDA is not available. "
                                   "Use eager.load(..., map_location='cpu') to map your storages to the CPU.")
            return saved
        if callable(loc):
            raise NotImplementedError("eager.load: a callable map_location is not supported; pass a device")
        if isinstance(loc, dict):
            return loc.get(saved, saved)
        return str(loc)


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool = True,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Read what `save` wrote. Tensors come back with their dtype, shape, values and
    requires_grad (Parameters as Parameters), on `map_location` when given."""
    source = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "the file object")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load(fh, weights_only, map_location, source)
    return _load(f, weights_only, map_location, source)


def _load(fh, weights_only: bool, map_location: Any, source: str) -> Any:
    try:
        archive = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise RuntimeError(f"eager.load: {source} is not an eager checkpoint or is truncated: it is not a complete "
                           f"zip archive ({exc}); save it again with eager.save") from None
    with archive:
        names = archive.namelist()
        if "manifest.json" not in names:
            pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
            if pickles:
                return _load_torch_zip(archive, pickles[0][:-len("data.pkl")], map_location, source)
            raise RuntimeError(f"eager.load: {source} is not an eager checkpoint: no manifest.json (nor a "
                               "PyTorch data.pkl)")
        try:
            manifest = json.loads(archive.read("manifest.json"))
        except (ValueError, zipfile.BadZipFile, OSError) as exc:
            raise RuntimeError(f"eager.load: {source} is damaged: unreadable manifest ({exc})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise RuntimeError(f"eager.load: {source} is not an eager checkpoint (unknown manifest format)")
        if manifest.get("version", 0) > VERSION:
            raise RuntimeError(f"eager.load: {source} was written by a newer eager (format version "
                               f"{manifest['version']} > {VERSION}); upgrade to read it")
        return _Reader(archive, weights_only, map_location, source).decode(manifest["root"])


# -- reading PyTorch's torch.save files ------------------------------------------------------------------
_TORCH_STORAGES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "LongStorage": "int64",
    "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool",
}


class _StorageType:
    def __init__(self, name: str) -> None:
        self.name, self.dtype = name, np.dtype(_TORCH_STORAGES[name])


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                    metadata=None) -> Tensor:
    arr, _ = storage
    item = arr.itemsize
    view = np.lib.stride_tricks.as_strided(arr[storage_offset:], tuple(size), tuple(s * item for s in stride))
    t = Tensor._make(np.array(view, copy=True))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks=None, *args) -> Tensor:
    from .nn.parameter import Parameter  # noqa: PLC0415

    return Parameter(data, requires_grad=requires_grad)


class _TorchUnpickler(pickle.Unpickler):
    """Only the classes of a weights file: anything else is refused, never imported."""

    _ALLOWED = {("collections", "OrderedDict"): OrderedDict,
                ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
                ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
                ("builtins", "set"): set, ("builtins", "frozenset"): frozenset}

    def __init__(self, fh, archive: zipfile.ZipFile, prefix: str, source: str) -> None:
        super().__init__(fh)
        self.archive, self.prefix, self.source = archive, prefix, source
        self.storages: dict = {}

    def find_class(self, module: str, name: str):
        if (module, name) in self._ALLOWED:
            return self._ALLOWED[(module, name)]
        if module == "torch" and name in _TORCH_STORAGES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"Weights only load failed: {self.source} (a PyTorch file) refers to "
                                     f"{module}.{name}, which eager.load does not reconstruct; only tensors, "
                                     "Parameters and containers of them are read")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"eager.load: {self.source}: unknown persistent id {pid!r}")
        _, kind, key, location, numel = pid
        if not isinstance(kind, _StorageType):
            raise pickle.UnpicklingError(f"eager.load: {self.source}: unsupported storage type {kind!r}")
        if key not in self.storages:
            raw = self.archive.read(f"{self.prefix}data/{key}")
            self.storages[key] = (np.frombuffer(raw, dtype=kind.dtype)[:numel], location)
        return self.storages[key]


def _load_torch_zip(archive: zipfile.ZipFile, prefix: str, map_location: Any, source: str) -> Any:
    order = f"{prefix}byteorder"
    if order in archive.namelist() and archive.read(order).strip() not in (b"little",):
        raise RuntimeError(f"eager.load: {source} was written on a big-endian machine, which is not supported")
    try:
        obj = _TorchUnpickler(io.BytesIO(archive.read(f"{prefix}data.pkl")), archive, prefix, source).load()
    except pickle.UnpicklingError as exc:
        if str(exc).startswith("Weights only"):
            raise
        raise RuntimeError(f"eager.load: {source} is damaged: {exc}") from None
    except (KeyError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        raise RuntimeError(f"eager.load: {source} is damaged: {exc}") from None
    if map_location is not None and str(map_location) != "cpu":
        return _moved(obj, str(map_location))
    return obj


def _moved(obj: Any, dev: str) -> Any:
    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, dict):
        return type(obj)((k, _moved(v, dev)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_moved(v, dev) for v in obj)
    return obj
