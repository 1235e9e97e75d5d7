"""torch.random: the default generator's seeding and state, and fork_rng, the context
that restores the state on exit (so a block's random draws leave the program's stream as
it was)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ._factories.random import Generator, default_generator, get_rng_state, initial_seed, manual_seed, set_rng_state


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Run the block with the default generator's state saved and restored on exit (one
    generator serves every device here, so `devices` selects nothing more). Mirrors
    torch.random.fork_rng."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
