"""`eager.return_types`: the named tuples ops with (values, indices) results return, as
`torch.return_types`. Each is a namedtuple (unpacks, indexes, `.values`/`.indices`) that
prints as PyTorch's structseq does, one field a line (tutorials print `x.max(1)`)."""
from __future__ import annotations

from collections import namedtuple
from typing import Any


def _structseq_repr(self: Any) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"{type(self).__module__}.{type(self).__name__}(\n{fields})"


def make(name: str, fields: tuple[str, ...] = ("values", "indices")) -> type:
    """The return type `name` (a namedtuple of `fields`), kept in this module under that name."""
    known: Any = globals().get(name)
    if isinstance(known, type):
        return known
    cls: Any = namedtuple(name, fields)  # type: ignore[misc]  # (a name given at run time, as torch's)
    cls.__module__ = __name__
    for method in ("__repr__", "__str__"):
        setattr(cls, method, _structseq_repr)
    globals()[name] = cls
    return cls
