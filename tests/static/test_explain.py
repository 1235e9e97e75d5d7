"""Looking inside a compiled function: explain() shows the IR after each stage and how it
runs, ir() returns the final Graph, source() the generated code (empty when interpreted)."""
from __future__ import annotations

import pytest

import eager
import static


def loss(x, w):
    return (eager.tanh(x * x) * w).sum()


def _sections(text):
    return [line for line in text.splitlines() if line.startswith("== ")]


def test_explain_shows_traced_and_verified_graphs_and_how_it_executes():
    f = static.compile(loss)
    x, w = eager.ones(4), eager.ones(4)
    text = f.explain(x, w)
    headers = _sections(text)
    assert headers[0] == "== summary ==" and headers[1] == "== traced ==" and headers[2] == "== verified =="
    assert any(h.startswith("== execution ==") for h in headers)
    traced = text.split("== traced ==\n", 1)[1].split("\n\n", 1)[0]
    assert traced == str(static.trace(loss, x, w))  # the traced stage is the trace, verbatim
    assert "func @loss(%x: f32[4], %w: f32[4]) -> f32[]" in text
    assert "tanh" in text
    assert len(f._cache) == 1  # explaining compiled the signature; calling it now reuses that
    f(x, w)
    assert len(f._cache) == 1


def test_explain_of_the_interpreter_backend_says_so():
    text = static.compile(loss, backend="interpret").explain(eager.ones(4), eager.ones(4))
    assert "interpret" in text.split("== execution ==", 1)[1]


def test_explain_shows_the_joint_graph_when_inputs_require_grad():
    f = static.compile(loss)
    x, w = eager.ones(4, requires_grad=True), eager.ones(4)
    text = f.explain(x, w)
    assert "joint (forward + backward)" in text
    assert "grad_out0" in text  # the backward's seed is an input of the joint graph
    assert "CompiledFunctionBackward" in text
    no_grad_text = f.explain(eager.ones(4), eager.ones(4))
    assert "not built" in no_grad_text


def test_ir_returns_the_final_graph_which_prints_and_parses_back():
    f = static.compile(loss)
    g = f.ir(eager.ones(4), eager.ones(4))
    assert isinstance(g, static.Graph)
    static.verify(g)
    assert str(static.parse_ir(str(g))) == str(g)


def test_source_is_text_and_empty_for_the_interpreter():
    assert static.compile(loss, backend="interpret").source(eager.ones(4), eager.ones(4)) == ""
    assert isinstance(static.compile(loss).source(eager.ones(4), eager.ones(4)), str)


def test_explain_of_a_grad_transform_shows_the_backward_in_the_traced_graph():
    text = static.grad(loss, argnums=(0, 1)).explain(eager.ones(4), eager.ones(4))
    traced = text.split("== traced ==\n", 1)[1].split("\n\n", 1)[0]
    assert "func @grad_loss" in traced and "full_like" in traced  # the seed of the backward


SEEN = 0


def test_nothing_to_explain_for_a_function_that_runs_eagerly():
    def branchy(x):
        global SEEN  # a global declaration: not split at its graph break (static.graph_breaks)
        SEEN += 1
        return x if x.sum() > 0 else -x

    f = static.compile(branchy, fallback="eager")
    with pytest.warns(RuntimeWarning):
        with pytest.raises(RuntimeError, match="runs eagerly"):
            f.explain(eager.ones(2))


def test_explain_of_a_function_split_at_a_graph_break_lists_the_break():
    def branchy(x):
        return x if x.sum() > 0 else -x

    text = static.compile(branchy, fallback="eager").explain(eager.ones(2))
    assert "== graph breaks ==" in text and "x if x.sum() > 0 else -x" in text


def test_explain_of_a_trace_error_raises_it():
    def branchy(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(static.TraceError):
        static.compile(branchy).explain(eager.ones(2))


def test_the_first_call_with_grad_traces_once_and_builds_only_what_runs(monkeypatch):
    from static import trace_cache as entry_module  # where entries build their executables

    entry_module.clear_memory()
    calls, built = [], []
    real_build = entry_module.build_executable

    def counting_build(graph, backend, fast_math=False):
        built.append(graph.name)
        return real_build(graph, backend, fast_math)

    monkeypatch.setattr(entry_module, "build_executable", counting_build)

    def counted(x, w):
        calls.append(1)
        return (eager.tanh(x * x) * w).sum()

    f = static.compile(counted)
    out = f(eager.ones(4, requires_grad=True), eager.ones(4))
    out.backward()
    assert len(calls) == 1  # one trace records forward and backward together
    assert len(built) == 2  # the forward and the backward that run; no forward-only module


def test_source_and_explain_show_the_forward_and_backward_that_run():
    f = static.compile(loss)
    x, w = eager.ones(4, requires_grad=True), eager.ones(4)
    graphs = f.autograd_graphs(x, w)
    source = f.source(x, w)
    assert source.count("def ") >= 2 and graphs.backward is not None
    text = f.explain(x, w)
    assert "== forward (returns" in text and "== backward ==" in text
    assert text.split("== generated source ==\n", 1)[1] == source
    assert str(f.ir(x, w)) == str(graphs.forward)  # ir() is the forward that runs at call time
