"""The first call of a compiled training step runs eagerly when it is an optimizer's first
step (static.compiled's `_first_optimizer_step`): that step creates the optimizer's state, so
its graph would run once; the second call traces the steady graph, and a steady loop compiles
one signature instead of two."""
import numpy as np
import pytest
from training_steps import mse, training_step

import eager
import eager.nn as nn
import eager.nn.functional as F
import static

X = eager.tensor(np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32))
Y = eager.tensor(np.random.default_rng(1).standard_normal((16, 1)).astype(np.float32))


def _model():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.2), nn.Linear(8, 1))


def _loop(opt_cls, kw, compiled, steps=4):
    model = _model()
    opt = opt_cls(model.parameters(), **kw)
    step = training_step(model, opt, mse)
    f = static.compile(step) if compiled else step
    eager.manual_seed(1)
    sizes, losses = [], []
    for _ in range(steps):
        losses.append(f(X, Y).item())
        if compiled:
            sizes.append(len(f._cache))
    return losses, [p.detach().numpy().copy() for p in model.parameters()], sizes, f


@pytest.mark.parametrize("opt_cls, kw", [(eager.optim.Adam, dict(lr=0.01)), (eager.optim.AdamW, dict(lr=0.01)),
                                         (eager.optim.SGD, dict(lr=0.1, momentum=0.9))])
def test_the_first_step_runs_eagerly_and_the_loop_compiles_one_signature(opt_cls, kw):
    losses, params, _, _ = _loop(opt_cls, kw, compiled=False)
    got, got_params, sizes, f = _loop(opt_cls, kw, compiled=True)
    assert sizes == [0, 1, 1, 1]  # nothing traced for the first call, then one signature
    assert f.retraces == []
    np.testing.assert_allclose(got, losses, rtol=1e-5)  # dropout draws as eager's, state as eager's
    for g, e in zip(got_params, params):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_an_optimizer_with_state_already_is_compiled_from_the_first_call():
    model = _model()
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    opt.zero_grad()
    F.mse_loss(model(X), Y).backward()
    opt.step()  # the state exists
    step = static.compile(training_step(model, opt, mse))
    step(X, Y)
    assert len(step._cache) == 1


def test_only_the_very_first_call_may_run_eagerly():
    """A parameter that never gets a gradient keeps no state: the rule must not make every
    call eager."""
    eager.manual_seed(0)
    used, unused = nn.Linear(4, 1), nn.Linear(4, 1)
    opt = eager.optim.Adam([*used.parameters(), *unused.parameters()], lr=0.01)
    step = static.compile(training_step(used, opt, mse))
    for _ in range(3):
        step(X, Y)
    assert len(step._cache) == 1 and not opt.state.get(unused.weight)


def test_explain_before_any_call_traces_the_first_step():
    """Looking inside is not a call: it shows the graph of the first step (state created)."""
    model = _model()
    opt = eager.optim.Adam(model.parameters(), lr=0.01)

    @static.compile
    def step(x, y):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()

    assert "func @step" in str(step.ir(X, Y))


def test_fullgraph_compiles_the_first_step_too():
    """fullgraph=True never runs the function eagerly: the first step is compiled (its own
    signature), as before."""
    model = _model()
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    step = static.compile(training_step(model, opt, mse), fullgraph=True)
    step(X, Y)
    assert len(step._cache) == 1
    step(X, Y)
    assert len(step.retraces) == 1  # the first step's graph, then the steady one
