"""`static.compare(fn, *args)`: run the same function eagerly and compiled, and report
what compiling bought (or cost).

The two modes share one operator set, so the same code can run both ways; this module
measures both on the same inputs in the same process:

- eager: `fn(*args).backward()`, gradients collected from `.grad` of every argument that
  requires grad (what a PyTorch user writes);
- compiled: `static.value_and_grad(fn, argnums=<those arguments>)`, one traced,
  differentiated, optimized graph that returns the loss and the gradients.

Runs are interleaved (eager, compiled, eager, ...) after a warm-up, so drift on a shared
machine hits both alike; medians and their ratio are what to read (design.md,
"Measuring"). Compile time is measured apart from run time: cold with an empty codegen
disk cache, warm with a fresh compiled object whose generated code comes from that cache.
Before reporting a time, the two results are checked to agree."""
from __future__ import annotations

import contextlib
import gc
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import eager
from eager import Tensor

from .api import Compiled, value_and_grad
from .api import compile as static_compile
from .ir import Graph
from .jit.explain_summary import format_bytes
from .tracing.function import trace

DEFAULT_TOLERANCE = 1e-3  # float32 results reassociated by fusion differ in the 6th-7th digit
MIN_SAMPLE_S = 2e-3  # a sample shorter than this times several calls together
WARMUP_S = 0.05  # warm-up runs go on (up to MAX_WARMUP calls) until each mode has run this long
MAX_WARMUP = 50


# -- the report ---------------------------------------------------------------------------------
@dataclass
class Timing:
    """Seconds per call of repeated runs; the median is the number to read."""

    samples: list[float]
    calls_per_sample: int = 1

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else math.nan

    @property
    def spread(self) -> float:
        """Interquartile range in seconds: robust to the odd slow run of a shared machine."""
        if len(self.samples) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
        return q3 - q1

    def to_dict(self) -> dict:
        return {"median_s": self.median, "spread_s": self.spread, "calls_per_sample": self.calls_per_sample,
                "samples_s": list(self.samples)}


@dataclass
class CompareReport:
    """One comparison of eager and compiled runs of one function on one set of inputs.

    `ratio` is eager time / compiled time: above 1 the compiled version is faster."""

    name: str
    backend: str
    device: str
    mode: str  # "forward+backward", or "forward" when no argument requires grad
    eager: Timing
    compiled: Timing
    compile_cold_s: float
    compile_warm_s: float
    nodes_before: int  # top-level IR nodes as traced (forward and backward)
    nodes_after: int  # top-level IR nodes after optimization (a fused region counts once)
    fused_kernels: int
    peak_bytes: int | None  # the memory plan's estimate for intermediates; None without one
    max_rel_error: float
    tolerance: float
    input_elements: int
    note: str = ""  # what the numbers do not cover, and why

    @property
    def eager_median_s(self) -> float:
        return self.eager.median

    @property
    def eager_spread_s(self) -> float:
        return self.eager.spread

    @property
    def compiled_median_s(self) -> float:
        return self.compiled.median

    @property
    def compiled_spread_s(self) -> float:
        return self.compiled.spread

    @property
    def ratio(self) -> float:
        return self.eager.median / self.compiled.median if self.compiled.median > 0 else math.inf

    @property
    def ok(self) -> bool:
        return self.max_rel_error <= self.tolerance

    def to_dict(self) -> dict:
        return {"name": self.name, "backend": self.backend, "device": self.device, "mode": self.mode,
                "input_elements": self.input_elements, "eager": self.eager.to_dict(),
                "compiled": self.compiled.to_dict(), "ratio": self.ratio,
                "compile": {"cold_s": self.compile_cold_s, "warm_s": self.compile_warm_s},
                "ir": {"nodes_before": self.nodes_before, "nodes_after": self.nodes_after,
                       "fused_kernels": self.fused_kernels},
                "peak_bytes": self.peak_bytes, "max_rel_error": self.max_rel_error,
                "tolerance": self.tolerance, "ok": self.ok, "note": self.note}

    def __str__(self) -> str:
        verdict = "agree" if self.ok else "DISAGREE"
        lines = [
            f"{self.name}: eager vs compiled {self.mode} ({self.backend} backend, {self.device}, "
            f"{len(self.eager.samples)} runs each)",
            f"  eager      {format_seconds(self.eager.median):>10}  ±{format_seconds(self.eager.spread / 2)}",
            f"  compiled   {format_seconds(self.compiled.median):>10}  ±{format_seconds(self.compiled.spread / 2)}",
            f"  speedup    {self.ratio:>9.2f}x  (eager time / compiled time)",
            f"  compile    {format_seconds(self.compile_cold_s)} cold, {format_seconds(self.compile_warm_s)} warm "
            "(disk cache)",
            f"  IR nodes   {self.nodes_before} traced -> {self.nodes_after} optimized, "
            f"{self.fused_kernels} fused kernel{'s' if self.fused_kernels != 1 else ''}",
            f"  peak mem   {format_bytes(self.peak_bytes)} (estimated, intermediates)",
            f"  max error  {self.max_rel_error:.2e} relative: {verdict} (tolerance {self.tolerance:.0e})",
        ]
        if self.note:
            lines.append(f"  note       {self.note}")
        return "\n".join(lines)


