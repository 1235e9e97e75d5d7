"""eager.optim: each update against PyTorch's formulas written out in NumPy (float64)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eager
from eager import nn, optim

P0 = np.array([0.5, -1.5, 2.0, 0.25])
GRADS = [np.array([0.1, -0.2, 0.3, 0.0]), np.array([-0.4, 0.5, 0.05, 1.0]), np.array([0.2, 0.2, -0.6, 0.3])]


def _run(opt_cls, **hyper):
    """Three steps of an optimizer fed fixed gradients; the parameter after each step."""
    p = nn.Parameter(eager.tensor(P0, dtype=eager.float64))
    opt = opt_cls([p], **hyper)
    history = []
    for g in GRADS:
        p.grad = eager.tensor(g, dtype=eager.float64)
        opt.step()
        history.append(np.asarray(p.detach()).copy())
    return p, opt, history


def _sgd_reference(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    p, buf, history = P0.copy(), None, []
    for g in GRADS:
        g = -g if maximize else g.copy()
        if weight_decay:
            g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        history.append(p.copy())
    return history


def _adam_reference(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False):
    p, m, v, vmax, history = P0.copy(), np.zeros(4), np.zeros(4), np.zeros(4), []
    b1, b2 = betas
    for t, g in enumerate(GRADS, start=1):
        if weight_decay and decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        second = vmax if amsgrad else v
        denom = np.sqrt(second) / math.sqrt(1 - b2 ** t) + eps
        p = p - lr / (1 - b1 ** t) * m / denom
        history.append(p.copy())
    return history


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.8, dampening=0.3),
    dict(lr=0.1, momentum=0.9, nesterov=True),
    dict(lr=0.1, momentum=0.5, weight_decay=0.01),
    dict(lr=0.1, weight_decay=0.1, maximize=True),
]


@pytest.mark.parametrize("hyper", SGD_CASES, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
def test_sgd_matches_pytorch_formula(hyper):
    _, _, got = _run(optim.SGD, **hyper)
    for step, (a, b) in enumerate(zip(got, _sgd_reference(**hyper))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"step {step + 1}")


ADAM_CASES = [
    dict(lr=0.1),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.1, weight_decay=0.1),
    dict(lr=0.1, amsgrad=True),
]


@pytest.mark.parametrize("hyper", ADAM_CASES, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
def test_adam_matches_pytorch_formula(hyper):
    _, opt, got = _run(optim.Adam, **hyper)
    for step, (a, b) in enumerate(zip(got, _adam_reference(**hyper))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=f"step {step + 1}")
    assert next(iter(opt.state.values()))["step"] == 3


def test_adamw_decays_the_parameter_not_the_gradient():
    _, _, got = _run(optim.AdamW, lr=0.1, weight_decay=0.1)
    want = _adam_reference(lr=0.1, weight_decay=0.1, decoupled=True)
    np.testing.assert_allclose(got[-1], want[-1], rtol=1e-12)
    coupled = _adam_reference(lr=0.1, weight_decay=0.1)
    assert not np.allclose(got[-1], coupled[-1])  # the two rules really differ here


def test_first_adam_step_moves_each_coordinate_by_about_lr():
    p, _, got = _run(optim.Adam, lr=0.01)
    moved = np.abs(got[0] - P0)
    nonzero = GRADS[0] != 0
    np.testing.assert_allclose(moved[nonzero], 0.01, rtol=1e-4)
    assert moved[~nonzero].max() == 0.0


def test_step_updates_in_place_without_recording():
    p = nn.Parameter(eager.tensor([1.0, 2.0]))
    data_before, version = p, p._version
    (p * p).sum().backward()
    optim.SGD([p], lr=0.5).step()
    assert p is data_before and p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p.tolist() == [0.0, 0.0]
    assert p._version > version  # an in-place write, visible to saved-tensor checks


def test_parameters_without_grad_are_skipped():
    a, b = nn.Parameter(eager.ones(2)), nn.Parameter(eager.ones(2))
    a.grad = eager.ones(2)
    opt = optim.Adam([a, b], lr=0.1)
    opt.step()
    assert b.tolist() == [1.0, 1.0] and b not in opt.state
    assert a.tolist() != [1.0, 1.0]


def test_zero_grad_modes():
    p = nn.Parameter(eager.ones(2))
    opt = optim.SGD([p], lr=0.1)
    p.grad = eager.ones(2)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_param_groups_have_their_own_hyper_parameters():
    a, b = nn.Parameter(eager.zeros(1)), nn.Parameter(eager.zeros(1))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 1.0}], lr=0.1, momentum=0.0)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 1.0]
    assert opt.param_groups[1]["momentum"] == 0.0
    a.grad, b.grad = eager.ones(1), eager.ones(1)
    opt.step()
    assert a.item() == pytest.approx(-0.1) and b.item() == pytest.approx(-1.0)
    c = nn.Parameter(eager.zeros(1))
    opt.add_param_group({"params": [c], "lr": 2.0})
    assert opt.param_groups[2]["lr"] == 2.0


def test_invalid_parameter_lists():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    p = nn.Parameter(eager.zeros(1))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta"):
        optim.Adam([p], betas=(1.0, 0.9))


def test_state_dict_round_trip_continues_identically():
    p1, opt1, _ = _run(optim.Adam, lr=0.1)
    p2 = nn.Parameter(eager.tensor(np.asarray(p1.detach()), dtype=eager.float64))
    opt2 = optim.Adam([p2], lr=0.5)
    opt2.load_state_dict(opt1.state_dict())
    assert opt2.param_groups[0]["lr"] == 0.1
    state = opt1.state_dict()
    assert list(state["state"]) == [0] and state["param_groups"][0]["params"] == [0]
    for p, opt in ((p1, opt1), (p2, opt2)):
        p.grad = eager.tensor(GRADS[0], dtype=eager.float64)
        opt.step()
    np.testing.assert_array_equal(np.asarray(p1.detach()), np.asarray(p2.detach()))


def test_closure_is_evaluated_with_grad_enabled():
    p = nn.Parameter(eager.tensor([3.0]))
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with eager.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and p.item() == pytest.approx(1.5)


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.Adam(ps, lr=0.1)])
def test_optimizers_minimise_a_quadratic(make):
    target = eager.tensor([1.0, -2.0, 3.0])
    p = nn.Parameter(eager.zeros(3))
    opt = make([p])
    for _ in range(200):
        opt.zero_grad()
        ((p - target) ** 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(np.asarray(p.detach()), [1.0, -2.0, 3.0], atol=1e-2)


def test_repr_lists_the_groups():
    text = repr(optim.SGD([nn.Parameter(eager.zeros(1))], lr=0.1, momentum=0.9))
    assert text.startswith("SGD (\nParameter Group 0\n") and "    momentum: 0.9" in text and "    lr: 0.1" in text


@pytest.mark.parametrize("make", [
    lambda ps: optim.Adam(ps, lr=0.01),
    lambda ps: optim.Adam(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
    lambda ps: optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    lambda ps: optim.AdamW(ps, lr=0.01, amsgrad=True, maximize=True),
])
def test_adam_array_update_equals_the_op_by_op_update(make, monkeypatch):
    """Eager CPU tensors are updated on their arrays in place; the result is the op-by-op
    update's, bit for bit, and each written tensor's version is counted."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    grads = [[rng.standard_normal(a.shape).astype(np.float32) for a in start] for _ in range(3)]

    def run(fast: bool):
        ps = [nn.Parameter(eager.tensor(a)) for a in start]
        opt = make(ps)
        if not fast:
            monkeypatch.setattr(type(opt), "_update_arrays", lambda *args: False)
        versions = [p._version for p in ps]
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = eager.tensor(g)
            opt.step()
        monkeypatch.undo()
        return ps, opt, versions

    (fast, fopt, v0), (slow, sopt, _) = run(True), run(False)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert a._version > v0[0]
    for p_fast, p_slow in zip(fast, slow):
        for key, value in fopt.state[p_fast].items():
            other = sopt.state[p_slow][key]
            if isinstance(value, eager.Tensor):
                np.testing.assert_array_equal(value.numpy(), other.numpy())
            else:
                assert value == other


@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW])
def test_adam_updates_a_0d_parameter_as_a_1_element_one(cls):
    """A 0-d parameter (a learned scale) takes the op-by-op path: NumPy's ufuncs give
    scalars for 0-d operands, which the in-place array path cannot write into."""
    finals = []
    for shape in ((), (1,)):
        p = nn.Parameter(eager.tensor(np.full(shape, 1.5, np.float32)))
        opt = cls([p], lr=0.1, weight_decay=0.01)
        for k in range(3):
            opt.zero_grad()
            (p * (k + 1.0)).sum().backward()
            opt.step()
        finals.append(float(p.detach().numpy().reshape(())))
        assert opt.state[p]["exp_avg"].shape == p.shape
    assert finals[0] == finals[1]
