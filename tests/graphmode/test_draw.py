"""graphmode.draw: the IR as Graphviz DOT (fused regions as clusters, saved values marked)
and rendering, with and without Graphviz installed."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import eager
import static
from graphmode import draw

FUSED_TEXT = """\
func @f(%x: f32[8], %w: f32[8]) -> f32[] {
  %2 = fused %x, %w : f32[] {
    ^body(%0: f32[8], %1: f32[8]):
    %3 = mul %0, %1 : f32[8]
    %4 = tanh %3 : f32[8]
    %5 = sum %4 {dims = none, keepdim = false} : f32[]
    yield %5
  }
  return %2
}"""


def check_dot(text: str) -> dict[str, str]:
    """Structural validity: one digraph, balanced braces outside strings, every edge between
    declared nodes. Returns {node id: label}. Graphviz itself checks it too when installed."""
    assert text.startswith("digraph "), text[:40]
    depth = 0
    for ch in re.sub(r'"(\\.|[^"\\])*"', '""', text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    labels = dict(re.findall(r'^\s*(n\d+) \[label="((?:\\.|[^"\\])*)"', text, re.M))
    for src, dst in re.findall(r"^\s*(n\d+) -> (n\d+)", text, re.M):
        assert src in labels and dst in labels, (src, dst)
    if shutil.which("dot"):
        proc = subprocess.run(["dot", "-Tsvg"], input=text.encode(), capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode()
    return labels


def gelu(x, w):
    y = 0.5 * x * (1 + eager.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    return (y * w).sum()


def leaves(n: int, *shapes) -> list:
    rng = np.random.default_rng(0)
    return [eager.from_numpy(rng.standard_normal(s).astype(np.float32)).requires_grad_() for s in shapes]


def test_graph_to_dot_draws_a_fused_region_as_a_cluster_around_its_ops():
    text = draw.graph_to_dot(static.parse_ir(FUSED_TEXT))
    labels = check_dot(text)
    assert "subgraph cluster_fused0" in text and "fused #0: 3 ops -> one kernel" in text
    # inside the region, values carry the outer IR's names: its parameters are %x and %w, its result %2
    assert any(label.startswith("%3 = mul %x, %w") for label in labels.values())
    assert any(label.startswith("%2 = sum %4") for label in labels.values())
    assert any(label.startswith("%x") for label in labels.values())
    assert any(label.startswith("output 0") for label in labels.values())
    # the region's operand feeds the body op that reads it: x -> mul
    ids = {label.split("\\n")[0]: nid for nid, label in labels.items()}
    assert f"{ids['%x']} -> {ids['%3 = mul %x, %w']};" in text
    legend = text[text.index("subgraph cluster_legend"):]
    assert '"input"' in legend and '"op"' in legend and '"output / gradient"' in legend
    assert "saved for backward" not in legend  # only the colours this picture uses


def test_collapsed_regions_keep_a_large_graph_to_one_box_per_kernel():
    text = draw.graph_to_dot(static.parse_ir(FUSED_TEXT), max_body_nodes=0)
    labels = check_dot(text)
    assert "cluster_fused" not in text
    (box,) = [label for label in labels.values() if label.startswith("fused #0")]
    assert "%2" in box and "mul x1" in box and "tanh x1" in box and "sum x1" in box


def test_to_dot_of_a_function_that_needs_gradients_shows_forward_backward_and_saved_values():
    x, w = leaves(0, (64,), (64,))
    text = draw.to_dot(gelu, x, w)
    labels = check_dot(text).values()
    assert "subgraph cluster_forward" in text and "subgraph cluster_backward" in text
    saved = [label for label in labels if label.startswith("saved %")]
    graphs = draw.autograd_graphs(gelu, x, w)
    assert graphs.backward is not None and len(saved) == graphs.n_saved >= 1
    assert 'fillcolor="orange"' in text
    assert {label.split("\\n")[0] for label in labels if label.startswith("gradient of")} == {
        "gradient of %" + n for n in graphs.grad_names}
    assert "cluster_fused" in text


def test_to_dot_without_gradients_draws_the_forward_graph_only():
    x, w = (t.detach() for t in leaves(0, (16,), (16,)))
    text = draw.to_dot(gelu, x, w)
    check_dot(text)
    assert "cluster_backward" not in text and "saved %" not in text and "output 0" in text


def test_a_large_fused_region_is_summarised_in_one_box():
    def chain(x):
        for _ in range(30):
            x = x * 1.0001 + 0.5 * eager.sin(x)
        return x

    text = draw.to_dot(chain, eager.tensor(0.5), max_body_nodes=5)
    labels = check_dot(text).values()
    summaries = [label for label in labels if label.startswith("fused #")]
    assert summaries and any("sin x" in label for label in summaries)


def test_render_writes_dot_text_as_is(tmp_path):
    result = draw.render("digraph g { }\n", tmp_path / "g.dot")
    assert result.rendered and result.path.read_text() == "digraph g { }\n"


def test_render_without_graphviz_writes_dot_and_says_how_to_render(tmp_path, monkeypatch):
    monkeypatch.setattr(draw, "find_dot", lambda: None)
    result = draw.render("digraph g { }\n", tmp_path / "g.svg")
    assert not result.rendered and result.path == tmp_path / "g.dot" and result.path.exists()
    assert not (tmp_path / "g.svg").exists()
    assert "dot -Tsvg" in result.message and "install" in result.message


def test_render_refuses_an_unknown_format(tmp_path):
    with pytest.raises(ValueError, match="use one of"):
        draw.render("digraph g { }\n", tmp_path / "g.bmpx")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_render_with_graphviz_writes_svg_and_png(tmp_path):
    x, w = leaves(0, (8,), (8,))
    text = draw.to_dot(gelu, x, w)
    svg = draw.render(text, tmp_path / "g.svg")
    assert svg.rendered and "<svg" in svg.path.read_text()
    png = draw.render(text, tmp_path / "g.png")
    assert png.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_900_op_graph_draws_one_box_per_kernel_and_one_edge_per_pair():
    def chain(x):
        for _ in range(100):
            x = x * 1.0001 + 0.5 * eager.sin(x)
        return x

    text = draw.to_dot(chain, eager.tensor(0.5, requires_grad=True), max_body_nodes=0)
    labels = check_dot(text)
    assert "cluster_fused" not in text and len(labels) < 60  # about 900 ops traced
    edges = [line.strip() for line in text.splitlines() if "->" in line and "invis" not in line]
    assert len(edges) == len(set(edges))  # regions pass each other many values: one edge each
    many = [label for label in labels.values() if "values)" in label]
    assert many and all(re.search(r"f32\[\] x\d+", label) for label in many)
