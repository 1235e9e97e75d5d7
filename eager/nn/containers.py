"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict: containers whose
contents the parent module sees (parameters(), state_dict(), to())."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

from .._tensor import Tensor
from .module import Module, _addindent
from .parameter import Parameter


def _renumber(modules: dict) -> None:
    """The registry's entries keyed 0..n-1 again, in order (after a deletion)."""
    items = list(modules.values())
    modules.clear()
    for i, m in enumerate(items):
        modules[str(i)] = m


def _insert(modules: dict, index: int, module: Module) -> None:
    n = len(modules)
    if not -n <= index <= n:
        raise IndexError(f"Index out of range: {index}")
    if index < 0:
        index += n
    items = list(modules.values())
    items.insert(index, module)
    modules.clear()
    for i, m in enumerate(items):
        modules[str(i)] = m


def _check_factor(seq: Module, other: Any) -> None:
    if not isinstance(other, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(seq)} and {type(other)}")
    if other <= 0:
        raise ValueError(f"Non-positive multiplication factor {other} for {type(seq)}")


class Sequential(Module):
    """Runs its modules in order: `Sequential(Linear(2, 8), ReLU(), Linear(8, 1))`."""

    @overload
    def __init__(self, *args: Module) -> None: ...
    @overload
    def __init__(self, modules: OrderedDict[str, Module], /) -> None: ...

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def _index(self, idx: int) -> str:
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return list(self._modules)[idx % n]

    def __getitem__(self, idx: int | slice) -> Module:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._index(idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(self._index(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._index(idx)]
        for key in keys:
            del self._modules[key]
        _renumber(self._modules)  # (PyTorch's: the keys stay 0..n-1)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """`module` at position `index`, the later ones moved up one (PyTorch's)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        _insert(self._modules, index, module)
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key: int | slice) -> Module:
        v = self[key]
        del self[key]
        return v

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(list(other))

    def __mul__(self, other: int) -> "Sequential":
        _check_factor(self, other)
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other: int) -> "Sequential":
        _check_factor(self, other)
        return self.extend(list(self) * (other - 1))

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules whose parameters the parent module sees."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for module in modules or ():
            self.append(module)

    def __getitem__(self, idx: int | slice) -> Any:
        values = list(self._modules.values())
        return ModuleList(values[idx]) if isinstance(idx, slice) else values[idx]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        for module in modules:
            self.append(module)
        return self

    def _abs_key(self, idx: int) -> str:
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx % len(self))

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(self._abs_key(idx), module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = [str(k) for k in range(len(self))[idx]] if isinstance(idx, slice) else [self._abs_key(idx)]
        for key in keys:
            del self._modules[key]
        _renumber(self._modules)  # (PyTorch's: the keys stay 0..n-1)

    def insert(self, index: int, module: Module) -> None:
        """`module` at position `index`, the later ones moved up one (PyTorch's)."""
        _insert(self._modules, index, module)

    def pop(self, key: int | slice) -> Any:
        v = self[key]
        del self[key]
        return v

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        """PyTorch's: a run of equal reprs printed once, as `(0-2): 3 x Linear(...)`."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list] = []  # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules registered under their keys."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key: str) -> Module:
        module = self._modules[key]
        del self._modules[key]
        return module

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules) -> None:
        items = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in items:
            self[key] = module


class ParameterList(Module):
    """A list of Parameters registered as "0", "1", ... (plain tensors are wrapped)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        for v in values or ():
            self.append(v)

    def _wrap(self, value: Any) -> Any:
        return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value

    def __getitem__(self, idx: int | slice) -> Any:
        values = list(self._parameters.values())
        return ParameterList(values[idx]) if isinstance(idx, slice) else values[idx]

    def __setitem__(self, idx: int, value: Any) -> None:
        key = list(self._parameters)[idx]
        self.register_parameter(key, self._wrap(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._parameters.values())

    def append(self, value: Any) -> "ParameterList":
        self.register_parameter(str(len(self)), self._wrap(value))
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values: Iterable[Any]) -> "ParameterList":
        return self.extend(values)

    def extra_repr(self) -> str:
        # PyTorch's: "  (0): Parameter containing: [torch.float32 of size 2x3]", a device
        # other than the CPU in parentheses
        lines = []
        for i, p in enumerate(self):
            if isinstance(p, Tensor):
                device = "" if p.device.type == "cpu" else f" ({p.device})"
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                size = "x".join(str(n) for n in p.shape)
                lines.append(f"  ({i}): {kind} containing: [{p.dtype} of size {size}{device}]")
            else:
                lines.append(f"  ({i}): Object of type: {type(p).__name__}")
        return "\n".join(lines)


class ParameterDict(Module):
    """A dict of Parameters registered under their keys (plain tensors are wrapped)."""

    def __init__(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return self._parameters[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        self.register_parameter(key, value)

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def get(self, key: str, default: Any = None) -> Any:
        return self._parameters.get(key, default)

    def pop(self, key: str) -> Any:
        value = self._parameters[key]
        del self._parameters[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        key = next(reversed(self._parameters))
        return key, self.pop(key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._parameters):
            del self._parameters[key]

    def copy(self) -> "ParameterDict":
        return ParameterDict(OrderedDict(self._parameters.items()))

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> "ParameterDict":
        return ParameterDict((k, default) for k in keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._parameters))

    def update(self, parameters) -> None:
        items = parameters.items() if isinstance(parameters, Mapping) else parameters
        for key, value in items:
            self[key] = value

    def extra_repr(self) -> str:
        # PyTorch's: "  (w): Parameter containing: [torch.FloatTensor of size 2x3]"
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):
                device = "" if p.device.type == "cpu" else f" ({p.device})"
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                size = "x".join(str(n) for n in p.shape)
                lines.append(f"  ({k}): {kind} containing: [{p.type()} of size {size}{device}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)
