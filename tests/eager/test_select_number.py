"""where(mask, number, array) and where(mask, array, number) on large arrays (relu's gradient,
masked fills) run one native pass: each element the array's or the number's bits, as
np.where gives them (NaN payloads and signed zeros kept), float32 and float64."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from gmops.selection import SELECT_BITS_MIN


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_with_a_number_keeps_every_bit(dtype):
    rng = np.random.default_rng(0)
    n = 4 * SELECT_BITS_MIN + 3
    b = rng.standard_normal(n).astype(dtype)
    b[5], b[7] = np.nan, -0.0
    c = rng.random(n) > 0.5
    bits = np.uint32 if dtype == np.float32 else np.uint64
    for got, expected in (
            (eager.where(eager.tensor(c), 0.0, eager.tensor(b)), np.where(c, dtype(0.0), b)),
            (eager.where(eager.tensor(c), eager.tensor(b), -2.5), np.where(c, b, dtype(-2.5))),
            (eager.where(eager.tensor(c), -np.inf, eager.tensor(b)), np.where(c, dtype(-np.inf), b))):
        assert got.dtype == eager.tensor(b).dtype
        np.testing.assert_array_equal(got.numpy().view(bits), expected.view(bits))


def test_relu_gradient_of_a_large_tensor():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((8, 16, 32, 32)).astype(np.float32)
    x[0, 0, 0, :4] = [np.nan, 0.0, -0.0, 1.0]
    ours, theirs = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eager.relu(ours).sum().backward()
    torch.relu(theirs).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
