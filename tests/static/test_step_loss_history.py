"""The loss a compiled training step returns after `loss.backward()` inside has eager's
autograd status: it requires grad, is not a leaf, has a grad_fn, and a second backward through
it raises eager's "backward through the graph a second time" error."""
import numpy as np
import pytest
from training_steps import mse, training_step

import eager
import eager.nn as nn
import eager.nn.functional as F
import static

X = eager.tensor(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))
Y = eager.tensor(np.random.default_rng(1).standard_normal((8, 1)).astype(np.float32))


def _setup():
    eager.manual_seed(0)
    model = nn.Linear(3, 1)
    return training_step(model, eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), mse)


def _status(t):
    return t.requires_grad, t.grad_fn is not None, t.is_leaf


@pytest.mark.parametrize("calls", [1, 2, 3])
def test_the_returned_loss_has_eager_s_status(calls):
    eager_step, compiled_step = _setup(), static.compile(_setup())
    for _ in range(calls):
        expected, got = eager_step(X, Y), compiled_step(X, Y)
    assert _status(got) == _status(expected) == (True, True, False)
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-5)
    for loss in (expected, got):
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()


def test_a_detached_loss_has_no_history_in_both_modes():
    eager.manual_seed(0)
    model = nn.Linear(3, 1)

    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss.detach(), loss * 2

    compiled = static.compile(step)
    for _ in range(2):
        model.zero_grad()
        detached, doubled = compiled(X, Y)
        assert _status(detached) == (False, False, True)
        assert doubled.requires_grad  # computed from the loss after its backward: a history, as in eager
    model.zero_grad()
    e_detached, e_doubled = step(X, Y)
    assert _status(e_detached) == (False, False, True) and e_doubled.requires_grad


def test_with_retain_graph_the_loss_can_go_backward_again():
    eager.manual_seed(0)
    model = nn.Linear(3, 1)

    @static.compile
    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward(retain_graph=True)
        return loss

    model.zero_grad()
    loss = step(X, Y)
    first = model.weight.grad.numpy().copy()
    loss.backward()  # the compiled backward: accumulates once more
    np.testing.assert_allclose(model.weight.grad.numpy(), 2 * first, rtol=1e-5)
