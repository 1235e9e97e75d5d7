"""softmax along the last axis of many short rows (attention scores) takes a path of its own
(gmops.reductions._softmax_rows): PyTorch's values, NaN and fully masked rows included, odd
widths, both float dtypes, and the gradient."""
from __future__ import annotations

import numpy as np
import pytest

import eager


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(16, 4, 32, 32), (300, 33), (700, 7), (64, 256)])
def test_softmax_of_short_rows_matches_pytorch(shape, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    rows = x.reshape(-1, shape[-1])
    rows[3, 2] = np.nan
    rows[5, :] = -np.inf  # a fully masked row: NaN, as PyTorch's
    rows[7, 1:] = -np.inf
    ours = eager.softmax(eager.tensor(x), -1).numpy()
    theirs = torch.softmax(torch.tensor(x), -1).numpy()
    tol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol, equal_nan=True)


def test_softmax_of_short_rows_gradient():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 8, 24)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eager.nn.functional.softmax(xe, dim=-1).backward(eager.tensor(g))
    torch.nn.functional.softmax(xt, dim=-1).backward(torch.tensor(g))
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