def format_seconds(s: float | None) -> str:
    """3 significant digits in the unit that keeps them readable ('-' for none)."""
    if s is None or not math.isfinite(s):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


# -- measuring ----------------------------------------------------------------------------------
def progress_steps(repeat: int) -> int:
    """How many times compare() calls `progress`: two compiles, the agreement check, the
    warm-up and one per timed sample."""
    return 4 + repeat


def compare(fn: Callable, *args: Any, repeat: int = 5, warmup: int = 1, backend: str = "auto",
            device: str | None = None, tolerance: float = DEFAULT_TOLERANCE, cache_dir: str | None = None,
            name: str | None = None, progress: Callable[[str], None] | None = None) -> CompareReport:
    """Run `fn(*args)` eagerly and compiled, check they agree, and time both.

    `fn` returns a scalar loss and must not modify its arguments; its tensor arguments
    that require grad are differentiated (none: the forward alone is compared).
    `device` moves tensor arguments first. Compile time is measured with the codegen disk
    cache in `cache_dir` (a fresh temporary directory when None, so 'cold' is cold).
    `progress(step)` is called as each step begins, naming it (what a progress bar shows
    while the step runs): 4 + `repeat` calls, see `progress_steps`."""
    if repeat < 1:
        raise ValueError(f"compare: repeat must be at least 1, got {repeat}")
    fn = python_function(fn)
    tick = progress or (lambda _event: None)
    args = prepare_args(args, device)
    diff = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
    name = name or str(getattr(fn, "__name__", "fn"))
    dev = next((str(a.device) for a in args if isinstance(a, Tensor)), "cpu")
    sync = eager.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    plain = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)

    def make() -> Compiled:
        if diff:
            return value_and_grad(fn, argnums=diff, backend=backend)
        return static_compile(fn, backend=backend)

    with _codegen_cache(cache_dir):
        tick("compiling (empty cache)")
        cold, compiled = _timed_compile(make, plain)
        tick("compiling (from the disk cache)")
        warm, compiled = _timed_compile(make, plain)

    def run_eager():
        for i in diff:
            args[i].grad = None
        out = fn(*args)
        if diff:
            out.backward()
        sync()
        return out, [args[i].grad for i in diff]

    def run_compiled():
        out = compiled(*plain)
        sync()
        return out if diff else (out, [])

    tick("checking that results agree")
    first = run_eager()
    error = max_relative_error(host_arrays(first), host_arrays(run_compiled()))
    note = ""
    if not diff and isinstance(first[0], Tensor) and first[0].requires_grad:
        note = ("forward only: the loss depends on tensors that require grad but are not arguments (nn.Module "
                "parameters?); pass them as arguments to time the backward too")
    eager_t, compiled_t = time_interleaved(run_eager, run_compiled, repeat, warmup, tick)
    final = compiled.ir(*plain)
    plan = final.memory_plan
    report = CompareReport(
        name=name, backend=executed_backend(compiled, plain, backend, dev), device=dev,
        mode="forward+backward" if diff else "forward",
        eager=eager_t, compiled=compiled_t, compile_cold_s=cold, compile_warm_s=warm,
        nodes_before=len(trace(compiled, *plain).nodes), nodes_after=len(final.nodes),
        fused_kernels=count_fused(final), peak_bytes=plan.peak_bytes if plan is not None else None,
        max_rel_error=error, tolerance=tolerance, note=note,
        input_elements=sum(int(a.numel()) for a in args if isinstance(a, Tensor)))
    return report


