"""Drawing the compiled IR as Graphviz DOT, and rendering DOT to a picture (`graphmode graph`).

A picture answers what the printed IR makes you count by hand: which ops were fused into
one kernel (a fused region is a cluster around its body's ops) and what the forward keeps
alive for the backward (saved values, orange, between the forward and backward halves).
Colours follow `eager.viz.to_dot`, so the eager and static pictures of one function read
alike: inputs light blue, outputs green, saved values orange, ops grey.

    from graphmode import draw
    dot_text = draw.to_dot(loss, x, w)      # x, w eager tensors that require grad
    draw.render(dot_text, "loss.svg")       # Graphviz when installed, else loss.dot

Large graphs stay legible with `max_body_nodes=0`: each fused region is then one box that
lists its ops (the CLI's default). Inside an expanded region, values keep the names the
outer IR gives them (a region's parameters are drawn as the operands they stand for), and
a legend explains the colours.
"""
from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eager.viz import DOT_STYLE
from eager.viz import dot_quote as _quote
from static.ir import Graph, Node, Value, format_type
from static.ir.core import format_literal

if TYPE_CHECKING:
    from static.api import AutogradGraphs

MAX_BODY_NODES = 40  # a larger fused region is drawn as one box that counts its ops
FORMATS = (".svg", ".png", ".pdf", ".dot")

_STYLE = {
    "input": 'shape=box, style="filled,rounded", fillcolor="lightblue"',
    "seed": 'shape=box, style="filled,rounded", fillcolor="lightyellow"',
    "op": DOT_STYLE["op"],
    "output": DOT_STYLE["root"],
    "saved": DOT_STYLE["saved"],
    "summary": 'shape=box, style="filled,dashed", fillcolor="#e8f0fe"',
}
_LEGEND = (("input", "input"), ("seed", "gradient seed"), ("op", "op"),
           ("summary", "fused region: one kernel"), ("saved", "saved for backward"), ("output", "output / gradient"))
_FUSED_CLUSTER = 'style="filled,rounded"; fillcolor="#e8f0fe"; color="#4a6fa5"'
_HALF_CLUSTER = 'style="rounded"; color="grey50"'


def _node_text(node: Node, names: dict | None = None) -> str:
    """The node as the IR prints it, without the result type (shown on the next line);
    `names` renames values (a region's parameters to the outer operands they stand for)."""
    names = names or {}

    def operand(v) -> str:
        return f"%{names.get(v, v.name)}" if isinstance(v, Value) else format_literal(v)

    lhs = ", ".join(operand(o) for o in node.outputs)
    text = f"{lhs} = {node.op}"
    if node.inputs:
        text += " " + ", ".join(operand(v) for v in node.inputs)
    if node.attrs:
        text += " {" + ", ".join(f"{k}={format_literal(node.attrs[k])}" for k in sorted(node.attrs)) + "}"
    return text


def _nbytes(v: Value) -> int:
    n = 1
    for s in v.type.shape:
        n *= int(s)
    return n * v.type.dtype.itemsize


