"""`graphmode`: compare eager and compiled runs of a workload, print its IR, draw its graphs.

    graphmode compare TARGET [--sizes 1e4,1e6] [--device cpu|cuda] [--repeat N]
                             [--backend numpy|cupy|native|interpret] [--plot F.png] [--json F]
                             [--peers torch,jax] [--tolerance T] [--malloc steady|default]
    graphmode ir TARGET [--size S] [--stage NAME|all] [--source]
    graphmode graph TARGET --mode eager|static -o FILE.svg|.png|.dot [--size S]

TARGET is a Python file or an importable module that defines a workload:

    SIZES = ("1e4", "1e6")                  # optional: sizes used without --sizes
    def workload(size) -> (fn, args):       # required
        ...                                 # fn(*args) returns a scalar loss; the tensors
                                            # in args with requires_grad=True get gradients
    def peer(library, size) -> fn | None:   # optional: the same loss for "torch" / "jax"

A size is a number (1e6, 4096) given to workload() as an int, or a shape (32x64x64x10)
given as a tuple of ints. examples/workloads/ holds the design's workloads W1-W4 and an
MLP training step written this way.

Errors a user can fix (a missing file, a target without a workload, an unavailable
device, a size that does not parse) print one line and exit with status 2; results that
disagree past the tolerance exit with status 1. --traceback shows Python's traceback."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import math
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .compare import (PEER_LIBRARIES, CompareReport, PeerResult, compare, eager_reference, format_bytes,
                      format_seconds, measure_peer, prepare_args, python_function, steady_malloc)

USAGE_ERROR, DISAGREE = 2, 1


class CLIError(Exception):
    """A problem the user can fix: printed as one line, exit status `code`."""

    def __init__(self, message: str, code: int = USAGE_ERROR) -> None:
        super().__init__(message)
        self.code = code


# -- workloads --------------------------------------------------------------------------------------
@dataclass
class Workload:
    """A loaded TARGET: where it came from, its default sizes and its factories."""

    name: str
    description: str
    sizes: tuple
    make: Callable[[Any], tuple]
    peer: Callable | None

    def build(self, size: Any, label: str) -> tuple[Callable, tuple]:
        """(fn, args) for one size, checked so that a wrong return is one clear line."""
        result = self.make(size)
        if (not isinstance(result, (tuple, list)) or len(result) != 2 or not callable(result[0])
                or not isinstance(result[1], (tuple, list))):
            raise CLIError(f"{self.name}: workload({label}) must return (fn, args) with args a tuple; got "
                           f"{type(result).__name__}")
        return result[0], tuple(result[1])


def load_workload(target: str) -> Workload:
    """Import TARGET (a .py path, or a module name importable from the current directory)."""
    path = Path(target)
    if target.endswith(".py") or os.sep in target or "/" in target:
        if not path.is_file():
            raise CLIError(f"no such file: {target}")
        module = _import_file(path)
        name = path.stem
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # as `python -m` does
        try:
            spec = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise CLIError(f"no such file or module: {target}")
        module = _run_import(lambda: importlib.import_module(target), target)
        name = target.rsplit(".", 1)[-1]
    make = getattr(module, "workload", None)
    if not callable(make):
        raise CLIError(f"{target} has no workload: define workload(size) -> (fn, args) in it "
                       "(see examples/workloads/)")
    doc = (inspect.getdoc(module) or "").strip().splitlines()
    sizes = getattr(module, "SIZES", ("1e4",))
    sizes = (sizes,) if isinstance(sizes, (str, int, float)) else tuple(sizes)
    peer = getattr(module, "peer", None)
    return Workload(name, doc[0] if doc else name, tuple(str(s) for s in sizes), make,
                    peer if callable(peer) else None)


def _import_file(path: Path):
    """Run a workload file as a module; its directory goes on sys.path, as for a script."""
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(f"graphmode_workload_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as import does: dataclasses and pickling look it up there
    try:
        _run_import(lambda: spec.loader.exec_module(module), str(path))
    except CLIError:
        del sys.modules[spec.name]
        raise
    return module


def _run_import(load: Callable, target: str):
    try:
        return load()
    except SyntaxError as exc:
        raise CLIError(f"{target}: syntax error at line {exc.lineno}: {exc.msg}") from exc
    except Exception as exc:  # noqa: BLE001  (the user's module failed while importing)
        raise CLIError(f"importing {target} failed: {_one_line(exc)}") from exc


# -- sizes ----------------------------------------------------------------------------------------
def parse_size(token: str) -> int | tuple[int, ...]:
    """'1e6' -> 1000000; '32x64x64x10' -> (32, 64, 64, 10)."""
    text = token.strip().lower().replace("_", "")
    parts = text.split("x")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise CLIError(f"size {token!r} does not parse: use a number such as 1e6 or a shape such as "
                           "32x64x64x10") from None
        if not math.isfinite(value) or value != int(value) or value < 1:
            raise CLIError(f"size {token!r} does not parse: each number must be a whole number of at least 1")
        values.append(int(value))
    return values[0] if len(values) == 1 else tuple(values)


def parse_sizes(text: str | Sequence[str]) -> list[tuple[str, Any]]:
    """(label, value) for each comma-separated size."""
    tokens = [t.strip() for t in (text.split(",") if isinstance(text, str) else text)]
    tokens = [t for t in tokens if t]
    if not tokens:
        raise CLIError("no sizes given: use e.g. --sizes 1e4,1e6")
    return [(t, parse_size(t)) for t in tokens]


def _size_for_one(ns: argparse.Namespace, workload: Workload) -> tuple[str, Any]:
    """The size `ir` and `graph` use: --size, or the workload's smallest default."""
    if ns.size:
        return parse_sizes(ns.size)[0]
    return parse_sizes(workload.sizes)[0]


