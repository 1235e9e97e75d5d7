"""Optimizer hyper-parameters are runtime inputs of a compiled training step: schedulers that
cycle the learning rate and momentum or beta1 every step (OneCycleLR, CyclicLR) compile once
and train as eager does; a change that takes the update down another branch (momentum from 0,
nesterov switched) retraces."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from eager import nn

OPT = eager.optim
SCHED = eager.optim.lr_scheduler
X = eager.from_numpy(np.linspace(-1.0, 1.0, 40, dtype=np.float32).reshape(8, 5))
Y = eager.from_numpy(np.linspace(0.5, -0.5, 8, dtype=np.float32).reshape(8, 1))

CASES = {
    "sgd-nesterov-onecycle": (lambda p: OPT.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
                              lambda o: SCHED.OneCycleLR(o, max_lr=0.5, total_steps=20)),
    "adam-onecycle": (lambda p: OPT.Adam(p, lr=0.1), lambda o: SCHED.OneCycleLR(o, max_lr=0.05, total_steps=20)),
    "adamw-cyclic": (lambda p: OPT.AdamW(p, lr=0.1, weight_decay=0.1),
                     lambda o: SCHED.CyclicLR(o, 0.001, 0.05, step_size_up=3)),
    "rmsprop-cyclic": (lambda p: OPT.RMSprop(p, lr=0.01, momentum=0.5),
                       lambda o: SCHED.CyclicLR(o, 0.001, 0.05, step_size_up=3)),
}


def _train(make_opt, make_sched, backend, steps=12, sched_inside=False):
    eager.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 1))
    o = make_opt(m.parameters())
    s = make_sched(o)

    def step(x, y):
        o.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        o.step()
        if sched_inside:
            s.step()
        return loss

    f = static.compile(step, backend=backend) if backend else step
    losses = []
    for _ in range(steps):
        losses.append(float(f(X, Y)))
        if not sched_inside:
            s.step()
    return m, o, losses, f


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_cycling_schedulers_compile_once_and_match_eager(case, backend):
    make_opt, make_sched = CASES[case]
    ref, ref_opt, ref_losses, _ = _train(make_opt, make_sched, None)
    got, got_opt, losses, f = _train(make_opt, make_sched, backend)
    assert f.retraces == [] and len(f.entries()) == 1
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
    for a, b in zip(got.parameters(), ref.parameters()):
        np.testing.assert_allclose(a._data, b._data, rtol=1e-5, atol=1e-6)
    assert got_opt.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"]


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_a_scheduler_stepped_inside_the_compiled_step_steps_at_every_call(backend):
    make_opt = lambda p: OPT.SGD(p, lr=0.1)  # noqa: E731
    make_sched = lambda o: SCHED.StepLR(o, 2, 0.5)  # noqa: E731
    ref, ref_opt, ref_losses, _ = _train(make_opt, make_sched, None, steps=7, sched_inside=True)
    got, got_opt, losses, f = _train(make_opt, make_sched, backend, steps=7, sched_inside=True)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-6)
    assert got_opt.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"] == 0.1 * 0.5 ** 3
    np.testing.assert_allclose(got[0].weight._data, ref[0].weight._data, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before:UserWarning")  # as PyTorch warns
def test_a_scheduler_stepped_before_the_optimizer_inside_the_step():
    def run(compiled):
        eager.manual_seed(0)
        m = nn.Linear(5, 1)
        o = OPT.SGD(m.parameters(), lr=0.1)
        s = SCHED.ExponentialLR(o, 0.5)

        def step(x, y):
            s.step()  # the optimizer below reads the stepped learning rate
            o.zero_grad()
            loss = F.mse_loss(m(x), y)
            loss.backward()
            o.step()
            return loss

        f = static.compile(step, backend="numpy") if compiled else step
        return [float(f(X, Y)) for _ in range(5)], m.weight._data.copy(), o.param_groups[0]["lr"]

    a, b = run(False), run(True)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-6)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-6)
    assert a[2] == b[2]


def test_momentum_leaving_zero_and_nesterov_switched_retrace():
    eager.manual_seed(0)
    m = nn.Linear(5, 1)
    o = OPT.SGD(m.parameters(), lr=0.1, momentum=0.0)
    eager.manual_seed(0)
    m2 = nn.Linear(5, 1)
    o2 = OPT.SGD(m2.parameters(), lr=0.1, momentum=0.0)

    def step_of(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    f, ref = static.compile(step_of(m, o), backend="numpy"), step_of(m2, o2)
    for momentum, nesterov in [(0.0, False), (0.0, False), (0.9, False), (0.9, False), (0.9, True), (0.5, True)]:
        for opt in (o, o2):
            opt.param_groups[0]["momentum"] = momentum
            opt.param_groups[0]["nesterov"] = nesterov
        np.testing.assert_allclose(float(f(X, Y)), float(ref(X, Y)), rtol=1e-6)
        np.testing.assert_allclose(m.weight._data, m2.weight._data, rtol=1e-6, atol=1e-7)
    assert any("momentum" in r for r in f.retraces)
    assert any("'nesterov'" in r for r in f.retraces)
    assert not any("0.5" in r for r in f.retraces)  # 0.9 -> 0.5 takes the same branches: an input, no retrace
