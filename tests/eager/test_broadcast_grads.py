"""Backward through broadcast gradients: a sum's backward hands on an expanded gradient, and
elementwise ops on it are computed once per distinct element (eager._dispatch's
_on_broadcast_base). The values must be exactly those of the materialized computation,
and nothing of it may leak outside a backward pass."""
import numpy as np
import pytest

import eager
from eager._grad_mode import STATE

N = 10_000  # above the size from which broadcast operands are compacted


def _leaf(rng, shape=(N,)):
    return eager.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)


def test_w1_gradients_match_the_hand_derivation():
    rng = np.random.default_rng(0)
    a, w1, w2, w3, w4 = (_leaf(rng) for _ in range(5))
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    (10 - d).sum().backward()
    A, W1, W2, W3, W4 = (t.detach().numpy() for t in (a, w1, w2, w3, w4))
    np.testing.assert_array_equal(w3.grad.numpy(), -(W1 * A))
    np.testing.assert_array_equal(w1.grad.numpy(), -W3 * A)
    np.testing.assert_allclose(a.grad.numpy(), -(W3 * W1 + W4 * W2), rtol=1e-6)


@pytest.mark.parametrize("make_loss, grad_of_x", [
    (lambda x: (-x).sum(), lambda x: -np.ones_like(x)),
    (lambda x: (3.0 - x).mean(dim=0).sum(), lambda x: np.full_like(x, -1.0 / x.shape[0])),
    (lambda x: eager.exp(x.sum(dim=1, keepdim=True) * 0.0).sum() * x.sum(), None),
    (lambda x: (x / 4.0).sum(), lambda x: np.full_like(x, 0.25)),
])
def test_ops_on_expanded_gradients_give_the_materialized_values(make_loss, grad_of_x):
    rng = np.random.default_rng(1)
    x = _leaf(rng, (100, 200))
    make_loss(x).backward()
    # the same backward with every gradient materialized: create_graph records a graph
    # and so never compacts
    y = eager.tensor(x.detach().numpy(), requires_grad=True)
    (g,) = eager.autograd.grad(make_loss(y), y, create_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), g.detach().numpy())
    if grad_of_x is not None:
        np.testing.assert_allclose(x.grad.numpy(), grad_of_x(x.detach().numpy()), rtol=1e-6)


def test_leaf_gradients_stay_writable():
    x = _leaf(np.random.default_rng(2))
    (-x).sum().backward()
    x.grad.add_(1.0)  # .grad is the leaf's own array, never a broadcast view
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(N, np.float32))


def test_outside_backward_results_are_ordinary_tensors():
    e = eager.ones(1).expand(N)
    y = -e
    y.add_(1.0)  # a fresh, writable result, as in PyTorch
    np.testing.assert_array_equal(y.numpy(), np.zeros(N, np.float32))
    assert STATE.compact_broadcasts is False


def test_flag_is_restored_after_a_failing_backward():
    x = _leaf(np.random.default_rng(3))

    def boom(g):
        raise ValueError("hook failed")

    y = -x
    y.register_hook(boom)
    with pytest.raises(ValueError, match="hook failed"):
        y.sum().backward()
    assert STATE.compact_broadcasts is False
    assert eager.is_grad_enabled()


def test_create_graph_keeps_gradients_differentiable():
    x = _leaf(np.random.default_rng(4), (N,))
    (g,) = eager.autograd.grad((-(x * x)).sum(), x, create_graph=True)
    (gg,) = eager.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(gg.numpy(), np.full(N, -2.0, np.float32))


def test_negating_a_sums_gradient_costs_one_element():
    """The point of compaction: `-g` on the expanded gradient of a sum stays a broadcast
    (one element computed) instead of a pass over every element."""
    x = _leaf(np.random.default_rng(5))
    seen = []
    d = x * 2.0
    d.register_hook(lambda g: seen.append(g.numpy()))
    (10 - d).sum().backward()
    assert seen[0].strides == (0,)
    np.testing.assert_array_equal(seen[0], np.full(N, -1.0, np.float32))
