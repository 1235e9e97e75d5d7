"""Whole PyTorch-style training steps (zero_grad, backward, step) compiled into one graph."""
import numpy as np
import pytest
from training_steps import small_model, training_step

import eager
import eager.nn as nn
import eager.nn.functional as F
import static

X = eager.tensor(np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32))
Y = eager.tensor(np.random.default_rng(1).standard_normal((16, 1)).astype(np.float32))

OPTIMIZERS = [
    (eager.optim.SGD, dict(lr=0.1)),
    (eager.optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
    (eager.optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (eager.optim.Adam, dict(lr=0.01)),
    (eager.optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (eager.optim.AdamW, dict(lr=0.01)),
    (eager.optim.RMSprop, dict(lr=0.01)),
    (eager.optim.RMSprop, dict(lr=0.01, momentum=0.9, centered=True)),
    (eager.optim.Adagrad, dict(lr=0.1, lr_decay=0.01)),
    (eager.optim.Adadelta, dict(lr=1.0)),
    # Adamax rebinds its exp_inf state each step: written back into the tensor the next call reads
    (eager.optim.Adamax, dict(lr=0.05)),
    # NAdam keeps a running product (a Python number made a 0-d input); RAdam switches form at
    # a step count (both forms computed and chosen with where inside the graph)
    (eager.optim.NAdam, dict(lr=0.01, weight_decay=0.01)),
    (eager.optim.RAdam, dict(lr=0.01)),
]


def _mse(model, x, y):
    return F.mse_loss(model(x), y)


def _run(opt_cls, kw, compiled, steps=5):
    model = small_model()
    opt = opt_cls(model.parameters(), **kw)
    step = training_step(model, opt, _mse)
    f = static.compile(step) if compiled else step
    losses = [f(X, Y).item() for _ in range(steps)]
    return losses, model, opt, f


def _state_arrays(opt, model):
    out = []
    for p in model.parameters():
        for k, v in sorted(opt.state.get(p, {}).items()):
            out.append((k, float(v.item()) if isinstance(v, eager.Tensor) and v.ndim == 0 else
                        v.numpy() if isinstance(v, eager.Tensor) else float(v)))
    return out


@pytest.mark.parametrize("opt_cls,kw", OPTIMIZERS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_n_compiled_steps_equal_n_eager_steps_with_at_most_two_signatures(opt_cls, kw):
    losses_e, model_e, opt_e, _ = _run(opt_cls, kw, compiled=False)
    losses_c, model_c, opt_c, f = _run(opt_cls, kw, compiled=True)
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5)
    for pc, pe in zip(model_c.parameters(), model_e.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (kc, vc), (ke, ve) in zip(_state_arrays(opt_c, model_c), _state_arrays(opt_e, model_e)):
        assert kc == ke
        np.testing.assert_allclose(vc, ve, rtol=1e-5, atol=1e-7)
    assert len(f.retraces) <= 1  # the first step (state created, .grad None) and the steady one
    assert losses_c[-1] < losses_c[0]


def test_gradients_accumulate_across_calls_as_in_eager():
    def run(compiled):
        model = small_model()

        def accumulate(x, y):
            F.mse_loss(model(x), y).backward()

        f = static.compile(accumulate) if compiled else accumulate
        for _ in range(3):
            f(X, Y)
        return [p.grad.numpy().copy() for p in model.parameters()], f

    (expected, _), (got, f) = run(False), run(True)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)
    assert len(f.retraces) == 1  # .grad None on the first call, then accumulated into


def test_zero_grad_outside_the_compiled_function_and_reading_grad_inside():
    model = small_model()
    opt = eager.optim.SGD(model.parameters(), lr=0.1)

    @static.compile
    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss, model[0].weight.grad * 1.0

    ref = small_model()
    for _ in range(3):
        opt.zero_grad()
        _, g = step(X, Y)
        opt.step()
        ref.zero_grad()
        F.mse_loss(ref(X), Y).backward()
        np.testing.assert_allclose(g.numpy(), ref[0].weight.grad.numpy(), rtol=1e-5, atol=1e-7)
        with eager.no_grad():
            for p in ref.parameters():
                p.sub_(p.grad * 0.1)
    assert len(step.retraces) == 0  # .grad is None at every call: one signature


def test_a_changing_learning_rate_is_read_at_each_call_without_retracing():
    runs = []
    for compiled in (False, True):
        model = small_model()
        opt = eager.optim.Adam(model.parameters(), lr=0.01)

        def step(x, y):
            opt.zero_grad()  # noqa: B023  (called within this iteration)
            F.mse_loss(model(x), y).backward()  # noqa: B023  (called within this iteration)
            opt.step()  # noqa: B023  (called within this iteration)

        f = static.compile(step) if compiled else step
        for i in range(5):
            opt.param_groups[0]["lr"] = 0.01 / (i + 1)  # what a scheduler does
            f(X, Y)
        runs.append([p.detach().numpy().copy() for p in model.parameters()])
        if compiled:
            assert len(f.retraces) <= 1
    for c, e in zip(runs[1], runs[0]):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)


def test_param_groups_and_frozen_parameters():
    def run(compiled):
        model = small_model()
        model[2].bias.requires_grad_(False)
        opt = eager.optim.SGD([{"params": [model[0].weight, model[0].bias], "lr": 0.2},
                               {"params": [model[2].weight], "momentum": 0.5}], lr=0.05)

        def step(x, y):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()

        f = static.compile(step) if compiled else step
        for _ in range(4):
            f(X, Y)
        return model

    e, c = run(False), run(True)
    for pc, pe in zip(c.parameters(), e.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert c[2].bias.grad is None


def test_backward_of_a_non_scalar_without_gradient_is_eagers_error():
    model = small_model()

    @static.compile
    def bad(x):
        model(x).backward()

    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        bad(X)


def test_backward_of_a_value_that_needs_no_grad_is_eagers_error():
    @static.compile
    def bad(x):
        (x * 2).sum().backward()

    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        bad(X)


def test_an_optimizer_over_parameters_the_function_never_touches_leaves_them_as_eager_does():
    model, other = small_model(), nn.Linear(3, 3)
    before = other.weight.detach().numpy().copy()
    opt = eager.optim.SGD(list(model.parameters()) + list(other.parameters()), lr=0.1)

    @static.compile
    def step(x, y):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()

    step(X, Y)
    step(X, Y)
    np.testing.assert_array_equal(other.weight.detach().numpy(), before)
    assert other.weight.grad is None


def test_backward_with_an_explicit_gradient_and_create_graph_inside():
    w = eager.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)

    @static.compile
    def f(x):
        y = (w * x) ** 2
        y.backward(eager.ones(3) * 2.0, create_graph=True)
        return w.grad * 1.0

    x = eager.tensor(np.array([1.0, 2.0, 3.0]))
    got = f(x).detach().numpy()
    np.testing.assert_allclose(got, 2.0 * 2 * w.detach().numpy() * x.numpy() ** 2)


def test_a_compiled_step_after_eager_backwards_reads_each_new_grad_and_eager_steps_continue_it():
    runs = []
    for compiled in (False, True):
        model = small_model()
        opt = eager.optim.Adam(model.parameters(), lr=0.01)
        update = static.compile(opt.step) if compiled else opt.step
        for _ in range(4):
            opt.zero_grad()  # eager's backward then makes a new .grad tensor every time
            F.mse_loss(model(X), Y).backward()
            update()
        for _ in range(2):  # eager steps continue from the state the compiled ones left
            opt.zero_grad()
            F.mse_loss(model(X), Y).backward()
            opt.step()
        runs.append([p.detach().numpy().copy() for p in model.parameters()])
        if compiled:
            # the state the first step creates is made before the trace reads it: one graph
            assert update.retraces == [] and len(update._cache) == 1
    for c, e in zip(runs[1], runs[0]):
        np.testing.assert_allclose(c, e, rtol=1e-5, atol=1e-6)


def test_a_second_backward_through_a_freed_graph_is_eagers_error_and_retain_graph_allows_it():
    def run(compiled, retain):
        model = small_model()

        def twice(x, y):
            loss = F.mse_loss(model(x), y)
            loss.backward(retain_graph=retain)
            loss.backward()

        (static.compile(twice) if compiled else twice)(X, Y)
        return [p.grad.numpy().copy() for p in model.parameters()]

    for compiled in (False, True):
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            run(compiled, retain=False)
    for g, e in zip(run(True, retain=True), run(False, retain=True)):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)  # accumulated twice


def test_a_step_that_returns_its_loss_builds_no_second_backward():
    _, _, _, f = _run(eager.optim.SGD, dict(lr=0.1), compiled=True, steps=2)
    assert f.autograd_graphs(X, Y).backward is None  # the step's own backward is in the forward graph


def test_a_step_reached_through_a_global_helper_keeps_two_signatures():
    global _HELPER_STEP
    model = small_model()
    opt = eager.optim.SGD(model.parameters(), lr=0.1)

    def inner(x, y):
        model.zero_grad()  # the module reached only through this helper
        F.mse_loss(model(x), y).backward()
        opt.step()

    _HELPER_STEP = inner
    f = static.compile(lambda x, y: _HELPER_STEP(x, y))
    for _ in range(5):
        f(X, Y)
    assert len(f.retraces) <= 1


_HELPER_STEP = None


def test_a_gradient_scaled_by_its_own_detached_norm_inside_a_compiled_step():
    def run(compiled):
        w = nn.Parameter(eager.tensor([1.0, -2.0]))
        opt = eager.optim.SGD([w], lr=0.1)

        def step():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            with eager.no_grad():
                w.grad.mul_(0.1 / (eager.norm(w.grad.detach()) + 1e-6))
            opt.step()
            return loss

        f = static.compile(step) if compiled else step
        return [f().item() for _ in range(4)], w.detach().numpy()

    (losses_e, w_e), (losses_c, w_c) = run(False), run(True)
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5)
    np.testing.assert_allclose(w_c, w_e, rtol=1e-5)