def eager_reference(fn: Callable, args: tuple) -> tuple[tuple, list[np.ndarray]]:
    """(differentiated argument positions, [output, gradients...] as host arrays) of one
    eager run: what a peer's results are checked against."""
    args = prepare_args(args, None)
    diff = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
    out = python_function(fn)(*args)
    if diff:
        out.backward()
    return diff, host_arrays((out, [args[i].grad for i in diff]))


def python_function(fn: Callable) -> Callable:
    """The plain Python function behind a @static.compile'd one: calling the compiled
    object on tensors would run compiled code where eager code is meant."""
    return fn._graphmode_traceable if isinstance(fn, Compiled) else fn


def resolved_backend(backend: str, device: str) -> str:
    """The backend that `backend` runs on `device` in this process: 'auto' picks CuPy on a
    GPU and, on the CPU, whatever `codegen.native.auto_backend` decides (native C++ where a
    compiler is found and GRAPHMODE_NATIVE is not 0, NumPy otherwise), or the interpreter
    when no code generator loads (static.executable warns about that once). A report
    names what ran, not what was asked for: see `executed_backend` for a built function."""
    from .jit.executable import backend_available  # noqa: PLC0415

    if backend == "interpret":
        return "interpret"
    if backend == "auto":
        if not backend_available("auto"):
            return "interpret (no code generator loads)"
        if device.startswith("cuda"):
            return "cupy"
        try:
            from codegen.native import auto_backend  # noqa: PLC0415
        except ImportError:
            return "numpy"
        return auto_backend()
    return backend


def executed_backend(compiled: Compiled, args: tuple, backend: str, device: str) -> str:
    """The backend whose code ran `compiled(*args)`, read from the executable it built
    (the native backend's driver, a generated NumPy/CuPy module, or the interpreter);
    `resolved_backend` where the built function does not say."""
    try:
        executable = compiled._entry_for(args, {})[3].forward
    except (RuntimeError, AttributeError, IndexError):
        return resolved_backend(backend, device)
    kind = type(executable).__name__
    if kind == "InterpretedGraph":
        return "interpret" if backend == "interpret" else "interpret (no code generator loads)"
    on_gpu = device.startswith("cuda")
    if kind == "NativeGraph":
        return "cupy" if on_gpu else "native"
    ran = getattr(executable, "backend", None)
    if ran in ("numpy", "cupy", "native"):
        return str(ran)
    if ran == "auto":
        return "cupy" if on_gpu else "numpy"
    return resolved_backend(backend, device)


def prepare_args(args: Sequence[Any], device: str | None) -> tuple:
    """Tensor arguments as fresh leaves (on `device`), so .grad collects this run's gradients."""
    return tuple(_prepare(a, device) for a in args)


def _prepare(a: Any, device: str | None) -> Any:
    """A tensor argument as a fresh leaf (on `device`), so .grad collects this run's gradient."""
    if not isinstance(a, Tensor):
        return a
    t = a.detach()
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(a.requires_grad) if a.requires_grad else t


def _timed_compile(make: Callable[[], Compiled], args: tuple) -> tuple[float, Compiled]:
    """Seconds to trace, optimize, generate (or find on disk) and load: a fresh compiled
    object and an empty in-process module memo, so only the disk cache can help."""
    _forget_loaded_modules()
    compiled = make()
    start = time.perf_counter()
    compiled.ir(*args)
    return time.perf_counter() - start, compiled


def _forget_loaded_modules() -> None:
    try:
        from codegen import loader  # noqa: PLC0415
    except ImportError:
        return
    loader.forget()


