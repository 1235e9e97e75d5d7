"""What `graphmode compare` shows: the tables (80 columns wide, the verdict always in view),
the JSON record of every sample, and the runtime and speedup chart."""
from __future__ import annotations

import json
import math
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from static.compare import CompareReport, format_bytes, format_seconds

from .peers import PeerResult

PLOT_FORMATS = (".png", ".svg", ".pdf")


@dataclass
class SizeResult:
    """One measured size: its label (as given), the value given to workload(), our
    comparison and the peers' runs."""

    label: str
    value: Any
    report: CompareReport
    peers: list[PeerResult] = field(default_factory=list)


def _cell_time(seconds: float, spread: float) -> str:
    rel = 100 * spread / 2 / seconds if seconds > 0 else 0.0
    return f"{format_seconds(seconds)} ±{rel:.0f}%"


def _mode(results: Sequence[SizeResult]) -> str:
    return "fwd+bwd" if all(r.report.mode == "forward+backward" for r in results) else "fwd"


def print_tables(description: str, results: Sequence[SizeResult], repeat: int, malloc: str, *,
                 stderr: bool = False, interrupted: bool = False) -> None:
    """Two tables that each fit 80 columns: times with the verdict second from the left (so a
    narrow terminal never hides it), then what compiling did to the graph."""
    from rich import box  # noqa: PLC0415
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    console = Console(highlight=False, stderr=stderr)
    if not results:
        console.print(Text("nothing was measured", style="yellow"))
        return
    mode = _mode(results)
    first = results[0].report
    console.print(Text(description, style="bold"))
    console.print(Text(f"eager vs compiled {mode}: {first.backend} on {first.device}, median of {repeat} runs, "
                       f"malloc {'steady' if malloc.startswith('steady') else 'default'}"))
    times = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("size", "left"), ("check", "left"), ("eager", "right"), ("compiled", "right"), ("speedup", "right"))
    for header, justify in columns:
        times.add_column(header, justify=justify, no_wrap=True)
    notes: list[str] = []
    for res in results:
        r = res.report
        verdict = Text(f"{'ok' if r.ok else 'FAIL'} {r.max_rel_error:.0e}", style="green" if r.ok else "bold red")
        speed = Text(f"{r.ratio:.2f}x", style="green" if r.ratio >= 1 else "red")
        times.add_row(res.label, verdict, _cell_time(r.eager_median_s, r.eager_spread_s),
                      _cell_time(r.compiled_median_s, r.compiled_spread_s), speed)
        if r.note:
            notes.append(r.note)
        for p in res.peers:
            if not (p.available and p.eager is not None):
                notes.append(f"peer {p.library}: {p.note}")
                continue
            ratio = p.eager.median / p.compiled.median if p.compiled and p.compiled.median > 0 else math.nan
            check = f"{p.max_rel_error:.0e}" if p.max_rel_error is not None else "-"
            times.add_row(f"  {p.library}", check, _cell_time(p.eager.median, p.eager.spread),
                          _cell_time(p.compiled.median, p.compiled.spread) if p.compiled else "-",
                          f"{ratio:.2f}x" if math.isfinite(ratio) else "-")
    console.print(times)

    graph = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for header in ("size", "compile cold", "compile warm", "IR nodes", "fused", "peak mem"):
        graph.add_column(header, justify="left" if header == "size" else "right", no_wrap=True)
    for res in results:
        r = res.report
        graph.add_row(res.label, format_seconds(r.compile_cold_s), format_seconds(r.compile_warm_s),
                      f"{r.nodes_before} -> {r.nodes_after}", str(r.fused_kernels), format_bytes(r.peak_bytes))
    console.print(graph)
    console.print(Text("check: ok when the largest relative error (shown) is within the tolerance; time: median "
                       "per call ±half the interquartile range; speedup: eager / compiled; compile: trace + "
                       "optimize + generate + load (cold: empty disk cache, warm: from it); IR nodes: traced -> "
                       "optimized (a fused kernel counts once); peak mem: planned intermediates", style="dim"))
    for note in dict.fromkeys(notes):
        console.print(Text(note, style="yellow"))
    if interrupted:
        console.print(Text(f"interrupted: {len(results)} size(s) measured before Ctrl-C", style="yellow"))
    elif all(res.report.ok for res in results):
        worst = max(res.report.max_rel_error for res in results)
        console.print(Text(f"agreement: eager and compiled results agree at every size (largest relative error "
                           f"{worst:.1e}, tolerance {first.tolerance:.0e})", style="green"))


