"""The first call of a compiled training step. An optimizer whose first step makes its state
without the gradient (zeros, a constant: `Optimizer._initial_state`) gets that state made
before the trace reads it, so the first call traces the steady graph and is compiled: one
trace and one signature for the loop. One whose first step makes state from the gradient
(SGD's momentum buffer) runs its first call eagerly (static.compiled's
`_first_optimizer_step`), and the second call traces the steady graph."""
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


STATE_MADE_BEFORE = [(eager.optim.Adam, dict(lr=0.01)), (eager.optim.AdamW, dict(lr=0.01, amsgrad=True)),
                     (eager.optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)), (eager.optim.NAdam, {}),
                     (eager.optim.RAdam, {}), (eager.optim.Adamax, {}), (eager.optim.Adadelta, {}),
                     (eager.optim.Adagrad, dict(initial_accumulator_value=0.1)), (eager.optim.SGD, dict(lr=0.1))]


def _state_arrays(opt):
    return [{k: np.asarray(v.numpy() if isinstance(v, eager.Tensor) else v) for k, v in s.items()}
            for s in opt.state.values()]


@pytest.mark.parametrize("opt_cls, kw", STATE_MADE_BEFORE, ids=lambda v: getattr(v, "__name__", ""))
def test_the_first_step_is_compiled_and_the_loop_is_one_signature(opt_cls, kw):
    losses, params, _, _ = _loop(opt_cls, kw, compiled=False, steps=5)
    got, got_params, sizes, f = _loop(opt_cls, kw, compiled=True, steps=5)
    assert sizes == [1] * 5  # the first call traced the graph every later call runs
    assert f.retraces == []
    np.testing.assert_allclose(got, losses, rtol=1e-5)  # dropout draws as eager's, state as eager's
    for g, e in zip(got_params, params):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt_cls, kw", STATE_MADE_BEFORE[:4], ids=lambda v: getattr(v, "__name__", ""))
def test_state_made_before_the_trace_equals_eagers(opt_cls, kw):
    states = []
    for compiled in (False, True):
        model = _model()
        opt = opt_cls(model.parameters(), **kw)
        step = training_step(model, opt, mse)
        f = static.compile(step) if compiled else step
        eager.manual_seed(1)
        for _ in range(3):
            f(X, Y)
        states.append(_state_arrays(opt))
    assert [sorted(s) for s in states[0]] == [sorted(s) for s in states[1]]
    for e, c in zip(*states):
        for k in e:
            np.testing.assert_allclose(c[k], e[k], rtol=1e-5, atol=1e-7, err_msg=k)


def test_a_module_zero_grad_also_makes_one_signature():
    """model.zero_grad() clears the .grad as the optimizer's does: the first call, which finds
    None, and the later ones, which find the last gradient, share a graph."""
    model = _model()
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    step = static.compile(training_step(model, opt, mse, zero_grad=False, before=lambda m: m.zero_grad()))
    for _ in range(3):
        step(X, Y)
    assert len(step._cache) == 1 and step.retraces == []


def test_gradients_accumulated_across_calls_still_retrace_once():
    """Without zero_grad the .grad a call finds is read: None on the first call, a tensor
    after, two graphs (eager's semantics kept)."""
    model = _model()
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    step = static.compile(training_step(model, opt, mse, zero_grad=False))
    ref_model = _model()
    ref_opt = eager.optim.Adam(ref_model.parameters(), lr=0.01)
    ref = training_step(ref_model, ref_opt, mse, zero_grad=False)
    for _ in range(3):
        eager.manual_seed(2)
        got = step(X, Y).item()
        eager.manual_seed(2)
        want = ref(X, Y).item()
        assert got == pytest.approx(want, rel=1e-5)
    assert len(step.retraces) == 1
    for p, q in zip(model.parameters(), ref_model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_a_failed_trace_leaves_no_state_behind():
    """The state made before the update, and the .grad bindings, are undone when the trace
    fails after the update (here: a Python branch on a traced value)."""
    model = _model()
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    step = static.compile(training_step(model, opt, mse, after_step=lambda m: bool(m[0].weight.sum() > 0)))

    with pytest.raises(static.TraceError):
        step(X, Y)
    assert opt.state == {}
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("opt_cls, kw", [(eager.optim.SGD, dict(lr=0.1, momentum=0.9)),
                                         (eager.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.5))])
def test_a_first_step_that_reads_the_gradient_runs_eagerly(opt_cls, kw):
    losses, params, _, _ = _loop(opt_cls, kw, compiled=False)
    got, got_params, sizes, f = _loop(opt_cls, kw, compiled=True)
    assert sizes == [0, 1, 1, 1]  # nothing traced for the first call, then one signature
    assert f.retraces == []
    np.testing.assert_allclose(got, losses, rtol=1e-5)
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
    """fullgraph=True never runs the function eagerly: a first step that makes its state from
    the gradient is compiled (its own signature), then the steady one."""
    model = _model()
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = static.compile(training_step(model, opt, mse), fullgraph=True)
    step(X, Y)
    assert len(step._cache) == 1
    step(X, Y)
    assert len(step.retraces) == 1  # the first step's graph, then the steady one


def test_compile_seconds_lists_one_build_per_signature():
    model = _model()
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    step = static.compile(training_step(model, opt, mse))
    assert step.compile_seconds == []
    for _ in range(3):
        step(X, Y)
    assert len(step.compile_seconds) == 1 and 0 < step.compile_seconds[0] < 60
    step(X[:4], Y[:4])  # a new shape: a second signature, built and timed
    assert len(step.compile_seconds) == 2


class _SignSGD(eager.optim.Optimizer):
    """A user's optimizer that keeps its own lazily made state and says nothing of it."""

    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    def _update_group(self, group):
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state.setdefault(p, {})
            if "last" not in state:
                state["last"] = p.grad.clone()  # made from the gradient
            p.sub_(group["lr"] * (p.grad.sign() + state["last"].sign()) / 2)
            state["last"].copy_(p.grad)


def test_an_optimizer_that_does_not_say_runs_its_first_call_eagerly():
    losses, params, _, _ = _loop(_SignSGD, dict(lr=0.01), compiled=False)
    got, got_params, sizes, f = _loop(_SignSGD, dict(lr=0.01), compiled=True)
    assert sizes == [0, 1, 1, 1] and f.retraces == []
    np.testing.assert_allclose(got, losses, rtol=1e-5)
    for g, e in zip(got_params, params):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