@contextlib.contextmanager
def _codegen_cache(cache_dir: str | None) -> Iterator[str]:
    """Point GRAPHMODE_CACHE_DIR at `cache_dir` (or an empty temporary directory)."""
    old = os.environ.get("GRAPHMODE_CACHE_DIR")
    with contextlib.ExitStack() as stack:
        path = cache_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="graphmode-compare-"))
        os.environ["GRAPHMODE_CACHE_DIR"] = path
        try:
            yield path
        finally:
            if old is None:
                os.environ.pop("GRAPHMODE_CACHE_DIR", None)
            else:
                os.environ["GRAPHMODE_CACHE_DIR"] = old


def time_interleaved(a: Callable[[], object], b: Callable[[], object], repeat: int, warmup: int = 1,
                     tick: Callable[[str], None] = lambda _e: None) -> tuple[Timing, Timing]:
    """Per-call seconds of `a` and `b`, alternated so that a noisy neighbour slows both.

    Warm-up runs both at least `warmup` times and, for quick calls, until each has run for
    WARMUP_S: the first calls pay for caches and for the allocator growing its heap, which
    a training loop pays once. Calls shorter than MIN_SAMPLE_S are timed in groups (the
    sample is the group's mean)."""
    spent, calls = [0.0, 0.0], 0
    tick("warming up")
    while calls < max(warmup, 1) or (min(spent) < WARMUP_S and calls < MAX_WARMUP):
        for k, fn in enumerate((a, b)):
            start = time.perf_counter()
            fn()
            spent[k] += time.perf_counter() - start
        calls += 1
    numbers = [max(1, min(1000, math.ceil(MIN_SAMPLE_S * calls / max(t, 1e-9)))) for t in spent]
    samples: list[list[float]] = [[], []]
    for i in range(repeat):
        tick(f"timing: sample {i + 1}/{repeat}")
        for k, fn in enumerate((a, b)):
            gc.collect()  # garbage of the other mode is not this one's cost; its own is (gc stays on)
            start = time.perf_counter()
            for _ in range(numbers[k]):
                fn()
            samples[k].append((time.perf_counter() - start) / numbers[k])
    return Timing(samples[0], numbers[0]), Timing(samples[1], numbers[1])


# -- what is compared ---------------------------------------------------------------------------
def to_numpy(x: Any) -> np.ndarray:
    """Host copy of a tensor, NumPy or CuPy array, or number."""
    if isinstance(x, Tensor):
        x = x.detach().cpu()
        return np.asarray(x)
    if hasattr(x, "get") and hasattr(x, "__cuda_array_interface__"):
        return x.get()
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        return x.detach().cpu().numpy()
    return np.asarray(x)


def host_arrays(result: tuple) -> list[np.ndarray]:
    """(output, gradients) -> host arrays, output first."""
    out, grads = result
    return [to_numpy(out)] + [to_numpy(g) for g in grads]


def max_relative_error(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray]) -> float:
    """Largest |actual - expected| relative to the scale of each expected array (its largest
    magnitude): elementwise relative error would blow up on entries that cancel to ~0.
    Mismatched shapes, NaN or a missing gradient count as infinite error."""
    if len(expected) != len(actual):
        return math.inf
    worst = 0.0
    for e, a in zip(expected, actual):
        e = np.asarray(e, dtype=np.float64)
        a = np.asarray(a, dtype=np.float64)
        if e.shape != a.shape:
            return math.inf
        if e.size == 0:
            continue
        diff = np.abs(a - e)
        if np.isnan(diff).any() and not np.array_equal(np.isnan(a), np.isnan(e)):
            return math.inf
        scale = float(np.nanmax(np.abs(e))) if not np.isnan(e).all() else 0.0
        err = float(np.nanmax(diff)) if not np.isnan(diff).all() else 0.0
        worst = max(worst, err / scale if scale > 0 else err)
    return worst


def count_fused(graph: Graph) -> int:
    """Fused regions: each becomes one kernel (one blocked loop, or one CuPy kernel)."""
    return sum(1 for node in graph.nodes if node.op == "fused")