# -- JSON ---------------------------------------------------------------------------------------
def machine() -> dict:
    import numpy as np  # noqa: PLC0415

    return {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count()}


def json_text(header: dict, results: Sequence[SizeResult]) -> str:
    """Every sample of every run, with what produced them (schema: graphmode-compare/1)."""
    payload = {"schema": "graphmode-compare/1", **header, "machine": machine(),
               "results": [{"size": res.label,
                            "size_value": list(res.value) if isinstance(res.value, tuple) else res.value,
                            **res.report.to_dict(), "peers": [p.to_dict() for p in res.peers]}
                           for res in results]}
    return json.dumps(payload, indent=2, allow_nan=True) + "\n"


# -- the chart ----------------------------------------------------------------------------------
def plot_positions(values: Sequence[Any]) -> tuple[list[float], bool]:
    """x positions of the sizes: the numbers themselves (log axis) when every size is a
    number, else 0, 1, 2, ... (a shape has no single magnitude)."""
    if values and all(isinstance(v, int) for v in values) and len(set(values)) == len(values):
        return [float(v) for v in values], True
    return [float(k) for k in range(len(values))], False


def write_plot(path: str, name: str, results: Sequence[SizeResult]) -> None:
    """Runtime per size (eager, compiled, peers) and, below it, the speedup eager / compiled.
    The x axis is the workload's size argument, each tick labelled as it was given."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    xs, logx = plot_positions([res.value for res in results])
    labels = [res.label for res in results]
    reports = [res.report for res in results]
    fig, (ax, sp) = plt.subplots(2, 1, figsize=(6.4, 6.4), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    series = [("eager", [r.eager for r in reports], "o-"), ("compiled", [r.compiled for r in reports], "s-")]
    for lib in dict.fromkeys(p.library for res in results for p in res.peers if p.eager is not None):
        found = [next((p for p in res.peers if p.library == lib), None) for res in results]
        eager_t = [p.eager for p in found if p is not None and p.eager is not None]
        if len(eager_t) == len(found):
            series.append((f"{lib} eager", eager_t, "^--"))
            compiled_t = [p.compiled for p in found if p is not None and p.compiled is not None]
            if len(compiled_t) == len(found):
                series.append((f"{lib} compiled", compiled_t, "v--"))
    for label, timings, style in series:
        ax.errorbar(xs, [t.median for t in timings], yerr=[t.spread / 2 for t in timings], fmt=style,
                    capsize=3, label=label)
    ax.set_yscale("log")
    ax.set_ylabel(f"seconds per {reports[0].mode} call\n(median)")
    ax.set_title(f"{name}: eager vs compiled ({reports[0].backend}, {reports[0].device})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ratios = [r.ratio for r in reports]
    sp.plot(xs, ratios, "D-", color="tab:green", label="graphmode")
    for lib in dict.fromkeys(p.library for res in results for p in res.peers if p.compiled is not None):
        found = [next((p for p in res.peers if p.library == lib), None) for res in results]
        pairs = [(p.eager, p.compiled) for p in found if p is not None and p.compiled is not None and p.eager is not None]
        if len(pairs) == len(found):
            sp.plot(xs, [e.median / c.median for e, c in pairs], "v--", label=lib)
    sp.axhline(1.0, color="grey", linewidth=1)
    sp.set_ylabel("speedup\neager / compiled")
    sp.grid(True, which="both", alpha=0.3)
    if len(series) > 2:
        sp.legend(fontsize=8)
    if logx:
        sp.set_xscale("log")
    sp.set_xticks(xs)
    sp.set_xticklabels(labels)
    sp.minorticks_off()
    sp.set_xlabel("size (the workload's size argument)")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)


def check_output_path(path: str, what: str, suffixes: Sequence[str] = ()) -> None:
    """ValueError naming the problem when `path` cannot be written: a missing directory,
    a directory given as the file, or a suffix that is not one of `suffixes`."""
    target = Path(path)
    if suffixes and target.suffix.lower() not in suffixes:
        raise ValueError(f"{what} {path}: use a file ending in {', '.join(suffixes)}")
    if target.is_dir():
        raise ValueError(f"{what} {path} is a directory: give a file name")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise ValueError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"cannot write {path}: directory {parent} is not writable")
