"""The backward engine sums the gradients meeting at one slot in place when nothing else
holds the buffered one (engine._sum): these check that a gradient someone else can see (a
hook's capture, retain_grad's .grad, the same tensor passed to two operands, a user's
gradient) is never written into, against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import engine

torch = pytest.importorskip("torch")


def _both(fn):
    outs = []
    for lib in (eager, torch):
        outs.append(fn(lib))
    return outs


def _close(a, b):
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x), y.detach().numpy() if hasattr(y, "detach") else np.asarray(y),
                                   rtol=1e-6, atol=1e-6)


def test_a_recurrent_weight_sums_many_gradients_like_pytorch():
    def run(lib):
        lib.manual_seed(0)
        w = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        h = lib.tensor(np.ones((2, 3)))
        for _ in range(5):
            h = lib.tanh(h @ w[:, :3])
        h.sum().backward()
        return [w.grad]
    _close(*_both(run))


def test_a_captured_gradient_is_not_written_into():
    def run(lib):
        x = lib.tensor(np.arange(4.0), requires_grad=True)
        seen = []
        y = x * 2.0
        y.register_hook(lambda g: seen.append(g))
        z = y + 0.0  # its backward passes the gradient on unchanged
        (z * 3.0 + y * 5.0).sum().backward()
        return [seen[0], x.grad]
    _close(*_both(run))


def test_retained_and_shared_gradients_stay_as_they_were():
    def run(lib):
        a = lib.tensor(np.arange(3.0), requires_grad=True)
        b = a * 1.0
        b.retain_grad()
        c = b + b  # the same gradient to both operands of the add
        d = c * 2.0 + b
        d.sum().backward()
        return [b.grad, a.grad]
    _close(*_both(run))


def test_a_users_gradient_is_not_written_into():
    g = eager.tensor(np.ones(3))
    a = eager.tensor(np.arange(3.0), requires_grad=True)
    b = a * 2.0
    eager.autograd.backward([b, b * 3.0], [g, g])
    np.testing.assert_array_equal(g.numpy(), np.ones(3))
    np.testing.assert_array_equal(a.grad.numpy(), np.full(3, 8.0))


def test_the_sum_is_in_place_only_for_an_unshared_buffer():
    p = eager.tensor(np.ones(3))
    q = eager.tensor(np.full(3, 2.0))
    prev = p  # the caller's local, as in the engine's loop
    slots = [p]
    del p
    out = engine._sum(prev, q, False)
    assert out is prev and slots[0] is prev
    np.testing.assert_array_equal(prev.numpy(), np.full(3, 3.0))
    held = [prev]  # another holder: a new tensor, the buffered one unchanged
    out = engine._sum(prev, q, False)
    assert out is not prev and np.array_equal(prev.numpy(), np.full(3, 3.0)) and held
