"""torch.utils.data._utils.worker: what a dataset sees of the worker loading it.

Loading runs in the calling process here; with `num_workers=k > 0` the DataLoader still
plays the k workers' parts in turn (each its own copy of an iterable dataset, its
`worker_init_fn` call, its seed), so `get_worker_info()` answers inside a worker exactly as
in PyTorch, and is None in the main process."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["WorkerInfo", "get_worker_info"]


@dataclass(frozen=True)
class WorkerInfo:
    """The worker's id (0..num_workers-1), the number of workers, its seed and its dataset copy."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_current: list[WorkerInfo | None] = [None]


def get_worker_info() -> WorkerInfo | None:
    """The WorkerInfo of the worker this code runs in, or None in the main process."""
    return _current[0]


@contextlib.contextmanager
def in_worker(info: WorkerInfo) -> Iterator[WorkerInfo]:
    """Run the enclosed code as worker `info.id` (what get_worker_info() returns there)."""
    previous = _current[0]
    _current[0] = info
    try:
        yield info
    finally:
        _current[0] = previous
