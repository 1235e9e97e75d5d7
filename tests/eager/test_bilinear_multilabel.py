"""nn.Bilinear / F.bilinear and nn.MultiLabelSoftMarginLoss: formulas, finite differences,
the compiled mode, PyTorch where installed."""
import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import eager.nn.functional as F
import static
from eager import nn

RNG = np.random.default_rng(0)
X1, X2 = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 2))
W, B = RNG.standard_normal((5, 3, 2)), RNG.standard_normal(5)


def test_bilinear_values_gradients_and_compiled():
    expected = np.einsum("ni,oij,nj->no", X1, W, X2) + B
    np.testing.assert_allclose(F.bilinear(eager.tensor(X1), eager.tensor(X2), eager.tensor(W), eager.tensor(B)).numpy(),
                               expected, rtol=1e-12)
    w = eager.tensor(W, requires_grad=True)
    F.bilinear(eager.tensor(X1), eager.tensor(X2), w).sum().backward()
    fd = central_difference_grad(lambda v: float(F.bilinear(eager.tensor(X1), eager.tensor(X2), eager.tensor(v)).sum()),
                                 W)
    np.testing.assert_allclose(w.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
    _, grads = static.value_and_grad(lambda a, b: F.bilinear(a, b, eager.tensor(W)).sum(), argnums=(0, 1))(X1, X2)
    a, b = eager.tensor(X1, requires_grad=True), eager.tensor(X2, requires_grad=True)
    F.bilinear(a, b, eager.tensor(W)).sum().backward()
    np.testing.assert_allclose(grads[0], a.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(grads[1], b.grad.numpy(), rtol=1e-10)
    layer = nn.Bilinear(3, 2, 5)
    assert tuple(layer.weight.shape) == (5, 3, 2) and tuple(layer(eager.tensor(X1, dtype=eager.float32),
                                                                  eager.tensor(X2, dtype=eager.float32)).shape) == (4, 5)
    assert np.abs(layer.weight.detach().numpy()).max() <= 1 / np.sqrt(3)
    with pytest.raises(RuntimeError, match="bilinear: expected weight"):
        F.bilinear(eager.tensor(X1), eager.tensor(X2), eager.tensor(W[:, :2]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_soft_margin_loss(reduction):
    x, y, w = RNG.standard_normal((4, 3)), (RNG.random((4, 3)) > 0.5).astype(float), RNG.random(3)
    log_sig = lambda v: -np.log1p(np.exp(-v))  # noqa: E731
    per_sample = (-(y * log_sig(x) + (1 - y) * log_sig(-x)) * w).mean(-1)
    expected = {"mean": per_sample.mean(), "sum": per_sample.sum(), "none": per_sample}[reduction]
    loss = nn.MultiLabelSoftMarginLoss(weight=eager.tensor(w), reduction=reduction)
    t = eager.tensor(x, requires_grad=True)
    out = loss(t, eager.tensor(y))
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    out.sum().backward()
    fd = central_difference_grad(lambda v: float(loss(eager.tensor(v), eager.tensor(y)).sum()), x)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-9)


def test_match_pytorch():
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(
        F.bilinear(eager.tensor(X1), eager.tensor(X2), eager.tensor(W), eager.tensor(B)).numpy(),
        torch.nn.functional.bilinear(torch.tensor(X1), torch.tensor(X2), torch.tensor(W), torch.tensor(B)).numpy(),
        rtol=1e-12)
    x, y = RNG.standard_normal((4, 3)), (RNG.random((4, 3)) > 0.5).astype(float)
    np.testing.assert_allclose(F.multilabel_soft_margin_loss(eager.tensor(x), eager.tensor(y)).item(),
                               torch.nn.functional.multilabel_soft_margin_loss(torch.tensor(x), torch.tensor(y)).item(),
                               rtol=1e-12)
