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

--traceback shows Python's traceback."""
from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import inspect
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from static.compare import compare, eager_reference, prepare_args, progress_steps, python_function

from . import report
from .peers import PEER_LIBRARIES, PeerResult, measure_peer, steady_malloc

USAGE_ERROR, DISAGREE, INTERRUPTED = 2, 1, 130
WORKLOAD_FAILED, TOOL_MISSING, BROKEN_PIPE = 3, 4, 141


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
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as import does: dataclasses and pickling look it up there
    try:
        _run_import(lambda: loader.exec_module(module), str(path))
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


# -- ir and graph -----------------------------------------------------------------------------------
def _compiled_for(fn: Callable, args: tuple, backend: str):
    """What `compare` compiles: value_and_grad over the arguments that require grad."""
    from eager import Tensor  # noqa: PLC0415
    from static import compile as static_compile  # noqa: PLC0415
    from static import value_and_grad

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
        text = draw.to_dot(fn, *args, max_body_nodes=0 if ns.detail == "regions" else draw.MAX_BODY_NODES)
    try:
        result = draw.render(text, out)
    except (ValueError, OSError) as exc:
        raise CLIError(_one_line(exc)) from exc
    if not result.rendered:  # Graphviz is missing: the .dot is written, the picture is not
        print(f"graphmode: error: {result.message}", file=sys.stderr)
        return TOOL_MISSING
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


# -- the code cache ------------------------------------------------------------------------------------
def _cache_files() -> tuple[Path, list[Path]]:
    """The cache directory (codegen's, honouring GRAPHMODE_CACHE_DIR) and the files in it
    that graphmode wrote: generated modules, native shared objects and their sources, compiler
    probes, post-trace records, and temporary files of interrupted writes."""
    from codegen import cache  # noqa: PLC0415

    # the configured place when the cache is off or refused: `info` still says where it would be
    directory = cache.directory() or cache.configured_dir()
    if not directory.is_dir():
        return directory, []
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.startswith(("gm_", ".tmp-")))
    return directory, files


def cmd_cache(ns: argparse.Namespace) -> int:
    """`cache info`: where the code cache is, what it holds, its bound; `cache clear`: empty it."""
    from codegen import cache  # noqa: PLC0415
    from static.compare import format_bytes  # noqa: PLC0415

    directory, files = _cache_files()
    size = sum(p.stat().st_size for p in files)
    if ns.action == "info":
        state = "on" if cache.enabled() else "off (GRAPHMODE_CACHE=0: modules are generated in memory each run)"
        print(f"directory: {directory}")
        print(f"moved by:  GRAPHMODE_CACHE_DIR ({'set' if os.environ.get('GRAPHMODE_CACHE_DIR') else 'not set'})")
        print(f"disk cache: {state}")
        print(f"files:     {len(files)} generated files, {format_bytes(size)}")
        print(f"bound:     {format_bytes(cache.max_bytes())} (GRAPHMODE_CACHE_MAX_MB), least recently used go first")
        return 0
    removed = 0
    for path in files:
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            removed += 1
        except OSError as exc:
            raise CLIError(f"cannot remove {path}: {exc.strerror or exc}") from exc
    print(f"removed {removed} generated files ({format_bytes(size)}) from {directory}")
    return 0


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
