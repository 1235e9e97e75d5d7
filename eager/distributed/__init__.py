"""`eager.distributed`: torch.distributed's names, for a job of one process.

graphmode runs in one process (eager and compiled code alike): there is no process group to
create, so `is_available()` is False, `is_initialized()` False, and the calls that need a
group (init_process_group, all_reduce, barrier, get_rank...) raise a RuntimeError that says
what to do instead: run the script as one process, where DistributedDataParallel and
DistributedSampler (with their defaults) behave as a world of size 1."""
from __future__ import annotations

import enum
from typing import Any, NoReturn

__all__ = ["is_available", "is_initialized", "is_torchelastic_launched", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "barrier", "all_reduce", "all_gather",
           "broadcast", "reduce", "gather", "scatter", "new_group", "get_backend", "ReduceOp", "Backend"]

_WHAT_TO_DO = ("graphmode runs in one process: multi-process torch.distributed is not available. Run the script "
               "as one process (without torchrun); wrap the model in eager.nn.parallel.DistributedDataParallel "
               "or use it directly, and read data with DistributedSampler's defaults (a world of size 1).")


class ReduceOp(enum.Enum):
    """The reductions collective calls name."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class Backend(str):
    """A backend name ("gloo", "nccl", "mpi"), as torch.distributed.Backend."""

    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UNDEFINED = "undefined"


def is_available() -> bool:
    """False: there is no multi-process support here (see the module docstring)."""
    return False


def is_initialized() -> bool:
    """False: no process group is ever made here."""
    return False


def is_torchelastic_launched() -> bool:
    """False: a graphmode job is never launched by torchrun."""
    return False


def _unavailable(call: str) -> NoReturn:
    raise RuntimeError(f"torch.distributed.{call}: {_WHAT_TO_DO}")


def init_process_group(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises: there is no process group in a one-process job."""
    _unavailable("init_process_group")


def destroy_process_group(group: Any = None) -> NoReturn:
    _unavailable("destroy_process_group")


def get_rank(group: Any = None) -> NoReturn:
    _unavailable("get_rank (Default process group has not been initialized)")


def get_world_size(group: Any = None) -> NoReturn:
    _unavailable("get_world_size (Default process group has not been initialized)")


def get_backend(group: Any = None) -> NoReturn:
    _unavailable("get_backend")


def new_group(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("new_group")


def barrier(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("barrier")


def all_reduce(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("all_reduce")


def all_gather(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("all_gather")


def broadcast(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("broadcast")


def reduce(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("reduce")


def gather(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("gather")


def scatter(*args: Any, **kwargs: Any) -> NoReturn:
    _unavailable("scatter")