class _Dot:
    """Accumulates DOT statements; maps each IR Value to the DOT node that produces it."""

    def __init__(self, name: str) -> None:
        self.lines = [f"digraph {_quote(name)} {{",
                      '  graph [rankdir=TB, fontname="monospace", compound=true, newrank=true];',
                      '  node [fontname="monospace", fontsize=10];',
                      '  edge [arrowsize=0.6];']
        self.edges: list[str] = []  # drawn at top level: an edge inside a cluster pulls its ends in
        self.source: dict[Value, str] = {}
        self.names: dict[Value, str] = {}  # region values drawn under their outer IR names
        self.used: set[str] = set()
        self.count = 0
        self.fused = 0

    def node(self, label: str, style: str, indent: str = "  ") -> str:
        nid = f"n{self.count}"
        self.count += 1
        self.used.add(style)
        self.lines.append(f"{indent}{nid} [label={_quote(label)}, {_STYLE[style]}];")
        return nid

    def edge(self, src: str, dst: str) -> None:
        self.edges.append(f"  {src} -> {dst};")

    def edges_into(self, nid: str, node: Node) -> None:
        """One edge per producing box, however many of its values the node reads (a large
        graph's regions pass each other dozens of values)."""
        for src in dict.fromkeys(self.source[v] for v in node.input_values() if v in self.source):
            self.edge(src, nid)

    def graph_nodes(self, graph: Graph, indent: str, max_body_nodes: int) -> None:
        for node in graph.nodes:
            if node.body is not None:
                self.fused_region(node, indent, max_body_nodes)
            else:
                nid = self.node(f"{_node_text(node, self.names)}\n{_types(node.outputs)}", "op", indent)
                self.edges_into(nid, node)
                for o in node.outputs:
                    self.source[o] = nid

    def fused_region(self, node: Node, indent: str, max_body_nodes: int) -> None:
        """A region of more than `max_body_nodes` ops is one box listing its ops; a smaller
        one is a cluster around its body's ops, fed by the producers of the region's
        operands and feeding the users of its results, with values named as outside."""
        body = node.body
        assert body is not None  # called for fusion regions, which have a body
        k = self.fused
        self.fused += 1
        ops = body.count_nodes()
        title = f"fused #{k}: {ops} ops -> one kernel"
        outer = _value_list(["%" + self.names.get(o, o.name) for o in node.outputs])
        if len(body.nodes) > max_body_nodes:
            tally = Counter(n.op for n in body.nodes)
            summary = ", ".join(f"{op} x{c}" for op, c in tally.most_common(6))
            label = f"{title}\n{outer}\n{summary}{', ...' if len(tally) > 6 else ''}\n{_types(node.outputs)}"
            nid = self.node(label, "summary", indent)
            self.edges_into(nid, node)
            for o in node.outputs:
                self.source[o] = nid
            return
        self.used.add("summary")
        self.lines.append(f"{indent}subgraph cluster_fused{k} {{")
        inner = indent + "  "
        # the title goes below the body: operands enter from above and would cross it
        self.lines.append(f"{inner}{_FUSED_CLUSTER}; labeljust=l; labelloc=b; margin=14;")
        self.lines.append(f"{inner}label={_quote(title)};")
        for param, operand in zip(body.inputs, node.inputs):
            if isinstance(operand, Value):
                self.names[param] = self.names.get(operand, operand.name)
                if operand in self.source:
                    self.source[param] = self.source[operand]
        produced = {o for n in body.nodes for o in n.outputs}
        for o, y in zip(node.outputs, body.outputs):
            if isinstance(y, Value) and y in produced:
                self.names[y] = self.names.get(o, o.name)
        self.graph_nodes(body, inner, max_body_nodes)
        for o, y in zip(node.outputs, body.outputs):
            if isinstance(y, Value) and y in self.source:
                self.source[o] = self.source[y]
        self.lines.append(f"{indent}}}")

    def legend(self) -> list[str]:
        """A small cluster naming the colours this picture uses."""
        rows = [(style, text) for style, text in _LEGEND if style in self.used]
        if not rows:
            return []
        lines = ["  subgraph cluster_legend {", '    label="legend"; labeljust=l; style="rounded"; color="grey70";']
        previous = None
        for k, (style, text) in enumerate(rows):
            lines.append(f"    legend{k} [label={_quote(text)}, {_STYLE[style]}, fontsize=9];")
            if previous is not None:
                lines.append(f"    {previous} -> legend{k} [style=invis];")
            previous = f"legend{k}"
        lines.append("  }")
        return lines

    def text(self) -> str:
        return "\n".join(self.lines + self.legend() + self.edges + ["}"]) + "\n"


def _value_list(names: Sequence[str], most: int = 4) -> str:
    """'%a, %b' or, for many, '%a, %b, ... %z (16 values)'."""
    if len(names) <= most:
        return ", ".join(names)
    return f"{', '.join(names[:2])}, ... {names[-1]} ({len(names)} values)"


def _types(values: Sequence[Value]) -> str:
    """'f32[8], f32[]', with repeats counted: 'f32[] x16'."""
    counts = Counter(format_type(v.type) for v in values)
    return ", ".join(t if c == 1 else f"{t} x{c}" for t, c in counts.items())


def graph_to_dot(graph: Graph, name: str | None = None, max_body_nodes: int = MAX_BODY_NODES) -> str:
    """DOT text of one graph: inputs, ops, fused regions as clusters, outputs."""
    dot = _Dot(name or graph.name)
    _draw_half(dot, graph, "  ", max_body_nodes, seeds=0)
    for k, v in enumerate(graph.outputs):
        if isinstance(v, Value) and v in dot.source:
            out = dot.node(f"output {k}\n{format_type(v.type)}", "output")
            dot.edge(dot.source[v], out)
    return dot.text()


def _draw_half(dot: _Dot, graph: Graph, indent: str, max_body_nodes: int, seeds: int,
               saved_sources: Sequence[str] = ()) -> None:
    """Inputs then nodes of one graph. The first len(saved_sources) inputs are values saved
    by the forward (drawn there); the last `seeds` inputs are output gradients."""
    n_saved = len(saved_sources)
    for k, v in enumerate(graph.inputs):
        if k < n_saved:
            dot.source[v] = saved_sources[k]
        else:
            is_seed = k >= len(graph.inputs) - seeds
            dot.source[v] = dot.node(f"%{v.name}\n{format_type(v.type)}", "seed" if is_seed else "input", indent)
    dot.graph_nodes(graph, indent, max_body_nodes)


