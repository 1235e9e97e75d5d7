"""eager.viz.to_dot: valid DOT (checked structurally, and by Graphviz when installed) with
the graph's grad_fn nodes, leaves, saved-tensor shapes and edges."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import eager
from eager import nn
from eager.viz import to_dot

_NODE = re.compile(r'^\s*(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$')
_EDGE = re.compile(r"^\s*(\w+) -> (\w+)( \[.*\])?;$")


def parse(dot: str) -> tuple[dict[str, str], list[tuple[str, str]], dict[str, str]]:
    """(labels by node id, edges, attributes by node id); fails on any line it cannot read."""
    lines = dot.strip().split("\n")
    assert re.match(r'^digraph "[^"]*" \{$', lines[0]), lines[0]
    assert lines[-1] == "}"
    depth = 0
    for ch in re.sub(r'"(?:[^"\\]|\\.)*"', '""', dot):  # braces outside quoted strings
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    labels, edges, attrs = {}, [], {}
    for line in lines[1:-1]:
        if re.match(r"^\s*(graph|node) \[.*\];$", line):
            continue
        node, edge = _NODE.match(line), _EDGE.match(line)
        if node:
            labels[node.group(1)] = node.group(2).replace("\\n", "\n")
            attrs[node.group(1)] = node.group(3)
        elif edge:
            edges.append((edge.group(1), edge.group(2)))
        else:
            raise AssertionError(f"not a node or edge statement: {line!r}")
    for a, b in edges:
        assert a in labels and b in labels, f"edge {a} -> {b} uses an undeclared node"
    return labels, edges, attrs


def _by_label(labels: dict[str, str], text: str) -> list[str]:
    return [nid for nid, label in labels.items() if label.split("\n")[0] == text]


def test_seed_graph_has_every_node_leaf_and_edge():
    a = eager.tensor([2.0, 3.0], requires_grad=True)
    w1 = eager.tensor([1.0, 2.0], requires_grad=True)
    w2 = eager.tensor([3.0, 4.0], requires_grad=True)
    d = w1 * a + w2 * a
    loss = (10 - d).sum()
    labels, edges, _ = parse(to_dot(loss, {"a": a, "w1": w1, "w2": w2}))
    names = sorted(label.split("\n")[0] for label in labels.values())
    for expected in ("SumBackward0", "RsubBackward1", "AddBackward0", "MulBackward0", "a", "w1", "w2"):
        assert expected in names, (expected, names)
    assert len(_by_label(labels, "MulBackward0")) == 2
    assert len(_by_label(labels, "AccumulateGrad")) == 3  # one per leaf, shared by both uses of a
    (acc_a,) = [dst for src, dst in edges if src == _by_label(labels, "a")[0]]
    assert labels[acc_a] == "AccumulateGrad"
    assert sum(1 for src, _ in edges if src == acc_a) == 2  # a feeds both multiplications
    assert labels[_by_label(labels, "a")[0]] == "a\n(2,)"
    (add,) = _by_label(labels, "AddBackward0")
    muls = set(_by_label(labels, "MulBackward0"))
    assert {src for src, dst in edges if dst == add} == muls


def test_saved_tensor_shapes_are_shown_until_backward_frees_them():
    x = eager.randn(4, 3, requires_grad=True)
    w = eager.randn(3, 5, requires_grad=True)
    y = (x @ w).tanh().sum()
    labels, edges, attrs = parse(to_dot(y))
    saved = {label for nid, label in labels.items() if "orange" in attrs[nid]}
    assert "input 0\n(4, 3)" in saved and "input 1\n(3, 5)" in saved  # matmul saves both operands
    assert "result\n(4, 5)" in saved  # tanh saves its output
    (tanh,) = _by_label(labels, "TanhBackward0")
    assert any(dst == tanh and labels[src] == "result\n(4, 5)" for src, dst in edges)
    y.backward()
    labels, _, attrs = parse(to_dot(y))
    assert not any("orange" in a for a in attrs.values())
    assert _by_label(labels, "TanhBackward0")  # the nodes themselves are still drawn


def test_show_saved_false_and_the_root_box():
    x = eager.randn(3, requires_grad=True)
    y = x.exp()
    labels, edges, attrs = parse(to_dot(y, show_saved=False))
    assert not any("orange" in a for a in attrs.values())
    (root,) = [nid for nid, a in attrs.items() if "darkolivegreen1" in a]
    assert labels[root] == "(3,)"
    assert edges.count((_by_label(labels, "ExpBackward0")[0], root)) == 1


def test_several_roots_and_a_model():
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    out = model(eager.randn(5, 2))
    labels, _, attrs = parse(to_dot([out, out.sum()], dict(model.named_parameters())))
    roots = [labels[nid] for nid, a in attrs.items() if "darkolivegreen1" in a]
    assert sorted(roots) == ["output 0\n(5, 1)", "output 1\n()"]
    leaves = sorted(labels[nid] for nid, a in attrs.items() if "lightblue" in a)
    assert leaves == ["0.bias\n(3,)", "0.weight\n(3, 2)", "2.bias\n(1,)", "2.weight\n(1, 3)"]
    assert _by_label(labels, "ReluBackward0")


def test_custom_function_nodes_and_quoting():
    class Twice(eager.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = eager.ones(2, requires_grad=True)
    labels, _, _ = parse(to_dot(Twice.apply(x), {'x "quoted" \\ name': x}, name="my graph"))
    assert _by_label(labels, "TwiceBackward")
    assert 'x \\"quoted\\" \\\\ name\n(2,)' in labels.values()


def test_a_leaf_alone_and_a_constant():
    x = eager.ones(2, requires_grad=True)
    labels, edges, _ = parse(to_dot(x))
    assert list(labels.values()) == ["(2,)"] and edges == []
    labels, edges, _ = parse(to_dot(eager.ones(3)))
    assert len(labels) == 1 and edges == []


def test_graphviz_accepts_the_output():
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("Graphviz's dot is not installed; the structural checks above still ran")
    x = eager.randn(3, requires_grad=True)
    text = to_dot((x.sin() * x).sum())
    result = subprocess.run([dot, "-Tsvg"], input=text, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert "<svg" in result.stdout
