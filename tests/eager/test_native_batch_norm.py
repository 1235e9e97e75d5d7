"""Eager's batch norm in training as one op and its gradients as one op (gmops.normalization):
the native kernel gives the NumPy code's results to rounding, PyTorch's values, gradients,
running statistics and node names, and the op differentiates twice."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck, gradgradcheck
from gmops import conv as C
from gmops import normalization as N

F = eager.nn.functional


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 4, 5, 6), (6, 3), (3, 2, 7)])
def test_native_batch_norm_matches_numpy_code(shape, dtype, monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    w, b = rng.standard_normal(shape[1]).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    native = C.conv_native()
    if native is None or native.batch_norm(x, w, b, 1e-5) is None:
        pytest.skip("eager's native kernels cannot be built here (no C++ compiler)")
    y = N._batch_norm(np, x, w, b, 1e-5)
    grads = N._batch_norm_backward(np, g, x, w, 1e-5)
    monkeypatch.setattr(C, "_conv_kernels", False)  # the NumPy code from here on
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, N._batch_norm(np, x, w, b, 1e-5), rtol=tol, atol=tol)
    for ours, numpy_code in zip(grads, N._batch_norm_backward(np, g, x, w, 1e-5)):
        assert ours.dtype == x.dtype
        np.testing.assert_allclose(ours, numpy_code, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("shape", [(16, 4, 6, 6), (10, 3), (5, 3, 8)])
def test_batch_norm_module_matches_pytorch(shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 2 - 1).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w, b = rng.standard_normal(shape[1]).astype(np.float32), rng.standard_normal(shape[1]).astype(np.float32)
    ours = (eager.nn.BatchNorm2d if len(shape) == 4 else eager.nn.BatchNorm1d)(shape[1])
    theirs = (torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d)(shape[1])
    ours.weight.data, ours.bias.data = eager.tensor(w), eager.tensor(b)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
        theirs.bias.copy_(torch.tensor(b))
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = ours(xe), theirs(xt)
    assert ye.grad_fn.name() == yt.grad_fn.name()
    ye.backward(eager.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.running_mean.numpy(), theirs.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5, atol=1e-6)


def test_batch_norm_gradients_twice():
    rng = np.random.default_rng(2)
    x = eager.tensor(rng.standard_normal((4, 3, 2, 3)), requires_grad=True)
    w = eager.tensor(rng.standard_normal(3), requires_grad=True)
    b = eager.tensor(rng.standard_normal(3), requires_grad=True)

    def f(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_batch_norm_refuses_what_pytorch_refuses():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(eager.zeros(1, 3), None, None, eager.ones(3), eager.zeros(3), training=True)
    with pytest.raises(RuntimeError, match="batch_norm"):
        F.batch_norm(eager.zeros(4, 3), None, None, eager.ones(2), eager.zeros(2), training=True)
