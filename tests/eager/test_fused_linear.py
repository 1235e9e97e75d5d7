"""F.linear on a batch of rows is one node (nn/_fused_linear.py): its values and gradients
against the op-by-op linear and PyTorch, its names, and the cases that keep the op path."""
import numpy as np
import pytest

import eager
from eager.nn import _fused_linear
from eager.nn.functional.linear_maps import linear

F = eager.nn.functional


def _data(dtype=eager.float64):
    eager.manual_seed(0)
    x = eager.randn(5, 4, dtype=dtype, requires_grad=True)
    w = eager.nn.Parameter(eager.randn(3, 4, dtype=dtype))
    b = eager.nn.Parameter(eager.randn(3, dtype=dtype))
    return x, w, b


def test_fused_linear_runs_and_names_its_node_as_pytorch():
    x, w, b = _data()
    assert _fused_linear.eligible(x, w, b) and _fused_linear.eligible(x, w, None)
    assert F.linear(x, w, b).grad_fn.name() == "AddmmBackward0"
    assert F.linear(x, w).grad_fn.name() == "MmBackward0"
    assert F.linear(x.reshape(5, 1, 4), w).grad_fn.name() == "UnsafeViewBackward0"


@pytest.mark.parametrize("with_bias", [True, False])
def test_fused_linear_gradients_match_finite_differences(with_bias):
    x, w, b = _data()
    args = (x, w, b) if with_bias else (x, w)
    assert eager.autograd.gradcheck(lambda *a: F.linear(*a), args)
    assert eager.autograd.gradgradcheck(lambda *a: F.linear(*a), args)


def test_fused_linear_matches_the_op_path():
    x, w, b = _data(eager.float32)
    out = F.linear(x, w, b)
    out.backward(eager.ones_like(out))
    grads = [t.grad.numpy().copy() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    ref = _fused_linear._linear_ops(x, w, b)
    ref.backward(eager.ones_like(ref))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    for g, t in zip(grads, (x, w, b)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_fused_linear_sees_weight_edits_and_keeps_no_grad():
    x, w, b = _data()
    with eager.no_grad():
        w.data.mul_(2.0)
        out = F.linear(x, w, b)
    assert not out.requires_grad
    np.testing.assert_allclose(out.numpy(), x.detach().numpy() @ w.detach().numpy().T + b.detach().numpy())


def test_mixed_dtypes_and_bad_shapes_take_the_op_path_and_its_errors():
    x, w, b = _data()
    assert not _fused_linear.eligible(x.float(), w, b)
    assert not _fused_linear.eligible(x, w, b[:2])
    with pytest.raises(RuntimeError):
        linear(x[:, :3], w, b)


def test_fused_linear_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    X, W, B, G = (rng.standard_normal(s).astype(np.float32) for s in ((7, 6), (4, 6), (4,), (7, 4)))
    ours = [eager.tensor(a, requires_grad=True) for a in (X, W, B)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (X, W, B)]
    o, t = F.linear(*ours), torch.nn.functional.linear(*theirs)
    o.backward(eager.tensor(G))
    t.backward(torch.tensor(G))
    np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, c in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy(), rtol=1e-5, atol=1e-5)
