"""RMSprop, Adagrad, Adadelta, Adamax and the LR schedulers, checked without PyTorch:
each optimizer against its update written out in NumPy (PyTorch's formulation, as the
docstrings state), param groups and state_dict round trips, schedules against their
closed forms."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eager
from eager import optim
from eager.optim import lr_scheduler as S

G = [np.array([0.5, -1.0, 2.0]), np.array([-0.3, 0.2, 1.0]), np.array([1.5, -0.5, 0.0])]
P0 = np.array([1.0, -2.0, 0.5])


def _run(make, steps=3):
    p = eager.nn.Parameter(eager.tensor(P0.copy()))
    opt = make([p])
    for g in G[:steps]:
        p.grad = eager.tensor(g)
        opt.step()
    return p.detach().numpy(), opt


def _numpy(update, steps=3):
    p, state = P0.copy(), {}
    for t, g in enumerate(G[:steps], 1):
        p = update(p, g, state, t)
    return p


def test_rmsprop_centered_momentum_weight_decay():
    lr, alpha, eps, mom, wd = 0.01, 0.9, 1e-8, 0.8, 0.1

    def update(p, g, s, t):
        g = g + wd * p
        s["v"] = alpha * s.get("v", 0) + (1 - alpha) * g * g
        s["m"] = alpha * s.get("m", 0) + (1 - alpha) * g
        avg = np.sqrt(s["v"] - s["m"] ** 2) + eps
        s["b"] = mom * s.get("b", 0) + g / avg
        return p - lr * s["b"]

    got, opt = _run(lambda ps: optim.RMSprop(ps, lr=lr, alpha=alpha, eps=eps, momentum=mom, centered=True,
                                             weight_decay=wd))
    np.testing.assert_allclose(got, _numpy(update), rtol=1e-12)
    assert set(opt.state_dict()["state"][0]) == {"step", "square_avg", "momentum_buffer", "grad_avg"}


def test_adagrad_with_lr_decay_and_initial_accumulator():
    lr, decay, init, eps = 0.1, 0.05, 0.2, 1e-10

    def update(p, g, s, t):
        s["sum"] = s.get("sum", init) + g * g
        return p - lr / (1 + (t - 1) * decay) * g / (np.sqrt(s["sum"]) + eps)

    got, _ = _run(lambda ps: optim.Adagrad(ps, lr=lr, lr_decay=decay, initial_accumulator_value=init, eps=eps))
    np.testing.assert_allclose(got, _numpy(update), rtol=1e-12)


def test_adadelta():
    lr, rho, eps = 0.5, 0.8, 1e-6

    def update(p, g, s, t):
        s["v"] = rho * s.get("v", 0) + (1 - rho) * g * g
        d = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["v"] + eps) * g
        s["u"] = rho * s.get("u", 0) + (1 - rho) * d * d
        return p - lr * d

    got, _ = _run(lambda ps: optim.Adadelta(ps, lr=lr, rho=rho, eps=eps))
    np.testing.assert_allclose(got, _numpy(update), rtol=1e-12)


def test_adamax():
    lr, b1, b2, eps = 0.01, 0.8, 0.9, 1e-8

    def update(p, g, s, t):
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["u"] = np.maximum(b2 * s.get("u", 0), np.abs(g) + eps)
        return p - lr / (1 - b1 ** t) * s["m"] / s["u"]

    got, _ = _run(lambda ps: optim.Adamax(ps, lr=lr, betas=(b1, b2), eps=eps))
    np.testing.assert_allclose(got, _numpy(update), rtol=1e-12)


def test_adamw_decays_the_weights_before_the_adam_step():
    lr, wd = 0.01, 0.1

    def update(p, g, s, t):
        p = p * (1 - lr * wd)
        s["m"] = 0.9 * s.get("m", 0) + 0.1 * g
        s["v"] = 0.999 * s.get("v", 0) + 0.001 * g * g
        return p - lr / (1 - 0.9 ** t) * s["m"] / (np.sqrt(s["v"]) / math.sqrt(1 - 0.999 ** t) + 1e-8)

    got, _ = _run(lambda ps: optim.AdamW(ps, lr=lr, weight_decay=wd))
    np.testing.assert_allclose(got, _numpy(update), rtol=1e-12)


@pytest.mark.parametrize("make", [lambda ps: optim.RMSprop(ps, momentum=0.5), lambda ps: optim.Adagrad(ps),
                                  lambda ps: optim.Adadelta(ps), lambda ps: optim.Adamax(ps)])
def test_state_dict_round_trip_continues_identically(make):
    _, opt = _run(make, steps=2)
    a = eager.nn.Parameter(eager.tensor(P0.copy()))
    b = eager.nn.Parameter(eager.tensor(P0.copy()))
    first, second = make([a]), make([b])
    for g in G[:2]:
        a.grad = eager.tensor(g)
        first.step()
    second.load_state_dict(first.state_dict())
    with eager.no_grad():
        b.copy_(a)
    for p, o in ((a, first), (b, second)):
        p.grad = eager.tensor(G[2])
        o.step()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_param_groups_and_bad_hyperparameters():
    w, b = eager.nn.Parameter(eager.ones(2)), eager.nn.Parameter(eager.ones(1))
    opt = optim.RMSprop([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.01)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.5]
    for make in (lambda: optim.RMSprop([w], lr=-1), lambda: optim.Adagrad([w], eps=-1),
                 lambda: optim.Adadelta([w], rho=2.0), lambda: optim.Adamax([w], betas=(1.0, 0.9))):
        with pytest.raises(ValueError, match="Invalid"):
            make()


def _lrs(make, steps=8, metric=None):
    p = eager.nn.Parameter(eager.ones(1))
    opt = optim.SGD([p], lr=1.0)
    sched = make(opt)
    out = [opt.param_groups[0]["lr"]]
    for k in range(steps):
        opt.step()
        sched.step() if metric is None else sched.step(metric(k))
        out.append(opt.param_groups[0]["lr"])
    return out


def test_schedules_follow_their_closed_forms():
    assert _lrs(lambda o: S.StepLR(o, 3, 0.5)) == [0.5 ** (e // 3) for e in range(9)]
    assert _lrs(lambda o: S.MultiStepLR(o, [2, 5], 0.1)) == pytest.approx([1, 1, .1, .1, .1, .01, .01, .01, .01])
    assert _lrs(lambda o: S.ExponentialLR(o, 0.9)) == pytest.approx([0.9 ** e for e in range(9)])
    assert _lrs(lambda o: S.CosineAnnealingLR(o, 8, 0.1)) == pytest.approx(
        [0.1 + 0.9 * (1 + math.cos(math.pi * e / 8)) / 2 for e in range(9)])
    assert _lrs(lambda o: S.LambdaLR(o, lambda e: 1 / (e + 1))) == pytest.approx([1 / (e + 1) for e in range(9)])
    assert _lrs(lambda o: S.LinearLR(o, 0.25, 1.0, 4)) == pytest.approx([0.25, 0.4375, 0.625, 0.8125, 1, 1, 1, 1, 1])
    seq = _lrs(lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.5, 1.0, 2), S.ExponentialLR(o, 0.5)], [3]))
    assert seq == pytest.approx([0.5, 0.75, 1.0, 1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125])


def test_one_cycle_rises_then_anneals_and_cycles_momentum():
    p = eager.nn.Parameter(eager.ones(1))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.3)
    lrs, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
    for _ in range(9):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
    assert lrs[0] == pytest.approx(1.0 / 25) and max(lrs) == pytest.approx(1.0) and lrs.index(max(lrs)) == 2
    assert lrs[-1] == pytest.approx(1.0 / 25 / 1e4)
    assert moms[0] == pytest.approx(0.95) and min(moms) == pytest.approx(0.85)
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        sched.step()
        sched.step()


def test_reduce_lr_on_plateau_waits_patience_then_cools_down():
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
    lrs = _lrs(lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1), steps=9,
               metric=lambda k: metrics[k])
    # 3 epochs without improvement (> patience 2) halve the lr; one epoch of cooldown, then 3 more
    assert lrs == [1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25]


def test_scheduler_state_dict_round_trip():
    p = eager.nn.Parameter(eager.ones(1))
    opt = optim.SGD([p], lr=1.0)
    sched = S.StepLR(opt, 2, 0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    other = S.StepLR(optim.SGD([p], lr=1.0), 2, 0.1)
    other.load_state_dict(sched.state_dict())
    assert other.last_epoch == 3 and other.gamma == 0.5 and other.get_last_lr() == sched.get_last_lr()
