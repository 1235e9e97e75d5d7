"""Which classes and functions a `weights_only` load may reconstruct.

`weights_only=True` (the default, as in PyTorch 2.6+) unpickles through a restricted
unpickler: containers, numbers, strings, tensors, Parameters, dtypes and devices are always
allowed; any other global named by the pickle (a class of a saved `nn.Module`, a NumPy
scalar) is refused with `pickle.UnpicklingError` unless the user allowlisted it here, as
`torch.serialization.add_safe_globals` does. Refusing is the point: unpickling a class runs
its code, so only classes the user trusts may appear."""
from __future__ import annotations

import codecs
import importlib
import pickle
import sys
import types
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class WeightsOnlyError(pickle.UnpicklingError, RuntimeError):
    """A weights_only load met a global it may not reconstruct. PyTorch raises
    pickle.UnpicklingError for this; it is also a RuntimeError, the one type every other
    failure of eager.load has, so `except RuntimeError` catches every refused file."""


_user: list = []  # what add_safe_globals was given: objects, or (object, "module.name") pairs


def add_safe_globals(safe_globals: list) -> None:
    """Allow `weights_only` loads to reconstruct these classes/functions (each an object, or
    an `(object, "module.name")` pair giving the name the pickle spells it by)."""
    if not isinstance(safe_globals, (list, tuple, set)):
        raise TypeError(f"add_safe_globals: expected a list of classes or functions, got {type(safe_globals).__name__}")
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise TypeError("add_safe_globals: a tuple entry must be (object, 'module.name'), got "
                                f"{entry!r}")
        _user.append(entry)


def get_safe_globals() -> list:
    """The user's allowlist (what add_safe_globals and active safe_globals blocks added)."""
    return list(_user)


def clear_safe_globals() -> None:
    """Empty the user's allowlist."""
    _user.clear()


@contextmanager
def safe_globals(safe_globals: list) -> Iterator[None]:
    """Allow these globals for the loads inside the `with` block only."""
    before = list(_user)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user[:] = before


class Restricted(pickle._Unpickler):
    """pickle's own (Python) unpickler with the guards of a weights_only load; subclasses
    say which globals exist (`lookup`) and what else must not be built on (`buildable`).

    BUILD (set an object's state) may only reach objects this pickle made: never a global it
    named (a class, a function, eager's dtype singletons) nor an object handed in by
    persistent id (a storage, a tensor decoded elsewhere), whose mutation would outlive the
    load, as PyTorch's weights-only unpickler allows BUILD on allowlisted types only. The
    memo is a dict here, so a hostile memo index allocates nothing either."""

    dispatch = dict(pickle._Unpickler.dispatch)
    stack: list  # (pickle._Unpickler's, set by load)

    def __init__(self, file: Any, weights_only: bool) -> None:
        super().__init__(file)
        self.weights_only = weights_only
        self._handed: set = set()  # ids of objects find_class and persistent_load returned
        self._alive: list = []  # (keeps those ids from being reused during the load)

    def lookup(self, module: str, name: str) -> Any:
        raise NotImplementedError

    def resolve(self, pid: Any) -> Any:
        raise NotImplementedError

    def buildable(self, inst: Any) -> bool:
        return True

    def _handed_out(self, obj: Any) -> Any:
        self._handed.add(id(obj))
        self._alive.append(obj)
        return obj

    def find_class(self, module: str, name: str) -> Any:
        return self._handed_out(self.lookup(module, name))

    def persistent_load(self, pid: Any) -> Any:
        return self._handed_out(self.resolve(pid))

    def load_build(self) -> None:
        if self.weights_only:
            if len(self.stack) < 2:
                raise pickle.UnpicklingError("BUILD with nothing to build on")
            inst = self.stack[-2]
            if (id(inst) in self._handed or isinstance(inst, (type, types.FunctionType, types.BuiltinFunctionType,
                                                                types.ModuleType, types.MethodType))
                    or not self.buildable(inst)):
                raise pickle.UnpicklingError(f"the pickle sets the state of a {type(inst).__name__} it did not make, "
                                             "which a weights_only load does not allow")
        super().load_build()  # type: ignore[misc]

    dispatch[pickle.BUILD[0]] = load_build  # type: ignore[assignment]  # (the table takes the instance)


def _encode(obj: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """Protocol 2's spelling of bytes (`_codecs.encode(text, 'latin1')`), for text codecs
    only: a codec such as zlib_codec would inflate a bomb."""
    if not isinstance(obj, str) or codecs.lookup(encoding).name not in ("latin-1", "iso8859-1", "utf-8", "ascii"):
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r} is not allowed in a weights file")
    return codecs.encode(obj, encoding, errors)


def _reconstructor(cls: Any, base: Any, state: Any) -> Any:
    """copyreg._reconstructor (protocol 0-2 pickles of plain classes): `cls` was itself vetted
    by find_class; only object and the builtin containers as bases."""
    if base is object:
        return object.__new__(cls)
    if base in (dict, list, set, tuple, OrderedDict):
        return base.__new__(cls, state)
    raise pickle.UnpicklingError(f"copyreg._reconstructor with base {base!r} is not allowed in a weights file")


def _set(items: Any = ()) -> set:
    return set(_items("set", items))


def _frozenset(items: Any = ()) -> frozenset:
    return frozenset(_items("frozenset", items))