# -- device and backend ----------------------------------------------------------------------------
def check_device(device: str, backend: str) -> None:
    import eager  # noqa: PLC0415

    if device == "cuda" and not eager.cuda.is_available():
        raise CLIError("device cuda is not available: it needs CuPy and a GPU (pip install 'graphmode[cuda12]')")
    if backend == "cupy" and device != "cuda":
        raise CLIError("backend cupy runs on the GPU: add --device cuda")
    if backend in ("numpy", "native") and device == "cuda":
        raise CLIError(f"backend {backend} runs on the CPU: use --backend cupy (or auto) with --device cuda")


# -- compare --------------------------------------------------------------------------------------
def cmd_compare(ns: argparse.Namespace) -> int:
    """Measure every size, print the table, write --json/--plot; 1 if results disagree."""
    workload = load_workload(ns.target)
    sizes = parse_sizes(ns.sizes if ns.sizes is not None else workload.sizes)
    peers = [p.strip() for p in (ns.peers or "").split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEER_LIBRARIES]
    if unknown:
        raise CLIError(f"unknown peer {unknown[0]!r}: use {', '.join(PEER_LIBRARIES)}")
    if ns.repeat < 1:
        raise CLIError(f"--repeat must be at least 1, got {ns.repeat}")
    check_device(ns.device, ns.backend)
    if ns.plot:
        check_plotting()
    ns.malloc_setting = steady_malloc() if ns.malloc == "steady" else "default"
    reports = measure(workload, sizes, ns, peers)
    print_table(workload, sizes, reports, ns)
    if ns.json:
        write_json(ns.json, workload, ns, sizes, reports)
    if ns.plot:
        write_plot(ns.plot, workload, sizes, reports)
    bad = [(label, r) for (label, _), r in zip(sizes, reports) if not r.ok]
    if bad:
        label, r = bad[0]
        print(f"graphmode: error: eager and compiled results disagree at size {label}: max relative error "
              f"{r.max_rel_error:.2e} > tolerance {r.tolerance:.0e}", file=sys.stderr)
        return DISAGREE
    return 0


