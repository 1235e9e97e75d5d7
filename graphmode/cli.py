"""`graphmode`: compare eager and compiled runs of a workload, print its IR, draw its graphs.

    graphmode compare TARGET [--sizes 1e4,1e6] [--device cpu|cuda] [--repeat N]
                             [--backend numpy|cupy|native|interpret] [--plot F.png] [--json F]
                             [--peers torch,jax] [--tolerance T] [--malloc steady|default]
    graphmode ir TARGET [--size S] [--stage NAME|all] [--source]
    graphmode graph TARGET --mode eager|static -o FILE.svg|.png|.dot [--size S] [--detail regions|ops]
    graphmode cache info|clear

TARGET is a Python file or an importable module that defines a workload:

    SIZES = ("1e4", "1e6")                  # optional: sizes used without --sizes
    def workload(size) -> (fn, args):       # required
        ...                                 # fn(*args) returns a scalar loss; the tensors
                                            # in args with requires_grad=True get gradients
    def peer(library, size) -> fn | None:   # optional: the same loss for "torch" / "jax"

A size is a number (1e6, 4096) given to workload() as an int, or a shape (32x64x64x10)
given as a tuple of ints. examples/workloads/ holds the design's workloads W1-W4 and an
MLP training step written this way.

Exit status (each means one thing):

    0    done: every result agrees, every file asked for was written
    1    eager and compiled results disagree past --tolerance (the tables are printed)
    2    a usage error the user can fix, reported in one line before anything is measured:
         a missing file, a target without a workload, an unavailable device, a size that
         does not parse or does not fit the workload, an output path that cannot be written
    3    the workload's own code raised (one line naming it; --traceback for the rest)
    4    a tool an output needs is missing: `graph -o x.svg` without Graphviz writes x.dot
         and says how to render it, but x.svg was not made
    130  interrupted by Ctrl-C (what was measured by then is printed)
    141  the reader of stdout went away (`graphmode ir ... | head`)

--traceback shows Python's traceback.

The workload a command measures and the sizes it is given are read by `graphmode.workload`;
the ir, graph and cache commands are `graphmode.ir_commands`.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from static.compare import compare, eager_reference, prepare_args, progress_steps

from . import report
from .ir_commands import cmd_cache, cmd_graph, cmd_ir
from .peers import PEER_LIBRARIES, PeerResult, measure_peer, steady_malloc
from .workload import (
    BROKEN_PIPE,
    DISAGREE,
    INTERRUPTED,
    TOOL_MISSING,
    USAGE_ERROR,
    WORKLOAD_FAILED,
    CLIError,
    Workload,
    _one_line,
    load_workload,
    parse_size,
    parse_sizes,
)

# the exit statuses and the workload loader, as the command's own names (scripts and tests read them here)
__all__ = ["main", "build_parser", "version", "CLIError", "load_workload", "parse_size", "USAGE_ERROR", "DISAGREE",
           "INTERRUPTED", "WORKLOAD_FAILED", "TOOL_MISSING", "BROKEN_PIPE"]


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
    """Check every argument, measure every size, print the tables, write --json/--plot;
    1 if results disagree, 130 after Ctrl-C (with what was measured by then)."""
    workload = load_workload(ns.target)
    sizes = parse_sizes(ns.sizes if ns.sizes is not None else workload.sizes)
    peers = [p.strip() for p in (ns.peers or "").split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEER_LIBRARIES]
    if unknown:
        raise CLIError(f"unknown peer {unknown[0]!r}: use {', '.join(PEER_LIBRARIES)}")
    if ns.repeat < 1:
        raise CLIError(f"--repeat must be at least 1, got {ns.repeat}")
    if not math.isfinite(ns.tolerance) or ns.tolerance < 0:
        raise CLIError(f"--tolerance must be a finite number of at least 0, got {ns.tolerance}")
    check_device(ns.device, ns.backend)
    json_to_stdout = ns.json == "-"
    try:
        if ns.json and not json_to_stdout:
            report.check_output_path(ns.json, "--json")
        if ns.plot:
            report.check_output_path(ns.plot, "--plot", report.PLOT_FORMATS)
        if ns.html:
            report.check_output_path(ns.html, "--html", (".html", ".htm"))
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if ns.plot:
        check_plotting()
    check_sizes(workload, sizes)
    ns.malloc_setting = steady_malloc() if ns.malloc == "steady" else "default"
    results, interrupted = measure(workload, sizes, ns, peers)
    report.print_tables(workload.description, results, ns.repeat, ns.malloc_setting, stderr=json_to_stdout,
                        interrupted=interrupted)
    header: dict = {}
    if (ns.json or ns.html) and results:
        header = {"graphmode_version": version(), "workload": workload.name, "description": workload.description,
                  "target": ns.target, "backend": results[0].report.backend, "backend_requested": ns.backend,
                  "device": ns.device, "repeat": ns.repeat,
                  "tolerance": ns.tolerance, "malloc": ns.malloc_setting, "complete": not interrupted}
    if ns.json and results:
        text = report.json_text(header, results)
        if json_to_stdout:
            sys.stdout.write(text)
        else:
            _write_text(ns.json, text)
            print(f"wrote {ns.json}")
    if ns.plot and results:
        try:
            report.write_plot(ns.plot, workload.name, results)
        except (OSError, ValueError) as exc:
            raise CLIError(f"cannot write {ns.plot}: {_one_line(exc)}") from exc
        print(f"wrote {ns.plot}", file=sys.stderr if json_to_stdout else sys.stdout)
    if ns.html and results:
        write_html(ns, workload, header, results)
        print(f"wrote {ns.html}", file=sys.stderr if json_to_stdout else sys.stdout)
    if interrupted:
        print("graphmode: interrupted", file=sys.stderr)
        return INTERRUPTED
    bad = [res for res in results if not res.report.ok]
    if bad:
        r = bad[0].report
        print(f"graphmode: error: eager and compiled results disagree at size {bad[0].label}: max relative error "
              f"{r.max_rel_error:.2e} > tolerance {r.tolerance:.0e}", file=sys.stderr)
        return DISAGREE
    return 0


def write_html(ns: argparse.Namespace, workload: Workload, header: dict, results: list) -> None:
    """The --html page: the tables and chart of every size, and what the compiler made of
    the first one (its graphs, IR and generated source)."""
    from . import html_report  # noqa: PLC0415

    first = results[0]
    fn, args = workload.build(first.value, first.label)
    try:
        inside = html_report.look_inside(fn, args, ns.backend, first.label)
    except Exception as exc:  # noqa: BLE001  (the measured tables are still worth the page)
        print(f"graphmode: warning: --html without graphs and IR: {_one_line(exc)}", file=sys.stderr)
        inside = None
    try:
        html_report.write(ns.html, header, results, inside)
    except OSError as exc:
        raise CLIError(f"cannot write {ns.html}: {exc.strerror or exc}") from exc


def check_sizes(workload: Workload, sizes: list) -> None:
    """Build every size's inputs once before measuring anything, so that a size the workload
    cannot take (a number where it wants a shape) fails now, in one line, naming it."""
    for label, size in sizes:
        try:
            workload.build(size, label)
        except CLIError:
            raise
        except Exception as exc:  # noqa: BLE001  (the workload's own code refused the size)
            example = ", ".join(workload.sizes)
            raise CLIError(f"{workload.name}: size {label} does not fit this workload ({_one_line(exc)}); its "
                           f"sizes look like: {example}") from exc


def _write_text(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from exc


def check_plotting() -> None:
    """Fail before measuring, not after, when --plot cannot work."""
    if not installed("matplotlib"):
        raise CLIError("--plot needs matplotlib, which is not installed: pip install 'graphmode[plot]'")


def measure(workload: Workload, sizes: list, ns: argparse.Namespace,
            peers: list) -> tuple[list[report.SizeResult], bool]:
    """static.compare for each size, with a progress bar on stderr naming the running step.
    Returns (what was measured, whether Ctrl-C cut it short)."""
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415

    results: list[report.SizeResult] = []
    per_size = 1 + progress_steps(ns.repeat) + len(peers)  # building inputs, compare's steps, peers
    columns = (TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
               TimeElapsedColumn())
    console = Console(stderr=True)
    try:
        with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
            task = progress.add_task(workload.name, total=per_size * len(sizes))
            started = [0]

            def step(event: str, label: str) -> None:
                """A step begins: the one before it is done."""
                if started[0]:
                    progress.advance(task)
                started[0] += 1
                progress.update(task, description=f"{workload.name} {label}: {event}")

            for label, size in sizes:
                step("building inputs", label)
                fn, args = workload.build(size, label)
                result = compare(fn, *args, repeat=ns.repeat, backend=ns.backend, device=ns.device,
                                 tolerance=ns.tolerance, name=workload.name,
                                 progress=functools.partial(step, label=label))
                res = report.SizeResult(label, size, result)
                for library in peers:
                    step(f"{library} in a child process (its compiler may take a while)", label)
                    res.peers.append(measure_peer_apart(ns, workload, label, library))
                results.append(res)
    except KeyboardInterrupt:
        return results, True
    return results, False


def measure_peer_apart(ns: argparse.Namespace, workload: Workload, label: str, library: str) -> PeerResult:
    """Measure a peer in a child process (`graphmode _peer`): in this one, its thread pool
    (OpenMP, XLA) and ours would share the cores and slow each other unpredictably."""
    if not installed(library):
        return PeerResult(library, False, f"not installed (pip install {library})")
    if workload.peer is None:
        return PeerResult(library, False, f"the workload has no {library} version (define peer(library, size))")
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    argv = [sys.executable, "-m", "graphmode", "_peer", str(Path(ns.target).resolve()) if Path(ns.target).is_file()
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


# -- the parser and main ------------------------------------------------------------------------------
def version() -> str:
    """The package's own version (graphmode.__version__): the installed metadata of an editable
    install can lag behind the checkout, the source cannot."""
    from . import __version__  # noqa: PLC0415

    return __version__


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (unless it names it already), so that
    `--help` answers "what happens if I leave it out" without reading the source."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or "required" in text or not action.option_strings or action.default == argparse.SUPPRESS
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        if action.default is None:
            return f"{text} (default: none)"
        if action.default is False:
            return f"{text} (default: off)"
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (status 2) and defaults in the help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # noqa: D102
        for hidden in HIDDEN_COMMANDS:  # argparse lists every choice; internal ones are not for users
            message = message.replace(f", '{hidden}'", "").replace(f", {hidden}", "")
        self.exit(USAGE_ERROR, f"graphmode: error: {message} (see {self.prog} --help)\n")


HIDDEN_COMMANDS = ("_peer",)
BACKENDS = ("auto", "numpy", "cupy", "native", "interpret")
TARGET_HELP = "a .py file or importable module name defining workload(size) -> (fn, args)"
DEVICE_HELP = "where the tensors live: cpu, or cuda (needs CuPy and a GPU)"
BACKEND_HELP = ("auto: native C++ where a compiler is found (GRAPHMODE_NATIVE=0: NumPy), CuPy on cuda; or name one; "
                "interpret runs the IR op by op")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="graphmode", description="Compare eager and compiled runs of a workload, print its IR, "
                     "draw its graphs. TARGET is a .py file or module defining workload(size) -> (fn, args).",
                     epilog="exit status: 0 done, 1 eager and compiled results disagree, 2 usage error, 3 the "
                     "workload's code raised, 4 a tool an output needs (Graphviz) is missing, 130 interrupted")
    parser.add_argument("--version", action="version", version=f"graphmode {version()}")
    sub = parser.add_subparsers(dest="command", metavar="{compare,ir,graph,cache}")

    p = sub.add_parser("compare", help="time eager and compiled forward+backward per size, check they agree",
                       description="Time eager and compiled forward+backward of a workload per size, check that "
                       "they agree, print two tables; optionally write JSON, a chart and an HTML report.")
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("--sizes", help="comma-separated sizes: numbers (1e4,1e6) or shapes (32x64x64x10); "
                   "default: the workload's SIZES")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help=DEVICE_HELP)
    p.add_argument("--repeat", type=int, default=5, help="timed runs of each mode per size")
    p.add_argument("--backend", choices=BACKENDS, default="auto", help=BACKEND_HELP)
    p.add_argument("--tolerance", type=float, default=1e-3, help="largest allowed relative error")
    p.add_argument("--plot", metavar="FILE.png", help="write a runtime and speedup chart per size, .png/.svg/.pdf "
                   "(needs matplotlib)")
    p.add_argument("--json", metavar="FILE", help="write every sample as JSON; - writes it to stdout (the tables "
                   "then go to stderr)")
    p.add_argument("--html", metavar="FILE.html", help="write one self-contained page: the tables, the runtime "
                   "chart, the eager and compiled graphs, the IR before and after, and the generated source "
                   "linked line by line to the IR and to your code")
    p.add_argument("--peers", metavar="torch,jax", help="also run the workload's torch/jax versions when installed")
    p.add_argument("--malloc", choices=("steady", "default"), default="steady",
                   help="steady (default): glibc keeps freed memory, so page faults do not decide the ratio; "
                   "default: leave the allocator as it is")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("ir", help="print the IR after each optimization stage and the generated source",
                       description="Print explain(): a summary, then the IR after each optimization stage, how "
                       "it runs and the generated source.")
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("--size", help="the size to trace at (default: the workload's first size)")
    p.add_argument("--stage", metavar="NAME|all", help="print one stage (e.g. summary, traced, fuse, memory) or all "
                   "(default: all)")
    p.add_argument("--source", action="store_true", help="print the generated source (alone, without --stage)")
    p.add_argument("--backend", choices=BACKENDS, default="auto", help=BACKEND_HELP)
    p.set_defaults(func=cmd_ir)

    p = sub.add_parser("graph", help="draw the eager backward graph or the compiled IR (Graphviz)",
                       description="Draw the eager backward graph or the compiled IR. .svg, .png and .pdf need "
                       "Graphviz's dot; without it the .dot is written and the exit status is 4.")
    p.add_argument("target", help=TARGET_HELP)
    p.add_argument("--mode", choices=("eager", "static"), default="static",
                   help="eager: the backward graph eager records; static: the compiled forward and backward IR")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="FILE.svg, .png, .pdf (Graphviz) or .dot "
                   "(required)")
    p.add_argument("--size", help="the size to draw at (default: the workload's first size)")
    p.add_argument("--detail", choices=("regions", "ops"), default="regions",
                   help="regions (default): a fused region is one box listing its ops, legible for large "
                   "graphs; ops: every op inside each region")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("cache", help="where the generated-code cache is and how big (info), or empty it (clear)",
                       description="The on-disk cache of generated modules, native shared objects and trace "
                       "records (GRAPHMODE_CACHE_DIR moves it).")
    p.add_argument("action", choices=("info", "clear"), help="info: where it is, what it holds, its bound; clear: "
                   "remove graphmode's files from it")
    p.set_defaults(func=cmd_cache, target="cache")

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
        return INTERRUPTED
    except BrokenPipeError:  # `graphmode ir ... | head`: the reader left, nothing to report
        _silence_stdout()
        return BROKEN_PIPE
    except Exception as exc:  # noqa: BLE001  (the workload's own code failed: say where, briefly)
        if ns.traceback:
            raise
        print(f"graphmode: error: {ns.command} {ns.target}: {_one_line(exc)} (--traceback for details)",
              file=sys.stderr)
        return WORKLOAD_FAILED


if __name__ == "__main__":
    sys.exit(main())
