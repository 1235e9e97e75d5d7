"""The commands that show what the compiler made rather than time it: `ir` (the IR after
each stage, or the generated source), `graph` (a drawing of the graph) and `cache` (the code
cache's place and contents, or emptying it).
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path

from static.compare import python_function

from .workload import TOOL_MISSING, CLIError, _one_line, _size_for_one, load_workload


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
    from gmbase import cache  # noqa: PLC0415

    # the configured place when the cache is off or refused: `info` still says where it would be
    directory = cache.directory() or cache.configured_dir()
    if not directory.is_dir():
        return directory, []
    files = sorted(p for p in directory.iterdir() if p.is_file() and p.name.startswith(("gm_", ".tmp-")))
    return directory, files


def cmd_cache(ns: argparse.Namespace) -> int:
    """`cache info`: where the code cache is, what it holds, its bound; `cache clear`: empty it."""
    from gmbase import cache  # noqa: PLC0415
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