def test_an_lr_scheduler_stepping_between_compiled_steps_is_read_at_each_call():
    def run(compiled):
        model = small_model()
        opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = eager.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        step = training_step(model, opt, _mse)
        f = static.compile(step) if compiled else step
        losses = []
        for _ in range(6):
            losses.append(f(X, Y).item())
            sched.step()
        return losses, [p.detach().numpy() for p in model.parameters()], f

    (losses_e, params_e, _), (losses_c, params_c, f) = run(False), run(True)
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5)
    for pc, pe in zip(params_c, params_e):
        np.testing.assert_allclose(pc, pe, rtol=1e-4, atol=1e-6)
    assert len(f.retraces) <= 1  # the learning rate is an input, not a constant: no retrace per change


def test_backward_on_a_traced_value_is_a_declared_hook_not_a_patched_method():
    """The tracer calls the handler static.training registers; no class is patched on import."""
    from static import training
    from static.tracer import BACKWARD_HOOK, Tracer

    assert Tracer.__dict__["backward"].__module__ == "static.tracing.tracer"
    assert BACKWARD_HOOK.fn is training.traced_backward


def test_radam_switches_form_inside_the_compiled_step():
    """With beta2 = 0.9 RAdam's rectified form starts at step 6: both forms are in the one
    compiled graph, chosen by the step count (a 0-d input), and every step equals eager's."""
    kw = dict(lr=0.01, betas=(0.9, 0.9))
    losses_e, model_e, _, _ = _run(eager.optim.RAdam, kw, compiled=False, steps=9)
    losses_c, model_c, _, f = _run(eager.optim.RAdam, kw, compiled=True, steps=9)
    np.testing.assert_allclose(losses_c, losses_e, rtol=1e-5)
    for pc, pe in zip(model_c.parameters(), model_e.parameters()):
        np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(f.retraces) <= 1
