"""`torch.compiler` here: the public face of `eager.compile`'s machinery (PyTorch moved these
names from torch._dynamo to torch.compiler; both spellings work, see eager._dynamo)."""
from __future__ import annotations

from typing import Any

from ._compile import compile  # noqa: A004  (torch.compiler.compile is torch.compile)
from ._dynamo import (
    allow_in_graph,
    assume_constant_result,
    disable,
    is_compiling,
    is_dynamo_compiling,
    mark_dynamic,
    mark_static,
    maybe_mark_dynamic,
    reset,
    set_stance,
)
from ._dynamo import config as config


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list:
    """The backend names eager.compile takes (torch.compiler.list_backends)."""
    from ._compile import EAGER_BACKENDS, TORCH_DEFAULT_BACKEND  # noqa: PLC0415

    names = [TORCH_DEFAULT_BACKEND, "auto", "native", "numpy", "cupy", "interpret"]
    if not exclude_tags or "debug" not in exclude_tags:
        names += list(EAGER_BACKENDS)
    return sorted(names)


def cudagraph_mark_step_begin() -> None:
    """Accepted (PyTorch's CUDA-graph step marker): no CUDA graphs here."""


def is_exporting() -> bool:
    """Whether torch.export is tracing: never here."""
    return False


__all__ = ["allow_in_graph", "assume_constant_result", "compile", "config", "cudagraph_mark_step_begin", "disable",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends", "mark_dynamic", "mark_static",
           "maybe_mark_dynamic", "reset", "set_stance"]
