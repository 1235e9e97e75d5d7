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


def test_ignored_targets_are_fused_and_out_of_range_ones_take_the_op_path():
    x = eager.randn(4, 3, requires_grad=True)
    assert _fused_losses.eligible(x, eager.tensor([0, -100, 1, 2]), None, -100, "mean", 0.0)
    assert not _fused_losses.eligible(x, eager.tensor([0, 3, 1, 2]), None, -100, "mean", 0.0)
    assert not _fused_losses.eligible(x, eager.tensor([0, -1, 1, 2]), None, -100, "mean", 0.0)
    with pytest.raises(IndexError):
        F.cross_entropy(x, eager.tensor([0, 3, 1, 2]))
    with pytest.raises(IndexError):
        F.cross_entropy(x, eager.tensor([0, 3, 1, 2]), ignore_index=0)


def test_the_nodes_have_pytorchs_edges():
    x = eager.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(x, eager.tensor([0, 2, 1, 2]))
    assert len(loss.grad_fn.next_functions) == 1
    lsm = loss.grad_fn.next_functions[0][0]
    assert len(lsm.next_functions) == 1 and lsm.next_functions[0][0].variable is x


def test_a_target_changed_in_place_before_backward_is_refused():
    x = eager.randn(4, 3, requires_grad=True)
    y = eager.tensor([0, 2, 1, 2])
    loss = F.cross_entropy(x, y)
    y.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ignored_targets_against_pytorch(reduction, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    X = (rng.standard_normal((40, 7)) * 2).astype(dtype)
    T = rng.integers(0, 7, 40)
    T[::3] = 0
    for ignore in (0, -100, 6):
        ours = eager.tensor(X, requires_grad=True)
        theirs = torch.tensor(X, requires_grad=True)
        a = F.cross_entropy(ours, eager.tensor(T), ignore_index=ignore, reduction=reduction)
        b = torch.nn.functional.cross_entropy(theirs, torch.tensor(T), ignore_index=ignore, reduction=reduction)
        a.sum().backward()
        b.sum().backward()
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol, atol=tol)


def test_every_target_ignored_gives_nan_and_a_zero_gradient():
    x = eager.randn(3, 4, requires_grad=True)
    loss = F.cross_entropy(x, eager.tensor([1, 1, 1]), ignore_index=1)
    assert np.isnan(loss.item())
    loss.backward()
    assert not x.grad.numpy().any()
    assert F.cross_entropy(x, eager.tensor([1, 1, 1]), ignore_index=1, reduction="sum").item() == 0.0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ignored_targets_have_exact_first_and_second_derivatives(reduction):
    x = eager.randn(6, 4, dtype=eager.float64, requires_grad=True)
    y = eager.tensor([0, 3, -100, 1, -100, 2])
    assert eager.autograd.gradcheck(lambda a: F.cross_entropy(a, y, reduction=reduction), (x,))
    assert eager.autograd.gradgradcheck(lambda a: F.cross_entropy(a, y, reduction=reduction), (x,))
    assert eager.autograd.gradcheck(lambda a: F.nll_loss(a, y, reduction=reduction), (x,))


def test_the_numpy_code_without_the_native_kernels_agrees(monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((16, 9)).astype(np.float32)
    T = eager.tensor(np.where(rng.random(16) < 0.2, -100, rng.integers(0, 9, 16)))
    native = eager.tensor(X, requires_grad=True)
    F.cross_entropy(native, T).backward()
    monkeypatch.setattr(_fused_losses._native, "cross_entropy_forward", lambda *a: None)
    monkeypatch.setattr(_fused_losses._native, "log_softmax_backward", lambda *a: None)
    numpy_code = eager.tensor(X, requires_grad=True)
    loss = F.cross_entropy(numpy_code, T)
    loss.backward()
    np.testing.assert_allclose(loss.item(), F.cross_entropy(eager.tensor(X), T).item(), rtol=1e-6)
    np.testing.assert_allclose(numpy_code.grad.numpy(), native.grad.numpy(), rtol=1e-5, atol=1e-7)
    logp = F.log_softmax(eager.tensor(X), 1).numpy()
    np.testing.assert_array_equal(_fused_losses.log_softmax_rows(X), logp)  # the op's bits


def test_non_finite_rows_follow_log_softmax():
    x = eager.tensor([[1.0, float("inf"), 2.0], [-float("inf")] * 3, [float("nan"), 1.0, 2.0], [0.5, 1.0, 2.0]])
    got = F.cross_entropy(x, eager.tensor([0, 1, 2, 2]), reduction="none").numpy()
    # a row holding +inf or nan, or all -inf, is nan throughout, as PyTorch's log_softmax
    expect = -np.array([np.nan, np.nan, np.nan, np.log(np.exp(2.0) / np.exp([0.5, 1.0, 2.0]).sum())])
    np.testing.assert_allclose(got, expect, rtol=1e-6)
    x.requires_grad_(True)
    F.cross_entropy(x, eager.tensor([0, 1, 2, 2])).backward()
    assert np.isnan(x.grad.numpy()[:3]).all()


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
