"""Shared by the benchmark scripts: interleaved median timing, a printed table, JSON.

Times on shared machines are noisy, so every comparison is made inside one process with
the candidates' runs interleaved (a, b, a, b, ...) after a warm-up, and reported as
medians and their ratio; absolute times are for orientation only (see design.md)."""
from __future__ import annotations

import argparse
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
                       inner: int = 1, clock: Callable[[], float] = time.perf_counter) -> list[list[float]]:
    """Seconds per call of each fn, `repeats` samples each, running them in turn so drift
    hits all alike. `inner` calls are timed together (for calls too short to time alone).
    `clock`: time.process_time measures the CPU time of all the process's threads, which a
    machine shared with other busy processes inflates far less than the wall time."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    gc.collect()
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            start = clock()
            for _ in range(inner):
                fn()
            samples[k].append((clock() - start) / inner)
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


# x86 vector extensions, widest first: (cpuinfo flag, compiler macro, name, bits a register holds)
_VECTOR_ISAS = (("avx512f", "__AVX512F__", "AVX-512", 512), ("avx2", "__AVX2__", "AVX2", 256),
                ("avx", "__AVX__", "AVX", 256), ("sse2", "__SSE2__", "SSE2", 128))


def host_vector_isa() -> tuple[str, int]:
    """(name, bits) of the widest vector extension this CPU reports (/proc/cpuinfo's flags):
    a ratio against NumPy or a memory floor reads differently on an AVX2 and an AVX-512
    host. ("unknown", 0) where the OS does not say; aarch64 reports NEON/SVE as such."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 16)
    except OSError:
        return ("unknown", 0)
    flags = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags.update(line.split(":", 1)[1].split())
            break
    for flag, _macro, name, bits in _VECTOR_ISAS:
        if flag in flags:
            return (name, bits)
    if "sve" in flags:
        return ("SVE", 0)
    return ("NEON", 128) if "asimd" in flags else ("unknown", 0)


def compiler_vector_isa() -> tuple[str, int] | None:
    """(name, bits) of the widest extension the native backend's compiler targets with its
    flags (-march=native, or the target GRAPHMODE_NATIVE_ARCH names): what the kernels were built
    for; None without a compiler."""
    import subprocess  # noqa: PLC0415

    try:
        from codegen import native_build  # noqa: PLC0415

        tc = native_build.toolchain()
    except Exception:  # noqa: BLE001  (no compiler: nothing to report)
        return None
    run = subprocess.run([*tc.command, *tc.compile_flags(), "-dM", "-E", "-x", "c++", os.devnull],
                         capture_output=True, text=True, timeout=120, check=False)
    for _flag, macro, name, bits in _VECTOR_ISAS:
        if f"#define {macro} " in run.stdout:
            return (name, bits)
    return None


def machine_info() -> dict:
    name, bits = host_vector_isa()
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "vector_isa": name,
        "vector_bits": bits,
    }


def loop_bench_args(doc: str, argv: list[str] | None) -> argparse.Namespace:
    """The per-call loop benchmarks' command line (--runs, at least 1; --quick, few loops to
    check the script runs; --json FILE), described by the first paragraph of the script's doc."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="few loops, to check the script runs")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def write_json(path: str, payload: dict) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"machine": machine_info(), **payload}, fh, indent=2)
        fh.write("\n")


# What a machine builds once, not once per compiled function (kept in the cache between the
# "first on this machine" and "cold" compile-time runs): the compiler probe's record, the call
# path's extension, and eager's native kernels (matmul's row blocks among them).
MACHINE_ONCE = ("probe", "gm_native_call", "gm_eager_")
