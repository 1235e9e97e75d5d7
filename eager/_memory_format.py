"""`eager.memory_format`: the layouts a copy may be asked for, as torch's (contiguous_format,
channels_last, ...). `clone(memory_format=...)`, `contiguous(memory_format=...)` and
`is_contiguous(memory_format=...)` take them; eager.ops._layout makes the strides."""
from __future__ import annotations


class memory_format:  # noqa: N801  (torch's name)
    """A memory layout; `name` is the layout eager.ops._layout knows it by."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> tuple:
        return (_by_name, (self.name,))


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
_FORMATS = {f.name: f for f in (contiguous_format, preserve_format, channels_last, channels_last_3d)}


def _by_name(name: str) -> memory_format:
    return _FORMATS[name]


def format_name(fmt: object) -> str:
    """The layout's name for an op attribute, checking it is a memory format."""
    if fmt is None:
        return "preserve_format"
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be an eager.memory_format such as eager.contiguous_format, "
                        f"got {type(fmt).__name__}")
    return fmt.name
