"""Shared by the benchmark scripts: interleaved median timing, a printed table, JSON.

Times on shared machines are noisy, so every comparison is made inside one process with
the candidates' runs interleaved (a, b, a, b, ...) after a warm-up, and reported as
medians and their ratio; absolute times are for orientation only (see design.md)."""
from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

from graphmode.peers import steady_malloc  # noqa: F401  (one copy: the allocator setting of `graphmode compare`)


def sample_interleaved(fns: Sequence[Callable[[], object]], repeats: int, warmup: int = 1,
                       inner: int = 1) -> list[list[float]]:
    """Seconds per call of each fn, `repeats` samples each, running them in turn so drift
    hits all alike. `inner` calls are timed together (for calls too short to time alone)."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    gc.collect()
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[k].append((time.perf_counter() - start) / inner)
    return samples


def time_interleaved(fns: Sequence[Callable[[], object]], repeats: int, warmup: int = 1,
                     inner: int = 1) -> list[float]:
    """Median seconds per call of each fn (see sample_interleaved)."""
    return [statistics.median(s) for s in sample_interleaved(fns, repeats, warmup, inner)]


def repeats_for(seconds_per_call: float, budget: float = 2.0, lo: int = 3, hi: int = 50) -> int:
    """Enough repeats for a stable median without spending more than ~budget seconds."""
    if seconds_per_call <= 0:
        return hi
    return int(max(lo, min(hi, budget / seconds_per_call)))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def machine_info() -> dict:
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def write_json(path: str, payload: dict) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"machine": machine_info(), **payload}, fh, indent=2)
        fh.write("\n")


# What a machine builds once, not once per compiled function (kept in the cache between the
# "first on this machine" and "cold" compile-time runs): the compiler probe's record, the call
# path's extension, and eager's native kernels (matmul's row blocks among them).
MACHINE_ONCE = ("probe", "gm_native_call", "gm_eager_")
