"""Graph breaks (static.graph_breaks): where a trace meets `.item()`, `bool()` of a tensor,
`.tolist()`, a boolean mask, `nonzero` or a function marked with disable(), the function runs
as compiled pieces around the statement, which runs in Python; an `if` on data runs compiled
on both sides; values and gradients equal eager's; fullgraph=True keeps the error; the log
channel and explain() list each break with its line and reason."""
import logging

import numpy as np
import pytest

import eager
import eager.nn as nn
import static
from static import graph_breaks

BACKENDS = ["numpy", "native"]


def _backend(name: str) -> str:
    if name == "native":
        from codegen import native_build  # noqa: PLC0415

        if not native_build.availability()[0]:
            pytest.skip("no C++ compiler")
    return name


def _pieces(compiled):
    state = compiled.__dict__["_graph_breaks"]
    out = []
    for split in state.splits.values():
        out += [p for p in (split.prefix, split.rest, *(split.branches or ())) if p is not None]
    return out


def _make_step(log):
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = eager.optim.Adam(model.parameters(), lr=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        log.append(loss.item())
        return loss

    return model, step


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_training_step_that_logs_item_keeps_its_step_compiled(backend):
    logged, ref_logged = [], []
    model, step = _make_step(logged)
    ref_model, ref_step = _make_step(ref_logged)
    compiled = eager.compile(step, backend=_backend(backend))
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = eager.tensor(rng.standard_normal((16, 6)).astype(np.float32))
        y = eager.tensor(rng.standard_normal((16, 1)).astype(np.float32))
        np.testing.assert_allclose(compiled(x, y).item(), ref_step(x, y).item(), rtol=1e-5)
    np.testing.assert_allclose(logged, ref_logged, rtol=1e-5)
    assert len(logged) == 5
    for p, q in zip(model.parameters(), ref_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)
    prefix = _pieces(compiled)[0]
    assert prefix.entries() and not prefix._eager_keys  # the step before the log line ran compiled
    assert "log.append(loss.item())" in graph_breaks.describe(compiled)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_data_dependent_branch_runs_compiled_on_both_sides_with_eagers_gradients(backend):
    def f(x, w):
        y = x @ w
        if y.sum() > 0:
            z = y.tanh() * 2
        else:
            z = y.sigmoid() - 1
        return (z * z).sum()

    compiled = eager.compile(f, backend=_backend(backend))
    w = eager.randn(3, 2, requires_grad=True)
    for sign in (1.0, -1.0, 1.0, -1.0):
        x = (sign * eager.ones(4, 3)).requires_grad_()
        out = compiled(x, w)
        out.backward()
        gx, gw = x.grad.numpy().copy(), w.grad.numpy().copy()
        x.grad = w.grad = None
        ref = f(x, w)
        ref.backward()
        np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
        np.testing.assert_allclose(gx, x.grad.numpy(), rtol=2e-4, atol=1e-6)  # native tanh: a few ulps
        np.testing.assert_allclose(gw, w.grad.numpy(), rtol=2e-4, atol=1e-6)
        w.grad = None
    pieces = _pieces(compiled)
    assert len(pieces) == 3 and all(p.entries() and not p._eager_keys for p in pieces)


def test_tolist_mask_and_nonzero_break_and_keep_eagers_values():
    def f(x):
        y = x * 2
        values = y.tolist()
        picked = y[y > 1]
        where = eager.nonzero(y > 3)
        return picked.sum() + len(values) + where.shape[0]

    compiled = eager.compile(f, backend="numpy")
    for n in (5, 5):
        x = eager.arange(n).float()
        np.testing.assert_allclose(compiled(x).item(), f(x).item())
    breaks, _ = graph_breaks.all_breaks(compiled)
    assert [b.statement for b in breaks] == ["values = y.tolist()", "picked = y[y > 1]",
                                             "where = eager.nonzero(y > 3)"]


def test_a_disabled_function_breaks_the_graph_around_its_call():
    seen = []

    @eager.compiler.disable
    def inspect_(t):
        seen.append(float(t.sum()))  # real data: runs eagerly
        return t

    def f(x):
        y = inspect_(x * 3)
        return y.exp().sum()

    compiled = eager.compile(f, backend="numpy")
    for _ in range(2):
        np.testing.assert_allclose(compiled(eager.ones(4)).item(), f(eager.ones(4)).item(), rtol=1e-6)
    assert seen == [12.0] * 4
    assert "marked with disable" in graph_breaks.describe(compiled)


def test_a_returned_item_and_an_early_return_in_the_breaking_statement():
    def f(x):
        y = (x * x).sum()
        return y.item()

    compiled = eager.compile(f, backend="numpy")
    assert compiled(eager.ones(3)) == 3.0 and compiled(eager.ones(3) * 2) == 12.0


def test_fullgraph_keeps_the_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(static.TraceError, match="bool"):
        eager.compile(f, fullgraph=True, backend="numpy")(eager.ones(2))


def test_the_log_channel_names_the_line_and_the_reason(caplog):
    def f(x):
        y = x + 1
        print_me = float(y.sum())
        return y * print_me

    compiled = eager.compile(f, backend="numpy")
    with caplog.at_level(logging.DEBUG, logger="graphmode.graph_breaks"):
        compiled(eager.ones(2))
    message = "\n".join(r.getMessage() for r in caplog.records if r.name == "graphmode.graph_breaks")
    assert "test_graph_breaks.py:" in message and "print_me = float(y.sum())" in message
    assert "graph break" in message
    np.testing.assert_allclose(compiled(eager.ones(2)).numpy(), [8.0, 8.0])
    np.testing.assert_allclose(compiled(eager.ones(2) * 2).numpy(), [18.0, 18.0])  # a new value: no stale constant
    assert "graph_breaks" in static.logs.NAMES


def test_explain_of_dynamo_counts_the_breaks():
    def f(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    out = eager._dynamo.explain(f)(eager.ones(3))
    assert out.graph_break_count == 1 and out.graph_count >= 2
    assert "bool" in out.break_reasons[0].reason


COUNT = 0


def test_a_function_that_cannot_be_split_runs_eagerly_with_the_warning():
    def f(x):
        global COUNT
        COUNT += 1
        return x * 2 if x.sum() > 0 else x

    compiled = eager.compile(f, backend="numpy")
    with pytest.warns(RuntimeWarning, match="cannot be traced"):
        np.testing.assert_allclose(compiled(eager.ones(2)).numpy(), [2.0, 2.0])
    assert "global or nonlocal" in graph_breaks.describe(compiled)


def _logging_step(order: str):
    eager.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = eager.optim.SGD(model.parameters(), lr=0.1)
    log: list = []

    def zero_first(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        log.append(loss.item())
        loss.backward()
        opt.step()
        return loss

    def zero_after(x, y):
        loss = ((model(x) - y) ** 2).mean()
        log.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return (zero_first if order == "zero_first" else zero_after), log, model


@pytest.mark.parametrize("order", ["zero_first", "zero_after"])
def test_a_step_that_logs_between_forward_and_backward_keeps_eagers_values(order):
    step, log, model = _logging_step(order)
    ref_step, ref_log, ref_model = _logging_step(order)
    compiled = eager.compile(step, backend="numpy")
    rng = np.random.default_rng(1)
    import warnings  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zero_first: not split, runs eagerly (with the warning)
        for _ in range(4):
            x = eager.tensor(rng.standard_normal((8, 4)).astype(np.float32))
            y = eager.tensor(rng.standard_normal((8, 1)).astype(np.float32))
            compiled(x, y)
            ref_step(x, y)
    np.testing.assert_allclose(log, ref_log, rtol=1e-5)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-7)
    text = graph_breaks.describe(compiled)
    if order == "zero_first":  # cut between zero_grad() and backward(): not split
        assert "zero_grad() before the break" in text
    else:  # the forward compiled, the log line in Python, the rest (its backward reaches the forward's) eagerly
        assert "log.append(loss.item())" in text


def test_torch_logging_set_logs_switches_the_graph_break_log(capsys):
    eager._logging.set_logs(graph_breaks=True)
    try:
        assert "graph_breaks" in static.logs.enabled()

        def f(x):
            y = x * 2
            n = y.sum().item()
            return y + n

        np.testing.assert_allclose(eager.compile(f, backend="numpy")(eager.ones(2)).numpy(), [6.0, 6.0])
        err = capsys.readouterr().err
        assert "[graphmode.graph_breaks]" in err and "n = y.sum().item()" in err
        with pytest.raises(TypeError, match="unexpected keyword argument 'graph_brakes'"):
            eager._logging.set_logs(graph_brakes=True)
    finally:
        eager._logging.set_logs()
    assert not static.logs.enabled()
