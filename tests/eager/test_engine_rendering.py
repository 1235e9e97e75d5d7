"""The backward engine runs most nodes inline (eager.autograd.engine's rendered loop) and the
others through `Node.apply`/`Node.release`: both are rendered from the same snippets in
eager.autograd.graph, so they cannot drift apart. These tests check the text (each snippet in
both renderings, no hand-written copy left in the modules) and the behaviour (the same
gradients, releases and errors on both paths)."""
from __future__ import annotations

import inspect
import linecache
import traceback
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import eager
from eager import _fast_path
from eager._grad_mode import STATE
from eager.autograd import engine, graph

ROOT = Path(__file__).resolve().parents[2]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _contains_block(haystack: str, block: str) -> bool:
    """Whether the lines of `block` occur, in order and adjacent, among `haystack`'s (indentation ignored)."""
    hay, needle = _lines(haystack), _lines(block)
    return any(hay[i:i + len(needle)] == needle for i in range(len(hay) - len(needle) + 1))


@pytest.mark.parametrize("snippet", ["VJP", "FIT", "RELEASE"])
def test_each_snippet_is_rendered_into_node_methods_and_the_engine(snippet):
    text = getattr(graph, snippet)
    method = "Node.release" if snippet == "RELEASE" else "Node.apply"
    as_method = text.format(node="self", grads="grads", edges="edges")
    as_engine = text.format(node="node", grads="grads", edges="edges")
    assert _contains_block(_fast_path.SOURCES[method], as_method)
    assert _contains_block(_fast_path.SOURCES["run_backward"], as_engine)
    assert _fast_path.SOURCES[method] == graph.render_method(method.split(".")[1])
    assert _fast_path.SOURCES["run_backward"] == engine.render_engine()


def test_the_rendered_functions_are_the_ones_that_run_and_are_readable():
    for fn, label in ((graph.Node.apply, "Node.apply"), (graph.Node.release, "Node.release"),
                      (engine.run_backward, "run_backward"), (eager.autograd.run_backward, "run_backward")):
        filename = fn.__code__.co_filename
        assert filename.endswith(f"<rendered {label}>")
        assert inspect.getsource(fn) == _fast_path.SOURCES[label]
        assert "".join(linecache.getlines(filename)) == _fast_path.SOURCES[label]
    assert graph.Node.apply.__qualname__ == "Node.apply"
    assert not hasattr(graph, "apply") and not hasattr(graph, "release")  # (methods only)


def test_no_hand_written_copy_of_the_node_steps_is_left():
    """The steps live in the snippets only: a second spelling in either module is a copy."""
    graph_src = (ROOT / "eager/autograd/graph.py").read_text()
    engine_src = (ROOT / "eager/autograd/engine.py").read_text()
    for needle, snippet in (("fit_grad(", graph.FIT), ("= _NOTHING_SAVED", graph.RELEASE),
                            ("._saved_out = None", graph.RELEASE), ("vjp(", graph.VJP)):
        assert graph_src.count(needle) == snippet.count(needle), needle
        assert needle not in engine_src, needle


def _graph_cases():
    rng = np.random.default_rng(0)

    def leaf(*shape, dtype=np.float64):
        return eager.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)

    def broadcast():  # fit_grad sums the broadcast operand's gradient down
        a, b = leaf(3, 4), leaf(4)
        return [a, b], lambda: (eager.tanh(a * b) + b * 2.0).sum()

    def mixed_dtypes():  # float32 operand promoted into float64: its gradient cast back
        a, b = leaf(5, dtype=np.float32), leaf(5)
        return [a, b], lambda: (eager.exp(a * b) * b).sum()

    def multi_output():  # split: a multi-output VJP (grads as a tuple), some outputs unused
        a = leaf(6, 2)
        return [a], lambda: sum(p.sin().sum() for p in eager.split(a, 2)[:2])

    def shared_input():  # gradients meeting at one slot (the engine's sum)
        a, w = leaf(4, 3), leaf(3, 2)
        return [a, w], lambda: ((a @ w).sigmoid() + (a @ w) * a.sum()).mean()

    def saved_output():  # ops that save their output (release drops _saved_out)
        a = leaf(7)
        return [a], lambda: (eager.exp(a).sqrt() * eager.sigmoid(a)).sum()

    return {"broadcast": broadcast, "mixed_dtypes": mixed_dtypes, "multi_output": multi_output,
            "shared_input": shared_input, "saved_output": saved_output}


def _nodes(root):
    seen, stack, out = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        stack.extend(n for n, _ in node.next_functions)
    return out


@pytest.mark.parametrize("case", sorted(_graph_cases()))
def test_inline_path_and_node_apply_agree(case):
    """The same graph backpropagated inline (plain mode) and through Node.apply (anomaly mode
    routes every node through the general path): equal gradients, the same nodes released,
    the same error on a second pass."""
    leaves, fwd = _graph_cases()[case]()
    results = {}
    for mode in ("inline", "apply"):
        for p in leaves:
            p.grad = None
        loss = fwd()
        nodes = [n for n in _nodes(loss.grad_fn) if isinstance(n, graph.Node)]
        assert any(n._saved for n in nodes)
        with eager.autograd.set_detect_anomaly(mode == "apply"):
            loss.backward()
        assert all(n._saved is graph._NOTHING_SAVED or not n._saved for n in nodes)
        assert all(n._saved_out is None for n in nodes)
        with pytest.raises(RuntimeError) as info:
            loss.backward()
        results[mode] = ([p.grad.numpy().copy() for p in leaves], [p.grad.dtype for p in leaves], str(info.value))
    (g_in, dt_in, err_in), (g_ap, dt_ap, err_ap) = results["inline"], results["apply"]
    assert dt_in == dt_ap
    for a, b in zip(g_in, g_ap):
        np.testing.assert_array_equal(a, b)
    assert err_in == err_ap == graph._FREED_MSG


