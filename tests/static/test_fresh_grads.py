"""A `.grad` a compiled call makes is a new tensor at every call, as eager's. After
`zero_grad()` (set to None), eager's backward makes a new gradient tensor each step, and so
does `p.grad = value`: a gradient kept from one step (logged, compared with the next) keeps
its values. The compiled call binds each such .grad after its graph ran, as a new tensor over
the graph's result (static.training.CallPrep.fresh_grads, bridge.write_back's `rebind`),
where it used to bind one tensor of the trace's and overwrite it every call: the kept
gradients of every step then all read the last step's values. Gradients accumulated across
calls (no zero_grad) still go into the tensor the call finds, in place, as eager's."""
import numpy as np
import pytest

import eager
import eager.nn as nn
import static

X = eager.tensor(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))


def _setup(opt_cls=eager.optim.SGD, **kw):
    eager.manual_seed(0)
    model = nn.Linear(3, 2)
    return model, opt_cls(model.parameters(), lr=0.1, **kw)


def _kept_grads(step, model, compiled, steps=3):
    f = static.compile(step) if compiled else step
    kept = []
    for _ in range(steps):
        f(X)
        kept.append(model.weight.grad)
    return kept


@pytest.mark.parametrize("opt_cls,kw", [(eager.optim.SGD, {}), (eager.optim.Adam, {}),
                                        (eager.optim.SGD, {"momentum": 0.9})])
def test_gradients_kept_from_each_step_are_their_own_tensors(opt_cls, kw):
    runs = []
    for compiled in (False, True):
        model, opt = _setup(opt_cls, **kw)

        def step(x, model=model, opt=opt):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()

        kept = _kept_grads(step, model, compiled)
        assert len({id(g) for g in kept}) == len(kept), "one .grad tensor shared by every step"
        runs.append([g.numpy().copy() for g in kept])
    for want, got in zip(*runs):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert not np.array_equal(runs[1][0], runs[1][-1])  # the steps' gradients differ: each kept its own


def test_a_grad_set_inside_the_function_is_new_at_every_call():
    runs = []
    for compiled in (False, True):
        model, opt = _setup()

        def step(x, model=model, opt=opt):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            model.weight.grad = model.weight.grad * 0.5  # a new tensor in eager
            opt.step()

        kept = _kept_grads(step, model, compiled)
        assert len({id(g) for g in kept}) == len(kept)
        runs.append([g.numpy().copy() for g in kept])
    for want, got in zip(*runs):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_gradients_accumulated_across_calls_go_into_the_tensor_the_call_finds():
    runs = []
    for compiled in (False, True):
        model, _ = _setup()
        model.zero_grad()

        def accumulate(x, model=model):
            model(x).pow(2).sum().backward()

        kept = _kept_grads(accumulate, model, compiled)
        # eager: the first backward makes the .grad, the next ones add into it in place
        assert kept[1] is kept[2]
        runs.append([g.numpy().copy() for g in kept])
    for want, got in zip(*runs):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_fresh_grad_that_is_an_input_is_copied_not_shared():
    model, _ = _setup()
    given = eager.ones(2, 3)

    def assign(g, model=model):
        model.weight.grad = g  # the graph's result is the input's own buffer

    f = static.compile(assign)
    f(given)
    assert model.weight.grad is not given and not np.shares_memory(model.weight.grad.numpy(), given.numpy())
    np.testing.assert_array_equal(model.weight.grad.numpy(), given.numpy())
    first = model.weight.grad
    f(given * 2)
    assert model.weight.grad is not first
    np.testing.assert_array_equal(first.numpy(), np.ones((2, 3), np.float32))