def _items(what: str, items: Any) -> Any:
    # only materialized containers: set(range(10**12)) in a pickle would be a bomb
    if not isinstance(items, (list, tuple, set, frozenset, dict)):
        raise pickle.UnpicklingError(f"{what}() of a {type(items).__name__} is not allowed in a weights file")
    return items


def _bytearray(data: Any = b"", encoding: str = "latin-1") -> bytearray:
    if isinstance(data, str):
        return bytearray(_encode(data, encoding))
    if isinstance(data, (bytes, bytearray)):
        return bytearray(data)
    if isinstance(data, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in data):
        return bytearray(data)
    raise pickle.UnpicklingError(f"bytearray() of a {type(data).__name__} is not allowed in a weights file")


def _complex(real: Any = 0, imag: Any = 0) -> complex:
    if not all(isinstance(v, (int, float)) for v in (real, imag)):
        raise pickle.UnpicklingError("complex() of non-numbers is not allowed in a weights file")
    return complex(real, imag)


def _slice(*args: Any) -> slice:
    if len(args) > 3 or not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in args):
        raise pickle.UnpicklingError(f"slice{args!r} is not allowed in a weights file")
    return slice(*args)


def _ordered_dict(items: Any = ()) -> OrderedDict:
    return OrderedDict(_items("OrderedDict", items))


# always allowed: what builtin containers and numbers are pickled as (protocol 2 spells the
# builtins module __builtin__ and bytes as _codecs.encode), each taking materialized
# arguments only: a call such as set(range(10**12)) would be a memory bomb
BASE: dict = {}
for _mod in ("builtins", "__builtin__"):
    BASE.update({(_mod, "set"): _set, (_mod, "frozenset"): _frozenset, (_mod, "bytearray"): _bytearray,
                 (_mod, "complex"): _complex, (_mod, "slice"): _slice})
BASE[("collections", "OrderedDict")] = _ordered_dict
BASE[("_codecs", "encode")] = _encode
BASE[("codecs", "encode")] = _encode
BASE[("copyreg", "_reconstructor")] = _reconstructor
BASE[("copy_reg", "_reconstructor")] = _reconstructor


def eager_internal(module: str, name: str) -> Any:
    """eager's own helper classes that a saved nn.Module's state holds (its parameter,
    buffer and submodule registries): data containers, allowed like OrderedDict."""
    if (module, name) == ("eager.nn.module", "_Registry"):
        from ..nn.module import _Registry  # noqa: PLC0415

        return _Registry
    return None


def _entries() -> list:
    out = []
    for entry in _user:
        if isinstance(entry, tuple):
            obj, spelled = entry
            module, _, name = spelled.rpartition(".")
            out.append((obj, module, name))
        else:
            out.append((entry, getattr(entry, "__module__", None), getattr(entry, "__qualname__",
                                                                           getattr(entry, "__name__", None))))
    return out


def _resolve_eager(module: str, name: str) -> Any:
    """The eager object a `torch.<path>` global names, when eager has that module already
    imported (torch's module paths mirror eager's); None otherwise. Nothing new is imported."""
    if not (module == "torch" or module.startswith("torch.")):
        return None
    target = sys.modules.get("eager" + module[len("torch"):])
    obj = target
    for part in name.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return obj


def user_allowed(module: str, name: str) -> Any:
    """The allowlisted object the pickle's `module.name` stands for, else None.

    Matched by the name the object is defined under (its __module__ and __qualname__), by
    the name of a (object, name) pair, or, for `torch.` paths, by the eager object at the
    same path; NumPy's private module spellings (`numpy.core` / `numpy._core`) are the same
    module."""
    entries = _entries()
    if not entries:
        return None
    alias = _resolve_eager(module, name)
    for obj, mod, qual in entries:
        if qual != name and qual is not None and qual.rpartition(".")[2] != name.rpartition(".")[2]:
            continue
        if mod == module and qual == name:
            return obj
        if alias is not None and alias is obj:
            return obj
        if mod is not None and _numpy_alias(mod) == _numpy_alias(module) and qual == name:
            return obj
    # a module that is already imported, whose attribute is an allowlisted object
    found = sys.modules.get(module)
    if found is not None:
        obj = found
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None and any(obj is e for e in _user):  # (a pair allows its own spelling only)
            return obj
    return None


def _numpy_alias(module: str) -> str:
    return module.replace("numpy._core", "numpy.core")


def import_global(module: str, name: str) -> Any:
    """Plain pickle's lookup (weights_only=False): the caller trusts the file."""
    __import__(module)
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def refusal(source: str, module: str, name: str) -> WeightsOnlyError:
    """PyTorch's weights_only refusal, naming the global and the two ways out."""
    short = f"{module}.{name}"  # (the full path, as PyTorch names it)
    return WeightsOnlyError(
        f"Weights only load failed: {source}. This file can still be loaded, only if you trust its source: "
        f"(1) re-run eager.load with weights_only=False (it can run arbitrary code), or (2) allowlist the global. "
        f"WeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} was not an allowed global by default "
        f"(eager.load does not reconstruct it). Please use `eager.serialization.add_safe_globals([{short}])` or the "
        f"`eager.serialization.safe_globals([{short}])` context manager to allowlist this global if you trust this "
        "class/function.")
