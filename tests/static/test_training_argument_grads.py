"""`backward()` inside a compiled function reaching a leaf passed as an argument: the
argument's `.grad` is accumulated after the call, as eager's AccumulateGrad does."""
import numpy as np
import pytest

import eager
import eager.nn as nn
import static


def _pair(fn):
    return fn, static.compile(fn)


def _leaf(values, requires_grad=True):
    return eager.tensor(values, requires_grad=requires_grad)


def test_an_argument_leaf_gets_its_grad_accumulated_across_calls_as_in_eager():
    def f(x, w):
        loss = (x * x * w).sum()
        loss.backward()
        return loss

    eager_f, compiled_f = _pair(f)
    w = eager.tensor([1.0, -1.0, 2.0])
    x_e, x_c = _leaf([1.0, 2.0, 3.0]), _leaf([1.0, 2.0, 3.0])
    assert x_c.grad is None
    for _ in range(3):
        np.testing.assert_allclose(compiled_f(x_c, w).item(), eager_f(x_e, w).item())
        np.testing.assert_allclose(x_c.grad.numpy(), x_e.grad.numpy())
    np.testing.assert_allclose(x_c.grad.numpy(), 3 * 2 * np.array([1.0, 2.0, 3.0]) * [1.0, -1.0, 2.0])


def test_each_call_accumulates_into_its_own_arguments_grad():
    @static.compile
    def f(x):
        (x ** 3).sum().backward()

    a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    b.grad = eager.tensor([10.0, 10.0])  # an existing .grad is accumulated into
    f(a)
    f(b)
    f(a)
    np.testing.assert_allclose(a.grad.numpy(), 2 * 3 * np.array([1.0, 4.0]))
    np.testing.assert_allclose(b.grad.numpy(), 10 + 3 * np.array([9.0, 16.0]))


def test_arguments_and_captured_parameters_together_with_an_optimizer_step_equal_eager():
    def build():
        eager.manual_seed(0)
        model = nn.Linear(3, 2)
        opt = eager.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).sum() + (x ** 2).sum()
            loss.backward()
            opt.step()
            return loss
        return model, step

    (m_e, f_e), (m_c, f_c) = build(), build()
    f_c = static.compile(f_c)
    data = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    x_e, x_c = _leaf(data), _leaf(data)
    for _ in range(3):
        np.testing.assert_allclose(f_c(x_c).item(), f_e(x_e).item(), rtol=1e-5)
        np.testing.assert_allclose(x_c.grad.numpy(), x_e.grad.numpy(), rtol=1e-5, atol=1e-6)
        for pc, pe in zip(m_c.parameters(), m_e.parameters()):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_backward_with_inputs_limits_accumulation_to_the_named_argument():
    def f(x, y):
        (x * y).sum().backward(inputs=[x])

    eager_f, compiled_f = _pair(f)
    args_e = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    args_c = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    eager_f(*args_e)
    compiled_f(*args_c)
    np.testing.assert_allclose(args_c[0].grad.numpy(), args_e[0].grad.numpy())
    assert args_e[1].grad is None and args_c[1].grad is None


def test_reading_an_arguments_grad_inside_after_backward_gives_the_accumulated_value():
    def f(x):
        (x ** 2).sum().backward()
        return x.grad * 1.0

    eager_f, compiled_f = _pair(f)
    x_e, x_c = _leaf([1.0, -2.0]), _leaf([1.0, -2.0])
    for _ in range(2):
        np.testing.assert_allclose(compiled_f(x_c).numpy(), eager_f(x_e).numpy())
        np.testing.assert_allclose(x_c.grad.numpy(), x_e.grad.numpy())


def test_reading_an_arguments_grad_inside_before_backward_is_refused():
    @static.compile
    def f(x):
        seen = x.grad
        (x ** 2).sum().backward()
        return seen

    with pytest.raises(static.TraceError, match="before a backward"):
        f(_leaf([1.0, 2.0]))