def split_to_dot(forward: Graph, backward: Graph, n_saved: int, name: str | None = None,
                 max_body_nodes: int = MAX_BODY_NODES, grad_names: Sequence[str] = ()) -> str:
    """DOT text of a forward/backward pair: the forward's last `n_saved` outputs are the
    values it saves for the backward, whose first `n_saved` inputs they become.
    `grad_names` names the input each backward output is the gradient of."""
    dot = _Dot(name or forward.name)
    user_outputs = forward.outputs[:len(forward.outputs) - n_saved]
    saved = forward.outputs[len(forward.outputs) - n_saved:]
    dot.lines.append("  subgraph cluster_forward {")
    dot.lines.append(f"    {_HALF_CLUSTER}; label={_quote('forward')};")
    _draw_half(dot, forward, "    ", max_body_nodes, seeds=0)
    for k, v in enumerate(user_outputs):
        if isinstance(v, Value) and v in dot.source:
            out = dot.node(f"output {k}\n{format_type(v.type)}", "output", "    ")
            dot.edge(dot.source[v], out)
    dot.lines.append("  }")
    saved_ids = []
    for v in saved:
        sid = dot.node(f"saved %{v.name}\n{format_type(v.type)}\n{_nbytes(v)} bytes", "saved")
        if v in dot.source:
            dot.edge(dot.source[v], sid)
        saved_ids.append(sid)
    dot.lines.append("  subgraph cluster_backward {")
    dot.lines.append(f"    {_HALF_CLUSTER}; label={_quote('backward')};")
    seeds = len(backward.inputs) - n_saved
    _draw_half(dot, backward, "    ", max_body_nodes, seeds=seeds, saved_sources=saved_ids)
    for k, v in enumerate(backward.outputs):
        if isinstance(v, Value) and v in dot.source:
            of = f"%{grad_names[k]}" if k < len(grad_names) else str(k)
            out = dot.node(f"gradient of {of}\n{format_type(v.type)}", "output", "    ")
            dot.edge(dot.source[v], out)
    dot.lines.append("  }")
    return dot.text()


# -- what static.compile runs for a function ------------------------------------------------------
def autograd_graphs(fn: Callable, *args) -> AutogradGraphs:
    """Compile `fn` and return the forward and backward graphs for these arguments."""
    from static import compile as static_compile  # noqa: PLC0415

    return static_compile(fn).autograd_graphs(*args)


def to_dot(fn: Callable, *args, max_body_nodes: int = MAX_BODY_NODES) -> str:
    """DOT text of what static.compile runs for fn(*args): the forward and, when an argument
    requires grad, the backward, with the values saved between them."""
    graphs = autograd_graphs(fn, *args)
    name = getattr(fn, "__name__", "f")
    if graphs.backward is None:
        return graph_to_dot(graphs.forward, name, max_body_nodes)
    return split_to_dot(graphs.forward, graphs.backward, graphs.n_saved, name, max_body_nodes, graphs.grad_names)


# -- rendering ----------------------------------------------------------------------------------
@dataclass
class Rendered:
    path: Path  # what was written
    rendered: bool  # False: DOT text was written because Graphviz is missing
    message: str


def find_dot() -> str | None:
    """The Graphviz `dot` executable, or None."""
    return shutil.which("dot")


def render(dot_text: str, path: str | Path) -> Rendered:
    """Write `dot_text` to `path`: as is for .dot, through Graphviz for .svg/.png/.pdf.
    Without Graphviz, the DOT text goes next to `path` (suffix .dot) and the message says
    how to render it later. Raises ValueError for another suffix or a Graphviz failure."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot write {suffix or 'a file without suffix'}: use one of {', '.join(FORMATS)}")
    if suffix == ".dot":
        path.write_text(dot_text, encoding="utf-8")
        return Rendered(path, True, f"wrote {path}")
    exe = find_dot()
    if exe is None:
        dot_path = path.with_suffix(".dot")
        dot_path.write_text(dot_text, encoding="utf-8")
        return Rendered(dot_path, False,
                        f"Graphviz 'dot' is not installed, so wrote {dot_path} instead of {path}; render it with "
                        f"`dot -T{suffix[1:]} {dot_path} -o {path}` (Graphviz: apt-get install graphviz, "
                        "brew install graphviz, or conda install graphviz)")
    proc = subprocess.run([exe, f"-T{suffix[1:]}", "-o", str(path)], input=dot_text.encode("utf-8"),
                          capture_output=True, timeout=120, check=False)
    if proc.returncode != 0:
        first = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[0]
        raise ValueError(f"Graphviz failed to render {path}: {first}")
    return Rendered(path, True, f"wrote {path}")