def test_hooks_and_retain_grad_on_some_nodes_leave_the_others_inline():
    a = eager.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    h = eager.sin(a * 3.0)
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2.0)
    (h * h).sum().backward()
    expected_h = 2 * np.sin(np.array([0.5, -1.0, 2.0]) * 3.0)
    np.testing.assert_allclose(seen[0], expected_h)
    # (as PyTorch: retain_grad's hook runs after the tensor's hooks, and sees their result)
    np.testing.assert_allclose(h.grad.numpy(), 2 * expected_h)
    np.testing.assert_allclose(a.grad.numpy(), 2 * expected_h * np.cos(a.detach().numpy() * 3.0) * 3.0)


def _short_vjp_output(n_returned):
    """A tensor whose grad_fn's VJP returns `n_returned` gradients for its two operands."""
    x = eager.tensor(np.ones(2), requires_grad=True)
    y = eager.tensor(np.ones(2), requires_grad=True)
    op = SimpleNamespace(name="short", multi_output=False, save_output=False,
                         vjp=lambda ctx, g: [g] * n_returned)
    edges = ((x._accumulator(), 0), (y._accumulator(), 0))
    meta = [(x._data.shape, x._data.dtype), (y._data.shape, y._data.dtype)]
    node = graph.node_class("ShortBackward")(op, {}, edges, "ShortBackward", meta, {})
    node._out_meta = ((x._data.shape, x._data.dtype),)
    out = eager.Tensor._make(x._data * 2.0)
    out._requires_grad, out.grad_fn, out._output_nr = True, node, 0
    return out, x, y


@pytest.mark.parametrize("anomaly", [False, True])
def test_a_vjp_returning_too_few_gradients_fails_alike_on_both_paths(anomaly):
    out, _, _ = _short_vjp_output(1)
    with eager.autograd.set_detect_anomaly(anomaly), pytest.raises(RuntimeError) as info:
        out.backward(eager.ones(2))
    assert str(info.value) == "ShortBackward: the VJP of short returned 1 gradients for 2 operands"
    assert not graph.COMPACT_PASSES and STATE.enabled and not STATE.compact_broadcasts  # restored
    out, x, y = _short_vjp_output(3)  # extra gradients are dropped
    with eager.autograd.set_detect_anomaly(anomaly):
        out.backward(eager.ones(2))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])


def test_an_error_in_a_vjp_points_at_the_rendered_engine_line():
    out, _, _ = _short_vjp_output(1)
    with pytest.raises(RuntimeError) as info:
        out.backward(eager.ones(2))
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if "<rendered run_backward>" in f.filename]
    assert frames and "raise RuntimeError" in frames[-1].line


def test_backward_passes_running_are_counted_and_uncounted():
    """The hot path reads COMPACT_PASSES' truth: one entry per pass that records no graph."""
    a = eager.tensor(np.ones(3), requires_grad=True)
    counts = []
    a_sq = a * a
    a_sq.register_hook(lambda g: counts.append(len(graph.COMPACT_PASSES)))
    a_sq.sum().backward(retain_graph=True)
    b_sq = a * a
    b_sq.register_hook(lambda g: counts.append(len(graph.COMPACT_PASSES)))
    b_sq.sum().backward(create_graph=True)
    assert counts == [1, 0] and graph.COMPACT_PASSES == []


def test_a_leafs_first_gradient_is_its_own_array_and_later_ones_add_in_place():
    """AccumulateGrad's short branch (a fresh row-major array for a row-major leaf) stores
    without a copy only what no one else holds: never the caller's gradient."""
    x = eager.tensor(np.zeros(3), requires_grad=True)
    g = eager.tensor(np.array([1.0, 2.0, 3.0]))
    x.backward(g)  # the root is the leaf itself: its gradient is the caller's tensor
    assert not np.shares_memory(x.grad.numpy(), g.numpy())
    g.numpy()[:] = 0.0
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])
    first = x.grad
    (x * 2.0).sum().backward()  # a fresh gradient added into the same .grad
    assert x.grad is first
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0, 5.0])
    x.grad = None
    y = (x * 3.0).sum()
    y.backward()
    assert x.grad._base is None and x.grad.grad_fn is None and not x.grad.requires_grad
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_a_transposed_leaf_gets_a_gradient_laid_out_like_it():
    w = eager.tensor(np.arange(6.0).reshape(2, 3)).t().detach().requires_grad_()  # a (3, 2) column-major leaf
    (w * 2.0).sum().backward()
    assert w.grad.numpy().strides == w.detach().numpy().strides
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 2.0))
