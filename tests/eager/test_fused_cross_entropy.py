"""cross_entropy's common case as two nodes on the arrays (nn/_fused_losses.py): PyTorch's
graph (NllLossBackward0 then LogSoftmaxBackward0), values and gradients against PyTorch and
finite differences; and a .grad made by such a node is a tensor of its own (no _base)."""
import numpy as np
import pytest

import eager
from eager.nn import _fused_losses

F = eager.nn.functional


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_cross_entropy_gradients(reduction):
    eager.manual_seed(0)
    x = eager.randn(6, 5, dtype=eager.float64, requires_grad=True)
    y = eager.randint(0, 5, (6,))
    assert _fused_losses.eligible(x, y, None, -100, reduction, 0.0)
    assert eager.autograd.gradcheck(lambda x: F.cross_entropy(x, y, reduction=reduction), (x,))
    assert eager.autograd.gradgradcheck(lambda x: F.cross_entropy(x, y, reduction=reduction), (x,))


def test_fused_cross_entropy_graph_is_pytorchs():
    x = eager.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(x, eager.tensor([0, 2, 1, 2]))
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert loss.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"


def test_ignored_or_out_of_range_targets_take_the_op_path():
    x = eager.randn(4, 3, requires_grad=True)
    assert not _fused_losses.eligible(x, eager.tensor([0, -100, 1, 2]), None, -100, "mean", 0.0)
    with pytest.raises(IndexError):
        F.cross_entropy(x, eager.tensor([0, 3, 1, 2]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_cross_entropy_against_pytorch(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    X = (rng.standard_normal((32, 10)) * 3).astype(dtype)
    T = rng.integers(0, 10, 32)
    ours = eager.tensor(X, requires_grad=True)
    theirs = torch.tensor(X, requires_grad=True)
    a = F.cross_entropy(ours, eager.tensor(T))
    b = torch.nn.functional.cross_entropy(theirs, torch.tensor(T))
    a.backward()
    b.backward()
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(a.item(), b.item(), rtol=tol)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)


def test_a_grad_made_by_a_fused_node_is_no_alias():
    lin = eager.nn.Linear(4, 3)
    F.cross_entropy(lin(eager.randn(5, 4)), eager.tensor([0, 1, 2, 0, 1])).backward()
    for p in lin.parameters():
        assert p.grad._base is None
        assert p.grad.is_contiguous()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_takes_the_fused_node_against_pytorch(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 4))
    T = rng.integers(0, 4, 8)
    ours = eager.tensor(X, requires_grad=True)
    theirs = torch.tensor(X, requires_grad=True)
    a = F.nll_loss(F.log_softmax(ours, 1), eager.tensor(T), reduction=reduction)
    b = torch.nn.functional.nll_loss(torch.log_softmax(theirs, 1), torch.tensor(T), reduction=reduction)
    assert a.grad_fn.name() == "NllLossBackward0"
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    x = eager.tensor(X, requires_grad=True)
    assert eager.autograd.gradgradcheck(lambda x: F.nll_loss(x * 2.0, eager.tensor(T), reduction=reduction), (x,))