def measure(workload: Workload, sizes: list, ns: argparse.Namespace, peers: list) -> list[CompareReport]:
    """static.compare for each size, with a progress bar on stderr while it runs."""
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415

    reports = []
    per_size = 2 + ns.repeat + len(peers)  # compile cold, compile warm, samples, peers
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    console = Console(stderr=True)
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task(workload.name, total=per_size * len(sizes))
        for label, size in sizes:
            progress.update(task, description=f"{workload.name} {label}: building inputs")
            fn, args = workload.build(size, label)

            def tick(event: str, label: str = label) -> None:
                progress.update(task, advance=1, description=f"{workload.name} {label}: {event}")

            report = compare(fn, *args, repeat=ns.repeat, backend=ns.backend, device=ns.device,
                             tolerance=ns.tolerance, name=workload.name, progress=tick)
            for library in peers:
                report.peers.append(measure_peer_apart(ns, workload, label, library))
                tick(f"peer {library}")
            reports.append(report)
    return reports


def measure_peer_apart(ns: argparse.Namespace, workload: Workload, label: str, library: str) -> PeerResult:
    """Measure a peer in a child process (`graphmode _peer`): in this one, its thread pool
    (OpenMP, XLA) and ours would share the cores and slow each other unpredictably."""
    if not installed(library):
        return PeerResult(library, False, f"not installed (pip install {library})")
    if workload.peer is None:
        return PeerResult(library, False, f"the workload has no {library} version (define peer(library, size))")
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    argv = [sys.executable, "-m", "static.cli", "_peer", str(Path(ns.target).resolve()) if Path(ns.target).is_file()
            else ns.target, "--size", label, "--library", library, "--repeat", str(ns.repeat),
            "--device", ns.device, "--malloc", ns.malloc]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return PeerResult(library, True, f"failed: {why[:160]}")
    return PeerResult.from_dict(json.loads(lines[-1]))


def cmd_peer(ns: argparse.Namespace) -> int:
    """The child side of measure_peer_apart: one library, one size; a JSON line out."""
    if ns.malloc == "steady":
        steady_malloc()
    workload = load_workload(ns.target)
    label, size = parse_sizes(ns.size)[0]
    fn, args = workload.build(size, label)
    args = prepare_args(args, ns.device)
    diff, reference = eager_reference(fn, args)
    result = measure_peer(ns.library, _peer_fn(workload, ns.library, size), args, diff, ns.repeat, 1, reference)
    print(json.dumps(result.to_dict()))
    return 0


def installed(module: str) -> bool:
    """Whether `module` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _peer_fn(workload: Workload, library: str, size: Any) -> Callable | None:
    """The workload's version for `library`, asked for only when that library is installed."""
    if workload.peer is None or not installed(library):
        return None
    return workload.peer(library, size)


def _cell_time(seconds: float, spread: float) -> str:
    rel = 100 * spread / 2 / seconds if seconds > 0 else 0.0
    return f"{format_seconds(seconds)} ±{rel:.0f}%"


