"""`eager.compiler` / `eager._dynamo`: mark_dynamic, mark_static, reset, disable (decorator and
context), set_stance, allow_in_graph, is_compiling, assume_constant_result, config and explain,
each working on eager.compile's functions or refusing with a clear error."""
import numpy as np
import pytest

import eager as torch
import eager.nn as nn


@pytest.fixture(autouse=True)
def _fresh_config():
    saved = (torch._dynamo.config.cache_size_limit, torch._dynamo.config.automatic_dynamic_shapes,
             torch._dynamo.config.assume_static_by_default)
    yield
    torch._dynamo.config.cache_size_limit = saved[0]
    torch._dynamo.config.automatic_dynamic_shapes = saved[1]
    torch._dynamo.config.assume_static_by_default = saved[2]


def test_mark_dynamic_makes_the_first_trace_symbolic():
    f = torch.compile(lambda x: (x * 2).sum(0), backend="numpy")
    x = torch.randn(5, 3)
    torch._dynamo.mark_dynamic(x, 0)
    f(x)
    for n in (2, 9, 4):
        y = torch.randn(n, 3)
        np.testing.assert_allclose(f(y).numpy(), (y * 2).sum(0).numpy(), rtol=1e-6)
    assert len(f.compile_seconds) == 1
    assert "s0" in str(f.ir(torch.randn(6, 3)))


def test_mark_dynamic_checks_its_dimension():
    with pytest.raises(IndexError, match="dimension 2 out of range.*shape \\(5, 3\\)"):
        torch.compiler.mark_dynamic(torch.randn(5, 3), 2)
    with pytest.raises(TypeError, match="expected an eager Tensor"):
        torch.compiler.mark_dynamic(np.ones(3), 0)


def test_mark_static_keeps_a_changing_dimension_a_number():
    f = torch.compile(lambda x: x + 1, backend="numpy")
    for n in (2, 3, 4):
        x = torch.randn(n)
        torch._dynamo.mark_static(x, 0)
        f(x)
    assert len(f.compile_seconds) == 3


def test_config_chooses_the_default_dynamic_mode_and_the_limit():
    torch._dynamo.config.automatic_dynamic_shapes = False
    f = torch.compile(lambda x: x + 1, backend="numpy")
    for n in (2, 3, 4):
        f(torch.randn(n))
    assert len(f.compile_seconds) == 3
    torch._dynamo.config.automatic_dynamic_shapes = True
    torch._dynamo.config.assume_static_by_default = False
    g = torch.compile(lambda x: x + 1, backend="numpy")
    for n in (2, 3, 4):
        g(torch.randn(n))
    assert len(g.compile_seconds) == 1
    torch._dynamo.config.cache_size_limit = 3
    assert torch.compile(lambda x: x)._graphmode_traceable is not None
    assert torch.compile(lambda x: x).max_retraces == 2


def test_config_refuses_unknown_names_and_patches():
    with pytest.raises(AttributeError, match="no setting 'cache_size_limt'"):
        torch._dynamo.config.cache_size_limt = 4
    with pytest.raises(ValueError, match="positive int"):
        torch._dynamo.config.cache_size_limit = 0
    with torch._dynamo.config.patch(cache_size_limit=5):
        assert torch._dynamo.config.recompile_limit == 5
    assert torch._dynamo.config.cache_size_limit != 5 or torch._dynamo.config.recompile_limit == 5
    torch._dynamo.config.suppress_errors = True  # accepted names
    torch._dynamo.config.capture_scalar_outputs = True
    torch._dynamo.config.optimize_ddp = False
    torch._dynamo.config.suppress_errors = False
    torch._dynamo.config.capture_scalar_outputs = False
    torch._dynamo.config.optimize_ddp = True


def test_reset_forgets_every_compiled_signature():
    f = torch.compile(lambda x: x * 3, backend="numpy")
    f(torch.ones(3))
    assert len(f.compile_seconds) == 1
    torch._dynamo.reset()
    assert not f._cache and f.compile_seconds == []
    np.testing.assert_allclose(f(torch.ones(3)).numpy(), [3.0] * 3)
    assert len(f.compile_seconds) == 1
    torch.compiler.reset()  # the same, under torch.compiler


def test_disable_as_a_decorator_and_as_a_context():
    calls = []

    @torch.compiler.disable
    def eager_only(x):
        calls.append(type(x).__name__)
        return x + 1

    assert torch.compile(eager_only) is eager_only
    eager_only(torch.ones(2))
    assert calls == ["Tensor"]

    seen = []

    def f(x):
        seen.append(type(x).__name__)
        return x * 2

    cf = torch.compile(f, backend="numpy")
    cf(torch.ones(2))
    with torch._dynamo.disable():
        cf(torch.ones(2))
    cf(torch.ones(2))
    # compiled calls replay the append of the trace (static.side_effects); eager ones make theirs
    assert seen == ["Tracer", "Tensor", "Tracer"] and len(cf.compile_seconds) == 1


