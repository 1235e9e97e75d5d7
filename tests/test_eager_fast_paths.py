"""Eager's fast paths for model steps give PyTorch's values and gradients: a stack times a
matrix as one product (forward and the matrix's gradient), checked against PyTorch and
finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.ops import linalg


@pytest.mark.parametrize("shape", [(16, 32, 64), (4, 7, 3, 5), (2, 1, 5)])
def test_a_stack_times_a_matrix_is_one_product(shape, monkeypatch):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal((shape[-1], 9)).astype(np.float32)
    seen = []
    real = np.matmul

    def counting(x, y, *args, **kw):
        seen.append(x.shape)
        return real(x, y, *args, **kw)

    monkeypatch.setattr(linalg.np, "matmul", counting)
    got = linalg.fold_matmul(np, a, b)
    monkeypatch.undo()
    assert seen == [(int(np.prod(shape[:-1])), shape[-1])]  # one 2-d product of all the rows
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)
    assert got.shape == shape[:-1] + (9,)


def test_a_strided_stack_is_not_folded():
    a = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 4, 3).transpose(0, 2, 1)  # not C-contiguous
    b = np.ones((4, 2))
    np.testing.assert_array_equal(linalg.fold_matmul(np, a, b), np.matmul(a, b))


def test_the_matrix_gradient_of_a_stack_product_is_one_product():
    rng = np.random.default_rng(1)
    a = eager.tensor(rng.standard_normal((3, 4, 5)), requires_grad=True)
    b = eager.tensor(rng.standard_normal((5, 6)), requires_grad=True)
    assert eager.autograd.gradcheck(lambda x, y: (x @ y).sin(), (a, b))
    (a @ b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), a.detach().numpy().reshape(-1, 5).T @ np.ones((12, 6)), rtol=1e-12)


def test_a_stack_product_and_its_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((2, 3, 4, 8)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    ea, eb = eager.tensor(A, requires_grad=True), eager.tensor(B, requires_grad=True)
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    (ea @ eb).tanh().sum().backward()
    (ta @ tb).tanh().sum().backward()
    np.testing.assert_allclose((ea @ eb).detach().numpy(), (ta @ tb).detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-5)
