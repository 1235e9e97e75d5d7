"""A library optimizer's update of one parameter is traced once per kind and replayed for the
others (static.update_templates): the graph must be the one tracing every parameter gives,
node for node, and a kind a replay could not repeat is traced parameter by parameter."""
import numpy as np
import pytest
from training_steps import mse, training_step

import eager
import eager.nn as nn
import static
import static.update_templates as templates
from static.trace_function import trace_function

X = eager.tensor(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32))
Y = eager.tensor(np.random.default_rng(1).standard_normal((8, 2)).astype(np.float32))

OPTIMIZERS = [
    (eager.optim.Adam, dict(lr=0.01)), (eager.optim.Adam, dict(lr=0.01, amsgrad=True, maximize=True)),
    (eager.optim.AdamW, dict(lr=0.01, weight_decay=0.1)), (eager.optim.SGD, dict(lr=0.1)),
    (eager.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (eager.optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)), (eager.optim.Adagrad, dict(lr=0.1)),
    (eager.optim.Adadelta, {}), (eager.optim.Adamax, {}), (eager.optim.NAdam, {}), (eager.optim.RAdam, {}),
]


def _model():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))


def _traced_step_graph(opt_cls, kw, monkeypatch=None, warm=1):
    """The text of the traced graph of a training step after `warm` eager steps (the state
    exists), with templates as they are or switched off (every parameter traced)."""
    model = _model()
    opt = opt_cls(model.parameters(), **kw)
    step = training_step(model, opt, mse)
    for _ in range(warm):
        step(X, Y)
    if monkeypatch is not None:
        monkeypatch.setattr(templates, "_kind", lambda *a, **k: None)
    return str(trace_function(step, (X, Y), (), "step").graph)


@pytest.mark.parametrize("opt_cls, kw", OPTIMIZERS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_replayed_update_is_the_graph_tracing_every_parameter_gives(opt_cls, kw, monkeypatch):
    replayed = _traced_step_graph(opt_cls, kw)
    traced = _traced_step_graph(opt_cls, kw, monkeypatch)
    assert replayed == traced


def test_parameters_of_one_kind_are_traced_once(monkeypatch):
    recorded = []
    record = templates._record
    monkeypatch.setattr(templates, "_record", lambda *a: recorded.append(a[3]) or record(*a))
    model = _model()
    opt = eager.optim.AdamW(model.parameters(), lr=0.01)
    step = static.compile(training_step(model, opt, mse))
    step(X, Y)
    # six parameters, each float32 with its own shape: one kind (shapes do not make kinds)
    assert len(recorded) == 1


def test_kinds_part_by_dtype_and_by_state():
    """A float64 parameter, and one whose gradient is a 0-d tensor, are kinds of their own;
    the values stay eager's."""
    runs = []
    for compiled in (False, True):
        eager.manual_seed(0)
        lin = nn.Linear(4, 2)
        scale = nn.Parameter(eager.tensor(1.5))
        wide = nn.Parameter(eager.tensor(np.linspace(-1, 1, 2)))  # float64

        def loss_fn(model, x, y, scale=scale, wide=wide):
            return ((model(x) * scale - y) ** 2).mean() + (wide ** 2).sum().float()

        params = [*lin.parameters(), scale, wide]
        opt = eager.optim.Adam(params, lr=0.05)
        step = training_step(lin, opt, loss_fn)
        f = static.compile(step) if compiled else step
        for _ in range(4):
            f(X, Y)
        runs.append([p.detach().numpy().copy() for p in params] +
                    [np.asarray(s["exp_avg_sq"].numpy()) for s in opt.state.values()])
    for c, e in zip(*runs):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-7)


class _MyAdam(eager.optim.Adam):
    """A user's subclass: its update may read across parameters, so it is never replayed."""


def test_a_users_optimizer_is_traced_parameter_by_parameter(monkeypatch):
    replays = []
    replay = templates._replay
    monkeypatch.setattr(templates, "_replay", lambda *a: replays.append(a[2]) or replay(*a))
    runs = []
    for compiled in (False, True):
        model = _model()
        opt = _MyAdam(model.parameters(), lr=0.01)
        step = training_step(model, opt, mse)
        f = static.compile(step) if compiled else step
        eager.manual_seed(3)
        for _ in range(3):
            f(X, Y)
        runs.append([p.detach().numpy().copy() for p in model.parameters()])
    for c, e in zip(*runs):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-7)
    assert replays == []


def test_a_replayed_step_equals_eagers_over_steps_for_each_optimizer():
    for opt_cls, kw in OPTIMIZERS:
        runs = []
        for compiled in (False, True):
            model = _model()
            opt = opt_cls(model.parameters(), **kw)
            step = training_step(model, opt, mse)
            f = static.compile(step) if compiled else step
            for _ in range(4):
                f(X, Y)
            runs.append([p.detach().numpy().copy() for p in model.parameters()])
        for c, e in zip(*runs):
            np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6, err_msg=opt_cls.__name__)
