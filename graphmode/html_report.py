"""`graphmode compare --html FILE`: one self-contained page per comparison.

The terminal tables say how fast; this page says why. It holds, with nothing fetched from
anywhere (inline CSS and SVG, no script), so it can be mailed or attached to an issue:

- the two tables of the terminal (times with the verdict, then what compiling did);
- the runtime chart (eager and compiled seconds per call against size, log-log), as SVG;
- the eager backward graph and the compiled forward and backward graphs, as SVG when
  Graphviz's `dot` is installed, else a note saying so and the DOT text to render later;
- the IR before (as traced) and after optimization (the forward and backward that run);
- the generated source of each graph, each line that cites an IR line ("L4: ...") linked
  to that line, and each line that cites your code ("(w2_gelu.py:18)") linked to that
  line of the workload file, shown at the end of the page.

The graphs, IR and source are those of the first size measured (the smallest, usually:
the code is the same at every size, only the shapes change).
"""
from __future__ import annotations

import html
import math
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from static.compare import format_bytes, format_seconds

from .report import SizeResult

HTML_SUFFIXES = (".html", ".htm")
GRAPHVIZ_TIMEOUT_S = 60  # a layout slower than this is left to the reader's own Graphviz

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1180px;
       padding: 0 24px 48px; color: #1d2330; }
