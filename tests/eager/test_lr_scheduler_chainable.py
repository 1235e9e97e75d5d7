"""Every LR scheduler against PyTorch's over 30 steps: the lr (and momentum / beta1 where
a scheduler cycles it) after each step, alone, composed with a second scheduler stepped
together, with an lr set by hand mid-run, and resumed from a state_dict or `last_epoch`."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

STEPS = 30

# name -> (optimizer name, optimizer kwargs, scheduler kwargs)
SCHEDULES: dict[str, tuple[str, dict, dict]] = {
    "StepLR": ("SGD", {}, dict(step_size=4, gamma=0.5)),
    "MultiStepLR": ("SGD", {}, dict(milestones=[3, 7, 7, 20], gamma=0.3)),
    "ExponentialLR": ("SGD", {}, dict(gamma=0.9)),
    "CosineAnnealingLR": ("SGD", {}, dict(T_max=7, eta_min=0.001)),
    "LambdaLR": ("SGD", {}, dict(lr_lambda=lambda e: 1.0 / (1 + e))),
    "MultiplicativeLR": ("SGD", {}, dict(lr_lambda=lambda e: 0.95 if e % 2 else 0.99)),
    "LinearLR": ("SGD", {}, dict(start_factor=0.25, end_factor=0.9, total_iters=9)),
    "ConstantLR": ("SGD", {}, dict(factor=0.5, total_iters=6)),
    "PolynomialLR": ("SGD", {}, dict(total_iters=12, power=2.0)),
    "CosineAnnealingWarmRestarts": ("SGD", {}, dict(T_0=3, T_mult=2, eta_min=0.002)),
    "OneCycleLR": ("SGD", dict(momentum=0.9), dict(max_lr=[0.5, 0.2], total_steps=STEPS + 1)),
    "OneCycleLR3": ("Adam", {}, dict(max_lr=0.3, total_steps=STEPS + 1, three_phase=True, anneal_strategy="linear")),
    "CyclicLR": ("SGD", dict(momentum=0.9), dict(base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=3)),
    "CyclicLR2": ("SGD", dict(momentum=0.9), dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3,
                                                  mode="triangular2")),
    "CyclicLRexp": ("Adam", {}, dict(base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.97,
                                     base_momentum=0.85, max_momentum=0.95)),
}


def _cls(name: str) -> str:
    return name.rstrip("23exp") if name not in ("CyclicLR", "OneCycleLR") else name


def _optimizer(lib, opt_name: str, opt_kw: dict):
    w = lib.zeros(3, requires_grad=True)
    b = lib.zeros(2, requires_grad=True)
    return getattr(lib.optim, opt_name)([{"params": [w]}, {"params": [b], "lr": 0.05}], lr=0.1, **opt_kw)


def _snapshot(opt) -> list[float]:
    out = []
    for g in opt.param_groups:
        out.append(float(g["lr"]))
        if "momentum" in g:
            out.append(float(g["momentum"]))
        if "betas" in g:
            out.append(float(g["betas"][0]))
    return out


def _trajectory(lib, name: str, steps: int = STEPS, hand_lr_at: int | None = None) -> list[list[float]]:
    opt_name, opt_kw, kw = SCHEDULES[name]
    opt = _optimizer(lib, opt_name, opt_kw)
    sched = getattr(lib.optim.lr_scheduler, _cls(name))(opt, **kw)
    out = [_snapshot(opt) + [float(v) for v in sched.get_last_lr()]]
    for i in range(steps):
        opt.step()
        if hand_lr_at is not None and i == hand_lr_at:
            for g in opt.param_groups:
                g["lr"] = g["lr"] * 0.5
        sched.step()
        out.append(_snapshot(opt) + [float(v) for v in sched.get_last_lr()])
    return out


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_pytorch_over_30_steps(name):
    np.testing.assert_allclose(_trajectory(eager, name), _trajectory(torch, name), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                                  "MultiplicativeLR", "LinearLR", "ConstantLR", "PolynomialLR"])
def test_an_lr_set_by_hand_is_kept_as_in_pytorch(name):
    e, t = _trajectory(eager, name, hand_lr_at=5), _trajectory(torch, name, hand_lr_at=5)
    np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-15)
    # the chainable form keeps the halving (a closed form from base_lr would undo it)
    if name in ("StepLR", "ExponentialLR", "MultiplicativeLR"):
        assert e[-1][0] < _trajectory(eager, name)[-1][0]


PAIRS = [("StepLR", "ExponentialLR"), ("LinearLR", "CosineAnnealingLR"), ("ConstantLR", "MultiStepLR"),
         ("ExponentialLR", "PolynomialLR"), ("LinearLR", "ExponentialLR")]


def _composed(lib, a: str, b: str, chained: bool) -> list[list[float]]:
    opt = _optimizer(lib, "SGD", {})
    s1 = getattr(lib.optim.lr_scheduler, a)(opt, **SCHEDULES[a][2])
    s2 = getattr(lib.optim.lr_scheduler, b)(opt, **SCHEDULES[b][2])
    scheds = [lib.optim.lr_scheduler.ChainedScheduler([s1, s2])] if chained else [s1, s2]
    out = [_snapshot(opt) + [float(v) for v in scheds[-1].get_last_lr()]]
    for _ in range(STEPS):
        opt.step()
        for s in scheds:
            s.step()
        out.append(_snapshot(opt) + [float(v) for v in scheds[-1].get_last_lr()])
    return out


@pytest.mark.parametrize("chained", [False, True], ids=["together", "ChainedScheduler"])
@pytest.mark.parametrize("pair", PAIRS, ids=["+".join(p) for p in PAIRS])
def test_two_schedulers_stepped_together_compose_as_in_pytorch(pair, chained):
    e, t = _composed(eager, *pair, chained), _composed(torch, *pair, chained)
    np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-15)


def test_step_and_exponential_factors_multiply():
    out = _composed(eager, "StepLR", "ExponentialLR", False)
    # after 8 steps: StepLR halved twice, ExponentialLR 0.9 ** 8
    assert math.isclose(out[8][0], 0.1 * 0.5 ** 2 * 0.9 ** 8, rel_tol=1e-12)


def _sequential(lib) -> list[list[float]]:
    opt = _optimizer(lib, "SGD", dict(momentum=0.9))
    s1 = lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=4)
    s2 = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    s3 = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8)
    s = lib.optim.lr_scheduler.SequentialLR(opt, [s1, s2, s3], milestones=[5, 15])
    out = [_snapshot(opt) + [float(v) for v in s.get_last_lr()]]
    for _ in range(STEPS):
        opt.step()
        s.step()
        out.append(_snapshot(opt) + [float(v) for v in s.get_last_lr()])
    return out


def test_sequential_lr_over_three_schedulers_matches_pytorch():
    np.testing.assert_allclose(_sequential(eager), _sequential(torch), rtol=1e-12, atol=1e-15)


def _plateau(lib) -> list[list[float]]:
    opt = _optimizer(lib, "SGD", {})
    s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=0.5, patience=2, cooldown=1,
                                                 threshold=0.01, threshold_mode="abs", min_lr=[0.01, 0.0])
    metrics = [1, 2, 2, 2, 2, 2.005, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]
    out = []
    for m in metrics:
        opt.step()
        s.step(m)
        out.append(_snapshot(opt) + [float(v) for v in s.get_last_lr()] + [s.num_bad_epochs, s.cooldown_counter])
    return out


def test_reduce_lr_on_plateau_matches_pytorch():
    np.testing.assert_allclose(_plateau(eager), _plateau(torch), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["StepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "MultiStepLR",
                                  "PolynomialLR", "ConstantLR", "CyclicLR", "OneCycleLR"])
def test_resuming_with_last_epoch_matches_pytorch(name):
    """Run 10 steps, save the optimizer, build a fresh optimizer and scheduler with
    last_epoch=9 and run on: the lr continues from where it was, not one factor ahead."""
    def run(lib):
        opt_name, opt_kw, kw = SCHEDULES[name]
        opt = _optimizer(lib, opt_name, opt_kw)
        sched = getattr(lib.optim.lr_scheduler, _cls(name))(opt, **kw)
        for _ in range(10):
            opt.step()
            sched.step()
        saved = opt.state_dict()
        opt2 = _optimizer(lib, opt_name, opt_kw)
        opt2.load_state_dict(saved)
        sched2 = getattr(lib.optim.lr_scheduler, _cls(name))(opt2, last_epoch=sched.last_epoch, **kw)
        out = [_snapshot(opt2)]
        for _ in range(10):
            opt2.step()
            sched2.step()
            out.append(_snapshot(opt2))
        return out

    np.testing.assert_allclose(run(eager), run(torch), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "CyclicLR", "OneCycleLR", "LinearLR"])
def test_state_dict_resume_continues_the_same_schedule(name):
    opt_name, opt_kw, kw = SCHEDULES[name]
    whole = _trajectory(eager, name, steps=20)
    opt = _optimizer(eager, opt_name, opt_kw)
    sched = getattr(eager.optim.lr_scheduler, _cls(name))(opt, **kw)
    for _ in range(8):
        opt.step()
        sched.step()
    opt_state, sched_state = opt.state_dict(), sched.state_dict()
    opt2 = _optimizer(eager, opt_name, opt_kw)
    sched2 = getattr(eager.optim.lr_scheduler, _cls(name))(opt2, **kw)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(sched_state)
    rest = []
    for _ in range(12):
        opt2.step()
        sched2.step()
        rest.append(_snapshot(opt2) + [float(v) for v in sched2.get_last_lr()])
    np.testing.assert_allclose(rest, whole[9:], rtol=1e-12, atol=1e-15)


def test_initial_lr_is_recorded_in_param_groups_and_required_to_resume():
    opt = _optimizer(eager, "SGD", {})
    opt.param_groups[1]["initial_lr"] = 0.5  # an existing initial_lr is kept (setdefault)
    s = eager.optim.lr_scheduler.StepLR(opt, step_size=2)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert s.base_lrs == [0.1, 0.5]
    with pytest.raises(KeyError, match="initial_lr"):
        eager.optim.lr_scheduler.StepLR(_optimizer(eager, "SGD", {}), step_size=2, last_epoch=3)


def test_explicit_epoch_uses_the_closed_form_with_a_warning_like_pytorch():
    def run(lib):
        opt = _optimizer(lib, "SGD", {})
        s = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        opt.step()
        with pytest.warns(UserWarning, match="epoch parameter"):
            s.step(7)
        return _snapshot(opt)

    assert run(eager) == pytest.approx(run(torch), rel=1e-12)


def test_bad_arguments_raise_like_pytorch():
    opt = _optimizer(eager, "SGD", {})
    with pytest.raises(TypeError, match="is not an Optimizer"):
        eager.optim.lr_scheduler.StepLR(object(), step_size=2)
    with pytest.raises(ValueError, match="lr_lambdas"):
        eager.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        eager.optim.lr_scheduler.ChainedScheduler([eager.optim.lr_scheduler.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="Tried to step"):
        opt2 = _optimizer(eager, "SGD", dict(momentum=0.9))
        s = eager.optim.lr_scheduler.OneCycleLR(opt2, 0.1, total_steps=2)
        for _ in range(3):
            opt2.step()
            s.step()


def test_stepping_the_scheduler_first_warns_like_pytorch():
    for lib in (eager, torch):
        opt = _optimizer(lib, "SGD", {})
        s = lib.optim.lr_scheduler.StepLR(opt, 2)
        with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
            s.step()
        opt2 = _optimizer(lib, "SGD", {})
        s2 = lib.optim.lr_scheduler.StepLR(opt2, 2)
        opt2.step()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            s2.step()
            s2.step()


def test_get_lr_outside_step_warns_like_pytorch():
    for lib in (eager, torch):
        opt = _optimizer(lib, "SGD", {})
        s = lib.optim.lr_scheduler.ExponentialLR(opt, 0.5)
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            s.get_lr()
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            s.step()


def test_an_optimizer_with_a_scheduler_still_pickles_and_copies():
    import copy
    import pickle

    opt = _optimizer(eager, "SGD", dict(momentum=0.9))
    sched = eager.optim.lr_scheduler.StepLR(opt, 2)
    for o in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        o.step()
        assert o._opt_called and not getattr(opt, "_opt_called", False)
    s2 = pickle.loads(pickle.dumps(sched))
    s2.optimizer.step()
    s2.step()
    assert s2.last_epoch == 1