def print_table(workload: Workload, sizes: list, reports: list[CompareReport], ns: argparse.Namespace) -> None:
    """The comparison as a rich table on stdout, then one line on agreement."""
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 150)  # a table in a file or pipe: do not wrap cells
    mode = "fwd+bwd" if all(r.mode == "forward+backward" for r in reports) else "fwd"
    first = reports[0]
    with_peers = any(r.peers for r in reports)
    malloc = "steady" if ns.malloc_setting.startswith("steady") else "default"
    title = Text(f"{workload.description}\neager vs compiled {mode}: backend {first.backend}, device {first.device}, "
                 f"median of {ns.repeat} runs, malloc {malloc}")
    table = Table(title=title, title_justify="left")
    headers = [("size", "left")] + ([("run", "left")] if with_peers else []) + [
        (f"eager {mode}", "right"), (f"compiled {mode}", "right"), ("speedup", "right"),
        ("compile cold / warm", "right"), ("IR nodes", "right"), ("fused", "right"), ("peak mem", "right"),
        ("max rel err", "right")]
    for header, justify in headers:
        table.add_column(header, justify=justify, no_wrap=True)
    notes = []
    for (label, _), r in zip(sizes, reports):
        speed = Text(f"{r.ratio:.2f}x", style="green" if r.ratio >= 1 else "red")
        agree = Text(f"{r.max_rel_error:.1e} {'ok' if r.ok else 'FAIL'}", style="green" if r.ok else "bold red")
        run = [label, "graphmode"] if with_peers else [label]
        table.add_row(*run, _cell_time(r.eager_median_s, r.eager_spread_s),
                      _cell_time(r.compiled_median_s, r.compiled_spread_s), speed,
                      f"{format_seconds(r.compile_cold_s)} / {format_seconds(r.compile_warm_s)}",
                      f"{r.nodes_before} -> {r.nodes_after}", str(r.fused_kernels), format_bytes(r.peak_bytes), agree)
        for p in r.peers:
            if not (p.available and p.eager is not None):
                notes.append(f"{p.library}: {p.note}")
                continue
            ratio = p.eager.median / p.compiled.median if p.compiled and p.compiled.median > 0 else math.nan
            table.add_row(label, p.library, _cell_time(p.eager.median, p.eager.spread),
                          _cell_time(p.compiled.median, p.compiled.spread) if p.compiled else "-",
                          f"{ratio:.2f}x", format_seconds(p.compile_s), "", "", "",
                          f"{p.max_rel_error:.1e}" if p.max_rel_error is not None else "-")
    console.print(table)
    console.print(Text("time: median per call ±half the interquartile range; speedup: eager time / compiled time; "
                       "compile: trace + optimize + generate + load (cold: empty disk cache, warm: from the disk "
                       "cache); IR nodes: traced -> optimized (a fused kernel counts once); peak mem: the memory "
                       "plan's estimate for intermediates", style="dim"))
    for note in dict.fromkeys(notes):
        console.print(Text(f"peer {note}", style="yellow"))
    worst = max(r.max_rel_error for r in reports)
    if all(r.ok for r in reports):
        console.print(Text(f"agreement: eager and compiled results agree at every size (largest relative error "
                           f"{worst:.1e}, tolerance {first.tolerance:.0e})", style="green"))


def _machine() -> dict:
    import numpy as np  # noqa: PLC0415

    return {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count()}


def write_json(path: str, workload: Workload, ns: argparse.Namespace, sizes: list,
               reports: list[CompareReport]) -> None:
    """Every sample of every run, with what produced them (schema: graphmode-compare/1)."""
    payload = {
        "schema": "graphmode-compare/1",
        "graphmode_version": version(),
        "workload": workload.name,
        "description": workload.description,
        "target": ns.target,
        "backend": ns.backend,
        "device": ns.device,
        "repeat": ns.repeat,
        "tolerance": ns.tolerance,
        "malloc": ns.malloc_setting,
        "machine": _machine(),
        "results": [{"size": label, "size_value": list(value) if isinstance(value, tuple) else value,
                     **r.to_dict()} for (label, value), r in zip(sizes, reports)],
    }
    _write_text(path, json.dumps(payload, indent=2, allow_nan=True) + "\n")
    print(f"wrote {path}")


