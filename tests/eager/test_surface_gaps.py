"""Gaps of the PyTorch surface closed late: cumprod's exact gradient at zero inputs, random
in-place fills taking `generator=`, scatter with a reduction and scatter_reduce,
Embedding(max_norm=), MultiheadAttention with kdim/vdim, and bicubic interpolation. Each is
checked against finite differences (float64) and, when PyTorch is installed, against it."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import nn
from eager.autograd.gradcheck import gradcheck, gradgradcheck


def _torch():
    return pytest.importorskip("torch")


# -- cumprod at zeros ---------------------------------------------------------------------------
CUMPROD_INPUTS = np.array([[0.7, 0.0, 1.3, -0.8, 1.1], [0.0, 0.6, 2.0, 1.0, 0.5], [1.5, -0.5, 2.0, 0.0, 1.0],
                           [1.2, 0.9, -1.1, 0.8, 1.3]])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_gradient_at_zero_inputs_is_exact(dim):
    x = eager.tensor(CUMPROD_INPUTS, requires_grad=True)
    (x.cumprod(dim) * eager.tensor(np.arange(20.0).reshape(4, 5) + 1)).sum().backward()
    grad = x.grad.numpy()
    assert np.isfinite(grad).all()
    assert gradcheck(lambda a: a.cumprod(dim), (eager.tensor(CUMPROD_INPUTS, requires_grad=True),))
    assert gradgradcheck(lambda a: a.cumprod(dim), (eager.tensor(CUMPROD_INPUTS, requires_grad=True),))


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_gradient_at_zero_inputs_matches_pytorch(dim):
    torch = _torch()
    w = np.random.default_rng(0).standard_normal(CUMPROD_INPUTS.shape)
    xe, xt = eager.tensor(CUMPROD_INPUTS, requires_grad=True), torch.tensor(CUMPROD_INPUTS, requires_grad=True)
    (xe.cumprod(dim) * eager.tensor(w)).sum().backward()
    (xt.cumprod(dim) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_cumprod_gradient_with_several_zeros_in_a_slice_matches_pytorch():
    torch = _torch()
    x = np.array([[0.7, 0.0, 1.3, 0.0, 2.0], [0.0, 0.0, 2.0, 1.0, 0.5]])
    w = np.random.default_rng(1).standard_normal(x.shape)
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (xe.cumprod(1) * eager.tensor(w)).sum().backward()
    (xt.cumprod(1) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda a: a.cumprod(1), (eager.tensor(x, requires_grad=True),))


# -- generator= on in-place random fills and nn.init -------------------------------------------
FILLS = {
    "uniform_": lambda t, g: t.uniform_(-2.0, 3.0, generator=g),
    "normal_": lambda t, g: t.normal_(1.0, 0.5, generator=g),
    "bernoulli_": lambda t, g: t.bernoulli_(0.3, generator=g),
    "exponential_": lambda t, g: t.exponential_(2.0, generator=g),
    "random_": lambda t, g: t.random_(0, 7, generator=g),
    "init.uniform_": lambda t, g: nn.init.uniform_(t, -1.0, 1.0, generator=g),
    "init.normal_": lambda t, g: nn.init.normal_(t, 0.0, 2.0, generator=g),
    "init.xavier_uniform_": lambda t, g: nn.init.xavier_uniform_(t, generator=g),
    "init.kaiming_normal_": lambda t, g: nn.init.kaiming_normal_(t, generator=g),
    "init.trunc_normal_": lambda t, g: nn.init.trunc_normal_(t, std=0.5, generator=g),
    "init.orthogonal_": lambda t, g: nn.init.orthogonal_(t, generator=g),
    "init.sparse_": lambda t, g: nn.init.sparse_(t, 0.5, generator=g),
}


@pytest.mark.parametrize("name", sorted(FILLS))
def test_random_fills_draw_from_the_given_generator(name):
    """The same seed gives the same values whatever the global generator did in between, and
    the global generator is not advanced."""
    fill = FILLS[name]

    def draw(global_seed):
        eager.manual_seed(global_seed)
        t = eager.empty(6, 5)
        fill(t, eager.Generator().manual_seed(123))
        return t.numpy().copy(), eager.rand(3).numpy()

    (a, after_a), (b, _) = draw(0), draw(1)
    np.testing.assert_array_equal(a, b)
    eager.manual_seed(0)
    np.testing.assert_array_equal(after_a, eager.rand(3).numpy())  # the global stream untouched
    other = eager.empty(6, 5)
    fill(other, eager.Generator().manual_seed(124))
    assert not np.array_equal(a, other.numpy())


def test_uniform_and_normal_fills_keep_their_distribution_with_a_generator():
    g = eager.Generator().manual_seed(0)
    u = eager.empty(20000).uniform_(-2.0, 3.0, generator=g).numpy()
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = eager.empty(20000, dtype=eager.float64).normal_(1.0, 0.5, generator=g).numpy()
    assert n.dtype == np.float64 and abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 0.5) < 0.02
