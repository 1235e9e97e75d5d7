"""`Parameter`: a Tensor that a Module registers as one of its trainable weights.

It shares its data (and version counter) with the tensor it wraps, as PyTorch's does, and
defaults to requires_grad=True, which is what marks it for the optimizer."""
from __future__ import annotations

import numpy as np

from .._repr import tensor_repr
from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that Modules collect in `parameters()`.

    `Parameter(t)` aliases t's data; assigning it as a Module attribute registers it."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            from .._factories import empty  # noqa: PLC0415

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}")
        # Alias the data the way detach() does (same memory, same version counter), copying
        # every slot generically so the Tensor's internal layout stays the core's business.
        alias = data.detach()
        p = object.__new__(cls)
        for slot in Tensor.__slots__:
            if slot not in ("__weakref__", "__dict__") and hasattr(alias, slot):
                object.__setattr__(p, slot, getattr(alias, slot))
        p.requires_grad = requires_grad  # the setter refuses integer dtypes, as PyTorch does
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        """Everything happens in __new__ (Tensor.__init__ is the legacy constructor)."""

    def __repr__(self) -> str:
        return "Parameter containing:\n" + tensor_repr(self)

    def __deepcopy__(self, memo: dict) -> "Parameter":
        if id(self) in memo:
            return memo[id(self)]
        copy = Parameter(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            copy.grad = self.grad.detach().clone()
        memo[id(self)] = copy
        return copy

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach().cpu().numpy().copy(), self.requires_grad))


def _rebuild_parameter(array: np.ndarray, requires_grad: bool) -> Parameter:
    from .._factories import from_numpy  # noqa: PLC0415

    return Parameter(from_numpy(array), requires_grad)