def _write_text(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from exc


def check_plotting() -> None:
    """Fail before measuring, not after, when --plot cannot work."""
    if not installed("matplotlib"):
        raise CLIError("--plot needs matplotlib, which is not installed: pip install 'graphmode[plot]'")


def write_plot(path: str, workload: Workload, sizes: list, reports: list[CompareReport]) -> None:
    """Log-log runtime against input size for eager, compiled and any measured peers."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    xs = [r.input_elements for r in reports]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    series = [("eager", [r.eager for r in reports], "o-"), ("compiled", [r.compiled for r in reports], "s-")]
    for lib in dict.fromkeys(p.library for r in reports for p in r.peers if p.eager is not None):
        found = [next((p for p in r.peers if p.library == lib), None) for r in reports]
        if all(p is not None and p.eager is not None for p in found):
            series.append((f"{lib} eager", [p.eager for p in found], "^--"))
            if all(p.compiled is not None for p in found):
                series.append((f"{lib} compiled", [p.compiled for p in found], "v--"))
    for name, timings, style in series:
        ax.errorbar(xs, [t.median for t in timings], yerr=[t.spread / 2 for t in timings], fmt=style,
                    capsize=3, label=name)
    for x, (label, _), r in zip(xs, sizes, reports):
        ax.annotate(label, (x, r.eager.median), textcoords="offset points", xytext=(4, 6), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("input elements (all arguments)")
    ax.set_ylabel(f"seconds per {reports[0].mode} call (median)")
    ax.set_title(f"{workload.name}: eager vs compiled ({reports[0].backend}, {reports[0].device})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as exc:
        raise CLIError(f"cannot write {path}: {_one_line(exc)}") from exc
    finally:
        plt.close(fig)
    print(f"wrote {path}")


# -- ir and graph -----------------------------------------------------------------------------------
def _compiled_for(fn: Callable, args: tuple, backend: str):
    """What `compare` compiles: value_and_grad over the arguments that require grad."""
    from eager import Tensor  # noqa: PLC0415

    from .api import compile as static_compile, value_and_grad  # noqa: PLC0415

    diff = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
    plain = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
    compiled = value_and_grad(fn, argnums=diff, backend=backend) if diff else static_compile(fn, backend=backend)
    return compiled, plain


def split_sections(text: str) -> list[tuple[str, str]]:
    """explain() text -> [(stage name, its text)], one per '== name ==' header."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("== ") and " ==" in line[3:]:
            name = line[3:line.index(" ==", 3)]
            sections.append((name, [line]))
        elif sections:
            sections[-1][1].append(line)
    return [(name, "\n".join(lines).rstrip()) for name, lines in sections]


def cmd_ir(ns: argparse.Namespace) -> int:
    """The IR after each optimization stage (or one), and the generated source."""
    workload = load_workload(ns.target)
    label, size = _size_for_one(ns, workload)
    fn, args = workload.build(size, label)
    compiled, plain = _compiled_for(fn, args, ns.backend)
    if ns.stage is None and ns.source:
        print(_source_or_note(compiled, plain))
        return 0
    sections = split_sections(compiled.explain(*plain))
    if ns.stage in (None, "all"):
        chosen = [text for name, text in sections if name != "generated source" or not ns.source]
    else:
        chosen = [text for name, text in sections if name == ns.stage or name.startswith(ns.stage + ": ")]
        if not chosen:
            names = ", ".join(dict.fromkeys(n for n, _ in sections if n != "generated source"))
            raise CLIError(f"no stage named {ns.stage!r}; stages: {names}, all")
    print("\n\n".join(chosen))
    if ns.source:
        print("\n" + _source_or_note(compiled, plain))
    return 0


def _source_or_note(compiled, plain: tuple) -> str:
    source = compiled.source(*plain)
    return source or "(no generated source: the interpreter runs this graph; use --backend numpy)"


def cmd_graph(ns: argparse.Namespace) -> int:
    """Draw the eager backward graph or the compiled forward/backward IR."""
    from . import draw  # noqa: PLC0415

    out = Path(ns.output)
    if out.suffix.lower() not in draw.FORMATS:
        raise CLIError(f"cannot draw to {ns.output}: use a file ending in {', '.join(draw.FORMATS)}")
    if not out.parent.is_dir():
        raise CLIError(f"cannot write {ns.output}: directory {out.parent} does not exist")
    workload = load_workload(ns.target)
    label, size = _size_for_one(ns, workload)
    fn, args = workload.build(size, label)
    if ns.mode == "eager":
        import eager  # noqa: PLC0415

        fn = python_function(fn)  # a @static.compile'd workload: draw what eager records
        names = _argument_names(fn, args)
        text = eager.viz.to_dot(fn(*args), params=names, name=f"{workload.name} (eager backward graph)")
    else:
        text = draw.to_dot(fn, *args)
    try:
        result = draw.render(text, out)
    except (ValueError, OSError) as exc:
        raise CLIError(_one_line(exc)) from exc
    print(result.message)
    return 0


def _argument_names(fn: Callable, args: tuple) -> dict:
    """{parameter name: tensor}, so leaves are labelled as the function names them."""
    from eager import Tensor  # noqa: PLC0415

    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    return {(params[k] if k < len(params) else f"arg{k}"): a for k, a in enumerate(args) if isinstance(a, Tensor)}


# -- the parser and main ------------------------------------------------------------------------------
def version() -> str:
    from importlib import metadata  # noqa: PLC0415

    try:
        return metadata.version("graphmode")
    except metadata.PackageNotFoundError:
        import eager  # noqa: PLC0415

        return eager.__version__


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (status 2)."""

    def error(self, message: str):  # noqa: D102
        self.exit(USAGE_ERROR, f"graphmode: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="graphmode", description="Compare eager and compiled runs of a workload, print its IR, "
                     "draw its graphs. TARGET is a .py file or module defining workload(size) -> (fn, args).")
    parser.add_argument("--version", action="version", version=f"graphmode {version()}")
    sub = parser.add_subparsers(dest="command", metavar="{compare,ir,graph}")

    p = sub.add_parser("compare", help="time eager and compiled forward+backward per size, check they agree")
    p.add_argument("target", help="a .py file or module name defining workload(size)")
    p.add_argument("--sizes", help="comma-separated sizes: numbers (1e4,1e6) or shapes (32x64x64x10); "
                   "default: the workload's SIZES")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--repeat", type=int, default=5, help="timed runs of each mode per size (default 5)")
    p.add_argument("--backend", choices=("auto", "numpy", "cupy", "native", "interpret"), default="auto")
    p.add_argument("--tolerance", type=float, default=1e-3, help="largest allowed relative error (default 1e-3)")
    p.add_argument("--plot", metavar="FILE.png", help="write a log-log runtime-vs-size chart (needs matplotlib)")
    p.add_argument("--json", metavar="FILE", help="write every sample as JSON")
    p.add_argument("--peers", metavar="torch,jax", help="also run the workload's torch/jax versions when installed")
    p.add_argument("--malloc", choices=("steady", "default"), default="steady",
                   help="steady (default): glibc keeps freed memory, so page faults do not decide the ratio; "
                   "default: leave the allocator as it is")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("ir", help="print the IR after each optimization stage and the generated source")
    p.add_argument("target")
    p.add_argument("--size", help="the size to trace at (default: the workload's first size)")
    p.add_argument("--stage", metavar="NAME|all", help="print one stage (e.g. traced, fuse, memory) or all")
    p.add_argument("--source", action="store_true", help="print the generated source")
    p.add_argument("--backend", choices=("auto", "numpy", "cupy", "native", "interpret"), default="auto")
    p.set_defaults(func=cmd_ir)

    p = sub.add_parser("graph", help="draw the eager backward graph or the compiled IR (Graphviz)")
    p.add_argument("target")
    p.add_argument("--mode", choices=("eager", "static"), default="static")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.svg, .png, .pdf or .dot")
    p.add_argument("--size", help="the size to draw at (default: the workload's first size)")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("_peer")  # internal, no help: compare --peers runs each peer in a child process
    p.add_argument("target")
    p.add_argument("--size", required=True)
    p.add_argument("--library", choices=PEER_LIBRARIES, required=True)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--malloc", choices=("steady", "default"), default="steady")
    p.set_defaults(func=cmd_peer)

    for p in sub.choices.values():
        p.add_argument("--traceback", action="store_true", help="show Python's traceback on errors")
    return parser


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that flushing at exit does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `graphmode` command; returns the exit status."""
    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: argparse has printed them
        return exc.code if isinstance(exc.code, int) else USAGE_ERROR
    if ns.command is None:
        parser.print_help(sys.stderr)
        return USAGE_ERROR
    try:
        return ns.func(ns)
    except CLIError as exc:
        if ns.traceback:
            raise
        print(f"graphmode: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("graphmode: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `graphmode ir ... | head`: the reader left, nothing to report
        _silence_stdout()
        return 141
    except Exception as exc:  # noqa: BLE001  (the workload's own code failed: say where, briefly)
        if ns.traceback:
            raise
        print(f"graphmode: error: {ns.command} {ns.target}: {_one_line(exc)} (--traceback for details)",
              file=sys.stderr)
        return DISAGREE


if __name__ == "__main__":
    sys.exit(main())