h1 { font-size: 22px; margin: 24px 0 4px; } h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 1px solid #d8dde6; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.meta { color: #5a6475; margin: 0 0 12px; }
table.t { border-collapse: collapse; margin: 8px 0; } .t th, .t td { padding: 4px 12px; text-align: right; }
.t th { border-bottom: 2px solid #9aa5b8; } .t td:first-child, .t th:first-child { text-align: left; }
.t tr:nth-child(even) td { background: #f4f6fa; }
.ok { color: #137333; font-weight: 600; } .fail { color: #c5221f; font-weight: 700; }
.faster { color: #137333; } .slower { color: #c5221f; }
.verdict { padding: 8px 12px; border-radius: 6px; margin: 12px 0; }
.verdict.good { background: #e6f4ea; } .verdict.bad { background: #fce8e6; }
nav a { margin-right: 14px; }
pre.code { background: #f7f8fa; border: 1px solid #e1e5ec; border-radius: 6px; padding: 6px 0; overflow-x: auto;
           font: 12px/1.5 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre.code span.l { display: block; padding: 0 10px; white-space: pre; }
pre.code span.l:target { background: #fff3c4; }
pre.code span.n { display: inline-block; width: 4.5em; color: #9aa5b8; user-select: none; text-align: right;
                  margin-right: 1em; }
pre.code a { color: #1a56db; }
.graph { border: 1px solid #e1e5ec; border-radius: 6px; padding: 8px; overflow: auto; max-height: 900px;
         background: white; }
.graph svg { max-width: 100%; height: auto; }
.note { color: #5a6475; font-style: italic; }
details > summary { cursor: pointer; color: #1a56db; margin: 6px 0; }
.chart text { font: 11px system-ui, sans-serif; fill: #1d2330; }
"""

_SERIES_COLOURS = {"eager": "#1f77b4", "compiled": "#ff7f0e"}


@dataclass
class Inside:
    """What the compiler made of one size: the texts and pictures the page shows."""

    label: str
    traced: str  # the IR as traced (forward and, with gradients, backward)
    graphs: list[tuple[str, str, str]]  # (title, anchor, IR text) of the graphs that run
    sources: list[tuple[str, str, str]]  # (title, IR anchor it cites, generated source)
    eager_dot: str | None
    static_dot: str | None
    user_file: Path | None
    summary: str = ""  # the opening of explain(): what the compiler did, on one screen


# -- gathering ------------------------------------------------------------------------------------------
def look_inside(fn: Callable, args: tuple, backend: str, label: str) -> Inside:
    """Compile `fn` as `graphmode compare` does (value_and_grad over the arguments that
    require grad) and collect the IR, the generated sources and the DOT of both graphs."""
    import eager  # noqa: PLC0415
    from static import trace  # noqa: PLC0415
    from static.compare import python_function  # noqa: PLC0415

    from . import draw  # noqa: PLC0415
    from .ir_commands import _argument_names, _compiled_for  # noqa: PLC0415

    plain_fn = python_function(fn)
    compiled, plain = _compiled_for(plain_fn, args, backend)
    compiled(*plain)
    traced = str(trace(compiled, *plain))
    entry = compiled._entry_for(plain, {})[3]
    graphs: list[tuple[str, str, str]] = []
    sources: list[tuple[str, str, str]] = []
    if entry.grad is not None:
        split = entry.grad.split
        parts = [("forward", split.forward, entry.forward), ("backward", split.backward, entry.grad.backward)]
    else:
        parts = [("forward", entry.graph, entry.forward)]
    for title, graph, executable in parts:
        anchor = f"ir-{title}"
        graphs.append((title, anchor, str(graph)))
        text = executable.source() if hasattr(executable, "source") else ""
        if text:
            sources.append((title, anchor, text))
    try:
        eager_dot: str | None = eager.viz.to_dot(plain_fn(*_fresh(args)), params=_argument_names(plain_fn, args),
                                                 name="eager backward graph")
    except Exception:  # noqa: BLE001  (a forward-only workload has no backward graph to draw)
        eager_dot = None
    try:
        static_dot: str | None = draw.to_dot(plain_fn, *args, max_body_nodes=0)
    except Exception:  # noqa: BLE001
        static_dot = None
    code = getattr(plain_fn, "__code__", None)
    user_file = Path(code.co_filename) if code is not None and Path(code.co_filename).is_file() else None
    try:
        summary = compiled.explain(*plain).split("\n\n", 1)[0]
    except Exception:  # noqa: BLE001  (the page is still worth having without it)
        summary = ""
    return Inside(label, traced, graphs, sources, eager_dot, static_dot, user_file, summary)


def _fresh(args: tuple) -> tuple:
    from static.compare import prepare_args  # noqa: PLC0415

    return prepare_args(args, None)


# -- pieces of the page ---------------------------------------------------------------------------------
def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cell_time(seconds: float, spread: float) -> str:
    rel = 100 * spread / 2 / seconds if seconds > 0 else 0.0
    return f"{format_seconds(seconds)} ±{rel:.0f}%"


def tables(results: Sequence[SizeResult]) -> str:
    """The terminal's two tables, as HTML."""
    rows = []
    for res in results:
        r = res.report
        verdict = f'<span class="{"ok" if r.ok else "fail"}">{"ok" if r.ok else "FAIL"} {r.max_rel_error:.0e}</span>'
        speed = f'<span class="{"faster" if r.ratio >= 1 else "slower"}">{r.ratio:.2f}x</span>'
        rows.append(f"<tr><td>{_e(res.label)}</td><td>{verdict}</td><td>{_cell_time(r.eager_median_s, r.eager_spread_s)}"
                    f"</td><td>{_cell_time(r.compiled_median_s, r.compiled_spread_s)}</td><td>{speed}</td></tr>")
        for p in res.peers:
            if p.available and p.eager is not None:
                ratio = p.eager.median / p.compiled.median if p.compiled and p.compiled.median > 0 else math.nan
                rows.append(f"<tr><td>&nbsp;&nbsp;{_e(p.library)}</td><td>"
                            f"{_e(f'{p.max_rel_error:.0e}' if p.max_rel_error is not None else '-')}</td><td>"
                            f"{_cell_time(p.eager.median, p.eager.spread)}</td><td>"
                            f"{_cell_time(p.compiled.median, p.compiled.spread) if p.compiled else '-'}</td><td>"
                            f"{f'{ratio:.2f}x' if math.isfinite(ratio) else '-'}</td></tr>")
    times = ('<table class="t" id="times"><tr><th>size</th><th>check</th><th>eager</th><th>compiled</th>'
             f'<th>speedup</th></tr>{"".join(rows)}</table>')
    rows = [f"<tr><td>{_e(res.label)}</td><td>{format_seconds(res.report.compile_cold_s)}</td>"
            f"<td>{format_seconds(res.report.compile_warm_s)}</td><td>{res.report.nodes_before} -&gt; "
            f"{res.report.nodes_after}</td><td>{res.report.fused_kernels}</td><td>{format_bytes(res.report.peak_bytes)}"
            "</td></tr>" for res in results]
    graph = ('<table class="t" id="compile"><tr><th>size</th><th>compile cold</th><th>compile warm</th>'
             f'<th>IR nodes</th><th>fused</th><th>peak mem</th></tr>{"".join(rows)}</table>')
    return times + graph


def runtime_chart(results: Sequence[SizeResult], width: int = 720, height: int = 380) -> str:
    """Seconds per call against size, both axes logarithmic (a size that is a shape is
    placed by its index), as inline SVG with a tooltip on every point."""
    from .report import plot_positions  # noqa: PLC0415

    xs, logx = plot_positions([res.value for res in results])
    series = {"eager": [r.report.eager_median_s for r in results],
              "compiled": [r.report.compiled_median_s for r in results]}
    values = [v for vs in series.values() for v in vs if v > 0 and math.isfinite(v)]
    if not values:
        return '<p class="note">no timings to chart</p>'
    left, right, top, bottom = 70, 20, 20, 50
    pw, ph = width - left - right, height - top - bottom
    fx = [math.log10(x) if logx else x for x in xs]
    x_lo, x_hi = (min(fx), max(fx)) if len(fx) > 1 else (fx[0] - 1, fx[0] + 1)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    pad = (x_hi - x_lo) * 0.06
    x_lo, x_hi = x_lo - pad, x_hi + pad
    y_lo, y_hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    if y_hi == y_lo:
        y_hi += 1

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * pw

    def py(seconds: float) -> float:
        return top + (y_hi - math.log10(seconds)) / (y_hi - y_lo) * ph

    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="runtime against size">',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="white" stroke="#9aa5b8"/>']
    for d in range(y_lo, y_hi + 1):
        y = py(10.0 ** d)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e1e5ec"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(format_seconds(10.0 ** d))}</text>')
    if logx:
        for d in range(math.ceil(x_lo), math.floor(x_hi) + 1):
            x = px(d)
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" stroke="#eef1f5"/>')
    for x, res in zip(fx, results):
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 16}" text-anchor="middle">{_e(res.label)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 8}" text-anchor="middle">size (the workload\'s size argument'
               f'{", log scale" if logx else ""})</text>')
    out.append(f'<text x="14" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 14 {top + ph / 2})">'
               'seconds per call (median, log scale)</text>')
    for k, (name, ys) in enumerate(series.items()):
        colour = _SERIES_COLOURS[name]
        points = [(px(x), py(y)) for x, y in zip(fx, ys) if y > 0 and math.isfinite(y)]
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                   + " ".join(f"{a:.1f},{b:.1f}" for a, b in points) + '"/>')
        for (a, b), res, y in zip(points, results, ys):
            out.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="4" fill="{colour}"><title>{_e(name)} at {_e(res.label)}: '
                       f'{_e(format_seconds(y))} per call</title></circle>')
        ly = top + 14 + 18 * k
        out.append(f'<line x1="{left + 12}" x2="{left + 36}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{left + 42}" y="{ly + 4}">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def graph_svg(dot_text: str | None, what: str) -> str:
    """A DOT graph as inline SVG through Graphviz, or a note and the DOT text without it."""
    from .draw import find_dot  # noqa: PLC0415

    if dot_text is None:
        return f'<p class="note">no {_e(what)} to draw for this workload</p>'
    exe = find_dot()
    if exe is not None:
        try:
            proc = subprocess.run([exe, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True,
                                  timeout=GRAPHVIZ_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            note = (f"Graphviz took more than {GRAPHVIZ_TIMEOUT_S} s to lay out the {what} (a very large graph); "
                    "its DOT text follows")
        except OSError as exc:
            note = f"Graphviz could not run to draw the {what}: {exc}"
        else:
            if proc.returncode == 0:
                svg = proc.stdout.decode("utf-8", errors="replace")
                svg = svg[svg.find("<svg"):] if "<svg" in svg else svg  # drop the XML prologue and DOCTYPE
                return f'<div class="graph">{svg}</div>'
            why = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
            note = f"Graphviz failed to draw the {what}: {why}"
    else:
        note = (f"Graphviz's dot is not installed, so the {what} is not drawn here (apt-get install graphviz, "
                "brew install graphviz or conda install graphviz, then run the command again); its DOT text "
                "follows, which any Graphviz viewer renders")
    return (f'<p class="note fallback">{_e(note)}</p><details><summary>DOT text of the {_e(what)}</summary>'
            f'<pre class="code">{_e(dot_text)}</pre></details>')


def code_block(text: str, anchor: str) -> str:
    """Numbered lines, each with the id `{anchor}-L{n}` so that other blocks can link to it."""
    lines = text.split("\n")
    return '<pre class="code">' + "".join(
        f'<span class="l" id="{anchor}-L{n}"><span class="n">{n}</span>{_e(line)}</span>'
        for n, line in enumerate(lines, 1)) + "</pre>"


_IR_CITE = re.compile(r"\bL(\d+):")
_USER_CITE = re.compile(r"\(([\w.\-]+\.py):(\d+)\)")


def linked_source(text: str, anchor: str, ir_anchor: str, ir_lines: int, user_file: Path | None) -> str:
    """The generated source, numbered, each 'L<n>:' linked to line n of the IR it was
    generated from and each '(file.py:line)' of the workload file linked to that line."""
    user_name = user_file.name if user_file is not None else None
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        body = _e(line)

        def ir_link(m: re.Match) -> str:
            k = int(m.group(1))
            return f'<a href="#{ir_anchor}-L{k}">L{k}</a>:' if 1 <= k <= ir_lines else m.group(0)

        def user_link(m: re.Match) -> str:
            if m.group(1) != user_name:
                return m.group(0)
            return f'(<a href="#user-L{m.group(2)}">{m.group(1)}:{m.group(2)}</a>)'

        body = _IR_CITE.sub(ir_link, body)
        body = _USER_CITE.sub(user_link, body)
        out.append(f'<span class="l" id="{anchor}-L{n}"><span class="n">{n}</span>{body}</span>')
    return '<pre class="code">' + "".join(out) + "</pre>"


# -- the page --------------------------------------------------------------------------------------------
def _nav(inside: Inside | None) -> str:
    """Links to the sections the page has."""
    links = [("results", "results"), ("chart", "runtime chart")]
    if inside is not None:
        if inside.summary:
            links.append(("summary", "what the compiler did"))
        links += [("graphs", "graphs"), ("ir", "IR"), ("source", "generated source")]
        if inside.user_file is not None:
            links.append(("user", "your code"))
    return "<nav>" + "".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in links) + "</nav>"


def page(header: dict, results: Sequence[SizeResult], inside: Inside | None) -> str:
    """The whole HTML document."""
    first = results[0].report
    title = f"graphmode compare: {header.get('workload', first.name)}"
    ok = all(res.report.ok for res in results)
    worst = max(res.report.max_rel_error for res in results)
    verdict = (f'<div class="verdict good">eager and compiled results agree at every size (largest relative error '
               f'{worst:.1e}, tolerance {first.tolerance:.0e})</div>' if ok else
               f'<div class="verdict bad">eager and compiled results DISAGREE (largest relative error {worst:.1e}, '
               f'tolerance {first.tolerance:.0e})</div>')
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
             f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{_CSS}</style></head><body>",
             f"<h1>{_e(title)}</h1>",
             f'<p class="meta">{_e(header.get("description", ""))}<br>eager vs compiled {_e(first.mode)}: '
             f'<b>{_e(first.backend)}</b> backend on {_e(first.device)}, median of {_e(header.get("repeat", ""))} runs, '
             f'malloc {_e(header.get("malloc", "default"))}; graphmode {_e(header.get("graphmode_version", ""))}</p>',
             _nav(inside),
             f'<h2 id="results">Results</h2>{verdict}{tables(results)}',
             '<p class="note">check: ok when the largest relative error is within the tolerance; time: median per '
             'call ±half the interquartile range; speedup: eager / compiled; compile: trace + optimize + generate + '
             'load (cold: empty disk cache, warm: from it); IR nodes: traced -&gt; optimized (a fused kernel counts '
             'once); peak mem: planned intermediates</p>',
             f'<h2 id="chart">Runtime against size</h2>{runtime_chart(results)}']
    if inside is None:
        parts.append('<p class="note">the graphs, IR and generated source could not be collected</p>')
    else:
        if inside.summary:
            parts.append(f'<h2 id="summary">What the compiler did (size {_e(inside.label)})</h2>'
                         '<p class="note">the opening of explain(): kernels, what the backward saves and '
                         'recomputes, the backend of each graph, breaks and guards</p>'
                         f'<pre class="code">{_e(inside.summary)}</pre>')
        parts.append(f'<h2 id="graphs">Graphs (size {_e(inside.label)})</h2>'
                     '<h3>eager: the backward graph autograd records, one node per op</h3>'
                     f'{graph_svg(inside.eager_dot, "eager backward graph")}'
                     '<h3>compiled: the forward and backward that run, one box per fused kernel</h3>'
                     f'{graph_svg(inside.static_dot, "compiled graph")}')
        parts.append(f'<h2 id="ir">IR before and after (size {_e(inside.label)})</h2>'
                     f'<h3>as traced</h3>{code_block(inside.traced, "ir-traced")}')
        for name, anchor, text in inside.graphs:
            parts.append(f"<h3>after optimization: {_e(name)}</h3>{code_block(text, anchor)}")
        parts.append('<h2 id="source">Generated source</h2><p class="note">"L&lt;n&gt;:" links to line n of the '
                     'optimized IR above; "(file.py:line)" to the line of your code below.</p>')
        ir_sizes = {anchor: text.count("\n") + 1 for _, anchor, text in inside.graphs}
        for name, anchor, text in inside.sources:
            parts.append(f"<h3>{_e(name)}</h3>"
                         + linked_source(text, f"src-{name}", anchor, ir_sizes.get(anchor, 0), inside.user_file))
        if not inside.sources:
            parts.append('<p class="note">no generated source: the interpreter runs these graphs</p>')
        if inside.user_file is not None:
            try:
                user_text = inside.user_file.read_text(encoding="utf-8")
            except OSError:
                user_text = ""
            parts.append(f'<h2 id="user">Your code: {_e(inside.user_file.name)}</h2>{code_block(user_text, "user")}')
    parts.append("</body></html>\n")
    return "".join(parts)


def write(path: str, header: dict, results: Sequence[SizeResult], inside: Inside | None) -> None:
    """Write the page (UTF-8)."""
    Path(path).write_text(page(header, results, inside), encoding="utf-8")
