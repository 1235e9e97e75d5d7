"""`eager.nn.Buffer`: marks a tensor that, assigned as a Module attribute, registers itself as
a buffer (torch.nn.Buffer, PyTorch >= 2.5). As PyTorch's, `Buffer(t)` returns a plain Tensor
(the detached alias of t, keeping t's requires_grad) flagged `_is_buffer` with its
`persistent` choice; `isinstance(x, Buffer)` is true for any tensor carrying the flag."""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor


class _BufferMeta(type):
    """isinstance(t, Buffer) reads the flag, as torch.nn.parameter._BufferMeta."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """A tensor to be registered as a buffer when assigned to a Module attribute:
    `self.running = nn.Buffer(torch.zeros(3), persistent=False)` is
    `self.register_buffer("running", torch.zeros(3), persistent=False)`."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Any:
        if data is None:
            from .._factories import empty  # noqa: PLC0415

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer expects a Tensor as data, got {type(data).__name__}")
        t = data.detach().requires_grad_(data.requires_grad)
        t.__dict__["persistent"] = persistent
        t.__dict__["_is_buffer"] = True
        return t
