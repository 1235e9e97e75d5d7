"""torch.autograd.Variable, the pre-0.4 wrapper old scripts still call: `Variable(t,
requires_grad=True)` gives a new leaf sharing t's data (as PyTorch's does today), and
`isinstance(x, Variable)` holds for every tensor. `volatile` is accepted with PyTorch's
warning and has no effect."""
from __future__ import annotations

import warnings
from typing import Any


class _VariableMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        from .._tensor import Tensor  # noqa: PLC0415

        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data, requires_grad=False, volatile=False): a detached tensor sharing data's
    memory, requiring grad as asked. Mirrors torch.autograd.Variable."""

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Any:
        from .._factories import empty  # noqa: PLC0415
        from .._tensor import Tensor  # noqa: PLC0415

        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))
