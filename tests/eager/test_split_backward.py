"""split's gradient (gmops SPLIT's VJP): the parts' gradients concatenated, as PyTorch's
SplitWithSizesBackward0 (cat) does, a -0.0 element kept; parts without a gradient read as
zeros; finite differences and double backward through it."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck

torch = pytest.importorskip("torch")


def test_every_part_with_a_gradient_is_their_concatenation_as_torchs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 12)).astype(np.float32)
    gs = [rng.standard_normal((4, 6, 4)).astype(np.float32) for _ in range(3)]
    gs[1][0, 0, 0] = -0.0
    a = eager.tensor(x, requires_grad=True)
    eager.autograd.backward(list((a * 1.0).split(4, dim=2)), [eager.tensor(g) for g in gs])
    t = torch.tensor(x, requires_grad=True)
    torch.autograd.backward(list((t * 1.0).split(4, dim=2)), [torch.tensor(g) for g in gs])
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())
    assert np.signbit(a.grad.numpy()[0, 0, 4]) == np.signbit(t.grad.numpy()[0, 0, 4])


@pytest.mark.parametrize("used", [(0,), (2,), (0, 2), (0, 1, 2)])
def test_parts_used_or_not_match_torch(used):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 9)).astype(np.float64)
    a, t = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for v in (a, t):
        parts = v.split([2, 3, 4], dim=1)
        sum(parts[i].sum() * (i + 1) for i in used).backward()
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())


def test_gradcheck_and_double_backward():
    x = eager.tensor(np.random.default_rng(2).standard_normal((3, 7)), requires_grad=True)

    def fn(v):
        p, q = v.split([3, 4], dim=1)
        return (p * p).sum(1) + (q * q * q).sum(1)

    assert gradcheck(fn, (x,))
    (g,) = eager.autograd.grad(fn(x).sum(), [x], create_graph=True)
    (gg,) = eager.autograd.grad(g.sum(), [x])
    want = np.concatenate([np.full((3, 3), 2.0), 6.0 * x.detach().numpy()[:, 3:]], axis=1)
    np.testing.assert_allclose(gg.numpy(), want, rtol=1e-12)