def test_set_stance_force_eager_and_fail_on_recompile():
    seen = []

    def f(x):
        seen.append(type(x).__name__)
        return x * 2

    cf = torch.compile(f, backend="numpy", dynamic=False)
    cf(torch.ones(2))
    with torch.compiler.set_stance("force_eager"):
        cf(torch.ones(2))
    assert seen == ["Tracer", "Tensor"]
    with torch.compiler.set_stance("fail_on_recompile"):
        cf(torch.ones(2))  # compiled before: fine
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            cf(torch.ones(3))
    with torch.compiler.set_stance("eager_on_recompile"):
        np.testing.assert_allclose(cf(torch.ones(4)).numpy(), [2.0] * 4)
    assert seen[-1] == "Tensor"
    with pytest.raises(ValueError, match="unknown stance"):
        torch.compiler.set_stance("fast")


def test_is_compiling_allow_in_graph_and_assume_constant_result():
    flags = []

    def f(x):
        flags.append(torch.compiler.is_compiling())
        return x + 1

    torch.compile(f, backend="numpy")(torch.ones(2))
    f(torch.ones(2))
    assert flags == [True, False]

    def helper(x):
        return x * 5

    assert torch._dynamo.allow_in_graph(helper) is helper
    three = torch._dynamo.assume_constant_result(lambda: 3)
    cf = torch.compile(lambda x: helper(x) + three(), backend="numpy")
    np.testing.assert_allclose(cf(torch.ones(2)).numpy(), [8.0, 8.0])
    with pytest.raises(TypeError, match="expected a function"):
        torch._dynamo.allow_in_graph(3)


def test_explain_counts_graphs_and_shows_symbolic_dimensions():
    model = nn.Linear(4, 2)
    out = torch._dynamo.explain(model)(torch.randn(3, 4))
    assert out.graph_count == 1 and out.graph_break_count == 0 and out.op_count >= 2
    assert "Graph Count: 1" in str(out)


def test_a_call_of_a_disabled_function_while_compiling_is_a_graph_break_without_fullgraph():
    @torch.compiler.disable
    def log(x):
        return x

    def f(x):
        return log(x * 2) + 1

    cf = torch.compile(f, backend="numpy")
    np.testing.assert_allclose(cf(torch.ones(2)).numpy(), [3.0, 3.0])
    with pytest.raises(Exception, match="disable"):
        torch.compile(f, backend="numpy", fullgraph=True)(torch.ones(2))


def test_compile_counter_counts_graphs_across_sizes_and_breaks():
    cnt = torch._dynamo.testing.CompileCounter()

    def f(x):
        return (x * 2).sum(0)

    cf = torch.compile(f, backend=cnt)
    for n in (3, 4, 5, 6, 9):
        np.testing.assert_allclose(cf(torch.ones(n, 2)).numpy(), [2.0 * n] * 2)
    assert cnt.frame_count == 2 and cnt.op_count >= 1  # a static trace, then one symbolic for every size

    cnt2 = torch._dynamo.testing.CompileCounter()

    def g(x):
        y = x + 1
        if y.sum() > 0:
            return y * 2
        return y * 3

    cg = torch.compile(g, backend=cnt2)
    cg(torch.ones(3))
    cg(-torch.ones(3) * 5)
    assert cnt2.frame_count == 3  # the piece before the branch, and one for each side
    cnt2.clear()
    cg(torch.ones(3))
    assert cnt2.frame_count == 0
    with pytest.raises(TypeError, match="CompileCounter is accepted"):
        torch.compile(g, backend=lambda gm, inputs: gm)


def test_dynamic_true_on_a_module_keeps_the_weights_sizes_numbers():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    cm = torch.compile(m, dynamic=True)
    with torch.no_grad():
        for b in (3, 7, 11, 4):
            x = torch.randn(b, 5)
            np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
    assert len(cm.compile_seconds) == 1  # the batch a symbol; the features specialized (the weight's 5)


def test_error_on_recompile_raises_at_a_new_trace():
    f = torch.compile(lambda x: x + 1, backend="numpy", dynamic=False)
    f(torch.ones(2))
    with torch._dynamo.config.patch(error_on_recompile=True):
        f(torch.ones(2))
        with pytest.raises(RuntimeError, match="new trace"):
            f(torch.ones(3))
    f(torch.ones(3))  # restored: traces
